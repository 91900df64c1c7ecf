// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The session's states, what replies prove about the leader's view of the session, and what
// each change means for the leases: events fed in racy orders, no server, no sleeps.
#include "zookeeper/core/zk_session_fsm.hpp"

#include <boost/test/unit_test.hpp>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_zookeeper_zk_session_fsm {

using namespace std::chrono_literals;
using corolock::zk_session_state;
using corolock::detail::zk_session_action;
using corolock::detail::zk_session_event;
using corolock::detail::zk_session_fsm;
using tp = zk_session_fsm::time_point;

namespace {
const tp t0 = tp(std::chrono::seconds(1000));

// One sync sent at `sent` and answered at `answered`; the action its reply gave.
zk_session_action trip(zk_session_fsm& f, tp sent, tp answered) {
    const auto n = f.on_sync_sent(sent);
    BOOST_TEST((f.sync_due() == tp::max())); // one at a time
    return f.on_sync_reply(n, answered, true);
}

// A connected session (opened at t0, connected at t0 + 100 ms, timeout 10 s: syncs every 1 s,
// proof gap 3.33 s, margin 2 s).
zk_session_fsm connected() {
    zk_session_fsm f;
    f.on_open(t0);
    BOOST_TEST(f.on_event(zk_session_event::connected, t0 + 100ms, 10s) ==
               zk_session_action::arm_timer);
    return f;
}
} // namespace

BOOST_AUTO_TEST_SUITE(zk_session_fsm_suite)

BOOST_AUTO_TEST_CASE(a_new_session_is_valid_from_the_handle_open) {
    zk_session_fsm f;
    BOOST_TEST(f.state() == zk_session_state::connecting);
    BOOST_TEST((f.valid_until() == tp::min()));
    BOOST_TEST((f.sync_due() == tp::max())); // no sync before connected
    f = connected();
    BOOST_TEST(f.state() == zk_session_state::connected);
    BOOST_TEST(f.sessions() == 1u);
    // The leader created the session after the open: open + timeout - timeout/5.
    BOOST_TEST((f.proven_expiry() == t0 + 10s));
    BOOST_TEST((f.valid_until() == t0 + 8s));
    BOOST_TEST((f.sync_due() == tp::min())); // the first sync goes out at once
    BOOST_TEST((f.sync_interval() == 1s));
}

// The zk-isolate break of 2026-12-01: a follower that lost the leader answers every ping, so
// while connected nothing but the syncs moves the validity, and without them the leases are
// given up at the deadline although the connection never dropped.
BOOST_AUTO_TEST_CASE(without_answered_syncs_leases_end_at_the_deadline_while_connected) {
    auto f = connected();
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 7s) == zk_session_action::arm_timer);
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 8s) == zk_session_action::drop_leases);
    BOOST_TEST(f.state() == zk_session_state::connected);
    BOOST_TEST(f.leases_dropped());
    BOOST_TEST((f.valid_until() == tp::min()));
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 9s) == zk_session_action::none);
}

BOOST_AUTO_TEST_CASE(one_or_two_round_trips_prove_nothing) {
    auto f = connected();
    trip(f, t0 + 100ms, t0 + 110ms);
    trip(f, t0 + 1110ms, t0 + 1120ms);
    BOOST_TEST((f.proven_expiry() == t0 + 10s));
    // The second answered before the third went out a gap after the first was answered: still
    // not a proof while the chain is X, A only.
    BOOST_TEST((f.sync_due() == t0 + 2120ms));
}

