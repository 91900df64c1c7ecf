// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The semaphore against real redis-server processes (doc/semaphore.md): permits as leases on the
// lock core, the limit across processes (an interval history checked afterwards), a crashed
// holder's permits, k-permit wake-ups, one renewal batch for a mutex's and a semaphore's leases,
// the guarded write, the limit's checks, and a cluster.
#include "common/coro_test.hpp"
#include "common/redis_cluster.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include "core/lock_scripts.hpp"
#include "core/slot_table.hpp"
#include <corolock/cluster.hpp>
#include <corolock/mutex.hpp>
#include <corolock/semaphore.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_semaphore {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::lease;
// The suite is named `semaphore`, like the file: the class goes by another name here.
using sem = corolock::semaphore;
using corolock::test::config_for;
using corolock::test::eventually;
using corolock::test::lease_of;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::sleep_for;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;

namespace {

using fixture = corolock::test::server_fixture;

// Waiters retry on their own only every 5 s: a faster grant came from a release message.
corolock::mutex_options slow_retry(clock_type::duration lease) {
    auto o = lease_of(lease);
    o.retry_base = 5s;
    o.retry_max = 5s;
    return o;
}

awaitable<corolock::semaphore_usage> usage_of(sem& s) {
    auto [ec, u] = co_await s.async_usage(tuple_deferred);
    BOOST_TEST(!ec, ec.message());
    co_return u;
}

// One hold of k permits as its holder saw it: from the grant's reply to the release's send (or
// the lease's local end, if earlier), on CLOCK_MONOTONIC, which every process shares.
struct hold {
    std::int64_t from_ns, to_ns;
    int k;
};

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               clock_type::now().time_since_epoch())
        .count();
}

// The largest sum of permits held at one instant.
int max_concurrent(std::vector<hold> holds) {
    std::vector<std::pair<std::int64_t, int>> events;
    for (const auto& h : holds) {
        events.emplace_back(h.from_ns, h.k);
        events.emplace_back(h.to_ns, -h.k);
    }
    // At one instant, ends before starts: touching intervals do not overlap.
    std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    int cur = 0, best = 0;
    for (const auto& [t, d] : events) {
        cur += d;
        best = std::max(best, cur);
    }
    return best;
}

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore)

BOOST_FIXTURE_TEST_CASE(permits_are_leases_up_to_the_limit, fixture) {
    run([&]() -> awaitable<void> {
        sem s(conn, "sem:basic", 3, lease_of(5s));
        auto a = co_await s.async_try_acquire(1);
        auto b = co_await s.async_try_acquire(2);
        BOOST_TEST(a.valid());
        BOOST_TEST(b.valid());
        BOOST_TEST(a.token().value() == 0u); // no fencing token for permits
        BOOST_TEST(a.owner_id() != b.owner_id());
        auto u = co_await usage_of(s);
        BOOST_TEST(u.limit == 3);
        BOOST_TEST(u.used == 3);
        // The key layout of doc/keys.md: "<k>:<owner>" scored by its deadline, "=limit" by
        // -limit, and a TTL no shorter than the latest deadline.
        BOOST_TEST(srv.command({"ZSCORE", "sem:basic", "=limit"}) == "$2\r\n-3\r\n");
        // The key expires in the very ms of its latest deadline (PEXPIREAT), never before.
        const auto latest = srv.command({"ZRANGE", "sem:basic", "-1", "-1", "WITHSCORES"});
        const auto at = srv.command({"PEXPIRETIME", "sem:basic"});
        const auto score = latest.substr(latest.rfind("$"));
        BOOST_TEST(":" + score.substr(score.find("\r\n") + 2) == at, latest << " / " << at);
        BOOST_TEST(latest.find("2:" + std::string(b.owner_id())) != std::string::npos);
        auto [ec, c] = co_await s.async_try_acquire(1, tuple_deferred);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(!c.valid()); // full
        // A waiter of 2 permits gets them when the holder of 2 releases.
        sem other(peer, "sem:basic", 3, slow_retry(5s));
        bool granted = false;
        asio::co_spawn(
            co_await asio::this_coro::executor,
            [&]() -> awaitable<void> {
                auto [wec, w] = co_await other.async_acquire_for(10s, 2, tuple_deferred);
                BOOST_TEST(!wec, wec.message());
                granted = w.valid();
                co_await w.async_release();
            },
            asio::detached);
        co_await sleep_for(100ms);
        BOOST_TEST(!granted);
        const auto released = clock_type::now();
        co_await b.async_release();
        BOOST_TEST(co_await eventually([&] { return granted; }, 10s));
        BOOST_TEST((clock_type::now() - released < 2s)); // the message, not the 5 s timer
        co_await a.async_release();
        BOOST_TEST(co_await eventually([&] { return !exists("sem:basic"); }, 2s));
    });
}

