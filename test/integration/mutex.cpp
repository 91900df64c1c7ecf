// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock layer against real redis-server processes. Besides the behaviour kept from the old
// API (mutual exclusion, handoffs, watchdog, cancellation, fencing, destruction, connection
// stop), each failure class of the safety review (reviews-2026-11-23/review-safety.md) has one
// regression test here, named after it: its scenario, replayed on the lease API, must not
// happen any more.
#include "common/coro_test.hpp"
#include "common/fault_proxy.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include "core/lock_scripts.hpp"
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
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::lease;
using corolock::mutex_options;
using corolock::test::bulk;
using corolock::test::config_for;
using corolock::test::direction;
using corolock::test::eventually;
using corolock::test::fault_proxy;
using corolock::test::lease_of;
using corolock::test::log_capture;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace {

using corolock::test::tuple_deferred;
constexpr auto tuple_use_awaitable = asio::as_tuple(asio::use_awaitable);
using namespace asio::experimental::awaitable_operators;

constexpr auto one_year = std::chrono::hours(24 * 365);

long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

void spin_for(clock_type::duration d) {
    const auto until = clock_type::now() + d;
    while (clock_type::now() < until) {
    }
}

// The shared fixture (`conn` and `peer`: "another process"), and on demand a third connection
// through a fault proxy.
struct fixture : corolock::test::server_fixture {
    std::unique_ptr<fault_proxy> proxy;

    // Call from the body: a connection through a new fault proxy. Health checks are off (a
    // delayed PONG would drop the connection; the tests decide when it drops).
    corolock::connection& proxied(corolock::logger log = quiet()) {
        proxy = std::make_unique<fault_proxy>(srv.port());
        auto cfg = config_for(srv);
        cfg.port = std::to_string(proxy->port());
        cfg.health_check_interval = clock_type::duration::zero();
        cfg.connect_timeout = 5s;
        return add_connection(cfg, std::move(log));
    }
    corolock::lock_stats stats() { return corolock::get_lock_stats(conn); }
};

const corolock::fenced_script fenced_incr("return redis.call('INCR', KEYS[1])");

// Runs fenced_incr on `key` with `l`; the error, and the reply's value when there is one.
awaitable<std::pair<error_code, std::string>> fenced_incr_with(lease& l, std::string key) {
    const std::string_view keys[] = {key};
    corolock::generic_response resp;
    auto [ec] = co_await l.async_fenced_eval(fenced_incr, keys, {}, resp, tuple_deferred);
    co_return std::pair{ec, ec || resp.empty() ? std::string() : resp.at(0).value};
}

} // namespace

BOOST_AUTO_TEST_SUITE(mutex)

// ---------------------------------------------------------------------------------------------
// Basics

BOOST_FIXTURE_TEST_CASE(try_acquire_release_and_ownership, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:basic"), other(peer, "lock:basic");
        BOOST_TEST(m.name() == "lock:basic");
        lease a = co_await m.async_try_acquire();
        BOOST_REQUIRE(a.owns());
        BOOST_TEST(a.valid());
        BOOST_TEST(!a.lost());
        BOOST_TEST(a.token() > 0u);
        BOOST_TEST(a.name() == "lock:basic");
        BOOST_TEST(a.owner_id().size() == 32u);
        BOOST_TEST(owner("lock:basic") == bulk(a.owner_id()));
        BOOST_TEST((a.valid_until() > clock_type::now() + 25s)); // the default 30 s lease
        BOOST_TEST((a.valid_until() <= clock_type::now() + 30s));

        // Held by a: an empty lease, not an error; from the same handle too (it is no owner).
        lease b = co_await other.async_try_acquire();
        BOOST_TEST(!b.owns());
        BOOST_TEST(b.token() == 0u);
        lease same = co_await m.async_try_acquire();
        BOOST_TEST(!same.owns());
        auto [ec] = co_await b.async_release(tuple_deferred);
        BOOST_TEST(ec == error::not_owner); // b never held it
        BOOST_TEST(ec == corolock::condition::lock_lost);
        auto [wl] = co_await b.async_wait_lost(tuple_deferred);
        BOOST_TEST(wl == error::not_owner);
        BOOST_TEST(exists("lock:basic")); // and nothing changed

        std::int64_t ttl = co_await m.async_remaining_ttl();
        BOOST_TEST(ttl > 25000);

        // A lease moves like a unique_lock.
        lease moved = std::move(a);
        BOOST_TEST(!a.owns()); // NOLINT(bugprone-use-after-move): moved-from is empty
        BOOST_TEST(moved.valid());
        co_await moved.async_release();
        BOOST_TEST(!moved.owns());
        BOOST_TEST(!exists("lock:basic"));
        auto [ec2] = co_await moved.async_release(tuple_deferred);
        BOOST_TEST(ec2 == error::not_owner); // double release
        lease c = co_await other.async_try_acquire();
        BOOST_TEST(c.owns());
        BOOST_TEST(c.token() > moved.token());

        // Move-assigning over a lease releases what it owned.
        corolock::mutex m2(conn, "lock:basic:2");
        lease d = co_await m2.async_acquire();
        BOOST_TEST(exists("lock:basic:2"));
        d = std::move(c);
        BOOST_TEST(d.name() == "lock:basic");
        BOOST_TEST(co_await eventually([&] { return !exists("lock:basic:2"); }, 2s));
        co_await d.async_release();
        BOOST_TEST(!exists("lock:basic"));
    });
}

BOOST_FIXTURE_TEST_CASE(wrong_type_key_is_left_untouched, fixture) {
    run([&]() -> awaitable<void> {
        BOOST_TEST(srv.command({"SET", "lock:wrong", "user data"}) == "+OK\r\n");
        corolock::mutex m(conn, "lock:wrong");
        auto [ec, l] = co_await m.async_try_acquire(tuple_deferred);
        BOOST_TEST(ec == error::wrong_type);
        BOOST_TEST(!l.owns());
        auto [ec2, l2] = co_await m.async_acquire(tuple_deferred);
        BOOST_TEST(ec2 == error::wrong_type);
        BOOST_TEST(!l2.owns());
        BOOST_TEST(srv.command({"GET", "lock:wrong"}) == "$9\r\nuser data\r\n");
        auto [ec3, deleted] = co_await m.async_force_unlock(tuple_deferred);
        BOOST_TEST(!ec3);
        BOOST_TEST(!deleted); // not a lock: force unlock refuses too
        BOOST_TEST(srv.command({"GET", "lock:wrong"}) == "$9\r\nuser data\r\n");
    });
}

BOOST_FIXTURE_TEST_CASE(acquire_for_times_out, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:timeout");
        lease held = co_await m.async_acquire();
        auto [ec, l] = co_await m.async_acquire_for(200ms, tuple_deferred);
        BOOST_TEST(ec == error::acquire_timeout);
        BOOST_TEST(ec == corolock::condition::lock_contention);
        BOOST_TEST(!l.owns());
        co_await held.async_release();
        lease l2 = co_await m.async_acquire_for(1s);
        BOOST_TEST(l2.valid());
        co_await l2.async_release();
    });
}

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

