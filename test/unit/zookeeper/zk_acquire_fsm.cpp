// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// One acquisition's decisions, replies fed in the orders a server and a network can give them:
// no server, no sleeps.
#include "zookeeper/core/zk_acquire_fsm.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_zookeeper_zk_acquire_fsm {

using corolock::error_code;
using corolock::detail::zk_acquire_action;
using corolock::detail::zk_acquire_fsm;
using corolock::detail::zk_node_kind;
using corolock::detail::zk_rc;
using kind = zk_acquire_action::kind;
using corolock::error;

namespace {
const std::string lock = "/app/locks/l";
const std::string mine = "me-lock-0000000002";
const std::string other = "you-lock-0000000001";

zk_acquire_fsm make(bool once = false, bool zero_wait = false) {
    return zk_acquire_fsm(lock, zk_node_kind::lock, "me", once, zero_wait);
}

// Created in session 1: the action after the create's reply.
zk_acquire_action created(zk_acquire_fsm& f) {
    const auto a = f.start();
    BOOST_TEST(a.what == kind::create_node);
    BOOST_TEST(a.path == lock + "/me-lock-");
    return f.on_created(zk_rc::ok, lock + "/" + mine, 42, 1, 0);
}

std::vector<std::string> children(std::initializer_list<std::string> c) {
    return c;
}
} // namespace

BOOST_AUTO_TEST_SUITE(zk_acquire_fsm_suite)

BOOST_AUTO_TEST_CASE(a_free_lock_is_granted_after_create_and_list) {
    auto f = make();
    const auto a = created(f);
    BOOST_TEST(a.what == kind::list);
    BOOST_TEST(f.node() == mine);
    BOOST_TEST(f.czxid() == 42);
    BOOST_TEST(f.session() == 1u);
    BOOST_TEST(f.on_listed(zk_rc::ok, children({mine}), 1, 0).what == kind::grant);
}

BOOST_AUTO_TEST_CASE(a_held_lock_watches_only_the_predecessor_then_lists_again) {
    auto f = make();
    created(f);
    auto a = f.on_listed(zk_rc::ok, children({"x-lock-0000000000", other, mine}), 1, 0);
    BOOST_TEST(a.what == kind::watch);
    BOOST_TEST(a.path == lock + "/" + other);
    BOOST_TEST(!a.found_own);
    BOOST_TEST(f.on_watched(zk_rc::ok, 7).what == kind::wait_wake);
    BOOST_TEST(f.on_fired().what == kind::list);
    BOOST_TEST(f.on_listed(zk_rc::ok, children({mine}), 1, 0).what == kind::grant);
}

BOOST_AUTO_TEST_CASE(a_predecessor_gone_before_its_watch_lists_again) {
    auto f = make();
    created(f);
    f.on_listed(zk_rc::ok, children({other, mine}), 1, 0);
    BOOST_TEST(f.on_watched(zk_rc::no_node, 0).what == kind::list);
}

BOOST_AUTO_TEST_CASE(a_missing_lock_path_is_made_parent_by_parent) {
    auto f = make();
    f.start();
    auto a = f.on_created(zk_rc::no_node, "", 0, 1, -101);
    BOOST_TEST(a.what == kind::create_parent);
    BOOST_TEST(a.path == "/app");
    a = f.on_parent_created(zk_rc::node_exists, -110);
    BOOST_TEST(a.path == "/app/locks");
    a = f.on_parent_created(zk_rc::ok, 0);
    BOOST_TEST(a.what == kind::create_parent);
    BOOST_TEST(a.path == lock);
    a = f.on_parent_created(zk_rc::ok, 0);
    BOOST_TEST(a.what == kind::create_node); // then our node again
}

BOOST_AUTO_TEST_CASE(a_parent_refused_ends_with_the_servers_reason) {
    auto f = make();
    f.start();
    f.on_created(zk_rc::no_node, "", 0, 1, -101);
    const auto a = f.on_parent_created(zk_rc::other, -102);
    BOOST_TEST(a.what == kind::refuse);
    BOOST_TEST(std::string(a.request) == "create (parents of)");
    BOOST_TEST(a.raw_rc == -102);
    BOOST_TEST(!a.root_missing);
}

