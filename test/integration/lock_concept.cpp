// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The generic tests of the lock concept (include/corolock/lock_concepts.hpp) over the Redis
// backend; test/unit/local_mutex.cpp runs the same checker over the in-process one.
#include "common/coro_test.hpp"
#include "common/exclusion_check.hpp"
#include "common/meter_check.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::test::lease_of;

BOOST_AUTO_TEST_SUITE(lock_concept)

// Two handles of one name on two connections, three coroutines each.
BOOST_FIXTURE_TEST_CASE(generic_exclusion_checker_over_redis, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex a(conn, "lock:concept", lease_of(10s));
        corolock::mutex b(peer, "lock:concept", lease_of(10s));
        corolock::mutex* const handles[] = {&a, &b};
        const auto r = co_await corolock::test::check_exclusion<corolock::mutex>(
            handles, 3, 10, []() -> awaitable<void> {
                // Long enough for the other connection's attempts to reach the server.
                co_await corolock::test::sleep_for(2ms);
            });
        BOOST_TEST(r.exclusive(2 * 3 * 10), "redis: " << r);
        BOOST_TEST(!exists("lock:concept"));
    });
}

// with_lock, now generic, still hands the Redis mutex's own lease to the body.
BOOST_FIXTURE_TEST_CASE(with_lock_over_redis_through_the_concept, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:concept:scoped", lease_of(10s));
        corolock::fencing_token seen;
        co_await corolock::with_lock(m, [&](corolock::lease& l) -> awaitable<void> {
            seen = l.token();
            BOOST_TEST(exists("lock:concept:scoped"));
            co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
        });
        BOOST_TEST((seen.backend() == corolock::lock_backend::redis));
        BOOST_TEST(seen.value() > 0u);
        BOOST_TEST(!exists("lock:concept:scoped"));
    });
}

// The lock_meter check (test/common/meter_check.hpp) over Redis: the holder's lease is lost by
// a force-unlock from the other connection.
BOOST_FIXTURE_TEST_CASE(generic_lock_meter_check_over_redis, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex a(conn, "lock:concept:metered", lease_of(10s));
        corolock::mutex b(peer, "lock:concept:metered", lease_of(10s));
        corolock::mutex bad(conn, "", lease_of(10s));
        auto lose = [&](corolock::lease&) -> awaitable<void> {
            BOOST_TEST(co_await b.async_force_unlock(asio::use_awaitable));
        };
        co_await corolock::test::check_lock_meter(
            corolock::test::server_meter_kit<corolock::mutex>(a, b, bad, lose));
        BOOST_TEST(!exists("lock:concept:metered"));
    });
}

BOOST_AUTO_TEST_SUITE_END()