// Review S6 and L6: one mutex object shared by 100 coroutines on 2 threads.
BOOST_FIXTURE_TEST_CASE(s6_one_shared_mutex_excludes_100_coroutines_on_two_threads, fixture) {
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

// Review S7 (a guard released the outer hold), S1/S2/L4 (nested acquires went to Redis): a
// nested hold costs no round trip and never ends the outer section.
BOOST_FIXTURE_TEST_CASE(s7_nested_hold_never_releases_the_outer_section, fixture) {
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

// ---------------------------------------------------------------------------------------------
// Unknown outcomes (review L3, S1)

// Review L3: a try_acquire that ran on Redis but whose reply was lost with the connection.
BOOST_FIXTURE_TEST_CASE(l3_try_acquire_with_lost_reply_is_given_back, fixture) {
    run([&]() -> awaitable<void> {
        auto& c = proxied();
        corolock::mutex m(c, "lock:unknown:try"), other(peer, "lock:unknown:try");
        {
            lease w = co_await m.async_acquire(); // warm the scripts
            co_await w.async_release();
        }
        const auto undos = corolock::get_lock_stats(c).undos;
        proxy->half_open();
        bool done = false;
        error_code got_ec;
        lease got;
        m.async_try_acquire([&](error_code ec, lease l) {
            got_ec = ec;
            got = std::move(l);
            done = true;
        });
        // The script ran: the key is there (owner: this attempt), its reply is held.
        BOOST_REQUIRE(co_await eventually([&] { return exists("lock:unknown:try"); }, 3s));
        proxy->reset_all();
        proxy->heal();
        BOOST_REQUIRE(co_await eventually([&] { return done; }, 5s));
        BOOST_TEST(got_ec == error::connection_lost);
        BOOST_TEST(!got.owns());
        // Given back once reconnected: gone long before its 30 s lease.
        BOOST_TEST(co_await eventually([&] { return !exists("lock:unknown:try"); }, 3s));
        BOOST_TEST(corolock::get_lock_stats(c).undos > undos);
        BOOST_TEST(corolock::get_lock_stats(c).leases_held == 0u);

        // A later acquire and release leave the lock free.
        lease l = co_await m.async_acquire_for(5s);
        BOOST_TEST(owner("lock:unknown:try") == bulk(l.owner_id()));
        co_await l.async_release();
        BOOST_TEST(!exists("lock:unknown:try"));
        lease o = co_await other.async_try_acquire();
        BOOST_TEST(o.owns());
        co_await o.async_release();
    });
}

// Review L3/S1 for a waiting acquire: the unknown attempt is undone and retried; the lease it
// then gets is the only record in Redis, and its release frees the lock.
BOOST_FIXTURE_TEST_CASE(l3_acquire_with_lost_reply_is_undone_and_retried, fixture) {
    run([&]() -> awaitable<void> {
        auto& c = proxied();
        corolock::mutex m(c, "lock:unknown:acq"), other(peer, "lock:unknown:acq");
        {
            lease w = co_await m.async_acquire();
            co_await w.async_release();
        }
        const auto undos = corolock::get_lock_stats(c).undos;
        proxy->half_open();
        bool done = false;
        error_code got_ec;
        lease got;
        m.async_acquire_for(10s, [&](error_code ec, lease l) {
            got_ec = ec;
            got = std::move(l);
            done = true;
        });
        BOOST_REQUIRE(co_await eventually([&] { return exists("lock:unknown:acq"); }, 3s));
        const auto first_owner = owner("lock:unknown:acq");
        proxy->reset_all();
        proxy->heal();
        BOOST_REQUIRE(co_await eventually([&] { return done; }, 8s));
        BOOST_TEST(!got_ec);
        BOOST_REQUIRE(got.owns());
        BOOST_TEST(got.valid());
        BOOST_TEST(corolock::get_lock_stats(c).undos > undos);
        BOOST_TEST(owner("lock:unknown:acq") == bulk(got.owner_id()));
        BOOST_TEST(first_owner == bulk(got.owner_id())); // the same acquisition, redone
        auto [rec] = co_await got.async_release(tuple_deferred);
        BOOST_TEST(!rec);
        BOOST_TEST(!exists("lock:unknown:acq"));
        co_await sleep_for(100ms); // nothing comes back behind the release
        BOOST_TEST(!exists("lock:unknown:acq"));
        lease o = co_await other.async_try_acquire();
        BOOST_TEST(o.owns());
        co_await o.async_release();
    });
}

// ---------------------------------------------------------------------------------------------
// Lost leases (review S2, L1, Q4)

// Review S2: the lease is taken by someone else (force_unlock, then another owner acquires).
BOOST_FIXTURE_TEST_CASE(s2_taken_lease_is_reported_and_refused, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:taken", lease_of(3s));
        corolock::mutex admin(peer, "lock:taken"), b(peer, "lock:taken");
        lease a = co_await m.async_acquire();
        const auto a_token = a.token();
        BOOST_TEST(co_await admin.async_force_unlock());
        lease lb = co_await b.async_try_acquire();
        BOOST_REQUIRE(lb.owns());
        BOOST_TEST(lb.token() > a_token);
        const auto t0 = clock_type::now();

        // Before a's watchdog has looked (renewals every 1 s): the fence refuses a at the server
        // (stale_token), or a already heard of the force-unlock and refuses it locally.
        auto [ec1, v1] = co_await fenced_incr_with(a, "taken:counter");
        BOOST_TEST((ec1 == error::stale_token || ec1 == error::lease_lost), ec1.message());
        BOOST_TEST(ec1 == corolock::condition::lock_lost);
        auto [ecb, vb] = co_await fenced_incr_with(lb, "taken:counter");
        BOOST_TEST(!ecb);
        BOOST_TEST(vb == "1");

        // A nested hold cannot revive it either (S2: a nested acquire got a fresh token).
        auto h = a.hold();
        BOOST_TEST(h.token() == a_token);

        auto [lost] = co_await a.async_wait_lost(tuple_deferred);
        const auto waited = clock_type::now() - t0;
        BOOST_TEST(lost == error::lease_lost);
        BOOST_TEST_MESSAGE("taken lease reported lost after " << ms(waited)
                                                              << " ms (renewal period 1000 ms)");
        BOOST_TEST((waited < 1500ms)); // within a renewal period (and a margin)
        BOOST_TEST(a.lost());
        BOOST_TEST(!a.valid());
        BOOST_TEST(!h.valid());
        BOOST_TEST(a.owns()); // not released yet: the caller learns it at release too
        auto [ec2, v2] = co_await fenced_incr_with(a, "taken:counter");
        BOOST_TEST(ec2 == corolock::condition::lock_lost); // refused locally now
        h.reset();
        auto [rec] = co_await a.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
        BOOST_TEST(owner("lock:taken") == bulk(lb.owner_id())); // b's key untouched
        BOOST_TEST(srv.command({"GET", "taken:counter"}) == "$1\r\n1\r\n");
        BOOST_TEST(lb.valid());
        co_await lb.async_release();
        BOOST_TEST(!exists("lock:taken"));
    });
}

BOOST_FIXTURE_TEST_CASE(key_deleted_from_outside_signals_lost, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:deleted", lease_of(300ms)), other(peer, "lock:deleted");
        lease l = co_await m.async_acquire();
        BOOST_TEST(srv.command({"DEL", "lock:deleted"}) == ":1\r\n");
        lease o = co_await other.async_try_acquire(); // another owner takes it
        BOOST_REQUIRE(o.owns());
        const auto t0 = clock_type::now();
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        const auto waited = clock_type::now() - t0;
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST_MESSAGE("lost noticed after " << ms(waited) << " ms (renewal period 100 ms)");
        BOOST_TEST((waited < 300ms)); // before the lease would have ended
        BOOST_TEST(l.lost());
        BOOST_TEST(!l.valid());
        auto [again] = co_await l.async_wait_lost(tuple_deferred); // asked again: same answer
        BOOST_TEST(again == error::lease_lost);
        auto [rec] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
        BOOST_TEST(owner("lock:deleted") == bulk(o.owner_id()));
        co_await o.async_release();
    });
}

