// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper session's states, what the servers' replies prove about the leader's view of
// the session, and what each change means for the leases held through it (doc/zookeeper.md,
// "What a reply proves"). Pure: the driver (io/zk_session.cpp) feeds it the C client's session
// events, the sync round trips it sends when `sync_due` says so, and its own timer, with the
// time, and carries out the action it returns.
#ifndef COROLOCK_SRC_CORE_ZK_SESSION_FSM_HPP
#define COROLOCK_SRC_CORE_ZK_SESSION_FSM_HPP

#include <corolock/zookeeper/connection.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <iosfwd>

namespace corolock::detail {

enum class zk_session_event {
    connected,    // the client (re)connected; the session is alive
    disconnected, // the client lost its server (connecting or associating again)
    expired,      // the server said the session is gone
    auth_failed,  // the server refused the digest credentials
    timer,        // the driver's validity timer fired
    close,        // the user stops the connection
};

enum class zk_session_action {
    none,
    arm_timer,        // wait until `deadline()`, then feed `timer` (replaces an earlier wait)
    drop_leases,      // the leader may expire the session now: report the leases lost
    expire_and_renew, // the session and its nodes are gone: report every lease lost, fail the
                      // requests still waiting, and open a new session
    fail_all,         // auth failed or closed: report every lease lost, fail everything, stop
};

std::ostream& operator<<(std::ostream& os, zk_session_event e);
std::ostream& operator<<(std::ostream& os, zk_session_action a);

// The leases' validity is a lower bound of the instant the *leader* may expire the session,
// minus the margin. A follower answers pings by itself, and keeps doing so for up to its
// leader-loss detection time (syncLimit x tickTime, unknown to a client and unbounded by the
// session timeout) after it lost the leader, so a ping's answer proves nothing. What does:
// the leader learns a follower's session touches from the follower's answers to its own pings
// (every tickTime/2), which travel on the same ordered stream as the requests the follower
// forwards. So three round trips on one connection, X answered at r_X, then a sync A sent at
// s_A >= r_X + gap, then a sync B sent after A's answer, prove, once B is answered, that the
// leader got a ping answer carrying X's touch before it served B: it expires the session no
// earlier than s_X + timeout. `gap` (a third of the timeout) covers tickTime/2 for any ensemble
// whose minSessionTimeout is at least 2 ticks (ZooKeeper's default bound), with room for a late
// ping. A reconnect to the same session is revalidated by the leader: it proves the instant the
// old connection was lost. A new session is created by the leader after the handle was opened.
class zk_session_fsm {
public:
    using clock = std::chrono::steady_clock;
    using time_point = clock::time_point;
    using duration = clock::duration;

    // `margin`: zero means a fifth of the session timeout; never less than a sixth of it.
    explicit zk_session_fsm(duration margin = duration::zero()) noexcept : margin_(margin) {}

    // The driver opened a handle: a session created through it is created after `now`.
    void on_open(time_point now) noexcept { opened_ = now; }
    // A session event or the timer; `timeout` is the negotiated session timeout for `connected`
    // (ignored otherwise).
    zk_session_action on_event(zk_session_event e, time_point now,
                               duration timeout = duration::zero()) noexcept;

    // Syncs, one at a time, while connected: when the next one should go out (max() if none
    // should), that it went out (the number to give its reply), and its reply (`ok`: the
    // server answered it; anything else ends the connection's chain of proofs).
    time_point sync_due() const noexcept;
    std::uint64_t on_sync_sent(time_point now) noexcept;
    zk_session_action on_sync_reply(std::uint64_t sync, time_point now, bool ok) noexcept;

    zk_session_state state() const noexcept { return state_; }
    // The earliest instant the leader may expire the session, as proven so far.
    time_point proven_expiry() const noexcept { return proven_; }
    // When the leases are given up: the proven expiry minus the margin; the `arm_timer` deadline.
    time_point deadline() const noexcept { return proven_ - effective_margin(); }
    // The validity of the leases held now: deadline() while connected or suspended and not yet
    // given up, else min().
    time_point valid_until() const noexcept;
    // Leases were given up (cleared by the next connect, or by a proof that makes a new lease
    // valid again): their nodes, if the session lives on, are deleted.
    bool leases_dropped() const noexcept { return dropped_; }
    duration session_timeout() const noexcept { return timeout_; }
    // How many sessions were opened (1 after the first connect, +1 after each expiry).
    unsigned sessions() const noexcept { return sessions_; }
    // Spacing of the syncs and the gap between the proof's first two round trips.
    duration sync_interval() const noexcept { return timeout_ / 10; }
    duration proof_gap() const noexcept { return timeout_ / 3; }

private:
    struct round_trip {
        time_point sent, answered;
    };
    // At least a sixth of the timeout: a stale leader cut off from its quorum answers syncs for
    // up to a tick after its followers gave it up (and a tick is at most half the timeout): the
    // proof gap (a third) plus the margin must cover that tick.
    duration effective_margin() const noexcept {
        return std::max(margin_ > duration::zero() ? margin_ : timeout_ / 5, timeout_ / 6);
    }
    zk_session_action rearm(time_point now) noexcept;

    zk_session_state state_ = zk_session_state::connecting;
    duration margin_;
    duration timeout_ = duration::zero();
    time_point opened_{};
    time_point lost_at_{}; // when the last connection was lost
    time_point proven_ = time_point::min();
    std::deque<round_trip> trips_; // this connection's answered syncs, oldest first
    std::uint64_t syncs_ = 0;      // numbers the syncs sent
    std::uint64_t first_sync_ = 1; // the first number sent on this connection
    bool in_flight_ = false;
    time_point in_flight_sent_{};
    bool dropped_ = false;
    unsigned sessions_ = 0;
};

} // namespace corolock::detail

#endif
