// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The count-down latch against real servers: opening only at the target of distinct ids,
// idempotent and generation-checked count-downs, every awaiter woken (two processes, two
// connections), late awaiters, TTLs, cancellation, a Redis Cluster and a reconnect.
#include "common/coro_test.hpp"
#include "common/fault_proxy.hpp"
#include "common/redis_cluster.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include "core/slot_table.hpp"
#include <corolock/cluster.hpp>
#include <corolock/latch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_latch {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::latch_options;
using corolock::test::config_for;
using corolock::test::eventually;
using corolock::test::quiet;
using corolock::test::redis_cluster;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;

namespace {

// Awaiters re-read only every `every`: a faster wake-up came from the open message.
latch_options slow_reads(clock_type::duration every = 10s) {
    latch_options o;
    o.retry_base = every;
    o.retry_max = every;
    return o;
}

std::int64_t integer(const std::string& raw) {
    BOOST_REQUIRE(raw.size() > 1 && raw[0] == ':');
    return std::stoll(raw.substr(1));
}

// Starts `n` awaits of `l`; `done` counts those that completed without error, `failed` the rest.
void start_awaits(corolock::latch& l, int n, std::atomic<int>& done, std::atomic<int>& failed,
                  clock_type::duration wait = 20s) {
    for (int i = 0; i < n; ++i)
        l.async_wait_for(wait, [&](error_code ec) { ++(ec ? failed : done); });
}

} // namespace

BOOST_AUTO_TEST_SUITE(latch)

BOOST_FIXTURE_TEST_CASE(opens_iff_distinct_ids_reach_the_target, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::latch l(conn, "latch:batch");
        auto [cec, round] = co_await l.async_create(3, tuple_deferred);
        BOOST_TEST_REQUIRE(!cec, cec.message());
        BOOST_TEST(round.created);
        BOOST_TEST(round.target == 3u);
        BOOST_TEST(round.generation > 1'700'000'000'000'000u); // server TIME in µs
        // A second create with the same target returns the round as is.
        auto [c2, again] = co_await l.async_create(3, tuple_deferred);
        BOOST_TEST(!c2);
        BOOST_TEST(!again.created);
        BOOST_TEST(again.generation == round.generation);
        // Another target is refused, naming the one in place.
        auto [c3, other] = co_await l.async_create(4, tuple_deferred);
        BOOST_TEST(c3 == error::target_mismatch);
        BOOST_TEST(other.target == 3u);

        std::atomic<int> done{0}, failed{0};
        start_awaits(l, 5, done, failed);
        for (const char* id : {"a", "a", "b", "b", "a"}) {
            auto [ec, st] = co_await l.async_count_down(id, round.generation, tuple_deferred);
            BOOST_TEST(!ec, ec.message());
            BOOST_TEST(!st.open);
        }
        auto [sec, st] = co_await l.async_count_down("b", round.generation, tuple_deferred);
        BOOST_TEST(st.remaining == 1u);
        // Not open with two distinct ids: a wait times out, the others still wait.
        auto [wec] = co_await l.async_wait_for(300ms, tuple_deferred);
        BOOST_TEST(wec == error::acquire_timeout);
        auto [tec] = co_await l.async_wait_for(0s, tuple_deferred); // a try: one read
        BOOST_TEST(tec == error::acquire_timeout);
        BOOST_TEST(done == 0);
        BOOST_TEST(srv.command({"SCARD", "{latch:batch}:d"}) == ":2\r\n");

        auto [oec, opened] = co_await l.async_count_down("c", round.generation, tuple_deferred);
        BOOST_TEST(!oec, oec.message());
        BOOST_TEST(opened.open);
        BOOST_TEST(opened.remaining == 0u);
        BOOST_TEST(co_await eventually([&] { return done == 5; }, 5s));
        BOOST_TEST(failed == 0);
        // After the open: more count-downs change nothing; late awaiters complete at once.
        auto [lec, late] = co_await l.async_count_down("d", round.generation, tuple_deferred);
        BOOST_TEST(!lec);
        BOOST_TEST(late.open);
        BOOST_TEST(srv.command({"SCARD", "{latch:batch}:d"}) == ":3\r\n");
        const auto t0 = clock_type::now();
        for (int i = 0; i < 10; ++i) {
            auto [w] = co_await l.async_wait(tuple_deferred);
            BOOST_TEST(!w, w.message());
        }
        BOOST_TEST((clock_type::now() - t0 < 1s));
        auto [tw] = co_await l.async_wait_for(-1s, tuple_deferred);
        BOOST_TEST(!tw, tw.message());
        // A second latch object (another connection) sees it open too.
        corolock::latch p(peer, "latch:batch");
        auto [pw] = co_await p.async_wait_for(1s, tuple_deferred);
        BOOST_TEST(!pw, pw.message());
    });
}