// Review L1: a loss reported while Redis still has our key (the renewal answered after the
// local deadline). The key is deleted at once (owner-checked), and re-acquiring is a new owner.
BOOST_FIXTURE_TEST_CASE(l1_loss_with_key_still_in_redis_cleans_up, fixture) {
    run([&]() -> awaitable<void> {
        auto& c = proxied();
        corolock::mutex m(c, "lock:late", lease_of(3s)), b(peer, "lock:late");
        {
            // Warm the renew script (a cold cache would add a NOSCRIPT round trip).
            corolock::mutex w(c, "lock:warm", lease_of(30ms));
            lease wl = co_await w.async_acquire();
            co_await sleep_for(50ms);
            co_await wl.async_release();
        }
        lease a = co_await m.async_acquire();
        const std::string a_owner(a.owner_id());
        const auto a_token = a.token();
        co_await sleep_for(100ms);
        // A latency spike: the renewal at lease/3 runs on Redis, its answer comes after the
        // local deadline. Redis then has the key for up to a lease after the renewal.
        proxy->delay(direction::server_to_client, 2500ms);
        auto [ec] = co_await a.async_wait_lost(tuple_deferred);
        const auto lost_at = clock_type::now();
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST(!a.valid());
        // Without the cleanup the key would live about a second more (renewed at ~1 s for 3 s,
        // lost at ~3 s).
        const bool freed = co_await eventually([&] { return !exists("lock:late"); }, 600ms, 2ms);
        BOOST_TEST(freed);
        BOOST_TEST_MESSAGE("key gone " << ms(clock_type::now() - lost_at)
                                       << " ms after the loss report");
        lease lb = co_await b.async_try_acquire();
        BOOST_TEST(lb.owns());
        proxy->heal();
        auto [rec] = co_await a.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
        if (lb) {
            BOOST_TEST(owner("lock:late") == bulk(lb.owner_id())); // a's release touched nothing
            co_await lb.async_release();
        }
        // Re-acquiring gives a new owner and a larger token: never the old record.
        lease again = co_await m.async_acquire_for(5s);
        BOOST_TEST(again.valid());
        BOOST_TEST(again.owner_id() != a_owner);
        BOOST_TEST(again.token() > a_token);
        if (lb)
            BOOST_TEST(again.token() > lb.token());
        co_await again.async_release();
        BOOST_TEST(!exists("lock:late"));
    });
}

BOOST_FIXTURE_TEST_CASE(fixed_lease_expires_and_reports_lost, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:fixed", lease_of(200ms, false));
        const auto before = clock_type::now();
        lease l = co_await m.async_acquire();
        const auto after = clock_type::now();
        // Review Q4: the deadline is known and starts at the send, between `before` and
        // `after`: valid_until = send time + lease - drift (200 ms / 100 + 2 ms = 4 ms).
        BOOST_TEST((l.valid_until() >= before + 196ms));
        BOOST_TEST((l.valid_until() <= after + 196ms));
        co_await sleep_for(50ms);
        auto [ex] = co_await l.async_extend(tuple_deferred); // a fixed lease is extended by hand
        BOOST_TEST(!ex);
        BOOST_TEST((l.valid_until() > before + 200ms));
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST((clock_type::now() >= l.valid_until()));
        BOOST_TEST(!l.valid());
        BOOST_TEST(co_await eventually([&] { return !exists("lock:fixed"); }, 200ms));
        auto [ex2] = co_await l.async_extend(tuple_deferred); // never brings it back
        BOOST_TEST(ex2 == error::lease_lost);
        BOOST_TEST(!exists("lock:fixed"));
        auto [rec] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
    });
}

// Review Q4: valid() checks the clock itself, whatever the watchdog has had time to do.
BOOST_FIXTURE_TEST_CASE(q4_valid_checks_the_clock, fixture) {
    bool valid_before = false, valid_after = true, lost_flag = true;
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:clock", lease_of(100ms, false));
        lease l = co_await m.async_acquire();
        valid_before = l.valid();
        // Block this (only) thread past the deadline: nothing else can run meanwhile.
        spin_for(l.valid_until() - clock_type::now() + 5ms);
        valid_after = l.valid();
        lost_flag = l.lost(); // not reported yet: the watchdog could not run
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
    });
    BOOST_TEST(valid_before);
    BOOST_TEST(!valid_after);
    BOOST_TEST(!lost_flag);
}

// ---------------------------------------------------------------------------------------------
// Lifetimes and arguments (review L2, L5, Q3)

// Review L2: destroying a mutex with an acquire pending.
BOOST_FIXTURE_TEST_CASE(l2_destroying_a_mutex_cancels_its_pending_acquires, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex hm(conn, "lock:doomed", lease_of(2s));
        lease h = co_await hm.async_acquire();
        error_code xec = asio::error::would_block;
        bool x_lease = false, xdone = false;
        {
            corolock::mutex x(conn, "lock:doomed", lease_of(2s));
            x.async_acquire([&](error_code ec, lease l) {
                xec = ec;
                x_lease = l.owns();
                xdone = true;
            });
            co_await sleep_for(100ms);
            BOOST_TEST(!xdone); // waiting behind h
            BOOST_TEST(stats().waiters == 1u);
        }
        BOOST_TEST(co_await eventually([&] { return xdone; }, 1s));
        BOOST_TEST(xec == asio::error::operation_aborted);
        BOOST_TEST(!x_lease);
        BOOST_TEST(stats().waiters == 0u);
        co_await h.async_release();
        co_await sleep_for(200ms); // a grant would arrive now
        BOOST_TEST(!exists("lock:doomed"));
        BOOST_TEST(stats().leases_held == 0u);
        const auto renewals = stats().renewals;
        co_await sleep_for(800ms);                // more than a renewal period of the 2 s lease
        BOOST_TEST(stats().renewals == renewals); // nothing renewed an ownerless lock
        BOOST_TEST(!exists("lock:doomed"));

        // Destroyed while the first attempt is on the wire: aborted, and the grant is undone.
        constexpr int n = 50;
        int aborted = 0, completed = 0, granted = 0;
        for (int i = 0; i < n; ++i) {
            corolock::mutex d(conn, "lock:doomed:" + std::to_string(i));
            d.async_acquire([&](error_code ec, lease l) {
                ++completed;
                if (ec == asio::error::operation_aborted)
                    ++aborted;
                if (l)
                    ++granted; // dropped here: released
            });
        }
        BOOST_REQUIRE(co_await eventually([&] { return completed == n; }, 2s));
        BOOST_TEST(aborted == n);
        BOOST_TEST(granted == 0);
        BOOST_TEST(co_await eventually(
            [&] {
                for (int i = 0; i < n; ++i)
                    if (exists("lock:doomed:" + std::to_string(i)))
                        return false;
                return true;
            },
            2s, 20ms));
        BOOST_TEST(stats().leases_held == 0u);
        BOOST_TEST(stats().undos >= static_cast<std::uint64_t>(n));
    });
}

BOOST_AUTO_TEST_CASE(io_context_destroyed_with_a_holder_and_a_waiter_frees_both) {
    // Coroutines that own their connection and mutex, one holding a lease, one waiting behind
    // it, when the io_context is stopped and destroyed: nothing they own may outlive it (each
    // frame is held by a handler queued inside corolock: the lease's wait for loss, the
    // waiter's queue entry and timer). The key is left to expire.
    redis_process srv;
    corolock::test::orphaned_pair pair;
    std::weak_ptr<int> connection_alive;
    {
        asio::io_context ioc;
        // The connection's logger owns a token: the connection itself must be freed too.
        auto connection_token = std::make_shared<int>(0);
        connection_alive = connection_token;
        corolock::connection conn(
            ioc.get_executor(), config_for(srv),
            corolock::logger{corolock::logger::level::off,
                             [connection_token](corolock::logger::level, std::string_view) {}});
        connection_token.reset();
        conn.async_run(asio::detached);
        pair.run(
            ioc,
            [&](bool& held) -> awaitable<void> {
                corolock::mutex m(conn, "lock:orphaned", lease_of(2s));
                lease l = co_await m.async_acquire();
                held = true;
                co_await l.async_wait_lost(tuple_deferred);
            },
            [&]() -> awaitable<void> {
                corolock::mutex m(conn, "lock:orphaned", lease_of(2s));
                co_await m.async_acquire(tuple_deferred);
            });
    }
    pair.check();
    BOOST_TEST(connection_alive.expired());
    const auto pttl = srv.command({"PTTL", "lock:orphaned"}); // held, left to expire
    BOOST_REQUIRE(pttl.starts_with(":"));
    BOOST_TEST(std::stoll(pttl.substr(1)) > 0);
}

