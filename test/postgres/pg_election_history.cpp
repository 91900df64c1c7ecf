// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL election across processes under SIGKILL (common/election_history.hpp): three
// campaigners and an observer on a throw-away server, the leader killed every 2 s (its lock row
// then lives out its 600 ms lease, and nobody leads meanwhile).
#include "common/election_history.hpp"
#include "pg_test.hpp"
#include <corolock/postgres.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/test/unit_test.hpp>

#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace postgres_pg_election_history {

namespace asio = boost::asio;
namespace history = corolock::test::election_history;
using namespace std::chrono_literals;

namespace {

corolock::pg_election_options options() {
    corolock::pg_election_options o;
    o.lock.lease = 600ms;
    o.lock.retry_max = 200ms;
    return o;
}

asio::awaitable<void> pg_child(corolock::pg_config cfg, int fd, bool observer,
                               history::steady::time_point stop_at) {
    auto ex = co_await asio::this_coro::executor;
    corolock::pg_connection c(ex, cfg, corolock::test::quiet());
    c.async_run(asio::detached);
    {
        corolock::pg_election e(c, "el:history", options());
        if (observer)
            co_await history::observe(fd, e, stop_at);
        else
            co_await history::campaign(fd, e, stop_at);
    }
    c.cancel();
}

} // namespace

BOOST_AUTO_TEST_SUITE(pg_election_history)

BOOST_AUTO_TEST_CASE(three_campaigners_a_killed_leader_every_2_s_and_an_observer) {
    corolock::test::pg_process srv;
    const auto cfg = corolock::test::pg_config_for(srv);
    {
        asio::io_context ioc;
        corolock::pg_connection c(ioc.get_executor(), cfg, corolock::test::quiet());
        c.async_run(asio::detached);
        corolock::test::run_coroutine_test(ioc, [&]() -> asio::awaitable<void> {
            corolock::pg_election e(c, "el:history", options());
            co_await e.async_install();
            c.cancel();
        }());
    }
    history::run_and_check(
        [&](int fd, bool observer, history::steady::time_point stop_at) {
            return pg_child(cfg, fd, observer, stop_at);
        },
        12s, 2s, 50);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace postgres_pg_election_history
