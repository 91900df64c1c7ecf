// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/test_config.hpp"
#include "detail/lock_scripts.hpp"
#include <corolock/mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::mutex_options;
using corolock::test::config_for;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;

namespace {

constexpr auto tuple_deferred = asio::as_tuple(asio::deferred);
constexpr auto tuple_use_awaitable = asio::as_tuple(asio::use_awaitable);
using namespace asio::experimental::awaitable_operators;

mutex_options lease_of(std::chrono::steady_clock::duration lease, bool watchdog = true) {
    mutex_options o;
    o.lease = lease;
    o.watchdog = watchdog;
    return o;
}

// A connection running on an io_context for the length of a test body.
struct fixture {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn{ioc.get_executor(), config_for(srv), quiet()};

    void run(std::function<awaitable<void>()> body, std::chrono::seconds limit = 60s,
             unsigned threads = 1) {
        run_coroutine_test(
            ioc,
            [&]() -> awaitable<void> {
                conn.async_run(asio::detached);
                co_await body();
                conn.cancel();
            }(),
            limit, threads);
    }
    std::string hget(const std::string& key, const std::string& field) {
        return srv.command({"HGET", key, field});
    }
    bool exists(const std::string& key) { return srv.command({"EXISTS", key}) == ":1\r\n"; }
};

} // namespace

BOOST_AUTO_TEST_SUITE(mutex)

BOOST_FIXTURE_TEST_CASE(try_acquire_release_and_ownership, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex a(conn, "lock:basic"), b(conn, "lock:basic");
        BOOST_TEST(a.owner_id().size() == 32u);
        BOOST_TEST(a.owner_id() != b.owner_id());
        BOOST_TEST(co_await a.async_try_acquire());
        BOOST_TEST(a.held());
        BOOST_TEST(a.token() > 0u);
        BOOST_TEST(hget("lock:basic", "owner") == "$32\r\n" + a.owner_id() + "\r\n");

        BOOST_TEST(!(co_await b.async_try_acquire())); // held by a: not an error
        BOOST_TEST(!b.held());
        auto [ec] = co_await b.async_release(tuple_deferred);
        BOOST_TEST(ec == error::not_owner); // b never held it
        BOOST_TEST(ec == corolock::condition::lock_lost);
        BOOST_TEST(exists("lock:basic")); // and nothing changed

        std::int64_t ttl = co_await a.async_remaining_ttl();
        BOOST_TEST(ttl > 0);
        co_await a.async_release();
        BOOST_TEST(!a.held());
        BOOST_TEST(!exists("lock:basic"));
        auto [ec2] = co_await a.async_release(tuple_deferred);
        BOOST_TEST(ec2 == error::not_owner); // double release
        BOOST_TEST(co_await b.async_try_acquire());
        co_await b.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(reentrant_hold_counts, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:reentrant");
        co_await m.async_acquire();
        const auto token = m.token();
        const auto attempts = corolock::get_lock_stats(conn).attempts;
        co_await m.async_acquire(); // watchdog lease known valid: no round trip
        co_await m.async_acquire();
        BOOST_TEST(m.hold_count() == 3u);
        BOOST_TEST(m.token() == token);
        BOOST_TEST(corolock::get_lock_stats(conn).attempts == attempts);
        BOOST_TEST(corolock::get_lock_stats(conn).fast_reentries >= 2u);
        co_await m.async_release();
        co_await m.async_release();
        BOOST_TEST(exists("lock:reentrant")); // only the last release frees it
        co_await m.async_release();
        BOOST_TEST(!exists("lock:reentrant"));

        // Fixed lease: the nested acquire goes to Redis and refreshes the TTL.
        corolock::mutex f(conn, "lock:reentrant:fixed", lease_of(5s, false));
        co_await f.async_acquire();
        co_await f.async_acquire();
        BOOST_TEST(f.hold_count() == 2u);
        BOOST_TEST(hget("lock:reentrant:fixed", "count") == "$1\r\n2\r\n");
        co_await f.async_release();
        BOOST_TEST(hget("lock:reentrant:fixed", "count") == "$1\r\n1\r\n");
        co_await f.async_release();
        BOOST_TEST(!exists("lock:reentrant:fixed"));
    });
}