// Review L5: an acquire_for that timed out while Redis stalled, retried at once.
BOOST_FIXTURE_TEST_CASE(l5_timed_out_acquire_retried_gets_a_full_lease, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:retry");
        {
            lease w = co_await m.async_acquire(); // warm the scripts
            co_await w.async_release();
        }
        corolock::request stall;
        stall.push("DEBUG", "SLEEP", "0.3");
        bool slept = false;
        peer.async_exec(stall, corolock::ignore, [&](error_code, std::size_t) { slept = true; });
        co_await sleep_for(50ms); // Redis is asleep now
        auto [ec1, l1] = co_await m.async_acquire_for(30ms, tuple_deferred);
        BOOST_TEST(ec1 == error::server_timeout); // Redis, not the lock, kept it
        BOOST_TEST(!l1.owns());
        auto [ec2, l2] = co_await m.async_acquire_for(5s, tuple_deferred);
        BOOST_REQUIRE(!ec2);
        BOOST_REQUIRE(l2.owns());
        BOOST_TEST(l2.token() > 0u);
        BOOST_TEST(l2.valid());
        BOOST_TEST(owner("lock:retry") == bulk(l2.owner_id()));
        BOOST_TEST(srv.command({"HGET", "lock:retry", "token"}) ==
                   bulk(std::to_string(l2.token())));
        auto [fec, v] = co_await fenced_incr_with(l2, "retry:counter");
        BOOST_TEST(!fec);
        BOOST_TEST(v == "1");
        co_await l2.async_release();
        BOOST_TEST(!exists("lock:retry"));
        co_await sleep_for(100ms);
        BOOST_TEST(!exists("lock:retry"));
        BOOST_TEST(stats().leases_held == 0u);
        BOOST_TEST(co_await eventually([&] { return slept; }, 2s));
    });
}

// Review Q3: argument errors, and durations at their limits.
BOOST_FIXTURE_TEST_CASE(q3_invalid_arguments_fail_before_redis, fixture) {
    // A connection that never runs: anything sent would wait, so prompt errors prove nothing
    // was sent (and its commands counter stays 0).
    asio::io_context idle;
    corolock::connection offline(idle.get_executor(), config_for(srv), quiet());
    struct bad {
        std::string name;
        mutex_options opts;
        error expected;
    };
    auto with = [](auto change) {
        mutex_options o;
        change(o);
        return o;
    };
    using dur = clock_type::duration;
    const std::vector<bad> cases{
        {"", {}, error::invalid_name},
        {"a}b", {}, error::invalid_name},          // no hash tag, and a '}'
        {"{t}:fence", {}, error::invalid_name},    // lock {t}'s fence key
        {"{t}:released", {}, error::invalid_name}, // lock {t}'s channel
        {"x", lease_of(0s), error::invalid_lease},
        {"x", lease_of(-5s), error::invalid_lease},
        {"x", lease_of(9ms), error::invalid_lease},
        {"x", lease_of(one_year + 1ms), error::invalid_lease},
        {"x", with([](auto& o) { o.max_hold = dur::max(); }), error::invalid_argument},
        {"x", with([](auto& o) { o.max_hold = one_year + 1ms; }), error::invalid_argument},
        {"x", with([](auto& o) { o.max_hold = -1ms; }), error::invalid_argument},
        {"x", with([](auto& o) { o.retry_base = dur::zero(); }), error::invalid_argument},
        {"x", with([](auto& o) { o.retry_max = dur::max(); }), error::invalid_argument},
        {"x", with([](auto& o) { o.retry_max = o.retry_base - 1ms; }), error::invalid_argument},
        {"x", with([](auto& o) { o.fence_retention = dur::zero(); }), error::invalid_argument},
        {"x", with([](auto& o) { o.fence_retention = one_year + 1ms; }), error::invalid_argument},
    };
    run_coroutine_test(
        idle,
        [&]() -> awaitable<void> {
            for (const auto& c : cases) {
                BOOST_TEST_CONTEXT("name '" << c.name << "', expected " << c.expected) {
                    corolock::mutex m(offline, c.name, c.opts);
                    auto [e1, l1] = co_await m.async_acquire(tuple_deferred);
                    BOOST_TEST(e1 == c.expected);
                    BOOST_TEST(e1 == corolock::condition::invalid_argument);
                    BOOST_TEST(!l1.owns());
                    auto [e2, l2] = co_await m.async_try_acquire(tuple_deferred);
                    BOOST_TEST(e2 == c.expected);
                    auto [e3, l3] = co_await m.async_acquire_for(1s, tuple_deferred);
                    BOOST_TEST(e3 == c.expected);
                }
            }
            corolock::mutex ok(offline, "x");
            auto [ew, lw] = co_await ok.async_acquire_for(-1ms, tuple_deferred);
            BOOST_TEST(ew == error::invalid_wait);
            BOOST_TEST(!lw.owns());
        }(),
        10s);
    BOOST_TEST(offline.stats().commands == 0u);
}

BOOST_FIXTURE_TEST_CASE(q3_durations_at_their_limits_work, fixture) {
    run([&]() -> awaitable<void> {
        // max_hold up to a year is valid, and does not end the lease early.
        auto opts = lease_of(300ms);
        opts.max_hold = one_year;
        opts.fence_retention = one_year;
        corolock::mutex m(conn, "lock:limits", opts);
        lease l = co_await m.async_acquire();
        co_await sleep_for(500ms);
        BOOST_TEST(l.valid());
        BOOST_TEST(!l.lost());
        // The fence key lives lease + fence_retention: a year (a PTTL of 11 digits).
        const auto fence_ttl = srv.command({"PTTL", "{lock:limits}:fence"});
        BOOST_TEST(std::stoll(fence_ttl.substr(1)) > ms(one_year - 1h));

        // A huge wait waits (it does not overflow into "timed out at once").
        for (auto wait : {clock_type::duration::max(), clock_type::duration(one_year * 100)}) {
            bool done = false;
            error_code got_ec = asio::error::would_block;
            lease got;
            m.async_acquire_for(wait, [&](error_code ec, lease g) {
                got_ec = ec;
                got = std::move(g);
                done = true;
            });
            co_await sleep_for(300ms);
            BOOST_TEST(!done);
            co_await l.async_release();
            BOOST_REQUIRE(co_await eventually([&] { return done; }, 2s));
            BOOST_TEST(!got_ec);
            BOOST_TEST(got.valid());
            l = std::move(got);
        }
        co_await l.async_release();

        // The smallest lease.
        corolock::mutex tiny(conn, "lock:limits:tiny", lease_of(10ms));
        lease t = co_await tiny.async_acquire();
        BOOST_TEST(t.owns());
        co_await t.async_release(tuple_deferred);
    });
}

// ---------------------------------------------------------------------------------------------
// Watchdog, and the strand (review S4)

