// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The watchdog: renewals, their batches, max_hold, and completions that run outside the
// connection's strand, on the caller's executor (review S4).
#include "integration/mutex/fixture.hpp"

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_mutex_watchdog {

using namespace mutex_test;

BOOST_AUTO_TEST_SUITE(mutex)
BOOST_AUTO_TEST_SUITE(watchdog)

// ---------------------------------------------------------------------------------------------
// Renewals

BOOST_FIXTURE_TEST_CASE(watchdog_keeps_lock_and_stops_on_release, fixture) {
    run([&]() -> awaitable<void> {
        // 900 ms: a renewal every 300 ms. A 300 ms lease (a renewal every 100 ms) was lost on a
        // loaded machine under ASan, a stall the watchdog is not meant to ride out.
        corolock::mutex m(conn, "lock:watchdog", lease_of(900ms));
        lease l = co_await m.async_acquire();
        co_await sleep_for(2700ms); // three leases
        BOOST_TEST(l.valid());
        BOOST_TEST(!l.lost());
        BOOST_TEST(exists("lock:watchdog"));
        const auto renewals = stats().renewals;
        BOOST_TEST(renewals >= 3u);
        // Watch the server itself: after the release, no renew script may reach it.
        asio::ip::tcp::socket monitor(co_await asio::this_coro::executor);
        co_await monitor.async_connect({asio::ip::make_address("127.0.0.1"), srv.port()},
                                       asio::use_awaitable);
        co_await asio::async_write(monitor, asio::buffer(std::string("MONITOR\r\n")),
                                   asio::use_awaitable);
        std::string seen;
        auto read_for = [&](std::chrono::milliseconds d) -> awaitable<void> {
            const auto until = clock_type::now() + d;
            char buf[4096];
            while (clock_type::now() < until) {
                asio::steady_timer t(co_await asio::this_coro::executor, 20ms);
                auto r =
                    co_await (monitor.async_read_some(asio::buffer(buf), tuple_use_awaitable) ||
                              t.async_wait(tuple_use_awaitable));
                if (r.index() == 0)
                    seen.append(buf, std::get<1>(std::get<0>(r)));
            }
        };
        co_await read_for(400ms); // renewals (every 100 ms) are visible while held
        co_await l.async_release();
        co_await read_for(500ms);
        const auto& renew_sha = corolock::detail::renew_script().sha1();
        const auto released = seen.find(corolock::detail::release_script().sha1());
        BOOST_REQUIRE(released != std::string::npos);
        BOOST_TEST(seen.find(renew_sha) < released);                     // renewed while held
        BOOST_TEST(seen.find(renew_sha, released) == std::string::npos); // never after release
        BOOST_TEST(!exists("lock:watchdog"));
        BOOST_TEST(stats().leases_held == 0u);
    });
}

BOOST_FIXTURE_TEST_CASE(renewals_are_batched, fixture) {
    run([&]() -> awaitable<void> {
        std::vector<std::unique_ptr<corolock::mutex>> locks;
        std::vector<lease> leases;
        for (int i = 0; i < 250; ++i) {
            locks.push_back(std::make_unique<corolock::mutex>(
                conn, "lock:batch:" + std::to_string(i), lease_of(600ms)));
            leases.push_back(co_await locks.back()->async_acquire());
        }
        const auto before = stats();
        co_await sleep_for(700ms);
        const auto after = stats();
        const auto renewed = after.renewals - before.renewals;
        const auto calls = after.renewal_calls - before.renewal_calls;
        BOOST_TEST_MESSAGE(renewed << " renewals in " << calls << " script calls");
        BOOST_TEST(renewed >= 250u);
        BOOST_TEST(calls * 20 <= renewed); // ~100 per call (a few partial batches)
        BOOST_TEST(after.leases_held == 250u);
        for (auto& l : leases) {
            BOOST_TEST(l.valid());
            co_await l.async_release();
        }
        BOOST_TEST(stats().leases_held == 0u);
    });
}

BOOST_FIXTURE_TEST_CASE(max_hold_stops_the_watchdog_and_tells_the_holder, fixture) {
    run([&]() -> awaitable<void> {
        auto opts = lease_of(3s);
        opts.max_hold = 700ms;
        corolock::mutex m(conn, "lock:maxhold", opts);
        lease l = co_await m.async_acquire();
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::max_hold_reached);
        BOOST_TEST(ec == corolock::condition::lock_lost);
        BOOST_TEST(l.lost());
        BOOST_TEST(!l.valid());
        auto [again] = co_await l.async_wait_lost(tuple_deferred); // the reason is kept (Q6)
        BOOST_TEST(again == error::max_hold_reached);
        // The key is deleted at once, not left to run out its 3 s lease.
        BOOST_TEST(co_await eventually([&] { return !exists("lock:maxhold"); }, 500ms));
        auto [rec] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(rec == error::max_hold_reached);
    });
}