BOOST_FIXTURE_TEST_CASE(invalid_arguments_fail_before_redis, fixture) {
    // A connection that never runs: anything sent would wait, so prompt errors prove nothing
    // was sent.
    asio::io_context idle;
    corolock::connection offline(idle.get_executor(), config_for(srv), quiet());
    corolock::mutex empty(offline, "");
    corolock::mutex braces(offline, "a}b"); // no hash tag, and a '}': refused
    corolock::mutex zero(offline, "x", lease_of(0s));
    corolock::mutex negative(offline, "x", lease_of(-5s));
    corolock::mutex ok(offline, "x");
    std::vector<error_code> got;
    auto record = [&](error_code ec) { got.push_back(ec); };
    empty.async_acquire(record);
    zero.async_acquire(record);
    negative.async_acquire(record);
    ok.async_acquire_for(-1ms, record);
    empty.async_try_acquire([&](error_code ec, bool) { got.push_back(ec); });
    braces.async_acquire(record);
    idle.run_for(2s);
    BOOST_REQUIRE_EQUAL(got.size(), 6u);
    BOOST_TEST(got[0] == error::invalid_name);
    BOOST_TEST(got[1] == error::invalid_lease);
    BOOST_TEST(got[2] == error::invalid_lease);
    BOOST_TEST(got[3] == error::invalid_wait);
    BOOST_TEST(got[4] == corolock::condition::invalid_argument);
    BOOST_TEST(got[5] == error::invalid_name);
    BOOST_TEST(offline.stats().commands == 0u);
}

BOOST_FIXTURE_TEST_CASE(wrong_type_key_is_left_untouched, fixture) {
    run([&]() -> awaitable<void> {
        BOOST_TEST(srv.command({"SET", "lock:wrong", "user data"}) == "+OK\r\n");
        corolock::mutex m(conn, "lock:wrong");
        auto [ec, ok] = co_await m.async_try_acquire(tuple_deferred);
        BOOST_TEST(ec == error::wrong_type);
        BOOST_TEST(!m.held());
        auto [ec2] = co_await m.async_acquire(tuple_deferred);
        BOOST_TEST(ec2 == error::wrong_type);
        BOOST_TEST(srv.command({"GET", "lock:wrong"}) == "$9\r\nuser data\r\n");
        auto [ec3, deleted] = co_await m.async_force_unlock(tuple_deferred);
        BOOST_TEST(!ec3);
        BOOST_TEST(!deleted); // not a lock: force unlock refuses too
        BOOST_TEST(srv.command({"GET", "lock:wrong"}) == "$9\r\nuser data\r\n");
    });
}

BOOST_FIXTURE_TEST_CASE(acquire_for_times_out, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex holder(conn, "lock:timeout"), waiter(conn, "lock:timeout");
        co_await holder.async_acquire();
        auto [ec] = co_await waiter.async_acquire_for(200ms, tuple_deferred);
        BOOST_TEST(ec == error::acquire_timeout);
        BOOST_TEST(ec == corolock::condition::lock_contention);
        BOOST_TEST(!waiter.held());
        co_await holder.async_release();
        co_await waiter.async_acquire_for(1s);
        BOOST_TEST(waiter.held());
        co_await waiter.async_release();
    });
}