BOOST_FIXTURE_TEST_CASE(a_retried_count_down_counts_once, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::latch l(conn, "latch:retry");
        corolock::latch p(peer, "latch:retry");
        auto [cec, round] = co_await l.async_create(2, tuple_deferred);
        BOOST_TEST_REQUIRE(!cec, cec.message());
        // The same participant's count-down sent twice at once (a retry racing the original
        // after a lost reply), from two connections, then again: one count.
        std::atomic<int> answered{0}, errors{0};
        for (auto* x : {&l, &p, &l})
            x->async_count_down("worker-1", round.generation,
                                [&](error_code ec, corolock::latch_state st) {
                                    if (ec || st.open || st.remaining != 1)
                                        ++errors;
                                    ++answered;
                                });
        BOOST_TEST(co_await eventually([&] { return answered == 3; }, 5s));
        BOOST_TEST(errors == 0);
        auto [rec, rst] = co_await p.async_count_down("worker-1", round.generation, tuple_deferred);
        BOOST_TEST(!rec);
        BOOST_TEST(!rst.open);
        BOOST_TEST(rst.remaining == 1u);
        BOOST_TEST(srv.command({"SCARD", "{latch:retry}:d"}) == ":1\r\n");
        auto [oec, ost] = co_await l.async_count_down("worker-2", round.generation, tuple_deferred);
        BOOST_TEST(ost.open);
    });
}

// The reply of a count-down is lost with its connection (`connection_lost`): the caller cannot
// know whether it counted, retries with the same id, and it counts once.
BOOST_FIXTURE_TEST_CASE(a_count_down_retried_after_connection_lost_counts_once,
                        corolock::test::server_fixture) {
    corolock::test::fault_proxy proxy(srv.port());
    run([&]() -> awaitable<void> {
        auto cfg = config_for(srv);
        cfg.port = std::to_string(proxy.port());
        auto& proxied = add_connection(cfg, quiet());
        corolock::latch l(proxied, "latch:lost");
        corolock::latch p(peer, "latch:lost");
        auto [cec, round] = co_await p.async_create(2, tuple_deferred);
        BOOST_TEST_REQUIRE(!cec, cec.message());
        auto [warm, ws] = co_await l.async_count_down("warm-up", 1, tuple_deferred);
        BOOST_TEST(warm == error::stale_generation); // connected, script loaded
        proxy.half_open(); // the count-down reaches the server, its reply never comes back
        error_code first;
        bool answered = false;
        l.async_count_down("worker-1", round.generation, [&](error_code ec, corolock::latch_state) {
            first = ec;
            answered = true;
        });
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"SCARD", "{latch:lost}:d"}) == ":1\r\n";
            },
            5s));
        proxy.reset_all();
        proxy.heal();
        BOOST_TEST(co_await eventually([&] { return answered; }, 5s));
        BOOST_TEST(first == error::connection_lost, first.message());
        // The retry, same id: counted once.
        auto [rec, st] = co_await l.async_count_down("worker-1", round.generation, tuple_deferred);
        BOOST_TEST(!rec, rec.message());
        BOOST_TEST(!st.open);
        BOOST_TEST(st.remaining == 1u);
        BOOST_TEST(srv.command({"SCARD", "{latch:lost}:d"}) == ":1\r\n");
    });
}

