// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The decisions of finding a master through Sentinel, with no I/O: what to send to a Sentinel,
// how to read its answer, which Sentinel to ask next, how the list is reordered, whether the
// server found is a master, which `+switch-master` message concerns us, and which masters a
// failover under way makes unusable (failover_watch). The connection performs the I/O
// (doc/design.md, "Sentinel").
#ifndef COROLOCK_SRC_DETAIL_SENTINEL_RESOLVE_HPP
#define COROLOCK_SRC_DETAIL_SENTINEL_RESOLVE_HPP

#include <corolock/config.hpp>
#include <corolock/error.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
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

// What the connection keeps away from while Sentinel fails the master over. Only the Sentinel
// that leads a failover announces it (`+try-failover` ... `+failover-end`, measured: the others
// say nothing until their `+switch-master`), so the connection listens to every Sentinel and
// feeds each message here with the Sentinel it came from. From the first announcement that names
// the master we use, until `+switch-master` or that Sentinel's `-failover-abort-*`, the master
// is not used (a replica promoted meanwhile takes over, and whatever is written to the old
// master after that is dropped when it resyncs); after `+switch-master` the old master is not
// used either (a Sentinel not yet told still names it, and it stays writable until Sentinel
// converts it, about 10 s). Each hold ends after `hold` at the latest (a leader that died
// mid-failover announces nothing more). Sans-io: the caller passes the time.
class failover_watch {
public:
    using clock = std::chrono::steady_clock;
    enum class action {
        none,
        drop, // close the connection to the master now (it is being failed over or replaced)
    };

    // The channels to subscribe to on every Sentinel.
    static std::span<const std::string_view> channels() noexcept;

    // `hold` zero: only `+switch-master` counts (drop unless already on the new master), and
    // nothing is held.
    failover_watch(std::string master_name, clock::duration hold)
        : name_(std::move(master_name)), hold_(hold) {}

    // A message on `channel` from the Sentinel `source`, at `now`; `current` is the master the
    // connection is on when `connected`.
    action on_message(std::string_view source, std::string_view channel, std::string_view payload,
                      const address& current, bool connected, clock::time_point now);
    // Whether a connect may go to `master` at `now`.
    bool usable(const address& master, clock::time_point now) const;
    // The master announced by the last `+switch-master`, if any (to log).
    const std::optional<address>& switched_to() const noexcept { return to_; }

private:
    struct hold {
        address master;
        clock::time_point until;
    };
    std::string name_;
    clock::duration hold_;
    std::map<std::string, hold, std::less<>> failing_; // per announcing Sentinel
    std::optional<hold> replaced_;                     // the master a switch left
    std::optional<address> to_;
};

std::ostream& operator<<(std::ostream& os, failover_watch::action a);

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
    // answer with that error. `usable` false: the master it names is being failed over
    // (failover_watch), so the round goes on. Returns true when the master is known (the round
    // is over).
    bool on_answer(const sentinel_answer& a, bool usable = true);
    // After a round that returned no master: failover_in_progress if a Sentinel named a master
    // that is not usable, else sentinel_unknown_master if one answered that it does not know
    // the name, else sentinel_resolve_failed.
    error_code failure() const noexcept;

private:
    std::vector<address> bootstrap_;
    std::vector<address> list_;
    std::size_t pos_ = 0;
    bool unknown_ = false;
    bool unusable_ = false;
};

// The Sentinel that the watch `self` of `watching` (one entry per watch: the Sentinel it is on,
// or empty while it has none) should listen to next: the first of `list` after position `from`
// that no other watch is on, else `list[from % size]`. Empty list: nothing.
std::optional<address> pick_watch_target(const std::vector<address>& list,
                                         const std::vector<std::optional<address>>& watching,
                                         std::size_t self, std::size_t from);

} // namespace corolock::detail

#endif