BOOST_FIXTURE_TEST_CASE(invalid_arguments_fail_before_anything_is_sent, fixture) {
    run([&]() -> awaitable<void> {
        const auto before = conn.stats().commands;
        for (std::size_t k : {std::size_t{0}, std::size_t{4}}) {
            sem s(conn, "sem:args", 3);
            auto [ec, l] = co_await s.async_try_acquire(k, tuple_deferred);
            BOOST_TEST(ec == error::invalid_argument);
            BOOST_TEST(!l.owns());
        }
        sem zero(conn, "sem:args", 0);
        auto [zec, zl] = co_await zero.async_acquire(1, tuple_deferred);
        BOOST_TEST(zec == error::invalid_argument);
        sem huge(conn, "sem:args", 2'000'000'000);
        auto [hec, hl] = co_await huge.async_acquire(1, tuple_deferred);
        BOOST_TEST(hec == error::invalid_argument);
        sem badname(conn, "a}b", 3);
        auto [nec, nl] = co_await badname.async_acquire(1, tuple_deferred);
        BOOST_TEST(nec == error::invalid_name);
        sem s(conn, "sem:args", 3);
        auto [lec] = co_await s.async_set_limit(0, tuple_deferred);
        BOOST_TEST(lec == error::invalid_argument);
        auto [wec, wl] = co_await s.async_acquire_for(-1s, 1, tuple_deferred);
        BOOST_TEST(wec == error::invalid_wait);
        BOOST_TEST(conn.stats().commands - before <= 1u); // a health-check PING at most
        BOOST_TEST(!exists("sem:args"));
    });
}

BOOST_FIXTURE_TEST_CASE(another_limit_is_refused_until_set_limit_changes_it, fixture) {
    run([&]() -> awaitable<void> {
        sem five(conn, "sem:limit", 5), three(peer, "sem:limit", 3);
        auto held = co_await five.async_acquire(2);
        auto [ec, l] = co_await three.async_try_acquire(1, tuple_deferred);
        BOOST_TEST(ec == error::limit_mismatch, ec.message());
        BOOST_TEST(!l.owns());
        BOOST_TEST((co_await usage_of(five)).used == 2); // nothing was taken
        co_await three.async_set_limit(3);
        auto [ec2, l2] = co_await five.async_try_acquire(1, tuple_deferred);
        BOOST_TEST(ec2 == error::limit_mismatch, ec2.message());
        auto l3 = co_await three.async_try_acquire(1);
        BOOST_TEST(l3.valid());
        auto u = co_await usage_of(three);
        BOOST_TEST(u.limit == 3);
        BOOST_TEST(u.used == 3);
        BOOST_TEST(held.valid()); // leases held stay held
        co_await held.async_release();
        co_await l3.async_release();
    });
}

// A request for every permit is not starved by a stream of one-permit requests from another
// process (review: a k = 5 request timed out after 15 s behind 44,511 small grants): the first
// waiter refused reserves its permits, and others are granted only if they fit beside it.
BOOST_FIXTURE_TEST_CASE(a_large_request_is_not_starved_by_small_ones, fixture) {
    run([&]() -> awaitable<void> {
        sem small(peer, "sem:starve", 5, lease_of(10s)),
            large(conn, "sem:starve", 5, lease_of(10s));
        bool stop = false;
        int grants = 0, running = 0;
        auto ex = co_await asio::this_coro::executor;
        for (int i = 0; i < 20; ++i) {
            ++running;
            asio::co_spawn(
                ex,
                [&]() -> awaitable<void> {
                    while (!stop) {
                        auto [ec, l] = co_await small.async_acquire_for(10s, 1, tuple_deferred);
                        if (ec)
                            break;
                        ++grants;
                        co_await sleep_for(20ms);
                        co_await l.async_release();
                    }
                    --running;
                },
                asio::detached);
        }
        co_await sleep_for(300ms);
        BOOST_TEST(grants > 0);
        const auto asked = clock_type::now();
        auto [ec, all] = co_await large.async_acquire_for(10s, 5, tuple_deferred);
        const auto waited = clock_type::now() - asked;
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(all.valid());
        // The holders present when it asked finish (20 ms each), and a round trip or two.
        BOOST_TEST((waited < 2s), std::chrono::duration<double>(waited).count() << " s");
        const auto during = grants;
        co_await sleep_for(100ms);
        BOOST_TEST(grants == during); // all 5 permits are its own
        co_await all.async_release();
        BOOST_TEST(co_await eventually([&] { return grants > during; }, 2s));
        stop = true;
        BOOST_TEST(co_await eventually([&] { return running == 0; }, 5s));
    });
}

// A waiter that gives up takes its reservation with it: the others fit again at once.
BOOST_FIXTURE_TEST_CASE(a_waiter_that_gives_up_takes_its_reservation_with_it, fixture) {
    run([&]() -> awaitable<void> {
        sem s(conn, "sem:giveup", 3, lease_of(10s)), other(peer, "sem:giveup", 3, lease_of(10s));
        auto two = co_await other.async_acquire(2);
        auto [ec, l] = co_await s.async_acquire_for(300ms, 3, tuple_deferred);
        BOOST_TEST(ec == error::acquire_timeout);
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"ZCARD", "sem:giveup"}) == ":2\r\n"; // the lease and =limit
            },
            2s));
        auto one = co_await other.async_try_acquire(1);
        BOOST_TEST(one.valid()); // no reservation left to fit beside
        co_await one.async_release();
        co_await two.async_release();
    });
}

