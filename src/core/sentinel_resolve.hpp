// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The decisions of finding a master through Sentinel, with no I/O: what to send to a Sentinel,
// how to read its answer, which Sentinel to ask next, how the list is reordered, whether the
// server found is a master, and which `+switch-master` message concerns us. The connection
// performs the I/O (doc/design.md, "Sentinel").
#ifndef COROLOCK_SRC_DETAIL_SENTINEL_RESOLVE_HPP
#define COROLOCK_SRC_DETAIL_SENTINEL_RESOLVE_HPP

#include <corolock/config.hpp>
#include <corolock/error.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace corolock::detail {

// HELLO 3 [AUTH user pass], SENTINEL GET-MASTER-ADDR-BY-NAME name, SENTINEL SENTINELS name.
request make_sentinel_request(const sentinel_config& cfg);

// One Sentinel's answer to make_sentinel_request.
struct sentinel_answer {
    error_code ec; // auth_failed, server_error, sentinel_unknown_master or unexpected_reply
    address master;
    std::vector<address> sentinels; // the other Sentinels it knows (may be empty)
};
// `resp` holds the nodes of the three replies, in order.
sentinel_answer parse_sentinel_answer(const generic_response& resp);

// The reply to ROLE: {} when it says master, else role_check_failed.
error_code check_role(const generic_response& role_reply);

// The new master announced by a `+switch-master` message ("<name> <old ip> <old port> <new ip>
// <new port>") when it names `master_name`, else nothing.
std::optional<address> parse_switch_master(std::string_view payload, std::string_view master_name);

// The Sentinel list and one resolve round over it. A round asks each Sentinel once, in order;
// the first that knows the master ends it and moves to the front, followed by the Sentinels it
// reported, then any bootstrap entry missing from both (bootstrap entries are never forgotten).
class sentinel_list {
public:
    explicit sentinel_list(std::vector<address> bootstrap);

    const std::vector<address>& current() const noexcept { return list_; }

    void start_round() noexcept;
    // The Sentinel to ask next, or nothing when the round has asked them all.
    const address* next() noexcept;
    // The answer of the Sentinel last returned by next(); a connect or I/O failure is an
    // answer with that error. Returns true when the master is known (the round is over).
    bool on_answer(const sentinel_answer& a);
    // After a round that returned no master: sentinel_unknown_master if a Sentinel answered
    // that it does not know the name, else sentinel_resolve_failed.
    error_code failure() const noexcept;

private:
    std::vector<address> bootstrap_;
    std::vector<address> list_;
    std::size_t pos_ = 0;
    bool unknown_ = false;
};

} // namespace corolock::detail

#endif