BOOST_FIXTURE_TEST_CASE(watchdog_keeps_lock_and_stops_on_release, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:watchdog", lease_of(300ms));
        lease l = co_await m.async_acquire();
        co_await sleep_for(1200ms); // four leases
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

// Review S4: completions run outside the connection's strand. A coroutine resumed by corolock
// that hogs its thread must not stop the watchdog of other leases.
BOOST_FIXTURE_TEST_CASE(s4_completions_run_outside_the_connection_strand, fixture) {
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

// ---------------------------------------------------------------------------------------------
// Fencing (review S5) and fence keys

BOOST_FIXTURE_TEST_CASE(s5_tokens_increase_across_flushall_expiry_and_restart, fixture) {
    run(
        [&]() -> awaitable<void> {
            std::uint64_t last = 0;
            int checked = 0, not_increasing = 0;
            auto check = [&](const lease& l) {
                if (l.token() <= last)
                    ++not_increasing;
                last = l.token();
                ++checked;
            };
            corolock::mutex m(conn, "lock:fence");
            for (int i = 0; i < 3000; ++i) {
                lease l = co_await m.async_acquire();
                check(l);
                co_await l.async_release();
            }
            BOOST_TEST(not_increasing == 0);
            // The fence key lost (FLUSHALL, or evicted).
            BOOST_TEST(srv.command({"FLUSHALL"}) == "+OK\r\n");
            {
                lease l = co_await m.async_acquire();
                BOOST_TEST(l.token() > last);
                check(l);
                co_await l.async_release();
            }
            // Fixed leases that run out between acquisitions.
            corolock::mutex e(conn, "lock:fence", lease_of(30ms, false));
            for (int i = 0; i < 5; ++i) {
                lease l = co_await e.async_acquire();
                check(l);
                co_await l.async_wait_lost(tuple_deferred);
                co_await sleep_for(10ms);
            }
            BOOST_TEST(not_increasing == 0);
            // A restart without persistence loses everything.
            srv.restart();
            auto [ec, r] = co_await m.async_acquire_for(10s, tuple_deferred);
            BOOST_REQUIRE(!ec);
            BOOST_TEST(r.token() > last);
            check(r);
            co_await r.async_release();
            BOOST_TEST(not_increasing == 0);
            BOOST_TEST_MESSAGE(checked << " tokens checked");
        },
        120s);
}

// Review S5: a redis-server restarted from an older RDB snapshot brings back a stale fence key.
BOOST_FIXTURE_TEST_CASE(s5_tokens_increase_after_restoring_an_older_snapshot, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:snap");
        lease l1 = co_await m.async_acquire();
        const auto t1 = l1.token();
        co_await l1.async_release();
        BOOST_TEST(srv.command({"SAVE"}) == "+OK\r\n"); // dump.rdb in the server's own dir
        lease l2 = co_await m.async_acquire();
        const auto t2 = l2.token();
        co_await l2.async_release();
        lease l3 = co_await m.async_acquire(); // held across the crash
        const auto t3 = l3.token();
        BOOST_TEST(t3 > t2);
        BOOST_TEST(t2 > t1);
        srv.restart(); // SIGKILL, then start: loads the snapshot
        // The snapshot was loaded: the fence key is T1's again.
        BOOST_TEST(srv.command({"GET", "{lock:snap}:fence"}) == bulk(std::to_string(t1)));
        BOOST_TEST(!exists("lock:snap"));
        auto [ec, l4] = co_await m.async_acquire_for(10s, tuple_deferred);
        BOOST_REQUIRE(!ec);
        BOOST_TEST_MESSAGE("T1 " << t1 << ", T2 " << t2 << ", T3 " << t3 << ", after restore "
                                 << l4.token());
        BOOST_TEST(l4.token() > t3);
        // T3's lease did not survive; its release cannot touch l4's key.
        auto [rec] = co_await l3.async_release(tuple_deferred);
        BOOST_TEST(rec == corolock::condition::lock_lost);
        BOOST_TEST(owner("lock:snap") == bulk(l4.owner_id()));
        auto [fec, v] = co_await fenced_incr_with(l4, "snap:counter");
        BOOST_TEST(!fec);
        co_await l4.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(fenced_write_refuses_stale_token, fixture) {
    run([&]() -> awaitable<void> {
        const corolock::fenced_script decr("return redis.call('DECRBY', KEYS[1], ARGV[1])");
        BOOST_TEST(srv.command({"SET", "stock", "10"}) == "+OK\r\n");
        corolock::mutex a(conn, "lock:stock", lease_of(200ms, false)), b(peer, "lock:stock");
        lease la = co_await a.async_acquire();
        const std::string_view keys[] = {"stock"};
        const std::string_view args[] = {"1"};
        corolock::generic_response resp;
        co_await la.async_fenced_eval(decr, keys, args, resp);
        BOOST_TEST(resp.at(0).value == "9");
        co_await sleep_for(300ms);             // a's fixed lease runs out...
        lease lb = co_await b.async_acquire(); // ...and b takes over with a newer token
        BOOST_TEST(lb.token() > la.token());
        resp.clear();
        co_await lb.async_fenced_eval(decr, keys, args, resp);
        BOOST_TEST(resp.at(0).value == "8");
        // a's write is refused: locally (known lost), nothing sent.
        resp.clear();
        auto [ec] = co_await la.async_fenced_eval(decr, keys, args, resp, tuple_deferred);
        BOOST_TEST(ec == corolock::condition::lock_lost);
        co_await lb.async_release();
        // The body's own errors are not stale_token (review Q6).
        lease lc = co_await b.async_acquire();
        const corolock::fenced_script fails("return redis.error_reply('STALE body error')");
        resp.clear();
        auto [bec] = co_await lc.async_fenced_eval(fails, keys, args, resp, tuple_deferred);
        BOOST_TEST(bec == error::server_error);
        co_await lc.async_release();
        BOOST_TEST(srv.command({"GET", "stock"}) == "$1\r\n8\r\n");
    });
}

// Fence keys expire fence_retention after the last lease: 100,000 lock names leave nothing.
BOOST_FIXTURE_TEST_CASE(fence_keys_expire_after_retention, fixture) {
    run(
        [&]() -> awaitable<void> {
            auto opts = lease_of(50ms, false);
            opts.fence_retention = 200ms;
            constexpr int workers = 40, per_worker = 2500; // 100,000 names
            // A 50 ms fixed lease may run out before its release under this load (the release
            // then says lease_lost): both leave no lock key.
            std::atomic<int> acquired{0}, failed{0}, released{0}, expired{0};
            auto ex = co_await asio::this_coro::executor;
            auto worker = [&](int w) -> awaitable<void> {
                for (int i = 0; i < per_worker; ++i) {
                    corolock::mutex m(conn, "gc:" + std::to_string(w) + ":" + std::to_string(i),
                                      opts);
                    auto [ec, l] = co_await m.async_acquire(tuple_deferred);
                    if (ec) {
                        ++failed;
                        continue;
                    }
                    ++acquired;
                    auto [rec] = co_await l.async_release(tuple_deferred);
                    if (!rec)
                        ++released;
                    else if (rec == error::lease_lost)
                        ++expired;
                    else
                        ++failed;
                }
            };
            const auto t0 = clock_type::now();
            std::vector<decltype(asio::co_spawn(ex, worker(0), asio::deferred))> ops;
            for (int w = 0; w < workers; ++w)
                ops.push_back(asio::co_spawn(ex, worker(w), asio::deferred));
            co_await asio::experimental::make_parallel_group(std::move(ops))
                .async_wait(asio::experimental::wait_for_all(), asio::deferred);
            BOOST_TEST_MESSAGE("100,000 acquire+release in " << ms(clock_type::now() - t0)
                                                             << " ms");
            BOOST_TEST_MESSAGE(released << " released, " << expired << " expired first");
            BOOST_TEST(acquired == workers * per_worker);
            BOOST_TEST(released + expired == workers * per_worker);
            BOOST_TEST(failed == 0);
            // A fence key outlives its lock...
            corolock::mutex probe(conn, "gc:probe", opts);
            lease p = co_await probe.async_acquire();
            co_await p.async_release();
            BOOST_TEST(exists("{gc:probe}:fence"));
            // ...by lease + fence_retention only. (Redis reclaims expired keys in the
            // background, so DBSIZE may lag their expiry a little.)
            co_await sleep_for(400ms);
            BOOST_TEST_MESSAGE("DBSIZE 400 ms later: " << srv.command({"DBSIZE"}));
            BOOST_TEST(
                co_await eventually([&] { return srv.command({"DBSIZE"}) == ":0\r\n"; }, 1s, 20ms));
        },
        120s);
}

// ---------------------------------------------------------------------------------------------
// Waiters, cancellation, with_lock

BOOST_FIXTURE_TEST_CASE(five_hundred_waiters_are_woken_by_releases, fixture) {
    run([&]() -> awaitable<void> {
        constexpr int n = 500;
        std::atomic<int> inside{0}, overlaps{0}, done{0};
        corolock::mutex m(conn, "lock:herd");
        auto waiter = [&]() -> awaitable<void> {
            lease l = co_await m.async_acquire();
            if (inside.fetch_add(1) != 0)
                ++overlaps;
            co_await sleep_for(std::chrono::microseconds(500));
            inside.fetch_sub(1);
            co_await l.async_release();
            ++done;
        };
        const auto before = stats();
        std::vector<decltype(asio::co_spawn(ioc, waiter(), asio::deferred))> ops;
        for (int i = 0; i < n; ++i)
            ops.push_back(asio::co_spawn(ioc, waiter(), asio::deferred));
        co_await asio::experimental::make_parallel_group(std::move(ops))
            .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        const auto after = stats();
        // Woken by a release: through pub/sub, or (waiters and holder on one connection) by
        // the hand-off that sends the head's attempt behind the release.
        const auto pubsub =
            after.pubsub_wakeups + after.handoffs - before.pubsub_wakeups - before.handoffs;
        const auto timer = after.timer_wakeups - before.timer_wakeups;
        const auto attempts = after.attempts - before.attempts;
        BOOST_TEST_MESSAGE("500 waiters: " << attempts << " attempts, " << pubsub
                                           << " pub/sub wake-ups, " << timer << " timer wake-ups");
        BOOST_TEST(done == n);
        BOOST_TEST(overlaps == 0);
        BOOST_TEST(pubsub >= static_cast<std::uint64_t>(n / 2));
        BOOST_TEST(timer * 20 <= pubsub); // the fallback timer is the exception
        // No thundering herd: each waiter makes its first try, the retry after subscribing (all
        // 500 start before the first reply) and about one attempt per wake-up, not one per
        // release it hears of.
        BOOST_TEST(attempts < static_cast<std::uint64_t>(4 * n));
        BOOST_TEST(!exists("lock:herd"));
    });
}

BOOST_FIXTURE_TEST_CASE(cancelled_waiters_and_acquires_leave_nothing, fixture) {
    run([&]() -> awaitable<void> {
        std::mt19937 rng(7);
        corolock::mutex m(conn, "lock:cancel");
        lease holder = co_await m.async_acquire();
        // 100 waiters on the shared handle, cancelled at random times.
        constexpr int n = 100;
        std::vector<asio::cancellation_signal> signals(n);
        int aborted = 0, completed = 0;
        for (int i = 0; i < n; ++i)
            m.async_acquire(
                asio::bind_cancellation_slot(signals[i].slot(), [&](error_code ec, lease l) {
                    ++completed;
                    if (ec == asio::error::operation_aborted && !l)
                        ++aborted;
                }));
        for (int i = 0; i < n; ++i) {
            co_await sleep_for(std::chrono::microseconds(rng() % 3000));
            signals[i].emit(asio::cancellation_type::terminal);
        }
        BOOST_REQUIRE(co_await eventually([&] { return completed == n; }, 5s));
        BOOST_TEST(aborted == n);
        BOOST_TEST(stats().waiters == 0u);
        BOOST_TEST(holder.valid());
        co_await holder.async_release();

        // 50 acquires of free locks, cancelled while on the wire (or just after).
        std::vector<asio::cancellation_signal> wire(50);
        std::vector<std::unique_ptr<corolock::mutex>> racers;
        std::vector<lease> won;
        int finished = 0;
        for (int i = 0; i < 50; ++i) {
            racers.push_back(
                std::make_unique<corolock::mutex>(conn, "lock:cancel:" + std::to_string(i)));
            racers.back()->async_acquire(
                asio::bind_cancellation_slot(wire[i].slot(), [&](error_code, lease l) {
                    ++finished;
                    if (l)
                        won.push_back(std::move(l));
                }));
        }
        co_await sleep_for(std::chrono::microseconds(200));
        for (auto& s : wire)
            s.emit(asio::cancellation_type::terminal);
        BOOST_REQUIRE(co_await eventually([&] { return finished == 50; }, 5s));
        // Those that completed with success hold their lock; release them. The others must
        // leave nothing behind once their replies have been handled.
        for (auto& l : won)
            co_await l.async_release();
        BOOST_TEST(co_await eventually(
            [&] {
                for (int i = 0; i < 50; ++i)
                    if (exists("lock:cancel:" + std::to_string(i)))
                        return false;
                return true;
            },
            2s, 20ms));
        BOOST_TEST(!exists("lock:cancel"));
        BOOST_TEST(stats().leases_held == 0u);
        const auto renewals = stats().renewals;
        co_await sleep_for(400ms);
        BOOST_TEST(stats().renewals == renewals); // no live watchdog
        lease next = co_await m.async_try_acquire();
        BOOST_TEST(next.owns());
        co_await next.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(mutex_cancel_aborts_pending_acquires_only, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:cancelall");
        lease held = co_await m.async_acquire();
        int aborted = 0;
        for (int i = 0; i < 3; ++i)
            m.async_acquire([&](error_code ec, lease) {
                if (ec == asio::error::operation_aborted)
                    ++aborted;
            });
        co_await sleep_for(50ms);
        m.cancel();
        BOOST_TEST(co_await eventually([&] { return aborted == 3; }, 1s));
        BOOST_TEST(held.valid()); // leases are untouched
        BOOST_TEST(exists("lock:cancelall"));
        co_await held.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(with_lock_releases_on_every_path, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:scoped", lease_of(300ms));
        std::uint64_t seen = 0;
        // Each body yields first (see with_lock_body_that_finishes_at_once for why).
        co_await corolock::with_lock(m, [&](lease& l) -> awaitable<void> {
            co_await sleep_for(10ms);
            seen = l.token();
            BOOST_TEST(l.valid());
            BOOST_TEST(exists("lock:scoped"));
        });
        BOOST_TEST(seen > 0u);
        BOOST_TEST(!exists("lock:scoped"));

        bool threw = false;
        try {
            co_await corolock::with_lock(m, [&](lease&) -> awaitable<void> {
                co_await sleep_for(10ms);
                throw std::runtime_error("boom");
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
            co_await corolock::with_lock(m, [&](lease&) -> awaitable<void> {
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
        BOOST_TEST(!exists("lock:scoped"));
        BOOST_TEST(stats().leases_held == 0u);
    });
}

// BUG (found by this test): a body that completes before async_wait_lost has reached the
// connection's strand. with_lock then cancels the wait before it is registered; the
// cancellation is lost and with_lock waits until the lease is lost (see
// wait_lost_cancelled_right_after_initiation_completes). After the check, the test deletes the
// lock so that the hung with_lock ends (it then throws lease_lost) instead of hanging the suite.
BOOST_FIXTURE_TEST_CASE(with_lock_body_that_finishes_at_once, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:scoped:fast", lease_of(300ms));
        corolock::mutex admin(peer, "lock:scoped:fast");
        for (const bool throws : {false, true}) {
            BOOST_TEST_CONTEXT("body " << (throws ? "throws" : "returns") << " at once") {
                bool ran = false, done = false;
                std::exception_ptr failure;
                asio::co_spawn(co_await asio::this_coro::executor,
                               corolock::with_lock(m,
                                                   [&](lease&) -> awaitable<void> {
                                                       ran = true;
                                                       if (throws)
                                                           throw std::runtime_error("boom");
                                                       co_return;
                                                   }),
                               [&](std::exception_ptr e) {
                                   failure = e;
                                   done = true;
                               });
                BOOST_TEST(co_await eventually([&] { return done; }, 2s));
                BOOST_TEST(ran);
                if (!done) {
                    co_await admin.async_force_unlock(); // unblock the hung with_lock
                    BOOST_REQUIRE(co_await eventually([&] { return done; }, 3s));
                }
                BOOST_TEST(static_cast<bool>(failure) == throws);
                BOOST_TEST(co_await eventually([&] { return !exists("lock:scoped:fast"); }, 1s));
            }
        }
    });
}

// BUG (found by this test): lease::async_wait_lost assigns its cancellation handler on the
// connection's strand, after a post; a cancellation emitted right after the call (before that
// post has run) is dropped, and the wait goes on until the lease ends.
BOOST_FIXTURE_TEST_CASE(wait_lost_cancelled_right_after_initiation_completes, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:waitcancel", lease_of(3s));
        lease l = co_await m.async_acquire();
        asio::cancellation_signal sig;
        bool done = false;
        error_code wec;
        l.async_wait_lost(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec) {
            wec = ec;
            done = true;
        }));
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&] { return done; }, 1s));
        BOOST_TEST(wec == asio::error::operation_aborted);
        // Cancelled once registered: that path works.
        asio::cancellation_signal sig2;
        bool done2 = false;
        error_code wec2;
        l.async_wait_lost(asio::bind_cancellation_slot(sig2.slot(), [&](error_code ec) {
            wec2 = ec;
            done2 = true;
        }));
        co_await sleep_for(20ms);
        sig2.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&] { return done2; }, 1s));
        BOOST_TEST(wec2 == asio::error::operation_aborted);
        co_await l.async_release(); // ends any wait still registered
        BOOST_TEST(co_await eventually([&] { return done; }, 1s));
    });
}

