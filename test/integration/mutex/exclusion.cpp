// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Mutual exclusion across processes, threads and coroutines sharing one mutex (review S6,
// L6), and nested holds that never end the outer section (review S7).
#include "integration/mutex/fixture.hpp"

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_mutex_exclusion {

using namespace mutex_test;

BOOST_AUTO_TEST_SUITE(mutex)
BOOST_AUTO_TEST_SUITE(exclusion)

// ---------------------------------------------------------------------------------------------
// Mutual exclusion

BOOST_AUTO_TEST_CASE(mutual_exclusion_two_processes_four_threads) {
    // 2 processes x 4 threads x 100 coroutines increment one counter with a non-atomic GET
    // then SET under one lock. In each process the coroutines share one mutex handle (the
    // intended use: S6 was this very sharing letting a second coroutine in).
    redis_process srv;
    constexpr int processes = 2, threads = 4, coroutines = 100, rounds = 5; // 1,000 increments
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
        const pid_t child = ::fork();
        BOOST_REQUIRE(child >= 0);
        if (child > 0) {
            children.push_back(child);
            continue;
        }
        asio::thread_pool pool(threads);
        corolock::connection conn(pool.get_executor(), config_for(srv), quiet());
        conn.async_run(asio::detached);
        std::atomic<int> errors{0}, finished{0}, inside{0};
        corolock::mutex m(conn, "lock:counter", lease_of(10s));
        auto worker = [&]() -> awaitable<void> {
            for (int i = 0; i < rounds; ++i) {
                auto [ec, l] = co_await m.async_acquire_for(60s, tuple_deferred);
                if (ec || !l.valid()) {
                    ++errors;
                    continue;
                }
                if (inside.fetch_add(1) != 0)
                    ++errors; // two coroutines of this process inside at once
                corolock::request get;
                get.push("GET", "counter");
                corolock::generic_response resp;
                co_await conn.async_exec(get, resp);
                const auto& v = resp.at(0);
                corolock::request set;
                set.push("SET", "counter",
                         v.data_type == corolock::resp3::type::null ? 1 : std::stoi(v.value) + 1);
                co_await conn.async_exec(set, corolock::ignore);
                inside.fetch_sub(1);
                auto [rec] = co_await l.async_release(tuple_deferred);
                if (rec)
                    ++errors;
            }
        };
        for (int i = 0; i < coroutines; ++i)
            asio::co_spawn(pool, worker(), [&](std::exception_ptr e) {
                if (e)
                    ++errors;
                ++finished;
            });
        while (finished < coroutines)
            std::this_thread::sleep_for(10ms);
        conn.cancel();
        pool.join();
        ::_exit(errors == 0 ? 0 : 1);
    }
    for (pid_t c : children) {
        int status = 0;
        BOOST_REQUIRE(::waitpid(c, &status, 0) == c);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    BOOST_TEST(srv.command({"GET", "counter"}) ==
               "$4\r\n" + std::to_string(processes * coroutines * rounds) + "\r\n");
}

namespace {

// A service with its lock as a member, shared by every request handler (S6's shape).
struct inventory {
    explicit inventory(corolock::connection& c) : lock(c, "lock:inventory", lease_of(5s)) {}
    corolock::mutex lock;
    std::atomic<int> inside{0}, max_inside{0}, sections{0}, invalid{0};

    void enter(const lease& l) {
        if (!l.valid())
            ++invalid;
        const int now = ++inside;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        ++sections;
    }
    void leave() { --inside; }
};

} // namespace

// One mutex object shared by 100 coroutines on 2 threads (review S6, L6).
BOOST_FIXTURE_TEST_CASE(one_shared_mutex_excludes_100_coroutines_on_two_threads, fixture) {
    constexpr int n = 100, rounds = 3;
    int max_inside = -1, sections = -1, invalid = -1, errors = -1, wl_max = -1, wl_sections = -1;
    bool key_left = true, wl_hung = true;
    run(
        [&]() -> awaitable<void> {
            inventory inv(conn);
            std::atomic<int> errs{0};
            auto ex = co_await asio::this_coro::executor;
            auto worker = [&]() -> awaitable<void> {
                for (int i = 0; i < rounds; ++i) {
                    auto [ec, l] = co_await inv.lock.async_acquire_for(60s, tuple_deferred);
                    if (ec) {
                        ++errs;
                        continue;
                    }
                    inv.enter(l);
                    co_await sleep_for(200us); // yield inside the section
                    inv.leave();
                    auto [rec] = co_await l.async_release(tuple_deferred);
                    if (rec)
                        ++errs;
                }
            };
            std::vector<decltype(asio::co_spawn(ex, worker(), asio::deferred))> ops;
            for (int i = 0; i < n; ++i)
                ops.push_back(asio::co_spawn(ex, worker(), asio::deferred));
            co_await asio::experimental::make_parallel_group(std::move(ops))
                .async_wait(asio::experimental::wait_for_all(), asio::deferred);
            max_inside = inv.max_inside;
            sections = inv.sections;
            invalid = inv.invalid;

            // The same through with_lock.
            inventory wl(conn);
            auto scoped = [&]() -> awaitable<void> {
                for (int i = 0; i < rounds; ++i)
                    co_await corolock::with_lock(wl.lock, [&](lease& l) -> awaitable<void> {
                        wl.enter(l);
                        co_await sleep_for(200us);
                        wl.leave();
                    });
            };
            // Not a parallel group: a with_lock hung by the wait_lost cancellation bug (see
            // with_lock_body_that_finishes_at_once) must fail this test, not hang it. Such a
            // hang is ended by deleting the lock (the hung with_lock then throws lease_lost).
            std::atomic<int> scoped_done{0};
            for (int i = 0; i < n; ++i)
                asio::co_spawn(ex, scoped(), [&](std::exception_ptr e) {
                    if (e)
                        ++errs;
                    ++scoped_done;
                });
            wl_hung = !co_await eventually([&] { return scoped_done == n; }, 60s, 20ms);
            corolock::mutex admin(peer, "lock:inventory");
            for (int i = 0; i < 50 && scoped_done != n; ++i) {
                co_await admin.async_force_unlock();
                co_await eventually([&] { return scoped_done == n; }, 2s, 20ms);
            }
            wl_max = wl.max_inside;
            wl_sections = wl.sections;
            errors = errs;
            key_left = exists("lock:inventory");
        },
        120s, 2);
    BOOST_TEST(errors == 0);
    BOOST_TEST(sections == n * rounds);
    BOOST_TEST(max_inside == 1);
    BOOST_TEST(invalid == 0);
    BOOST_TEST(!wl_hung);
    BOOST_TEST(wl_sections == n * rounds);
    BOOST_TEST(wl_max == 1);
    BOOST_TEST(!key_left);
}

// ---------------------------------------------------------------------------------------------
// Nested holds

// A nested hold costs no round trip and never ends the outer section (review S7: a guard
// released the outer hold; S1/S2/L4: nested acquires went to Redis).
BOOST_FIXTURE_TEST_CASE(nested_hold_never_releases_the_outer_section, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:nested", lease_of(3s)), other(peer, "lock:nested");
        lease outer = co_await m.async_acquire();
        const auto attempts = stats().attempts;
        const auto commands = conn.stats().commands;
        {
            auto h = outer.hold(); // helper code: "acquire again"
            BOOST_TEST(h.valid());
            BOOST_TEST(h.token() == outer.token());
            {
                auto h2 = outer.hold();
                BOOST_TEST(h2.valid());
            } // inner "release"
        }     // helper's "release"
        BOOST_TEST(stats().attempts == attempts);
        BOOST_TEST(conn.stats().commands - commands <= 1u); // a health-check PING at most
        co_await sleep_for(50ms); // anything a nested hold had sent would have landed
        BOOST_TEST(outer.valid());
        BOOST_TEST(owner("lock:nested") == bulk(outer.owner_id()));
        lease l = co_await other.async_try_acquire();
        BOOST_TEST(!l.owns()); // still inside the outer section: nobody else gets in

        // The outer lease released while a nested hold lives: nothing is sent, the hold keeps
        // the lock until it ends.
        auto h = outer.hold();
        const auto held_token = outer.token();
        auto [rec] = co_await outer.async_release(tuple_deferred);
        BOOST_TEST(!rec);
        BOOST_TEST(!outer.owns());
        co_await sleep_for(50ms);
        BOOST_TEST(exists("lock:nested"));
        BOOST_TEST(h.valid());
        BOOST_TEST(h.token() == held_token);
        co_await sleep_for(1200ms); // past a renewal (lease/3): the watchdog still serves the hold
        BOOST_TEST(h.valid());
        BOOST_TEST(exists("lock:nested"));
        h.reset(); // the last share: released without waiting
        BOOST_TEST(co_await eventually([&] { return !exists("lock:nested"); }, 2s));
        BOOST_TEST(co_await eventually([&] { return stats().leases_held == 0u; }, 1s));
        lease after = co_await other.async_try_acquire();
        BOOST_TEST(after.owns());
        co_await after.async_release();
    });
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_mutex_exclusion