BOOST_AUTO_TEST_CASE(three_round_trips_a_gap_apart_prove_the_first_send_plus_the_timeout) {
    auto f = connected();
    trip(f, t0 + 1s, t0 + 1010ms);                                             // X
    trip(f, t0 + 2s, t0 + 2010ms);                                             // too close to A
    trip(f, t0 + 4400ms, t0 + 4410ms);                                         // A: 3.39 s after X
    BOOST_TEST((f.proven_expiry() == t0 + 10s));                               // not yet
    BOOST_TEST(trip(f, t0 + 5s, t0 + 5050ms) == zk_session_action::arm_timer); // B
    BOOST_TEST((f.proven_expiry() == t0 + 11s));                               // X's send + timeout
    BOOST_TEST((f.valid_until() == t0 + 9s));
    BOOST_TEST((f.deadline() == t0 + 9s));
    // The next proof takes the latest X that qualifies: the one sent at 2 s.
    trip(f, t0 + 6s, t0 + 6010ms); // A = the one at 5 s: 2.99 s after the one at 2 s: no
    BOOST_TEST((f.proven_expiry() == t0 + 11s));
    trip(f, t0 + 7s, t0 + 7010ms); // A = 6 s: X = 2 s (answered 2.01 <= 6 - 3.33)
    BOOST_TEST((f.proven_expiry() == t0 + 12s));
}

BOOST_AUTO_TEST_CASE(a_steady_cadence_keeps_the_validity_ahead_of_the_next_proof) {
    auto f = connected();
    tp t = t0 + 100ms;
    for (int i = 0; i < 40; ++i) {
        const auto due = f.sync_due();
        t = std::max(t, due);
        trip(f, t, t + 20ms);
        t += 20ms;
        // Between two answers the leases never lapse.
        BOOST_TEST((f.valid_until() > f.sync_due() + 20ms));
    }
    BOOST_TEST(!f.leases_dropped());
}

BOOST_AUTO_TEST_CASE(a_failed_sync_ends_the_chain) {
    auto f = connected();
    trip(f, t0 + 1s, t0 + 1010ms);
    trip(f, t0 + 4400ms, t0 + 4410ms);
    const auto n = f.on_sync_sent(t0 + 5s);
    BOOST_TEST(f.on_sync_reply(n, t0 + 5010ms, false) == zk_session_action::none);
    // A chain starts again: the next two answers prove nothing.
    trip(f, t0 + 6s, t0 + 6010ms);
    trip(f, t0 + 7s, t0 + 7010ms);
    BOOST_TEST((f.proven_expiry() == t0 + 10s));
}

BOOST_AUTO_TEST_CASE(suspension_keeps_leases_until_the_deadline_then_drops_them) {
    zk_session_fsm f(2s);
    f.on_open(t0);
    f.on_event(zk_session_event::connected, t0, 10s);
    BOOST_TEST(f.on_event(zk_session_event::disconnected, t0 + 4s) == zk_session_action::arm_timer);
    BOOST_TEST(f.state() == zk_session_state::suspended);
    BOOST_TEST((f.deadline() == t0 + 8s));
    BOOST_TEST((f.valid_until() == t0 + 8s));
    BOOST_TEST((f.sync_due() == tp::max()));
    // An early timer (or a late one of another suspension) re-arms.
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 7s) == zk_session_action::arm_timer);
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 8s) == zk_session_action::drop_leases);
    BOOST_TEST(f.leases_dropped());
    BOOST_TEST((f.valid_until() == tp::min()));
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 9s) == zk_session_action::none);
    // The session lived on: the leader revalidated it after the loss at 4 s; new leases are
    // valid again.
    BOOST_TEST(f.on_event(zk_session_event::connected, t0 + 11s, 10s) ==
               zk_session_action::arm_timer);
    BOOST_TEST(f.sessions() == 1u);
    BOOST_TEST(!f.leases_dropped());
    BOOST_TEST((f.valid_until() == t0 + 12s));
}

// A leader cut off from its quorum answers syncs for up to a tick (at most half the timeout)
// after its followers gave it up: the proof's gap (a third) and the margin must cover it.
BOOST_AUTO_TEST_CASE(a_margin_below_a_sixth_of_the_timeout_counts_as_a_sixth) {
    zk_session_fsm f(50ms);
    f.on_open(t0);
    f.on_event(zk_session_event::connected, t0, 12s);
    BOOST_TEST((f.valid_until() == t0 + 10s));
    zk_session_fsm g(3s);
    g.on_open(t0);
    g.on_event(zk_session_event::connected, t0, 12s);
    BOOST_TEST((g.valid_until() == t0 + 9s));
}