// Someone else's members in the set: a clear wrong_type, not a Lua error (review).
BOOST_FIXTURE_TEST_CASE(a_foreign_member_is_a_wrong_type, fixture) {
    run([&]() -> awaitable<void> {
        srv.command({"ZADD", "sem:foreign", "-5", "=limit", "99999999999999", "abc"});
        sem s(conn, "sem:foreign", 5);
        auto [ec, l] = co_await s.async_try_acquire(1, tuple_deferred);
        BOOST_TEST(ec == error::wrong_type, ec.message());
        auto [uec, u] = co_await s.async_usage(tuple_deferred);
        BOOST_TEST(uec == error::wrong_type, uec.message());
    });
}

// Out of memory (maxmemory reached, noeviction): a mutex's renewal (PEXPIRE) still works, and a
// semaphore lease in the same batch, whose ZADD the server refuses, does not take it down.
BOOST_FIXTURE_TEST_CASE(an_out_of_memory_server_fails_only_the_renewals_it_refuses, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "oom:lock", lease_of(900ms));
        sem s(conn, "oom:sem", 2, lease_of(900ms));
        auto b = co_await s.async_acquire(1); // first in the batch: its ZADD runs first
        auto a = co_await m.async_acquire();
        srv.command({"CONFIG", "SET", "maxmemory", "1"});
        co_await sleep_for(1500ms);
        const bool mutex_valid = a.valid();
        const bool sem_valid = b.valid(), sem_lost = b.lost();
        srv.command({"CONFIG", "SET", "maxmemory", "0"});
        BOOST_TEST(mutex_valid);
        BOOST_TEST(sem_lost); // refused, reported, never silently kept
        BOOST_TEST(!sem_valid);
        co_await a.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(a_mutex_name_and_a_semaphore_name_refuse_each_other, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "shared:name");
        auto ml = co_await m.async_acquire();
        sem s(conn, "shared:name", 3);
        auto [ec, l] = co_await s.async_try_acquire(1, tuple_deferred);
        BOOST_TEST(ec == error::wrong_type, ec.message());
        co_await ml.async_release();
        auto sl = co_await s.async_acquire();
        auto [mec, ml2] = co_await m.async_try_acquire(tuple_deferred);
        BOOST_TEST(mec == error::wrong_type, mec.message());
        co_await sl.async_release();
    });
}