BOOST_AUTO_TEST_CASE(mutual_exclusion_two_processes_four_threads) {
    // 2 processes x 4 threads x 100 coroutines, each coroutine with its own mutex object,
    // increment one counter with a non-atomic GET then SET under one lock.
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
        std::atomic<int> errors{0}, finished{0};
        auto worker = [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:counter", lease_of(10s));
            for (int i = 0; i < rounds; ++i) {
                auto [ec] = co_await m.async_acquire_for(60s, tuple_deferred);
                if (ec) {
                    ++errors;
                    continue;
                }
                corolock::request get;
                get.push("GET", "counter");
                corolock::generic_response resp;
                co_await conn.async_exec(get, resp);
                const auto& v = resp.at(0);
                corolock::request set;
                set.push("SET", "counter",
                         v.data_type == corolock::resp3::type::null ? 1 : std::stoi(v.value) + 1);
                co_await conn.async_exec(set, corolock::ignore);
                co_await m.async_release();
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

BOOST_FIXTURE_TEST_CASE(watchdog_keeps_lock_and_stops_on_release, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:watchdog", lease_of(300ms));
        co_await m.async_acquire();
        co_await sleep_for(1200ms); // four leases
        BOOST_TEST(m.held());
        BOOST_TEST(!m.lost());
        BOOST_TEST(exists("lock:watchdog"));
        const auto renewals = corolock::get_lock_stats(conn).renewals;
        BOOST_TEST(renewals >= 3u);
        // Watch the server itself: after the release, no renew script may reach it.
        asio::ip::tcp::socket monitor(co_await asio::this_coro::executor);
        co_await monitor.async_connect({asio::ip::make_address("127.0.0.1"), srv.port()},
                                       asio::use_awaitable);
        co_await asio::async_write(monitor, asio::buffer(std::string("MONITOR\r\n")),
                                   asio::use_awaitable);
        std::string seen;
        auto read_for = [&](std::chrono::milliseconds d) -> awaitable<void> {
            const auto until = std::chrono::steady_clock::now() + d;
            char buf[4096];
            while (std::chrono::steady_clock::now() < until) {
                asio::steady_timer t(co_await asio::this_coro::executor, 20ms);
                auto r =
                    co_await (monitor.async_read_some(asio::buffer(buf), tuple_use_awaitable) ||
                              t.async_wait(tuple_use_awaitable));
                if (r.index() == 0)
                    seen.append(buf, std::get<1>(std::get<0>(r)));
            }
        };
        co_await read_for(400ms); // renewals (every 100 ms) are visible while held
        co_await m.async_release();
        co_await read_for(500ms);
        const auto& renew_sha = corolock::detail::renew_script().sha1();
        const auto released = seen.find(corolock::detail::release_script().sha1());
        BOOST_REQUIRE(released != std::string::npos);
        BOOST_TEST(seen.find(renew_sha) < released);                     // renewed while held
        BOOST_TEST(seen.find(renew_sha, released) == std::string::npos); // never after release
        BOOST_TEST(!exists("lock:watchdog"));
    });
}

BOOST_FIXTURE_TEST_CASE(renewals_are_batched, fixture) {
    run([&]() -> awaitable<void> {
        std::vector<std::unique_ptr<corolock::mutex>> locks;
        for (int i = 0; i < 250; ++i) {
            locks.push_back(std::make_unique<corolock::mutex>(
                conn, "lock:batch:" + std::to_string(i), lease_of(600ms)));
            co_await locks.back()->async_acquire();
        }
        const auto before = corolock::get_lock_stats(conn);
        co_await sleep_for(700ms);
        const auto after = corolock::get_lock_stats(conn);
        const auto renewed = after.renewals - before.renewals;
        const auto calls = after.renewal_calls - before.renewal_calls;
        BOOST_TEST_MESSAGE(renewed << " renewals in " << calls << " script calls");
        BOOST_TEST(renewed >= 250u);
        BOOST_TEST(calls * 20 <= renewed); // ~100 per call (a few partial batches)
        for (auto& l : locks) {
            BOOST_TEST(l->held());
            co_await l->async_release();
        }
    });
}

BOOST_FIXTURE_TEST_CASE(key_deleted_from_outside_signals_lost, fixture) {
    run([&]() -> awaitable<void> {
        std::atomic<int> callbacks{0};
        auto opts = lease_of(300ms);
        opts.on_lost = [&](error_code ec) {
            if (ec == error::lease_lost)
                ++callbacks;
        };
        corolock::mutex m(conn, "lock:deleted", opts);
        co_await m.async_acquire();
        BOOST_TEST(srv.command({"DEL", "lock:deleted"}) == ":1\r\n");
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec] = co_await m.async_wait_lost(tuple_deferred);
        const auto waited = std::chrono::steady_clock::now() - t0;
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST_MESSAGE("lost noticed after "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                           << " ms (renewal period 100 ms)");
        BOOST_TEST(m.lost());
        BOOST_TEST(!m.held());
        co_await sleep_for(10ms);
        BOOST_TEST(callbacks == 1);
        // Someone else takes it; our late release must not touch their key.
        corolock::mutex other(conn, "lock:deleted");
        BOOST_TEST(co_await other.async_try_acquire());
        auto [rec] = co_await m.async_release(tuple_deferred);
        BOOST_TEST(rec == error::not_owner);
        BOOST_TEST(hget("lock:deleted", "owner") == "$32\r\n" + other.owner_id() + "\r\n");
        co_await other.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(fixed_lease_expires_and_reports_lost, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:fixed", lease_of(200ms, false));
        co_await m.async_acquire();
        auto [ec] = co_await m.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
        // Reported a drift margin (lease/100 + 2 ms) before the server expires the key.
        co_await sleep_for(20ms);
        BOOST_TEST(!exists("lock:fixed"));
        auto [rec] = co_await m.async_release(tuple_deferred);
        BOOST_TEST(rec == error::not_owner);
    });
}

BOOST_FIXTURE_TEST_CASE(fencing_tokens_strictly_increase_across_expiry_and_restart, fixture) {
    run([&]() -> awaitable<void> {
        std::uint64_t last = 0;
        int checked = 0;
        auto round = [&](int n, corolock::mutex_options o) -> awaitable<void> {
            corolock::mutex m(conn, "lock:fence", o);
            for (int i = 0; i < n; ++i) {
                co_await m.async_acquire();
                BOOST_REQUIRE_GT(m.token(), last);
                last = m.token();
                ++checked;
                co_await m.async_release();
            }
        };
        co_await round(10000, {});
        // Expiry: a fixed lease that runs out between acquisitions.
        corolock::mutex e(conn, "lock:fence", lease_of(30ms, false));
        for (int i = 0; i < 5; ++i) {
            co_await e.async_acquire();
            BOOST_REQUIRE_GT(e.token(), last);
            last = e.token();
            ++checked;
            co_await sleep_for(50ms);
        }
        // A restart without persistence loses the counter: it is seeded from the clock.
        srv.restart();
        corolock::mutex r(conn, "lock:fence");
        auto [ec] = co_await r.async_acquire_for(10s, tuple_deferred);
        BOOST_REQUIRE(!ec);
        BOOST_TEST(r.token() > last);
        ++checked;
        co_await r.async_release();
        BOOST_TEST_MESSAGE(checked << " tokens checked");
    });
}

BOOST_FIXTURE_TEST_CASE(five_hundred_waiters_are_woken_by_pubsub, fixture) {
    run([&]() -> awaitable<void> {
        constexpr int n = 500;
        std::atomic<int> inside{0}, overlaps{0}, done{0};
        auto waiter = [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:herd");
            co_await m.async_acquire();
            if (inside.fetch_add(1) != 0)
                ++overlaps;
            co_await sleep_for(std::chrono::microseconds(500));
            inside.fetch_sub(1);
            co_await m.async_release();
            ++done;
        };
        const auto before = corolock::get_lock_stats(conn);
        std::vector<decltype(asio::co_spawn(ioc, waiter(), asio::deferred))> ops;
        for (int i = 0; i < n; ++i)
            ops.push_back(asio::co_spawn(ioc, waiter(), asio::deferred));
        co_await asio::experimental::make_parallel_group(std::move(ops))
            .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        const auto after = corolock::get_lock_stats(conn);
        const auto pubsub = after.pubsub_wakeups - before.pubsub_wakeups;
        const auto timer = after.timer_wakeups - before.timer_wakeups;
        const auto attempts = after.attempts - before.attempts;
        BOOST_TEST_MESSAGE("500 waiters: " << attempts << " attempts, " << pubsub
                                           << " pub/sub wake-ups, " << timer << " timer wake-ups");
        BOOST_TEST(done == n);
        BOOST_TEST(overlaps == 0);
        BOOST_TEST(pubsub >= static_cast<std::uint64_t>(n / 2));
        BOOST_TEST(timer * 20 <= pubsub); // the fallback timer is the exception
        BOOST_TEST(attempts < static_cast<std::uint64_t>(3 * n)); // no thundering herd
        BOOST_TEST(!exists("lock:herd"));
    });
}

BOOST_FIXTURE_TEST_CASE(cancelled_waiters_and_acquires_leave_nothing, fixture) {
    run([&]() -> awaitable<void> {
        std::mt19937 rng(7);
        corolock::mutex holder(conn, "lock:cancel");
        co_await holder.async_acquire();
        // 100 waiters, cancelled at random times.
        constexpr int n = 100;
        std::vector<std::unique_ptr<corolock::mutex>> ms;
        std::vector<asio::cancellation_signal> signals(n);
        std::atomic<int> aborted{0}, completed{0};
        for (int i = 0; i < n; ++i) {
            ms.push_back(std::make_unique<corolock::mutex>(conn, "lock:cancel"));
            ms.back()->async_acquire(
                asio::bind_cancellation_slot(signals[i].slot(), [&](error_code ec) {
                    ++completed;
                    if (ec == asio::error::operation_aborted)
                        ++aborted;
                }));
        }
        for (int i = 0; i < n; ++i) {
            co_await sleep_for(std::chrono::microseconds(rng() % 3000));
            signals[i].emit(asio::cancellation_type::terminal);
        }
        while (completed < n)
            co_await sleep_for(5ms);
        BOOST_TEST(aborted == n);
        co_await holder.async_release();

        // 50 acquires of a free lock, cancelled while on the wire (or just after).
        std::vector<asio::cancellation_signal> wire(50);
        std::vector<std::unique_ptr<corolock::mutex>> racers;
        std::atomic<int> finished{0};
        for (int i = 0; i < 50; ++i) {
            racers.push_back(
                std::make_unique<corolock::mutex>(conn, "lock:cancel:" + std::to_string(i)));
            racers.back()->async_acquire(
                asio::bind_cancellation_slot(wire[i].slot(), [&](error_code) { ++finished; }));
        }
        co_await sleep_for(std::chrono::microseconds(200));
        for (auto& s : wire)
            s.emit(asio::cancellation_type::terminal);
        while (finished < 50)
            co_await sleep_for(5ms);
        // Those that completed with success hold their lock; release them. The others must
        // leave nothing behind once their replies have been handled.
        for (auto& r : racers)
            if (r->held())
                co_await r->async_release();
        co_await sleep_for(300ms);
        for (int i = 0; i < 50; ++i)
            BOOST_TEST(!exists("lock:cancel:" + std::to_string(i)));
        BOOST_TEST(!exists("lock:cancel"));
        const auto renewals = corolock::get_lock_stats(conn).renewals;
        co_await sleep_for(400ms);
        BOOST_TEST(corolock::get_lock_stats(conn).renewals == renewals); // no live watchdog
        // The next acquire is immediate.
        corolock::mutex next(conn, "lock:cancel");
        BOOST_TEST(co_await next.async_try_acquire());
        co_await next.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(concurrent_use_of_one_object_is_detected, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex holder(conn, "lock:shared");
        co_await holder.async_acquire();
        corolock::mutex shared(conn, "lock:shared");
        error_code first, second;
        int done = 0;
        shared.async_acquire_for(300ms, [&](error_code ec) { first = ec, ++done; });
        shared.async_acquire_for(300ms, [&](error_code ec) { second = ec, ++done; });
        while (done < 2)
            co_await sleep_for(5ms);
        BOOST_TEST(first == error::acquire_timeout);
        BOOST_TEST(second == error::operation_in_progress);
        co_await holder.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(with_lock_releases_on_every_path, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:scoped", lease_of(300ms));
        std::uint64_t seen = 0;
        co_await corolock::async_with_lock(m, [&](corolock::lease& l) -> awaitable<void> {
            seen = l.token();
            BOOST_TEST(exists("lock:scoped"));
            co_return;
        });
        BOOST_TEST(seen > 0u);
        BOOST_TEST(!exists("lock:scoped"));
        BOOST_TEST(!m.held());

        bool threw = false;
        try {
            co_await corolock::async_with_lock(m, [&](corolock::lease&) -> awaitable<void> {
                throw std::runtime_error("boom");
                co_return;
            });
        } catch (const std::runtime_error&) {
            threw = true;
        }
        BOOST_TEST(threw);
        BOOST_TEST(!exists("lock:scoped"));

        // The lease is lost while the body runs: the body is cancelled, lease_lost is thrown.
        bool body_cancelled = false;
        error_code thrown;
        try {
            co_await corolock::async_with_lock(m, [&](corolock::lease&) -> awaitable<void> {
                srv.command({"DEL", "lock:scoped"});
                try {
                    co_await sleep_for(10s);
                } catch (const boost::system::system_error&) {
                    body_cancelled = true;
                    throw;
                }
            });
        } catch (const boost::system::system_error& e) {
            thrown = e.code();
        }
        BOOST_TEST(body_cancelled);
        BOOST_TEST(thrown == error::lease_lost);
        BOOST_TEST(!m.held());
    });
}

BOOST_FIXTURE_TEST_CASE(fenced_write_refuses_stale_token, fixture) {
    run([&]() -> awaitable<void> {
        const corolock::fenced_script decr("return redis.call('DECRBY', KEYS[1], ARGV[1])");
        BOOST_TEST(srv.command({"SET", "stock", "10"}) == "+OK\r\n");
        corolock::mutex a(conn, "lock:stock", lease_of(200ms, false));
        co_await a.async_acquire();
        const std::string_view keys[] = {"stock"};
        const std::string_view args[] = {"1"};
        corolock::generic_response resp;
        co_await a.async_fenced_eval(decr, keys, args, resp);
        BOOST_TEST(resp.at(0).value == "9");
        co_await sleep_for(300ms); // a's fixed lease runs out...
        corolock::mutex b(conn, "lock:stock");
        co_await b.async_acquire(); // ...and b takes over with a newer token
        resp.clear();
        co_await b.async_fenced_eval(decr, keys, args, resp);
        BOOST_TEST(resp.at(0).value == "8");
        co_await b.async_release();
        // a still believes nothing (it was told: lost); its write is refused either way.
        resp.clear();
        auto [ec] = co_await a.async_fenced_eval(decr, keys, args, resp, tuple_deferred);
        BOOST_TEST((ec == error::stale_token || ec == error::not_owner));
        BOOST_TEST(srv.command({"GET", "stock"}) == "$1\r\n8\r\n");
    });
}

BOOST_FIXTURE_TEST_CASE(max_hold_stops_the_watchdog_and_tells_the_holder, fixture) {
    run([&]() -> awaitable<void> {
        auto opts = lease_of(300ms);
        opts.max_hold = 700ms;
        corolock::mutex m(conn, "lock:maxhold", opts);
        co_await m.async_acquire();
        auto [ec] = co_await m.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::max_hold_reached);
        BOOST_TEST(m.lost());
        co_await sleep_for(400ms); // no renewal since: the key runs out
        BOOST_TEST(!exists("lock:maxhold"));
    });
}

BOOST_FIXTURE_TEST_CASE(force_unlock_frees_and_wakes_waiters, fixture) {
    run(
        [&]() -> awaitable<void> {
            corolock::mutex holder(conn, "lock:force", lease_of(300ms)), waiter(conn, "lock:force"),
                admin(conn, "lock:force");
            co_await holder.async_acquire();
            error_code waited = asio::error::would_block;
            waiter.async_acquire([&](error_code ec) { waited = ec; });
            co_await sleep_for(50ms);
            BOOST_TEST(waited == asio::error::would_block); // still waiting
            const auto pubsub = corolock::get_lock_stats(conn).pubsub_wakeups;
            bool deleted = co_await admin.async_force_unlock();
            BOOST_TEST(deleted);
            auto [lost] = co_await holder.async_wait_lost(tuple_deferred);
            BOOST_TEST(lost == error::lease_lost); // the holder's next renewal finds it gone
            while (waited == asio::error::would_block)
                co_await sleep_for(5ms);
            BOOST_TEST(!waited);
            BOOST_TEST(waiter.held());
            BOOST_TEST(corolock::get_lock_stats(conn).pubsub_wakeups > pubsub);
            co_await waiter.async_release();
        },
        60s);
}

BOOST_FIXTURE_TEST_CASE(guard_and_destructor_release_without_blocking, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:guard");
        {
            co_await m.async_acquire();
            corolock::unique_hold hold(m);
            BOOST_TEST(exists("lock:guard"));
        } // schedules the release
        for (int i = 0; i < 100 && exists("lock:guard"); ++i)
            co_await sleep_for(5ms);
        BOOST_TEST(!exists("lock:guard"));
        BOOST_TEST(!m.held());
        {
            corolock::mutex doomed(conn, "lock:doomed");
            co_await doomed.async_acquire();
            co_await doomed.async_acquire(); // two holds: destruction releases them all
        }
        for (int i = 0; i < 100 && exists("lock:doomed"); ++i)
            co_await sleep_for(5ms);
        BOOST_TEST(!exists("lock:doomed"));
    });
}

