// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper session's states and what each change means for the leases held through it
// (doc/zookeeper.md, "Suspended"). Pure: the driver (io/zk_session.cpp) feeds it the C
// client's session events, server contacts and its own timer, with the time, and carries out
// the action it returns.
#ifndef COROLOCK_SRC_CORE_ZK_SESSION_FSM_HPP
#define COROLOCK_SRC_CORE_ZK_SESSION_FSM_HPP

#include <corolock/zk_connection.hpp>

#include <chrono>
#include <iosfwd>

namespace corolock::detail {

enum class zk_session_event {
    connected,    // the client (re)connected; the session is alive
    disconnected, // the client lost its server (connecting or associating again)
    expired,      // the server said the session is gone
    auth_failed,  // the server refused the digest credentials
    timer,        // the driver's suspension timer fired
    close,        // the user stops the connection
};

enum class zk_session_action {
    none,
    arm_timer,        // wait until `deadline`, then feed `timer`
    drop_leases,      // suspended past the leases' validity: report them lost (lease_lost)
    expire_and_renew, // the session and its nodes are gone: report every lease lost, fail the
                      // requests still waiting, and open a new session
    fail_all,         // auth failed or closed: report every lease lost, fail everything, stop
};

std::ostream& operator<<(std::ostream& os, zk_session_event e);
std::ostream& operator<<(std::ostream& os, zk_session_action a);

// valid_until of every lease of the session: the last reply from a server plus the negotiated
// session timeout, minus the margin (the server counts the timeout from the last request it got,
// before its reply reached us). While connected it moves on with every reply (pings included).
class zk_session_fsm {
public:
    using clock = std::chrono::steady_clock;
    using time_point = clock::time_point;
    using duration = clock::duration;

    // `margin`: zero means a fifth of the session timeout.
    explicit zk_session_fsm(duration margin = duration::zero()) noexcept : margin_(margin) {}

    // A session event or the timer; `timeout` is the negotiated session timeout for `connected`
    // (ignored otherwise).
    zk_session_action on_event(zk_session_event e, time_point now,
                               duration timeout = duration::zero()) noexcept;
    // A reply or a ping answer was read from the server.
    void on_contact(time_point now) noexcept {
        if (state_ == zk_session_state::connected)
            last_contact_ = now;
    }

    zk_session_state state() const noexcept { return state_; }
    // While suspended: the instant the leases are given up; the deadline of `arm_timer`.
    time_point deadline() const noexcept { return last_contact_ + timeout_ - effective_margin(); }
    // The validity of the leases held now: deadline() while connected or suspended, else min().
    time_point valid_until() const noexcept;
    // Leases were given up during this suspension (cleared by the next connect): their nodes,
    // if the session lives on, are deleted at the reconnect.
    bool leases_dropped() const noexcept { return dropped_; }
    duration session_timeout() const noexcept { return timeout_; }
    // How many sessions were opened (1 after the first connect, +1 after each expiry).
    unsigned sessions() const noexcept { return sessions_; }

private:
    duration effective_margin() const noexcept {
        return margin_ > duration::zero() ? margin_ : timeout_ / 5;
    }

    zk_session_state state_ = zk_session_state::connecting;
    duration margin_;
    duration timeout_ = duration::zero();
    time_point last_contact_{};
    bool dropped_ = false;
    unsigned sessions_ = 0;
};

} // namespace corolock::detail

#endif
