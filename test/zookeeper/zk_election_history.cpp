// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper election across processes under SIGKILL (common/election_history.hpp): three
// campaigners and an observer on the shared server, the leader killed every 3 s (its session
// then lasts 2 s more, and nobody leads meanwhile).
#include "common/election_history.hpp"
#include "zk_test.hpp"
#include <corolock/zookeeper.hpp>

#include <boost/asio/this_coro.hpp>
#include <boost/test/unit_test.hpp>

#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace zookeeper_zk_election_history {

namespace asio = boost::asio;
namespace history = corolock::test::election_history;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> zk_child(std::string hosts, int fd, bool observer,
                               history::steady::time_point stop_at) {
    auto ex = co_await asio::this_coro::executor;
    corolock::test::running_zk c(ex, corolock::test::zk_test_config(hosts));
    corolock::zk_election e(*c, "/corolock/test/el/history");
    if (observer)
        co_await history::observe(fd, e, stop_at);
    else
        co_await history::campaign(fd, e, stop_at);
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_election_history)

BOOST_AUTO_TEST_CASE(three_campaigners_a_killed_leader_every_3_s_and_an_observer) {
    const auto hosts = corolock::test::shared_zk().connect_string();
    history::run_and_check(
        [&](int fd, bool observer, history::steady::time_point stop_at) {
            return zk_child(hosts, fd, observer, stop_at);
        },
        14s, 3s, 50);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace zookeeper_zk_election_history