// A release or a renewal by anyone but the owner changes nothing; an expired member is never
// brought back by a renewal, and its holder is told.
BOOST_FIXTURE_TEST_CASE(only_the_owner_releases_and_an_expired_permit_stays_lost, fixture) {
    run([&]() -> awaitable<void> {
        sem s(conn, "sem:owner", 2, lease_of(900ms));
        auto l = co_await s.async_acquire();
        const std::string forged = "1:" + std::string(32, 'f');
        BOOST_TEST(srv.command({"EVAL", corolock::detail::semaphore_release_script().source(), "1",
                                "sem:owner", forged, "{sem:owner}:released", "P"}) == ":0\r\n");
        BOOST_TEST(srv.command({"EVAL", corolock::detail::renew_script().source(), "1", "sem:owner",
                                "z", forged, "10000"}) == "*1\r\n:0\r\n");
        BOOST_TEST((co_await usage_of(s)).used == 1);
        // Move its deadline into the past, as a stall past the lease would: the next renewal
        // finds it expired and the lease is reported lost, never renewed.
        const std::string member = "1:" + std::string(l.owner_id());
        BOOST_TEST(srv.command({"ZADD", "sem:owner", "XX", "1", member}) == ":0\r\n");
        auto [wec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(wec == error::lease_lost, wec.message());
        BOOST_TEST(!l.valid());
        // Not renewed, and given back by the lost lease (owner-checked): gone, not brought back.
        BOOST_TEST(srv.command({"ZSCORE", "sem:owner", member}) == "$-1\r\n");
        auto [rec] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
    });
}

BOOST_FIXTURE_TEST_CASE(guarded_write_runs_only_while_the_permit_is_live, fixture) {
    run([&]() -> awaitable<void> {
        static const corolock::fenced_script decr("return redis.call('DECR', KEYS[1])");
        sem s(conn, "sem:guard", 2, lease_of(5s));
        auto l = co_await s.async_acquire();
        const std::string_view keys[] = {"stock"};
        corolock::generic_response resp;
        co_await l.async_fenced_eval(decr, keys, {}, resp);
        BOOST_TEST(resp.at(0).value == "-1");
        const std::string member = "1:" + std::string(l.owner_id());
        srv.command({"ZADD", "sem:guard", "XX", "1", member}); // expired on the server
        resp.clear();
        auto [ec] = co_await l.async_fenced_eval(decr, keys, {}, resp, tuple_deferred);
        BOOST_TEST(ec == error::stale_token, ec.message());
        BOOST_TEST(srv.command({"GET", "stock"}) == "$2\r\n-1\r\n"); // the body did not run
    });
}

// A release of k permits wakes k local waiters of one permit, one after the other, without
// waiting for their fallback timers (5 s here).
BOOST_FIXTURE_TEST_CASE(a_release_of_k_permits_wakes_k_waiters, fixture) {
    run([&]() -> awaitable<void> {
        sem big(peer, "sem:wake", 3, lease_of(30s));
        sem small(conn, "sem:wake", 3, slow_retry(30s));
        auto all = co_await big.async_acquire(3);
        int granted = 0;
        std::vector<lease> got;
        auto ex = co_await asio::this_coro::executor;
        for (int i = 0; i < 3; ++i)
            asio::co_spawn(
                ex,
                [&]() -> awaitable<void> {
                    auto [ec, l] = co_await small.async_acquire_for(20s, 1, tuple_deferred);
                    BOOST_TEST(!ec, ec.message());
                    if (l.valid())
                        ++granted;
                    got.push_back(std::move(l));
                },
                asio::detached);
        co_await sleep_for(200ms);
        BOOST_TEST(granted == 0);
        // The message wakes the head, and each grant passes the wake-up on. A waiter's fallback
        // timer (full jitter up to 5 s) may still fire in the few milliseconds this takes, and
        // grant one permit; if the message woke only one waiter, two timers would have to.
        const auto before = corolock::get_lock_stats(conn);
        co_await all.async_release();
        BOOST_TEST(co_await eventually([&] { return granted == 3; }, 2s));
        const auto after = corolock::get_lock_stats(conn);
        BOOST_TEST(after.pubsub_wakeups - before.pubsub_wakeups >= 1u);
        BOOST_TEST(after.timer_wakeups - before.timer_wakeups <= 1u);
        for (auto& l : got)
            co_await l.async_release();
    });
}

// One renewal call renews a mutex's lease and a semaphore's lease together.
BOOST_FIXTURE_TEST_CASE(one_renewal_batch_renews_a_mutex_and_a_semaphore, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "mix:lock", lease_of(900ms));
        sem s(conn, "mix:sem", 2, lease_of(900ms));
        auto a = co_await m.async_acquire();
        auto b = co_await s.async_acquire(1); // within a round trip: due with a's renewals
        co_await sleep_for(2s);
        BOOST_TEST(a.valid());
        BOOST_TEST(b.valid());
        const auto st = corolock::get_lock_stats(conn);
        BOOST_TEST(st.renewals >= 4u);
        BOOST_TEST(st.renewal_calls < st.renewals); // batched together
        const auto pttl = srv.command({"PTTL", "mix:sem"});
        BOOST_TEST(std::stoi(pttl.substr(1)) > 0);
        co_await a.async_release();
        co_await b.async_release();
        BOOST_TEST(!exists("mix:sem"));
    });
}