// The topmost parent refused with "no node": its parent is the root, missing only when it is a
// chroot that does not exist (the driver names it). Deeper down, a parent deleted meanwhile.
BOOST_AUTO_TEST_CASE(no_node_for_the_topmost_parent_is_a_missing_root) {
    auto f = make();
    f.start();
    f.on_created(zk_rc::no_node, "", 0, 1, -101);
    auto a = f.on_parent_created(zk_rc::no_node, -101);
    BOOST_TEST(a.what == kind::refuse);
    BOOST_TEST(a.root_missing);
    auto g = make();
    g.start();
    g.on_created(zk_rc::no_node, "", 0, 1, -101);
    g.on_parent_created(zk_rc::ok, 0); // /app
    a = g.on_parent_created(zk_rc::no_node, -101);
    BOOST_TEST(a.what == kind::refuse);
    BOOST_TEST(!a.root_missing);
}

BOOST_AUTO_TEST_CASE(a_lost_create_reply_finds_its_node_by_owner_after_the_reconnect) {
    auto f = make();
    f.start();
    auto a = f.on_created(zk_rc::unknown, "", 0, 1, -4);
    BOOST_TEST(f.created_unknown());
    BOOST_TEST(f.unknown_session() == 1u);
    BOOST_TEST(a.what == kind::wait_reconnect); // never created again blindly
    a = f.on_reconnected(true);
    BOOST_TEST(a.what == kind::list);
    // Still unknown: wait for the next reconnect, list again.
    BOOST_TEST(f.on_listed(zk_rc::unknown, {}, 1, -4).what == kind::wait_reconnect);
    BOOST_TEST(f.on_reconnected(true).what == kind::list);
    a = f.on_listed(zk_rc::ok, children({other, mine}), 1, 0);
    BOOST_TEST(!f.created_unknown());
    BOOST_TEST(a.what == kind::watch);
    BOOST_TEST(a.found_own);
    BOOST_TEST(a.path == lock + "/" + mine);
    a = f.on_watched(zk_rc::ok, 99);
    BOOST_TEST(f.czxid() == 99);
    BOOST_TEST(a.what == kind::list);
    BOOST_TEST(f.on_listed(zk_rc::ok, children({mine}), 1, 0).what == kind::grant);
}

// Found by the model test: the node found again, its exists answered "unknown": it may still be
// there, so it is looked for again after the reconnect, never replaced by a new one (which
// would wait behind it until the session ends).
BOOST_AUTO_TEST_CASE(a_found_node_whose_exists_is_unknown_is_looked_for_again) {
    auto f = make();
    f.start();
    f.on_created(zk_rc::unknown, "", 0, 1, -4);
    f.on_reconnected(true);
    BOOST_TEST(f.on_listed(zk_rc::ok, children({mine}), 1, 0).what == kind::watch);
    auto a = f.on_watched(zk_rc::unknown, 0);
    BOOST_TEST(a.what == kind::wait_reconnect);
    BOOST_TEST(f.created_unknown());
    BOOST_TEST(f.node().empty());
    BOOST_TEST(f.on_reconnected(true).what == kind::list);
    BOOST_TEST(f.on_listed(zk_rc::ok, children({mine}), 1, 0).what == kind::watch);
    BOOST_TEST(f.on_watched(zk_rc::ok, 9).what == kind::list);
    BOOST_TEST(f.node() == mine);
}

BOOST_AUTO_TEST_CASE(a_lost_create_reply_with_no_node_made_creates_again) {
    auto f = make();
    f.start();
    f.on_created(zk_rc::unknown, "", 0, 1, -4);
    f.on_reconnected(true);
    BOOST_TEST(f.on_listed(zk_rc::ok, children({other}), 1, 0).what == kind::create_node);
}

BOOST_AUTO_TEST_CASE(one_attempt_reports_an_unknown_outcome_at_once) {
    auto f = make(true);
    f.start();
    const auto a = f.on_created(zk_rc::unknown, "", 0, 1, -4);
    BOOST_TEST(a.what == kind::abandon);
    BOOST_TEST((a.ec == error::connection_lost));
    BOOST_TEST(f.created_unknown()); // the driver looks for the node after the reconnect
}