BOOST_FIXTURE_TEST_CASE(a_stale_generation_never_counts, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::latch l(conn, "latch:rounds");
        auto [c1, r1] = co_await l.async_create(1, tuple_deferred);
        BOOST_TEST_REQUIRE(!c1);
        auto [o1, s1] = co_await l.async_count_down("x", r1.generation, tuple_deferred);
        BOOST_TEST(s1.open);
        // create on an open latch begins the next round, with any target.
        auto [c2, r2] = co_await l.async_create(2, tuple_deferred);
        BOOST_TEST_REQUIRE(!c2, c2.message());
        BOOST_TEST(r2.created);
        BOOST_TEST(r2.generation > r1.generation);
        BOOST_TEST(srv.command({"EXISTS", "{latch:rounds}:d"}) == ":0\r\n");
        // A count-down of round 1 arriving late: refused, and not counted in round 2.
        auto [sec, sst] = co_await l.async_count_down("y", r1.generation, tuple_deferred);
        BOOST_TEST(sec == error::stale_generation);
        BOOST_TEST(srv.command({"EXISTS", "{latch:rounds}:d"}) == ":0\r\n");
        auto [w] = co_await l.async_wait_for(200ms, tuple_deferred);
        BOOST_TEST(w == error::acquire_timeout); // round 2 is closed
        auto [yec, yst] = co_await l.async_count_down("y", r2.generation, tuple_deferred);
        BOOST_TEST(!yec);
        BOOST_TEST(yst.remaining == 1u);
        // Arguments checked before anything is sent.
        auto [g0, g0s] = co_await l.async_count_down("y", 0, tuple_deferred);
        BOOST_TEST(g0 == error::invalid_argument);
        auto [e0, e0s] = co_await l.async_count_down("", r2.generation, tuple_deferred);
        BOOST_TEST(e0 == error::invalid_argument);
        auto [t0, t0r] = co_await l.async_create(0, tuple_deferred);
        BOOST_TEST(t0 == error::invalid_argument);
        corolock::latch bad(conn, "{x}:d");
        auto [n0] = co_await bad.async_wait(tuple_deferred);
        BOOST_TEST(n0 == error::invalid_name);
    });
}

BOOST_FIXTURE_TEST_CASE(missing_foreign_and_ttl, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::latch l(conn, "latch:none");
        auto [w] = co_await l.async_wait(tuple_deferred);
        BOOST_TEST(w == error::no_latch);
        auto [c, cs] = co_await l.async_count_down("a", 12345, tuple_deferred);
        BOOST_TEST(c == error::no_latch);
        // A foreign key at the name is refused, untouched.
        srv.command({"SET", "latch:foreign", "x"});
        corolock::latch f(conn, "latch:foreign");
        auto [fc, fr] = co_await f.async_create(2, tuple_deferred);
        BOOST_TEST(fc == error::wrong_type);
        auto [fw] = co_await f.async_wait(tuple_deferred);
        BOOST_TEST(fw == error::wrong_type);
        BOOST_TEST(srv.command({"GET", "latch:foreign"}) == "$1\r\nx\r\n");
        // Every key has a TTL within the retention, refreshed by each count-down.
        latch_options o;
        o.retention = 30s;
        corolock::latch t(conn, "latch:ttl", o);
        auto [tc, tr] = co_await t.async_create(2, tuple_deferred);
        BOOST_TEST_REQUIRE(!tc);
        auto [dc, ds] = co_await t.async_count_down("a", tr.generation, tuple_deferred);
        BOOST_TEST(!dc);
        for (const char* key : {"latch:ttl", "{latch:ttl}:d"}) {
            const auto ttl = integer(srv.command({"PTTL", key}));
            BOOST_TEST(ttl > 25'000);
            BOOST_TEST(ttl <= 30'000);
        }
        // A latch whose retention ends disappears: its awaiters learn it.
        latch_options brief = slow_reads(100ms);
        brief.retention = 300ms;
        corolock::latch e(conn, "latch:expiring", brief);
        auto [ec, er] = co_await e.async_create(2, tuple_deferred);
        BOOST_TEST_REQUIRE(!ec);
        auto [ew] = co_await e.async_wait_for(5s, tuple_deferred);
        BOOST_TEST(ew == error::no_latch);
    });
}

BOOST_FIXTURE_TEST_CASE(every_awaiter_on_two_connections_is_woken, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::latch a(conn, "latch:wide", slow_reads());
        corolock::latch b(peer, "latch:wide", slow_reads());
        auto [cec, round] = co_await a.async_create(2, tuple_deferred);
        BOOST_TEST_REQUIRE(!cec);
        std::atomic<int> done{0}, failed{0};
        start_awaits(a, 50, done, failed);
        start_awaits(b, 50, done, failed);
        co_await sleep_for(300ms); // every first read answered: they wait for the message
        BOOST_TEST(done == 0);
        co_await a.async_count_down("p1", round.generation, tuple_deferred);
        auto [oec, st] = co_await b.async_count_down("p2", round.generation, tuple_deferred);
        BOOST_TEST(st.open);
        const auto opened = clock_type::now();
        BOOST_TEST(co_await eventually([&] { return done + failed == 100; }, 5s));
        BOOST_TEST(done == 100);
        BOOST_TEST((clock_type::now() - opened < 2s)); // the message, not the 10 s reads
    });
}