// A SIGKILLed holder's permits come back when its lease ends, with no release.
BOOST_AUTO_TEST_CASE(a_killed_holders_permits_are_free_within_its_lease) {
    redis_process srv;
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        asio::io_context ioc;
        corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
        conn.async_run(asio::detached);
        sem s(conn, "sem:crash", 2, lease_of(1s));
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                auto l = co_await s.async_acquire(2);
                const char c = l.valid() ? 'y' : 'n';
                (void)::write(ready[1], &c, 1);
                co_await sleep_for(1h);
            },
            asio::detached);
        ioc.run();
        ::_exit(0);
    }
    char c = 0;
    BOOST_REQUIRE(::read(ready[0], &c, 1) == 1);
    BOOST_TEST(c == 'y');
    ::kill(child, SIGKILL);
    const auto killed = clock_type::now();
    int status = 0;
    ::waitpid(child, &status, 0);
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    conn.async_run(asio::detached);
    clock_type::duration waited{};
    bool granted = false;
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            sem s(conn, "sem:crash", 2, lease_of(5s));
            auto [ec, l] = co_await s.async_acquire_for(10s, 2, tuple_deferred);
            BOOST_TEST(!ec, ec.message());
            granted = l.valid();
            waited = clock_type::now() - killed;
            co_await l.async_release();
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(granted);
    // The dead holder's lease (1 s, and its watchdog stopped) bounds the wait; the fallback
    // timer is capped by the earliest deadline the script returned.
    BOOST_TEST((waited < 3s), std::chrono::duration<double>(waited).count() << " s");
    ::close(ready[0]);
    ::close(ready[1]);
}