BOOST_FIXTURE_TEST_CASE(stopping_the_connection_ends_waits_and_leases, fixture) {
    error_code waiter_ec = asio::error::would_block, lost_ec = asio::error::would_block;
    std::unique_ptr<corolock::mutex> holder, waiter;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            holder = std::make_unique<corolock::mutex>(conn, "lock:stop");
            waiter = std::make_unique<corolock::mutex>(conn, "lock:stop");
            co_await holder->async_acquire();
            waiter->async_acquire([&](error_code ec) { waiter_ec = ec; }); // no deadline
            holder->async_wait_lost([&](error_code ec) { lost_ec = ec; });
            co_await sleep_for(100ms);
            conn.cancel();
        }(),
        30s); // the drain check: nothing may be left waiting for a 30 s lease
    BOOST_TEST(waiter_ec == error::not_connected);
    BOOST_TEST(lost_ec == error::lease_lost);
    BOOST_TEST(holder->lost());
    BOOST_TEST(
        !(error_code(asio::error::operation_aborted) == corolock::condition::connection_failure));
}

BOOST_FIXTURE_TEST_CASE(handoffs_between_connections_need_no_fallback_timer, fixture) {
    // Two processes' worth of waiters (two connections) alternate on one lock: every handoff
    // must come from a release message, none from the fallback timer. (A message consumed while
    // the head's attempt is on the wire is re-attempted at once; here the next release would
    // hide such a loss, so this checks the handoff path, not that race.)
    corolock::connection other(ioc.get_executor(), config_for(srv), quiet());
    run([&]() -> awaitable<void> {
        other.async_run(asio::detached);
        auto worker = [&](corolock::connection& c) -> awaitable<void> {
            // A long fallback, so that release messages do the handoffs.
            auto opts = lease_of(5s);
            opts.retry_base = 1s;
            opts.retry_max = 2s;
            corolock::mutex m(c, "lock:pingpong", opts);
            for (int i = 0; i < 500; ++i) {
                co_await m.async_acquire_for(20s);
                co_await m.async_release();
            }
        };
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ioc, worker(conn), asio::deferred),
            asio::co_spawn(ioc, worker(other), asio::deferred))
            .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        const auto a = corolock::get_lock_stats(conn), b = corolock::get_lock_stats(other);
        BOOST_TEST_MESSAGE("1000 cycles: pub/sub wake-ups " << a.pubsub_wakeups + b.pubsub_wakeups
                                                            << ", timer wake-ups "
                                                            << a.timer_wakeups + b.timer_wakeups);
        // The fallback draws with full jitter, so a rare early timer is legitimate.
        BOOST_TEST(a.timer_wakeups + b.timer_wakeups <= 10u);
        other.cancel();
    });
}