BOOST_AUTO_TEST_CASE(one_attempt_on_a_held_lock_deletes_its_node) {
    auto f = make(true);
    created(f);
    auto a = f.on_listed(zk_rc::ok, children({other, mine}), 1, 0);
    BOOST_TEST(a.what == kind::finish);
    BOOST_TEST(a.drop_node);
    BOOST_TEST(!a.ec); // a try: an empty lease
    auto z = make(true, true);
    created(z);
    a = z.on_listed(zk_rc::ok, children({other, mine}), 1, 0);
    BOOST_TEST((a.ec == error::acquire_timeout)); // a zero wait
}

BOOST_AUTO_TEST_CASE(a_listing_in_another_session_or_without_our_node_creates_again) {
    auto f = make();
    created(f);
    BOOST_TEST(f.on_listed(zk_rc::ok, children({mine}), 2, 0).what == kind::create_node);
    BOOST_TEST(f.node().empty());
    f.on_created(zk_rc::ok, lock + "/" + mine, 43, 2, 0);
    BOOST_TEST(f.on_listed(zk_rc::session_gone, {}, 2, -112).what == kind::create_node);
    f.on_created(zk_rc::ok, lock + "/" + mine, 44, 3, 0);
    BOOST_TEST(f.on_listed(zk_rc::ok, children({other}), 3, 0).what == kind::create_node);
}

BOOST_AUTO_TEST_CASE(an_unknown_listing_waits_for_the_reconnect) {
    auto f = make();
    created(f);
    BOOST_TEST(f.on_listed(zk_rc::unknown, {}, 1, -4).what == kind::wait_reconnect);
    BOOST_TEST(f.on_reconnected(true).what == kind::list);
    BOOST_TEST(f.on_listed(zk_rc::unknown, {}, 1, -4).what == kind::wait_reconnect);
    const auto a = f.on_reconnected(false); // stopped while waiting
    BOOST_TEST(a.what == kind::abandon);
    BOOST_TEST((a.ec == error::connection_lost));
}

BOOST_AUTO_TEST_CASE(refusals_and_a_stop_end_the_acquisition) {
    auto f = make();
    f.start();
    auto a = f.on_created(zk_rc::other, "", 0, 1, -102);
    BOOST_TEST(a.what == kind::refuse);
    BOOST_TEST(std::string(a.request) == "create");
    BOOST_TEST(a.path == lock + "/me-lock-");
    auto g = make();
    created(g);
    a = g.on_listed(zk_rc::other, {}, 1, -102);
    BOOST_TEST(a.what == kind::refuse);
    BOOST_TEST(std::string(a.request) == "list");
    auto h = make();
    h.start();
    a = h.on_created(zk_rc::closing, "", 0, 1, -116);
    BOOST_TEST(a.what == kind::finish);
    BOOST_TEST(!a.drop_node);
    BOOST_TEST((a.ec == error::connection_lost));
    auto w = make();
    created(w);
    w.on_listed(zk_rc::ok, children({other, mine}), 1, 0);
    w.on_watched(zk_rc::ok, 7);
    a = w.on_stop(error::acquire_timeout);
    BOOST_TEST(a.what == kind::abandon);
    BOOST_TEST((a.ec == error::acquire_timeout));
    BOOST_TEST(w.node() == mine); // the driver deletes it
}

BOOST_AUTO_TEST_CASE(a_read_node_waits_only_for_an_earlier_write_node) {
    zk_acquire_fsm f(lock, zk_node_kind::read, "me", false, false);
    BOOST_TEST(f.start().path == lock + "/me-read-");
    f.on_created(zk_rc::ok, lock + "/me-read-0000000003", 5, 1, 0);
    BOOST_TEST(
        f.on_listed(zk_rc::ok, children({"a-read-0000000001", "me-read-0000000003"}), 1, 0).what ==
        kind::grant);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_zookeeper_zk_acquire_fsm