BOOST_FIXTURE_TEST_CASE(cancelling_one_awaiter_leaves_the_others, corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::latch l(conn, "latch:cancel", slow_reads());
        auto [cec, round] = co_await l.async_create(1, tuple_deferred);
        BOOST_TEST_REQUIRE(!cec);
        asio::cancellation_signal sig;
        error_code cancelled;
        bool cancelled_done = false;
        l.async_wait(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec) {
            cancelled = ec;
            cancelled_done = true;
        }));
        std::atomic<int> done{0}, failed{0};
        start_awaits(l, 3, done, failed);
        co_await sleep_for(100ms);
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&] { return cancelled_done; }, 2s));
        BOOST_TEST(cancelled == asio::error::operation_aborted);
        co_await sleep_for(100ms);
        BOOST_TEST(done == 0);
        co_await l.async_count_down("only", round.generation, tuple_deferred);
        BOOST_TEST(co_await eventually([&] { return done == 3; }, 2s));
        BOOST_TEST(failed == 0);
        // latch::cancel ends the rest.
        corolock::latch m(conn, "latch:cancel2", slow_reads());
        auto [c2, r2] = co_await m.async_create(1, tuple_deferred);
        BOOST_TEST_REQUIRE(!c2);
        std::atomic<int> d2{0}, f2{0};
        start_awaits(m, 4, d2, f2);
        co_await sleep_for(100ms);
        m.cancel();
        BOOST_TEST(co_await eventually([&] { return f2 == 4; }, 2s));
    });
}

BOOST_FIXTURE_TEST_CASE(an_awaiter_wakes_after_its_connection_is_killed,
                        corolock::test::server_fixture) {
    run([&]() -> awaitable<void> {
        corolock::latch l(conn, "latch:reconnect", slow_reads(20s));
        corolock::latch p(peer, "latch:reconnect");
        auto [cec, round] = co_await p.async_create(1, tuple_deferred);
        BOOST_TEST_REQUIRE(!cec);
        std::atomic<int> done{0}, failed{0};
        start_awaits(l, 3, done, failed, 30s);
        co_await sleep_for(300ms);
        // The awaiting connection is the only subscribed one: killed, then the open is published
        // while it reconnects. The re-read after the reconnect sees it (not the 20 s timer).
        const auto killed = srv.command({"CLIENT", "KILL", "TYPE", "pubsub"});
        BOOST_TEST(integer(killed) >= 1);
        auto [oec, st] = co_await p.async_count_down("x", round.generation, tuple_deferred);
        BOOST_TEST_REQUIRE(!oec, oec.message());
        BOOST_TEST(st.open);
        BOOST_TEST(co_await eventually([&] { return done + failed == 3; }, 8s));
        BOOST_TEST(done == 3);
    });
}