// 3 processes x 60 coroutines over one semaphore of 5: holds of 1 or 2 permits with random
// waits, some cancelled by their deadline; afterwards no instant ever had more than 5 permits
// held by leases their holders saw valid, and nothing is left in Redis.
namespace {

// The stress below; `drops`: the server kills every client connection every 100 ms meanwhile.
void limit_stress(bool drops) {
    redis_process srv;
    constexpr int processes = 3, coroutines = 60, limit = 5;
    const int rounds = drops ? 30 : 8; // with drops: long enough for a dozen kills
    char path[] = "/tmp/corolock-sem-XXXXXX";
    const int fd = ::mkstemp(path);
    BOOST_REQUIRE(fd >= 0);
    ::close(fd);
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
        const pid_t child = ::fork();
        BOOST_REQUIRE(child >= 0);
        if (child > 0) {
            children.push_back(child);
            continue;
        }
        asio::thread_pool pool(2);
        corolock::connection conn(pool.get_executor(), config_for(srv), quiet());
        conn.async_run(asio::detached);
        sem s(conn, "sem:stress", limit, lease_of(3s));
        std::mutex m;
        std::vector<hold> holds;
        std::atomic<int> errors{0}, finished{0};
        auto worker = [&](int seed) -> awaitable<void> {
            std::minstd_rand rng(static_cast<unsigned>(seed));
            for (int i = 0; i < rounds; ++i) {
                const int k = 1 + static_cast<int>(rng() % 2);
                const auto wait = std::chrono::milliseconds(rng() % 4 == 0 ? 5 : 5000);
                auto [ec, l] = co_await s.async_acquire_for(wait, k, tuple_deferred);
                // Given up (a 5 ms wait under load may see no reply at all: server_timeout): it
                // must have left nothing behind.
                if (ec == error::acquire_timeout || ec == error::server_timeout)
                    continue;
                if (ec || !l.valid()) {
                    ++errors;
                    continue;
                }
                const auto from = now_ns();
                co_await sleep_for(std::chrono::microseconds(200 + rng() % 2000));
                const auto until = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       l.valid_until().time_since_epoch())
                                       .count();
                const auto to = std::min(now_ns(), until);
                {
                    std::lock_guard<std::mutex> g(m);
                    holds.push_back({from, to, k});
                }
                auto [rec] = co_await l.async_release(tuple_deferred);
                // A release whose connection dropped has an unknown outcome: its permits come
                // back with its lease, at worst.
                if (rec && !(drops && rec == corolock::condition::connection_failure))
                    ++errors;
            }
        };
        for (int i = 0; i < coroutines; ++i)
            asio::co_spawn(pool, worker(p * 1000 + i), [&](std::exception_ptr e) {
                if (e)
                    ++errors;
                ++finished;
            });
        while (finished < coroutines)
            std::this_thread::sleep_for(10ms);
        conn.cancel();
        pool.join();
        std::string all;
        for (const auto& h : holds)
            all += std::to_string(h.from_ns) + " " + std::to_string(h.to_ns) + " " +
                   std::to_string(h.k) + "\n";
        if (!corolock::test::append_whole(path, all))
            ++errors;
        ::_exit(errors == 0 ? 0 : 1);
    }
    std::atomic<bool> running{true};
    int kills = 0;
    std::thread killer([&] {
        while (drops && running) {
            std::this_thread::sleep_for(100ms);
            if (running) {
                srv.command({"CLIENT", "KILL", "TYPE", "normal"});
                srv.command({"CLIENT", "KILL", "TYPE", "pubsub"});
                ++kills;
            }
        }
    });
    for (pid_t c : children) {
        int status = 0;
        BOOST_REQUIRE(::waitpid(c, &status, 0) == c);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    running = false;
    killer.join();
    if (drops)
        BOOST_TEST(kills >= 5);
    std::vector<hold> holds;
    FILE* f = std::fopen(path, "r");
    long long from = 0, to = 0;
    int k = 0;
    while (std::fscanf(f, "%lld %lld %d", &from, &to, &k) == 3)
        holds.push_back({from, to, k});
    std::fclose(f);
    std::remove(path);
    std::cout << "semaphore" << (drops ? " (connections killed every 100 ms, " : " (") << kills
              << " kills): " << holds.size() << " holds, at most " << max_concurrent(holds)
              << " permits at once\n";
    BOOST_TEST(holds.size() > static_cast<std::size_t>(processes * coroutines * rounds / 3));
    BOOST_TEST(max_concurrent(holds) <= limit);
    BOOST_TEST(max_concurrent(holds) >= 2); // the checker saw concurrency at all
    // No permit leaked: gone at once, or (a release lost with its connection) within the lease
    // (3 s) or a lost give-back's reservation (2 x retry_max + 1 s: 5 s).
    bool gone = false;
    for (int i = 0; i < 70 && !gone; ++i) {
        gone = srv.command({"EXISTS", "sem:stress"}) == ":0\r\n";
        if (!gone)
            std::this_thread::sleep_for(100ms);
    }
    BOOST_TEST(gone, srv.command({"ZRANGE", "sem:stress", "0", "-1", "WITHSCORES"}));
}

} // namespace