// Several waits for one lease's loss (a with_lock body that starts its own watcher), one of them
// cancelled once registered, in each position: taking a handler out of the middle of the list
// crashed the process (Boost 1.81's any_completion_handler recurses when move-assigned). The
// others stay registered and end with the lease.
BOOST_FIXTURE_TEST_CASE(several_waits_for_loss_each_cancelled_in_every_position, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:waits", lease_of(3s));
        constexpr int n = 3;
        for (int cancelled = 0; cancelled < n; ++cancelled) {
            lease l = co_await m.async_acquire();
            asio::cancellation_signal sigs[n];
            error_code ecs[n];
            int done[n] = {};
            for (int i = 0; i < n; ++i)
                l.async_wait_lost(
                    asio::bind_cancellation_slot(sigs[i].slot(), [&, i](error_code ec) {
                        ecs[i] = ec;
                        ++done[i];
                    }));
            co_await sleep_for(20ms); // registered on the strand
            sigs[cancelled].emit(asio::cancellation_type::terminal);
            BOOST_TEST(co_await eventually([&] { return done[cancelled] == 1; }, 1s));
            BOOST_TEST(ecs[cancelled] == asio::error::operation_aborted);
            for (int i = 0; i < n; ++i)
                if (i != cancelled)
                    BOOST_TEST(done[i] == 0, "wait " << i << " ended with wait " << cancelled);
            BOOST_TEST(l.valid());
            co_await l.async_release();
            BOOST_TEST(co_await eventually(
                [&] { return done[0] == 1 && done[1] == 1 && done[2] == 1; }, 1s));
            for (int i = 0; i < n; ++i)
                BOOST_TEST(ecs[i] == asio::error::operation_aborted);
        }
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

BOOST_FIXTURE_TEST_CASE(force_unlock_frees_and_wakes_waiters, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:force", lease_of(3s)), admin(peer, "lock:force");
        lease holder = co_await m.async_acquire();
        error_code waited = asio::error::would_block;
        lease got;
        m.async_acquire([&](error_code ec, lease l) {
            waited = ec;
            got = std::move(l);
        });
        co_await sleep_for(50ms);
        BOOST_TEST(waited == asio::error::would_block); // still waiting
        const auto pubsub = stats().pubsub_wakeups;
        bool deleted = co_await admin.async_force_unlock();
        BOOST_TEST(deleted);
        BOOST_REQUIRE(co_await eventually([&] { return waited != asio::error::would_block; }, 2s));
        BOOST_TEST(!waited);
        BOOST_TEST(got.valid());
        BOOST_TEST(got.token() > holder.token());
        BOOST_TEST(stats().pubsub_wakeups > pubsub);
        auto [lost] = co_await holder.async_wait_lost(tuple_deferred);
        BOOST_TEST(lost == error::lease_lost); // the holder's next renewal finds it taken
        auto [rec] = co_await holder.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
        BOOST_TEST(owner("lock:force") == bulk(got.owner_id()));
        co_await got.async_release();
    });
}