BOOST_AUTO_TEST_CASE(a_reply_from_the_lost_connection_is_ignored) {
    auto f = connected();
    trip(f, t0 + 1s, t0 + 1010ms);
    const auto n = f.on_sync_sent(t0 + 2s);
    f.on_event(zk_session_event::disconnected, t0 + 2100ms);
    f.on_event(zk_session_event::connected, t0 + 2200ms, 10s);
    BOOST_TEST(f.on_sync_reply(n, t0 + 2300ms, true) == zk_session_action::none);
    BOOST_TEST((f.sync_due() == tp::min())); // the new connection's first sync is due
    // The revalidation proves the loss instant plus the timeout.
    BOOST_TEST((f.proven_expiry() == t0 + 12100ms));
}

BOOST_AUTO_TEST_CASE(proofs_after_a_drop_make_new_leases_valid) {
    auto f = connected();
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 8s) == zk_session_action::drop_leases);
    // The follower got its leader back: syncs are answered again.
    trip(f, t0 + 8s, t0 + 8010ms);
    trip(f, t0 + 11400ms, t0 + 11410ms);
    BOOST_TEST(f.leases_dropped());
    BOOST_TEST(trip(f, t0 + 12s, t0 + 12010ms) == zk_session_action::arm_timer);
    BOOST_TEST(!f.leases_dropped());
    BOOST_TEST((f.valid_until() == t0 + 16s));
}

BOOST_AUTO_TEST_CASE(disconnect_noticed_after_the_deadline_drops_at_once) {
    auto f = connected();
    BOOST_TEST(f.on_event(zk_session_event::disconnected, t0 + 9s) ==
               zk_session_action::drop_leases);
}

BOOST_AUTO_TEST_CASE(expiry_renews_and_counts_sessions) {
    auto f = connected();
    f.on_event(zk_session_event::disconnected, t0 + 1s);
    BOOST_TEST(f.on_event(zk_session_event::expired, t0 + 3s) ==
               zk_session_action::expire_and_renew);
    BOOST_TEST(f.state() == zk_session_state::expired);
    BOOST_TEST((f.valid_until() == tp::min()));
    // The new handle's first connect is a new session.
    f.on_open(t0 + 3500ms);
    f.on_event(zk_session_event::connected, t0 + 4s, 6000ms);
    BOOST_TEST(f.sessions() == 2u);
    BOOST_TEST((f.valid_until() == t0 + 3500ms + 4800ms));
}

BOOST_AUTO_TEST_CASE(auth_failure_and_close_are_terminal) {
    zk_session_fsm f;
    BOOST_TEST(f.on_event(zk_session_event::auth_failed, t0) == zk_session_action::fail_all);
    BOOST_TEST(f.state() == zk_session_state::closed);
    BOOST_TEST(f.on_event(zk_session_event::connected, t0, 10s) == zk_session_action::none);
    BOOST_TEST(f.state() == zk_session_state::closed);
    auto g = connected();
    BOOST_TEST(g.on_event(zk_session_event::close, t0) == zk_session_action::fail_all);
    BOOST_TEST(g.on_event(zk_session_event::expired, t0) == zk_session_action::none);
    BOOST_TEST((g.sync_due() == tp::max()));
}

BOOST_AUTO_TEST_CASE(disconnect_while_connecting_is_no_suspension) {
    zk_session_fsm f;
    BOOST_TEST(f.on_event(zk_session_event::disconnected, t0) == zk_session_action::none);
    BOOST_TEST(f.state() == zk_session_state::connecting);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_zookeeper_zk_session_fsm