// ---------------------------------------------------------------------------------------------
// Completions outside the connection's strand (review S4)

// Completions run outside the connection's strand (review S4). A coroutine resumed by
// corolock that hogs its thread must not stop the watchdog of other leases.
BOOST_FIXTURE_TEST_CASE(completions_run_outside_the_connection_strand, fixture) {
    bool x_valid = false, x_lost = true, key_there = false;
    std::uint64_t renewed = 0, lost_count = 1;
    run(
        [&]() -> awaitable<void> {
            corolock::mutex mx(conn, "lock:strand:x", lease_of(600ms));
            corolock::mutex my(conn, "lock:strand:y", lease_of(600ms));
            lease x = co_await mx.async_acquire();
            lease y = co_await my.async_acquire();
            // Resumed by corolock: 1.5 s of CPU with no co_await (2.5 leases).
            const auto before = stats();
            spin_for(1500ms);
            const auto after = stats();
            renewed = after.renewals - before.renewals;
            lost_count = after.leases_lost;
            x_valid = x.valid();
            x_lost = x.lost();
            key_there = exists("lock:strand:x");
            co_await x.async_release(tuple_deferred);
            co_await y.async_release(tuple_deferred);
        },
        30s, 2);
    BOOST_TEST_MESSAGE(renewed << " renewals during the 1.5 s spin (lease 600 ms, 2 leases)");
    BOOST_TEST(renewed >= 6u); // about 14: every 200 ms for each of the two leases
    BOOST_TEST(lost_count == 0u);
    BOOST_TEST(x_valid);
    BOOST_TEST(!x_lost);
    BOOST_TEST(key_there);
}

// The connection's strand is concrete only over an io_context's own executor, and completions
// take a shortcut for io_context executors and strands of them (io/deliver.hpp); every
// other executor takes the type-erased path. On both, locks are granted, refused, released and
// handed off, and every completion runs on the caller's own executor.
BOOST_AUTO_TEST_CASE(connections_on_other_executors_complete_on_the_callers_executor) {
    redis_process srv;
    asio::io_context ioc;
    asio::thread_pool pool(2);
    // One name per connection: the last lease is dropped right before the connection stops,
    // so its release may never reach Redis (the key then waits for its lease to expire).
    auto body = [&](asio::any_io_executor conn_ex, std::string name,
                    std::function<bool()> on_callers_executor) -> awaitable<int> {
        int wrong = 0;
        corolock::connection conn(conn_ex, config_for(srv), quiet());
        conn.async_run(asio::detached);
        corolock::mutex m(conn, name);
        for (int i = 0; i < 20; ++i) {
            lease l = co_await m.async_acquire();
            wrong += !on_callers_executor() || !l.valid();
            auto [ec, other] = co_await m.async_try_acquire(tuple_deferred);
            wrong += !on_callers_executor() || ec || other.valid();
            if (i % 2 == 0) {
                auto [rec] = co_await l.async_release(tuple_deferred);
                wrong += !on_callers_executor() || rec;
            } // else dropped: released without waiting, the next acquire queues behind it
        }
        conn.cancel();
        co_return wrong;
    };
    // A thread pool's executor (erased strand), and a strand of the io_context (a concrete
    // completion executor that is not the io_context's own).
    auto pool_ex = pool.get_executor();
    auto on_pool = asio::co_spawn(
        pool_ex,
        body(pool_ex, "lock:executor:pool", [pool_ex] { return pool_ex.running_in_this_thread(); }),
        asio::use_future);
    auto strand = asio::make_strand(ioc);
    auto on_strand = asio::co_spawn(
        strand,
        body(strand, "lock:executor:strand", [strand] { return strand.running_in_this_thread(); }),
        asio::use_future);
    const auto limit = clock_type::now() + 30s;
    while (on_strand.wait_for(0s) != std::future_status::ready && clock_type::now() < limit)
        ioc.run_one_for(100ms);
    BOOST_TEST_REQUIRE((on_strand.wait_for(0s) == std::future_status::ready));
    BOOST_TEST(on_strand.get() == 0);
    BOOST_TEST(on_pool.get() == 0);
    pool.join();
}