BOOST_AUTO_TEST_CASE(the_limit_holds_across_processes) {
    limit_stress(false);
}

// The same with every client connection killed every 100 ms: unknown outcomes undone, the
// limit kept, the count never drifting (nothing left once the leases run out).
BOOST_AUTO_TEST_CASE(the_limit_holds_across_processes_with_connection_drops) {
    limit_stress(true);
}

BOOST_AUTO_TEST_CASE(over_a_cluster) {
    using corolock::test::redis_cluster;
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), corolock::test::cluster_config_for(*c.nodes()[0]),
                           quiet());
    corolock::cluster b_cl(ioc.get_executor(), corolock::test::cluster_config_for(*c.nodes()[1]),
                           quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            sem a(a_cl, "sem:cluster", 2, slow_retry(3s));
            sem b(b_cl, "sem:cluster", 2, slow_retry(3s));
            auto held = co_await a.async_acquire(2);
            auto& owner = c.master_of(corolock::detail::key_slot("sem:cluster"));
            BOOST_TEST(owner.command({"ZCARD", "sem:cluster"}) == ":2\r\n"); // 1 lease + limit
            auto u = co_await usage_of(b);
            BOOST_TEST(u.limit == 2);
            BOOST_TEST(u.used == 2);
            // Two waiters of one permit each: the release of 2 ("permits 2", relayed with its
            // payload from the node) lets both in, neither after its 5 s timer.
            int granted = 0;
            for (int i = 0; i < 2; ++i)
                asio::co_spawn(
                    ioc,
                    [&]() -> awaitable<void> {
                        auto [ec, l] = co_await b.async_acquire_for(10s, 1, tuple_deferred);
                        BOOST_TEST(!ec, ec.message());
                        granted += l.valid() ? 1 : 0;
                        co_await sleep_for(100ms);
                        co_await l.async_release();
                    },
                    asio::detached);
            co_await sleep_for(200ms);
            const auto released = clock_type::now();
            co_await held.async_release();
            BOOST_TEST(co_await eventually([&] { return granted == 2; }, 10s));
            BOOST_TEST((clock_type::now() - released < 2s)); // SSUBSCRIBE's message, not 5 s
            BOOST_TEST(co_await eventually(
                [&] {
                    return owner.command({"EXISTS", "sem:cluster"}) == ":0\r\n";
                },
                2s));
            a_cl.cancel();
            b_cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_semaphore
