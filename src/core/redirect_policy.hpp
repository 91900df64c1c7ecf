// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What a cluster client does with the outcome of one attempt of a request: complete it, send it
// again somewhere (MOVED, ASK), or wait and send it again (TRYAGAIN, CLUSTERDOWN, LOADING), within
// a budget of redirects per request. Pure: no I/O, no clock.
#ifndef COROLOCK_SRC_DETAIL_REDIRECT_POLICY_HPP
#define COROLOCK_SRC_DETAIL_REDIRECT_POLICY_HPP

#include "core/slot_table.hpp"
#include <corolock/error.hpp>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>

namespace corolock::detail {

// `MOVED <slot> <host>:<port>` or `ASK <slot> <host>:<port>`. An empty host (`:6380`) means the
// host of the node that answered. nullopt for anything else or anything malformed.
struct redirect_target {
    std::uint16_t slot = 0;
    cluster_node node; // no id
};
std::optional<redirect_target> parse_redirect(std::string_view error_text);

class redirect_policy {
public:
    enum class action {
        complete,    // hand the outcome to the caller as it is
        moved,       // the slot moved for good: update the table, refresh, send to `target`
        ask,         // send ASKING + the request, as one unit, to `target`; table untouched
        retry_later, // wait try_again_delay, then send again to the slot's owner
        fail,        // give up with `ec` (the budget is spent)
    };
    struct decision {
        action what = action::complete;
        redirect_target target; // moved, ask
        bool refresh = false;   // the map is probably stale: schedule a refresh
        error_code ec;          // fail
    };

    explicit redirect_policy(unsigned max_redirects) noexcept : budget_(max_redirects) {}

    // The outcome of one attempt sent to `from`: the exec's error code and the text of the
    // routed command's error reply (empty when it succeeded or answered no error). Only errors
    // that prove the command did not run (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING) and
    // `not_connected` (never written) lead to a re-send; every other outcome, `connection_lost`
    // above all, completes as it is.
    decision on_outcome(error_code exec_ec, std::string_view error_text, const cluster_node& from);

    unsigned redirects() const noexcept { return used_; }

private:
    unsigned budget_;
    unsigned used_ = 0;
};

std::ostream& operator<<(std::ostream& os, redirect_policy::action a);

} // namespace corolock::detail

#endif