// ---------------------------------------------------------------------------------------------
// Leases dropped without release, connection stop, handoffs, crashed holders

// A dropped lease (destructor) releases without waiting: the next owner gets in at once.
BOOST_FIXTURE_TEST_CASE(dropped_lease_releases_promptly, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex a(conn, "lock:drop", lease_of(10s)), b(peer, "lock:drop", lease_of(10s));
        {
            lease l = co_await a.async_acquire();
            BOOST_TEST(exists("lock:drop"));
        } // dropped
        const auto t0 = clock_type::now();
        auto [ec, lb] = co_await b.async_acquire_for(20s, tuple_deferred);
        const auto waited = clock_type::now() - t0;
        BOOST_TEST(!ec);
        BOOST_TEST_MESSAGE("free again " << ms(waited) << " ms after the drop (lease 10 s)");
        BOOST_TEST((waited < 2s)); // well before the 10 s lease
        co_await lb.async_release();

        // acquire + drop, no awaited release, 1000 times: every one acquires.
        int acquired = 0;
        for (int i = 0; i < 1000; ++i) {
            auto [e, l] = co_await a.async_acquire_for(10s, tuple_deferred);
            if (!e && l.valid())
                ++acquired;
        }
        BOOST_TEST(acquired == 1000);
        BOOST_TEST(co_await eventually([&] { return !exists("lock:drop"); }, 2s));
        BOOST_TEST(co_await eventually([&] { return stats().leases_held == 0u; }, 1s));
        lease o = co_await b.async_try_acquire();
        BOOST_TEST(o.owns());
        co_await o.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(stopping_the_connection_ends_waits_and_leases, fixture) {
    error_code waiter_ec = asio::error::would_block, lost_ec = asio::error::would_block;
    bool holder_lost = false, holder_valid = true;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            corolock::mutex m(conn, "lock:stop");
            lease holder = co_await m.async_acquire();
            m.async_acquire([&](error_code ec, lease) { waiter_ec = ec; }); // no deadline
            holder.async_wait_lost([&](error_code ec) { lost_ec = ec; });
            co_await sleep_for(100ms);
            conn.cancel();
            co_await eventually(
                [&] {
                    return waiter_ec != asio::error::would_block &&
                           lost_ec != asio::error::would_block;
                },
                2s);
            holder_lost = holder.lost();
            holder_valid = holder.valid();
        }(),
        30s); // the drain check: nothing may be left waiting for a 30 s lease
    BOOST_TEST(waiter_ec == error::not_connected);
    BOOST_TEST(lost_ec == error::lease_lost);
    BOOST_TEST(holder_lost);
    BOOST_TEST(!holder_valid);
}