// ---------------------------------------------------------------------------------------------
// The timer left to run out after the last lease (planned a long lease's lease/3 ahead): a
// shorter lease that follows is still renewed, lost at its deadline, found deleted, on time
// (review of 2026-11-26; without the re-plan each would wait out the 30 s timer).

namespace {

awaitable<void> long_lease_cycle(corolock::connection& c) {
    corolock::mutex m(c, "lock:long-cycle", lease_of(90s)); // the timer: 30 s ahead
    lease l = co_await m.async_acquire();
    co_await l.async_release();
}

} // namespace

BOOST_FIXTURE_TEST_CASE(a_short_lease_after_a_long_one_is_renewed_on_time, fixture) {
    run([&]() -> awaitable<void> {
        co_await long_lease_cycle(conn);
        const auto renewals = stats().renewals;
        corolock::mutex m(conn, "lock:short-after-long", lease_of(900ms)); // renewed every 300 ms
        lease l = co_await m.async_acquire();
        co_await sleep_for(2700ms);
        BOOST_TEST(l.valid());
        BOOST_TEST(exists("lock:short-after-long"));
        BOOST_TEST(stats().renewals - renewals >= 3u);
        auto [ec] = co_await l.async_release(tuple_use_awaitable);
        BOOST_TEST(!ec);
    });
}

BOOST_FIXTURE_TEST_CASE(a_fixed_lease_after_a_long_one_is_lost_at_its_deadline, fixture) {
    run([&]() -> awaitable<void> {
        co_await long_lease_cycle(conn);
        corolock::mutex m(conn, "lock:fixed-after-long", lease_of(500ms, false));
        const auto t0 = clock_type::now();
        lease l = co_await m.async_acquire();
        auto [ec] = co_await l.async_wait_lost(tuple_use_awaitable);
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST(l.lost());
        BOOST_TEST((clock_type::now() - t0 < 5s));
    });
}

BOOST_FIXTURE_TEST_CASE(a_key_deleted_after_a_long_lease_cycle_is_found_at_the_next_renewal,
                        fixture) {
    run([&]() -> awaitable<void> {
        co_await long_lease_cycle(conn);
        corolock::mutex m(conn, "lock:deleted-after-long", lease_of(900ms));
        lease l = co_await m.async_acquire();
        srv.command({"DEL", "lock:deleted-after-long"});
        const auto t0 = clock_type::now();
        asio::steady_timer guard(co_await asio::this_coro::executor, 10s);
        auto r = co_await (l.async_wait_lost(tuple_use_awaitable) ||
                           guard.async_wait(tuple_use_awaitable));
        BOOST_TEST(r.index() == 0u);
        BOOST_TEST(l.lost());
        BOOST_TEST((clock_type::now() - t0 < 5s));
    });
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_mutex_watchdog