BOOST_AUTO_TEST_CASE(holder_process_killed_lock_frees_within_lease) {
    redis_process srv;
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        // The holder: acquire with a 1 s watchdog lease, say so, then run until killed.
        ::close(ready[0]);
        asio::io_context ioc;
        corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
        conn.async_run(asio::detached);
        corolock::mutex m(conn, "lock:killed", lease_of(1s));
        m.async_acquire([&](error_code ec) {
            const char c = ec ? 'e' : 'k';
            (void)!::write(ready[1], &c, 1);
        });
        ioc.run();
        ::_exit(0);
    }
    ::close(ready[1]);
    char c = 0;
    BOOST_REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    BOOST_REQUIRE(c == 'k');
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    std::chrono::steady_clock::duration waited{};
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            co_await sleep_for(1500ms); // the watchdog has renewed at least once by now
            corolock::mutex m(conn, "lock:killed");
            BOOST_TEST(!(co_await m.async_try_acquire()));
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
            const auto t0 = std::chrono::steady_clock::now();
            co_await m.async_acquire_for(5s);
            waited = std::chrono::steady_clock::now() - t0;
            co_await m.async_release();
            conn.cancel();
        }(),
        30s);
    BOOST_TEST_MESSAGE("free again "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                       << " ms after SIGKILL (lease 1000 ms)");
    BOOST_TEST((waited < 1250ms)); // within the lease plus a small margin
}

BOOST_AUTO_TEST_SUITE_END()
