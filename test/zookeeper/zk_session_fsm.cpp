// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The session's states and what each change means for the leases, events fed in racy orders.
#include "core/zk_session_fsm.hpp"

#include <boost/test/unit_test.hpp>

using namespace std::chrono_literals;
using corolock::zk_session_state;
using corolock::detail::zk_session_action;
using corolock::detail::zk_session_event;
using corolock::detail::zk_session_fsm;
using tp = zk_session_fsm::time_point;

namespace {
const tp t0 = tp(std::chrono::seconds(1000));
}

BOOST_AUTO_TEST_SUITE(zk_session_fsm_suite)

BOOST_AUTO_TEST_CASE(connect_then_contacts_move_validity_on) {
    zk_session_fsm f;
    BOOST_TEST(f.state() == zk_session_state::connecting);
    BOOST_TEST((f.valid_until() == tp::min()));
    BOOST_TEST(f.on_event(zk_session_event::connected, t0, 10s) == zk_session_action::none);
    BOOST_TEST(f.state() == zk_session_state::connected);
    BOOST_TEST(f.sessions() == 1u);
    // timeout - timeout/5 = 8 s after the last contact.
    BOOST_TEST((f.valid_until() == t0 + 8s));
    f.on_contact(t0 + 3s);
    BOOST_TEST((f.valid_until() == t0 + 11s));
}

BOOST_AUTO_TEST_CASE(suspension_keeps_leases_until_the_deadline_then_drops_them) {
    zk_session_fsm f(1s);
    f.on_event(zk_session_event::connected, t0, 10s);
    f.on_contact(t0 + 2s);
    BOOST_TEST(f.on_event(zk_session_event::disconnected, t0 + 4s) == zk_session_action::arm_timer);
    BOOST_TEST(f.state() == zk_session_state::suspended);
    BOOST_TEST((f.deadline() == t0 + 11s));
    BOOST_TEST((f.valid_until() == t0 + 11s));
    // Contacts while suspended cannot happen; if a stray one is fed, it changes nothing.
    f.on_contact(t0 + 5s);
    BOOST_TEST((f.valid_until() == t0 + 11s));
    // An early timer (or a late one of another suspension) re-arms.
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 10s) == zk_session_action::arm_timer);
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 11s) == zk_session_action::drop_leases);
    BOOST_TEST(f.leases_dropped());
    BOOST_TEST((f.valid_until() == tp::min()));
    // Dropped once only.
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 12s) == zk_session_action::none);
    // The session lived on: reconnected, same session, new leases valid again.
    BOOST_TEST(f.on_event(zk_session_event::connected, t0 + 13s, 10s) == zk_session_action::none);
    BOOST_TEST(f.sessions() == 1u);
    BOOST_TEST(!f.leases_dropped());
}

BOOST_AUTO_TEST_CASE(reconnect_before_the_deadline_keeps_leases) {
    zk_session_fsm f;
    f.on_event(zk_session_event::connected, t0, 10s);
    f.on_event(zk_session_event::disconnected, t0 + 1s);
    BOOST_TEST(f.on_event(zk_session_event::connected, t0 + 2s, 10s) == zk_session_action::none);
    // The timer armed for the suspension fires late: nothing to do.
    BOOST_TEST(f.on_event(zk_session_event::timer, t0 + 9s) == zk_session_action::none);
    BOOST_TEST(f.state() == zk_session_state::connected);
}

BOOST_AUTO_TEST_CASE(disconnect_noticed_after_the_deadline_drops_at_once) {
    zk_session_fsm f;
    f.on_event(zk_session_event::connected, t0, 10s);
    BOOST_TEST(f.on_event(zk_session_event::disconnected, t0 + 9s) ==
               zk_session_action::drop_leases);
}

BOOST_AUTO_TEST_CASE(expiry_renews_and_counts_sessions) {
    zk_session_fsm f;
    f.on_event(zk_session_event::connected, t0, 10s);
    f.on_event(zk_session_event::disconnected, t0 + 1s);
    BOOST_TEST(f.on_event(zk_session_event::expired, t0 + 3s) ==
               zk_session_action::expire_and_renew);
    BOOST_TEST(f.state() == zk_session_state::expired);
    BOOST_TEST((f.valid_until() == tp::min()));
    // The new handle's first connect is a new session.
    f.on_event(zk_session_event::connected, t0 + 4s, 6000ms);
    BOOST_TEST(f.sessions() == 2u);
    BOOST_TEST((f.valid_until() == t0 + 4s + 4800ms));
}

BOOST_AUTO_TEST_CASE(auth_failure_and_close_are_terminal) {
    zk_session_fsm f;
    BOOST_TEST(f.on_event(zk_session_event::auth_failed, t0) == zk_session_action::fail_all);
    BOOST_TEST(f.state() == zk_session_state::closed);
    BOOST_TEST(f.on_event(zk_session_event::connected, t0, 10s) == zk_session_action::none);
    BOOST_TEST(f.state() == zk_session_state::closed);
    zk_session_fsm g;
    g.on_event(zk_session_event::connected, t0, 10s);
    BOOST_TEST(g.on_event(zk_session_event::close, t0) == zk_session_action::fail_all);
    BOOST_TEST(g.on_event(zk_session_event::expired, t0) == zk_session_action::none);
}

BOOST_AUTO_TEST_CASE(disconnect_while_connecting_is_no_suspension) {
    zk_session_fsm f;
    BOOST_TEST(f.on_event(zk_session_event::disconnected, t0) == zk_session_action::none);
    BOOST_TEST(f.state() == zk_session_state::connecting);
}

BOOST_AUTO_TEST_SUITE_END()