BOOST_FIXTURE_TEST_CASE(handoffs_between_connections_need_no_fallback_timer, fixture) {
    // Two processes' worth of waiters (two connections) alternate on one lock: every handoff
    // must come from a release message, none from the fallback timer.
    run([&]() -> awaitable<void> {
        auto worker = [&](corolock::connection& c) -> awaitable<void> {
            // A long fallback, so that release messages do the handoffs.
            auto opts = lease_of(5s);
            opts.retry_base = 1s;
            opts.retry_max = 2s;
            corolock::mutex m(c, "lock:pingpong", opts);
            for (int i = 0; i < 500; ++i) {
                lease l = co_await m.async_acquire_for(20s);
                co_await l.async_release();
            }
        };
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ioc, worker(conn), asio::deferred),
            asio::co_spawn(ioc, worker(peer), asio::deferred))
            .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        const auto a = stats(), b = corolock::get_lock_stats(peer);
        BOOST_TEST_MESSAGE("1000 cycles: pub/sub wake-ups " << a.pubsub_wakeups + b.pubsub_wakeups
                                                            << ", timer wake-ups "
                                                            << a.timer_wakeups + b.timer_wakeups);
        // The fallback draws with full jitter, so a rare early timer is legitimate.
        BOOST_TEST(a.timer_wakeups + b.timer_wakeups <= 10u);
        BOOST_TEST(!exists("lock:pingpong"));
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
        lease held; // kept: dropping it would release
        m.async_acquire([&](error_code ec, lease l) {
            held = std::move(l);
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
    clock_type::duration waited{};
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            co_await sleep_for(1500ms); // the watchdog has renewed at least once by now
            corolock::mutex m(conn, "lock:killed");
            BOOST_TEST(!(co_await m.async_try_acquire()).owns());
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
            const auto t0 = clock_type::now();
            lease l = co_await m.async_acquire_for(5s);
            waited = clock_type::now() - t0;
            co_await l.async_release();
            conn.cancel();
        }(),
        30s);
    BOOST_TEST_MESSAGE("free again " << ms(waited) << " ms after SIGKILL (lease 1000 ms)");
    BOOST_TEST((waited < 1250ms)); // within the lease plus a small margin
}

// ---------------------------------------------------------------------------------------------
// Logging

BOOST_FIXTURE_TEST_CASE(lost_leases_and_undos_are_logged, fixture) {
    log_capture logs;
    corolock::connection logged(ioc.get_executor(), config_for(srv), logs.make());
    run([&]() -> awaitable<void> {
        logged.async_run(asio::detached);
        corolock::mutex m(logged, "lock:log", lease_of(300ms));
        lease l = co_await m.async_acquire();
        BOOST_TEST(!logs.contains("lease lost"));
        srv.command({"DEL", "lock:log"});
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST(logs.contains("lease lost"));
        co_await l.async_release(tuple_deferred);

        // A grant nobody waits for any more (cancelled while its script is on the wire). (The
        // lost lease's cleanup above is an undo too.)
        const auto undos_logged = logs.count("undo sent");
        corolock::mutex u(logged, "lock:log:undo");
        asio::cancellation_signal sig;
        bool done = false;
        error_code uec;
        u.async_acquire(asio::bind_cancellation_slot(sig.slot(), [&](error_code e, lease) {
            uec = e;
            done = true;
        }));
        sig.emit(asio::cancellation_type::terminal);
        BOOST_REQUIRE(co_await eventually([&] { return done; }, 2s));
        BOOST_TEST(uec == asio::error::operation_aborted);
        BOOST_TEST(co_await eventually([&] { return logs.count("undo sent") > undos_logged; }, 2s));
        BOOST_TEST(logs.contains("given back"));
        BOOST_TEST(co_await eventually([&] { return !exists("lock:log:undo"); }, 2s));
        logged.cancel();
    });
}

BOOST_AUTO_TEST_CASE(waiters_without_channel_rights_fall_back_to_their_timers) {
    // Redis 7 gives a new ACL user no channel rights: the lock's SUBSCRIBE is refused. Waiters
    // must still get the lock (on their back-off timers), every reply must still match (a
    // shifted reply once made a try_acquire of a held lock answer "acquired"), and the refusal
    // is logged once, clearly.
    redis_process srv({"--user", "app", "on", ">pw", "~*", "+@all"});
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.username = "app";
    cfg.password = "pw";
    log_capture logs;
    corolock::connection conn(ioc.get_executor(), cfg, logs.make());
    corolock::connection other(ioc.get_executor(), cfg, quiet());
    int inside = 0, most = 0, done = 0, wrong = 0;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            other.async_run(asio::detached);
            corolock::mutex m(conn, "acl:lock", lease_of(2s));
            corolock::mutex held_elsewhere(other, "acl:held", lease_of(5s));
            auto h = co_await held_elsewhere.async_acquire(asio::use_awaitable);
            corolock::mutex probe(conn, "acl:held", lease_of(5s));
            auto holder = co_await m.async_acquire(asio::use_awaitable);
            auto ex = co_await asio::this_coro::executor;
            for (int i = 0; i < 10; ++i)
                asio::co_spawn(
                    ex,
                    [&]() -> awaitable<void> {
                        auto l = co_await m.async_acquire_for(10s, asio::use_awaitable);
                        most = std::max(most, ++inside);
                        // A try of a lock held by another connection must say "held".
                        auto [ec, other_lease] =
                            co_await probe.async_try_acquire(tuple_use_awaitable);
                        wrong += ec || other_lease.owns();
                        co_await sleep_for(2ms);
                        --inside;
                        co_await l.async_release(asio::use_awaitable);
                        ++done;
                    },
                    asio::detached);
            co_await sleep_for(100ms); // every waiter queues; the SUBSCRIBE is refused
            co_await holder.async_release(asio::use_awaitable);
            for (int i = 0; i < 500 && done < 10; ++i)
                co_await sleep_for(20ms);
            co_await h.async_release(asio::use_awaitable);
            conn.cancel();
            other.cancel();
        }(),
        60s);
    BOOST_TEST(done == 10);
    BOOST_TEST(most == 1);
    BOOST_TEST(wrong == 0);
    BOOST_TEST(logs.count("get no release messages") == 1u);
    BOOST_TEST(logs.contains("subscription refused"));
}

BOOST_FIXTURE_TEST_CASE(a_release_hands_the_lock_to_a_local_waiter_in_one_write, fixture) {
    // Holder and waiter on one connection: the waiter's attempt goes out behind the release, in
    // the same write, instead of waiting for the release message (two round trips).
    auto cfg = config_for(srv);
    cfg.health_check_interval = clock_type::duration::zero(); // no PING in the counted writes
    corolock::connection quiet_conn(ioc.get_executor(), cfg, quiet());
    run([&]() -> awaitable<void> {
        quiet_conn.async_run(asio::detached);
        auto opts = lease_of(10s, false);
        opts.retry_base = opts.retry_max = 10s; // no fallback attempt in the counted window
        corolock::mutex m(quiet_conn, "lock:handoff", opts);
        lease a = co_await m.async_acquire();
        error_code got = asio::error::would_block;
        lease b;
        m.async_acquire_for(5s, [&](error_code ec, lease l) {
            got = ec;
            b = std::move(l);
        });
        co_await sleep_for(50ms); // b has tried, subscribed and retried: it waits as head
        // c waits behind b, so that b's leaving does not empty the queue (an UNSUBSCRIBE would
        // be one more write).
        error_code c_got = asio::error::would_block;
        m.async_acquire_for(5s, [&](error_code ec, lease) { c_got = ec; });
        co_await sleep_for(20ms);
        const auto before = corolock::get_lock_stats(quiet_conn);
        const auto writes = quiet_conn.stats().writes;
        co_await a.async_release();
        BOOST_TEST(co_await eventually([&] { return got != asio::error::would_block; }, 2s, 1ms));
        BOOST_TEST(!got);
        BOOST_TEST(b.valid());
        const auto after = corolock::get_lock_stats(quiet_conn);
        BOOST_TEST(after.handoffs - before.handoffs == 1u);
        BOOST_TEST(after.pubsub_wakeups == before.pubsub_wakeups); // its own message is no wake-up
        BOOST_TEST(after.attempts - before.attempts == 1u);        // one attempt, granted
        BOOST_TEST(quiet_conn.stats().writes - writes == 1u);      // release + attempt, one write
        BOOST_TEST(owner("lock:handoff") == "$32\r\n" + std::string(b.owner_id()) + "\r\n");
        co_await b.async_release();
        BOOST_TEST(co_await eventually([&] { return c_got != asio::error::would_block; }, 2s));
        BOOST_TEST(!c_got); // and c gets it from b the same way
        quiet_conn.cancel();
    });
}

// The connection's strand is concrete only over an io_context's own executor, and completions
// take a shortcut for io_context executors and strands of them (connection_impl.hpp); every
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

BOOST_AUTO_TEST_SUITE_END()