// 2 processes x 50 awaiters, each on its own connection: the open of one count-down wakes all.
BOOST_AUTO_TEST_CASE(every_awaiter_in_two_processes_is_woken) {
    redis_process srv;
    std::uint64_t generation = 0;
    {
        asio::io_context ioc;
        corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
        run_coroutine_test(
            ioc,
            [&]() -> awaitable<void> {
                conn.async_run(asio::detached);
                corolock::latch l(conn, "latch:procs");
                auto [ec, r] = co_await l.async_create(2, tuple_deferred);
                BOOST_TEST_REQUIRE(!ec, ec.message());
                generation = r.generation;
                conn.cancel();
            }(),
            20s, 1, corolock::test::drain_check::off);
    }
    constexpr int processes = 2, awaiters = 50;
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
        const pid_t child = ::fork();
        BOOST_REQUIRE(child >= 0);
        if (child > 0) {
            children.push_back(child);
            continue;
        }
        int status = 1;
        try {
            asio::io_context ioc;
            corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
            conn.async_run(asio::detached);
            corolock::latch l(conn, "latch:procs", slow_reads());
            std::atomic<int> done{0}, failed{0};
            start_awaits(l, awaiters, done, failed);
            // Queued behind the awaits' subscription and first read on the same socket: once it
            // is answered, every await has begun, before the parent opens the latch.
            corolock::request ready;
            ready.push("INCR", "latch:procs:ready");
            int early = -1;
            clock_type::time_point ready_at{};
            conn.async_exec(ready, corolock::ignore, [&](error_code ec, std::size_t) {
                early = ec ? 1000 : done.load();
                ready_at = clock_type::now();
            });
            const auto until = clock_type::now() + 20s;
            while ((done + failed < awaiters || early < 0) && clock_type::now() < until)
                ioc.run_for(50ms);
            // Woken by the message: the fallback reads come 5 to 10 s after the first.
            const auto woken_after = clock_type::now() - ready_at;
            status = (done == awaiters && failed == 0 && early == 0 && woken_after < 4s) ? 0 : 1;
            if (status != 0)
                std::cerr
                    << "child: done " << done << " failed " << failed << " early " << early
                    << " woken after "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(woken_after).count()
                    << " ms\n";
            conn.cancel();
            ioc.run_for(200ms);
        } catch (...) {
            status = 2;
        }
        ::_exit(status);
    }
    // Both processes' awaits are in place: open the latch from here.
    const auto until = clock_type::now() + 15s;
    while (srv.command({"GET", "latch:procs:ready"}) != "$1\r\n2\r\n" && clock_type::now() < until)
        std::this_thread::sleep_for(20ms);
    BOOST_TEST(srv.command({"GET", "latch:procs:ready"}) == "$1\r\n2\r\n");
    {
        asio::io_context ioc;
        corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
        run_coroutine_test(
            ioc,
            [&]() -> awaitable<void> {
                conn.async_run(asio::detached);
                corolock::latch l(conn, "latch:procs");
                for (const char* id : {"p1", "p1", "p2"}) {
                    auto [ec, st] = co_await l.async_count_down(id, generation, tuple_deferred);
                    BOOST_TEST(!ec, ec.message());
                }
                conn.cancel();
            }(),
            20s, 1, corolock::test::drain_check::off);
    }
    for (pid_t c : children) {
        int status = 0;
        BOOST_REQUIRE(::waitpid(c, &status, 0) == c);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
}

// Over a 3-master cluster: the scripts go to the name's master, the open is SPUBLISHed there and
// awaiters of another cluster client (another process, as far as Redis can tell) wake at once.
BOOST_AUTO_TEST_CASE(over_a_cluster) {
    if (!redis_cluster::available())
        return;
    redis_cluster c(3, 0);
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), corolock::test::cluster_config_for(*c.nodes()[0]),
                           quiet());
    corolock::cluster b_cl(ioc.get_executor(), corolock::test::cluster_config_for(*c.nodes()[1]),
                           quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::latch a(a_cl, "latch:cluster", slow_reads());
            corolock::latch b(b_cl, "latch:cluster", slow_reads());
            auto [cec, round] = co_await a.async_create(2, tuple_deferred);
            BOOST_TEST_REQUIRE(!cec, cec.message());
            auto& owner = c.master_of(corolock::detail::key_slot("latch:cluster"));
            BOOST_TEST(owner.command({"EXISTS", "latch:cluster"}) == ":1\r\n");
            std::atomic<int> done{0}, failed{0};
            start_awaits(b, 20, done, failed);
            start_awaits(a, 5, done, failed);
            co_await sleep_for(500ms);
            BOOST_TEST(done == 0);
            co_await a.async_count_down("n1", round.generation, tuple_deferred);
            auto [oec, st] = co_await b.async_count_down("n2", round.generation, tuple_deferred);
            BOOST_TEST_REQUIRE(!oec, oec.message());
            BOOST_TEST(st.open);
            const auto opened = clock_type::now();
            BOOST_TEST(co_await eventually([&] { return done + failed == 25; }, 8s));
            BOOST_TEST(done == 25);
            BOOST_TEST((clock_type::now() - opened < 3s)); // SPUBLISH, not the 10 s reads
            BOOST_TEST(integer(owner.command({"PTTL", "{latch:cluster}:d"})) > 0);
            a_cl.cancel();
            b_cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_latch
