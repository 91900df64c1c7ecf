// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The generic tests of the lock concept (include/corolock/lock_concepts.hpp) over the Redis
// backend; test/unit/local_mutex.cpp runs the same checker over the in-process one.
#include "common/coro_test.hpp"
#include "common/exclusion_check.hpp"
#include "common/family_check.hpp"
#include "common/meter_check.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/fair_mutex.hpp>
#include <corolock/mutex.hpp>
#include <corolock/shared_mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_lock_concept {

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

// The acquire family's rules (test/common/family_check.hpp) over every Redis handle that has
// them, each on two connections: one base class writes them, so they cannot drift apart
// (integration/redlock.cpp runs them over RedLock's three nodes).
BOOST_FIXTURE_TEST_CASE(acquire_family_rules_over_every_redis_handle,
                        corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        auto report = [](const char* handle, const std::vector<std::string>& bad) {
            for (const auto& b : bad)
                BOOST_ERROR(handle << ": " << b);
        };
        {
            corolock::mutex a(conn, "lock:family:mutex", lease_of(10s));
            corolock::mutex b(peer, "lock:family:mutex", lease_of(10s));
            report("mutex", co_await corolock::test::check_acquire_family(a, b));
        }
        {
            corolock::fair_mutex a(conn, "lock:family:fair", lease_of(10s));
            corolock::fair_mutex b(peer, "lock:family:fair", lease_of(10s));
            report("fair_mutex", co_await corolock::test::check_acquire_family(a, b));
        }
        {
            corolock::shared_mutex a(conn, "lock:family:rw", lease_of(10s));
            corolock::shared_mutex b(peer, "lock:family:rw", lease_of(10s));
            report("shared_mutex", co_await corolock::test::check_acquire_family(a, b));
            // The reader side's family: the same rules against a writer.
            constexpr auto as_tuple = asio::as_tuple(asio::use_awaitable);
            using clock = corolock::shared_mutex::clock;
            auto [e1, r1] =
                co_await b.async_acquire_shared_until(clock::time_point::min(), as_tuple);
            BOOST_TEST((!e1 && r1.owns()));
            co_await r1.async_release(as_tuple);
            auto [e2, r2] = co_await b.async_acquire_shared_for(-1ms, as_tuple);
            BOOST_TEST((e2 == corolock::error::invalid_wait));
            auto w = co_await a.async_acquire(asio::use_awaitable);
            auto [e3, r3] =
                co_await b.async_acquire_shared_until(clock::time_point::min(), as_tuple);
            BOOST_TEST((e3 == corolock::error::acquire_timeout && !r3.owns()));
            auto [e4, r4] = co_await b.async_try_acquire_shared(as_tuple);
            BOOST_TEST((!e4 && !r4.owns()));
            co_await w.async_release(asio::use_awaitable);
        }
        for (const char* k : {"lock:family:mutex", "lock:family:fair", "lock:family:rw"})
            BOOST_TEST(!exists(k), k);
    });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_lock_concept
