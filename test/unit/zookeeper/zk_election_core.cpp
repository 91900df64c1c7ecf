// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper election's decisions: the record's format both ways (and data of any other
// shape refused), when a campaign waits the lock-delay, what an observer's read says, and the
// observer's order over ZooKeeper views (a one-shot watch may read the next leader first).
#include "zookeeper/core/zk_election_core.hpp"

#include "zookeeper/core/zk_lock_recipe.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_zookeeper_zk_election_core {

using namespace corolock::detail;

BOOST_AUTO_TEST_SUITE(zk_election_core)

BOOST_AUTO_TEST_CASE(the_record_path_is_a_child_the_lock_recipe_ignores) {
    BOOST_TEST(zk_record_path("/app/leader-of-x") == "/app/leader-of-x/leader");
    BOOST_TEST(!parse_node_name("leader").has_value());
}

BOOST_AUTO_TEST_CASE(records_round_trip) {
    const zk_record live{true, 4294967301u, 3, "/e/abc-lock-0000000007", "v with spaces\nlines"};
    const auto text = format_record(live);
    BOOST_TEST(text == "live 4294967301 3\n/e/abc-lock-0000000007\nv with spaces\nlines");
    const auto back = parse_record(text);
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST(back->live);
    BOOST_TEST(back->term == live.term);
    BOOST_TEST(back->version == 3u);
    BOOST_TEST(back->node == live.node);
    BOOST_TEST(back->value == live.value);
    const auto ended = parse_record(format_record({false, 9, 2, {}, {}}));
    BOOST_REQUIRE(ended.has_value());
    BOOST_TEST(!ended->live);
    BOOST_TEST(ended->term == 9u);
    BOOST_TEST(ended->version == 2u);
    BOOST_TEST(format_record({false, 9, 2, "/ignored", "ignored"}) == "ended 9 2");
    const auto empty_value = parse_record("live 1 1\n/e/n\n");
    BOOST_REQUIRE(empty_value.has_value());
    BOOST_TEST(empty_value->value.empty());
}

BOOST_AUTO_TEST_CASE(data_of_another_shape_is_refused) {
    for (const char* bad :
         {"", "live", "live 1", "live 1 1", "live 1 1\n/e/n", "live 0 1\n/e/n\nv",
          "live 1 0\n/e/n\nv", "live -1 1\n/e/n\nv", "live 1 1\nrelative\nv", "live 1 1\n\nv",
          "ended 1", "ended 1 1\nx", "ended 1 x", "LIVE 1 1\n/e/n\nv", "live 1  1\n/e/n\nv",
          "live 18446744073709551616 1\n/n\nv", "random bytes"})
        BOOST_TEST(!parse_record(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(the_lock_delay_is_waited_after_a_lost_leader_only) {
    const std::optional<zk_record> none;
    const std::optional<zk_record> resigned = zk_record{false, 5, 1, {}, {}};
    const std::optional<zk_record> lost = zk_record{true, 5, 2, "/e/n", "v"};
    const std::optional<zk_record> mine = zk_record{true, 8, 1, "/e/m", "v"};
    BOOST_TEST((begin_step(none, 8, true) == zk_begin::begin));
    BOOST_TEST((begin_step(resigned, 8, true) == zk_begin::begin));
    BOOST_TEST((begin_step(lost, 8, true) == zk_begin::delay));
    BOOST_TEST((begin_step(lost, 8, false) == zk_begin::begin));
    // A record of this very term (an earlier begin whose reply was lost) is not a lost leader.
    BOOST_TEST((begin_step(mine, 8, true) == zk_begin::begin));
}

BOOST_AUTO_TEST_CASE(an_observers_read_says_who_leads) {
    const auto v0 = view_of(std::nullopt, false);
    BOOST_TEST(!v0.present);
    BOOST_TEST(v0.term == 0u);
    const zk_record live{true, 7, 2, "/e/n", "v"};
    const auto v1 = view_of(live, true);
    BOOST_TEST(v1.present);
    BOOST_TEST(v1.term == 7u);
    BOOST_TEST(v1.version == 2u);
    BOOST_TEST(v1.value == "v");
    const auto v2 = view_of(live, false); // its node is gone: lost
    BOOST_TEST(!v2.present);
    BOOST_TEST(v2.ended);
    BOOST_TEST(v2.term == 7u);
    const auto v3 = view_of(zk_record{false, 7, 2, {}, {}}, false);
    BOOST_TEST(!v3.present);
    BOOST_TEST(v3.ended);
}

BOOST_AUTO_TEST_CASE(the_observer_orders_zookeeper_views) {
    observe_core o(corolock::lock_backend::zookeeper);
    const zk_record a{true, 7, 1, "/e/a", "a"};
    auto e = o.on_view(view_of(std::nullopt, false));
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(!e->present);
    e = o.on_view(view_of(a, true));
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST((e->term.backend() == corolock::lock_backend::zookeeper));
    BOOST_TEST(e->term.value() == 7u);
    // The same read again (a watch that fired for nothing new): nothing to deliver.
    BOOST_TEST(!o.on_view(view_of(a, true)).has_value());
    // The next leader read before the end: delivered, the end implied.
    const zk_record b{true, 12, 1, "/e/b", "b"};
    e = o.on_view(view_of(b, true));
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->value == "b");
    // A late read of the older term is dropped.
    BOOST_TEST(!o.on_view(view_of(a, false)).has_value());
    BOOST_TEST(!o.on_view(view_of(a, true)).has_value());
    e = o.on_view(view_of(b, false));
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(!e->present);
    BOOST_TEST(e->term.value() == 12u);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_zookeeper_zk_election_core
