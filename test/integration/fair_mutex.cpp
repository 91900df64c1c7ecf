// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The fair lock against real redis-server processes (doc/fair_mutex.md): grants in the order of
// the line across processes (a snapshot of the line against the order of the grants), a try that
// never jumps a live line, a dead head that holds the line back for at most its place, a waiter
// that gives up leaving the line, and only the named head's process retrying on a release.
#include "common/child_process.hpp"
#include "common/coro_test.hpp"
#include "common/redis_cluster.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/cluster.hpp>
#include <corolock/fair_mutex.hpp>
#include <corolock/metrics.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_fair_mutex {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::lease;
using corolock::test::config_for;
using corolock::test::eventually;
using corolock::test::lease_of;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::sleep_for;
using corolock::test::start_gate;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;
// The suite is named `fair_mutex`, like the file: the class goes by another name here.
using fair = corolock::fair_mutex;

namespace {

using fixture = corolock::test::server_fixture;

// The members of a RESP2 array reply of bulk strings, in order.
std::vector<std::string> bulks(const std::string& reply) {
    std::vector<std::string> out;
    std::istringstream in(reply);
    std::string line;
    std::getline(in, line); // *N
    while (std::getline(in, line)) {
        if (!line.empty() && line[0] == '$') {
            std::getline(in, line);
            if (!line.empty() && line.back() == '\r')
                line.pop_back();
            out.push_back(line);
        }
    }
    return out;
}

// A waiter in a child process: takes the lock, appends its owner id to `fair:grants`, holds it
// 1 ms, releases. Exits 0 if every one of its `n` waiters did so.
[[noreturn]] void waiters_child(const redis_process& srv, const std::string& name, int n,
                                start_gate& g) {
    g.wait();
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    conn.async_run(asio::detached);
    fair m(conn, name, lease_of(10s));
    int ok = 0, done = 0;
    for (int i = 0; i < n; ++i)
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                auto [ec, l] = co_await m.async_acquire_for(30s, tuple_deferred);
                if (!ec && l.valid()) {
                    corolock::request push;
                    push.push("RPUSH", "fair:grants", l.owner_id());
                    co_await conn.async_exec(push, corolock::ignore);
                    co_await sleep_for(1ms);
                    auto [rec] = co_await l.async_release(tuple_deferred);
                    if (!rec)
                        ++ok;
                }
                if (++done == n)
                    conn.cancel();
            },
            asio::detached);
    ioc.run_for(60s);
    ::_exit(ok == n ? 0 : 1);
}

} // namespace

BOOST_AUTO_TEST_SUITE(fair_mutex)

// 4 processes x 50 waiters line up behind a holder; the order of their grants is the order of
// the line as the server kept it.
BOOST_AUTO_TEST_CASE(grants_follow_the_line_across_processes) {
    redis_process srv;
    start_gate g;
    std::vector<pid_t> children;
    for (int p = 0; p < 4; ++p) {
        const pid_t child = ::fork();
        BOOST_REQUIRE(child >= 0);
        if (child == 0)
            waiters_child(srv, "fair:order", 50, g);
        children.push_back(child);
    }
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    conn.async_run(asio::detached);
    std::vector<std::string> line, grants;
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            fair m(conn, "fair:order", lease_of(10s));
            auto held = co_await m.async_acquire();
            g.open(4); // the waiters line up behind it
            const bool lined_up = co_await eventually(
                [&] {
                    return srv.command({"ZCARD", "{fair:order}:q"}) == ":200\r\n";
                },
                20s, 20ms);
            BOOST_TEST(lined_up);
            line = bulks(srv.command({"ZRANGE", "{fair:order}:q", "0", "-1"}));
            co_await held.async_release();
            co_await eventually(
                [&] {
                    return srv.command({"LLEN", "fair:grants"}) == ":200\r\n";
                },
                40s, 20ms);
            grants = bulks(srv.command({"LRANGE", "fair:grants", "0", "-1"}));
            conn.cancel();
        }(),
        90s);
    for (pid_t c : children) {
        int status = 0;
        BOOST_REQUIRE(::waitpid(c, &status, 0) == c);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    BOOST_TEST(line.size() == 200u);
    BOOST_TEST(grants == line, "grants in line order");
    BOOST_TEST(srv.command({"EXISTS", "fair:order", "{fair:order}:q", "{fair:order}:qd"}) ==
               ":0\r\n");
}

// With the lock free, a try is refused while a live place is in the line, and succeeds once
// that place lapses (its waiter is gone: nothing renewed it).
BOOST_FIXTURE_TEST_CASE(a_try_never_jumps_a_live_line, fixture) {
    run([&]() -> awaitable<void> {
        fair m(conn, "fair:try");
        const auto t = srv.command({"TIME"});
        const auto secs = std::stoll(t.substr(t.find("\r\n", 5) + 2));
        const auto place = std::to_string(secs * 1000 + 2000); // about 1-2 s from now
        srv.command({"ZADD", "{fair:try}:q", "1", "ghost"});
        srv.command({"ZADD", "{fair:try}:qd", place, "ghost"});
        auto [ec, l] = co_await m.async_try_acquire(tuple_deferred);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(!l.owns());                                          // the line has a waiter
        BOOST_TEST(srv.command({"ZCARD", "{fair:try}:q"}) == ":1\r\n"); // a try takes no place
        bool got = false;
        for (int i = 0; i < 40 && !got; ++i) {
            co_await sleep_for(100ms);
            auto [e2, l2] = co_await m.async_try_acquire(tuple_deferred);
            got = l2.valid();
            if (got)
                co_await l2.async_release();
        }
        BOOST_TEST(got); // the ghost's place lapsed
    });
}

// A waiter that dies at the head of the line holds it back for at most its place
// (2 x retry_max + 1 s: 1.4 s here), not for its whole wait.
BOOST_AUTO_TEST_CASE(a_dead_head_holds_the_line_back_at_most_its_place) {
    redis_process srv;
    auto o = lease_of(10s);
    o.retry_base = 50ms;
    o.retry_max = 200ms;
    start_gate g;
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        g.wait();
        asio::io_context cioc;
        corolock::connection cconn(cioc.get_executor(), config_for(srv), quiet());
        cconn.async_run(asio::detached);
        fair cm(cconn, "fair:dead", o);
        asio::co_spawn(cioc, cm.async_acquire(asio::use_awaitable), asio::detached);
        cioc.run_for(30s);
        ::_exit(0);
    }
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    conn.async_run(asio::detached);
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            fair m(conn, "fair:dead", o);
            auto held = co_await m.async_acquire();
            g.open(1);
            const bool first = co_await eventually(
                [&] {
                    return srv.command({"ZCARD", "{fair:dead}:q"}) == ":1\r\n";
                },
                5s);
            BOOST_TEST(first);
            // Second in line: this process's own waiter.
            bool granted = false;
            asio::co_spawn(
                ioc,
                [&]() -> awaitable<void> {
                    auto [ec, l] = co_await m.async_acquire_for(20s, tuple_deferred);
                    BOOST_TEST(!ec, ec.message());
                    granted = l.valid();
                    co_await l.async_release();
                },
                asio::detached);
            BOOST_TEST(co_await eventually(
                [&] {
                    return srv.command({"ZCARD", "{fair:dead}:q"}) == ":2\r\n";
                },
                5s));
            ::kill(child, SIGKILL);
            int status = 0;
            ::waitpid(child, &status, 0);
            const auto killed = clock_type::now();
            co_await held.async_release();
            BOOST_TEST(co_await eventually([&] { return granted; }, 10s));
            const auto waited = clock_type::now() - killed;
            BOOST_TEST((waited < 3s), std::chrono::duration<double>(waited).count() << " s");
            conn.cancel();
        }(),
        60s);
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_gives_up_leaves_the_line, fixture) {
    run([&]() -> awaitable<void> {
        fair a(conn, "fair:leave", lease_of(10s)), b(peer, "fair:leave", lease_of(10s));
        auto held = co_await a.async_acquire();
        auto [ec, l] = co_await b.async_acquire_for(300ms, tuple_deferred);
        BOOST_TEST(ec == error::acquire_timeout);
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"EXISTS", "{fair:leave}:q"}) == ":0\r\n";
            },
            2s));
        co_await held.async_release();
        auto again = co_await b.async_try_acquire(); // no stale place ahead of it
        BOOST_TEST(again.valid());
        co_await again.async_release();
    });
}

// A release names the new head: among 10 waiters of another process, only the named one
// retries (one attempt per release, not ten), and it is granted at once, not by its 5 s timer.
BOOST_FIXTURE_TEST_CASE(only_the_named_heads_process_retries, fixture) {
    run([&]() -> awaitable<void> {
        auto slow = lease_of(10s);
        slow.retry_base = 5s;
        slow.retry_max = 5s;
        fair holder(peer, "fair:named", lease_of(10s)), waiters(conn, "fair:named", slow);
        auto held = co_await holder.async_acquire();
        int granted = 0;
        std::vector<lease> got;
        auto ex = co_await asio::this_coro::executor;
        for (int i = 0; i < 10; ++i)
            asio::co_spawn(
                ex,
                [&]() -> awaitable<void> {
                    auto [ec, l] = co_await waiters.async_acquire_for(30s, tuple_deferred);
                    BOOST_TEST(!ec, ec.message());
                    ++granted;
                    got.push_back(std::move(l));
                },
                asio::detached);
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"ZCARD", "{fair:named}:q"}) == ":10\r\n";
            },
            5s));
        // A waiter's fallback timer (full jitter up to 5 s) may fire meanwhile: those attempts
        // are counted apart (timer_wakeups), and the release's own are what is left.
        const auto before = corolock::get_lock_stats(conn);
        const auto released = clock_type::now();
        co_await held.async_release();
        BOOST_TEST(co_await eventually([&] { return granted == 1; }, 3s));
        BOOST_TEST((clock_type::now() - released < 1s));
        co_await sleep_for(100ms);
        const auto after = corolock::get_lock_stats(conn);
        BOOST_TEST((after.attempts - before.attempts) -
                       (after.timer_wakeups - before.timer_wakeups) ==
                   1u);
        BOOST_TEST(granted == 1);
        // Each release hands the lock down the line the same way.
        for (int i = 1; i < 10; ++i) {
            auto l = std::move(got.back());
            got.pop_back();
            co_await l.async_release();
            BOOST_TEST(co_await eventually([&] { return granted == i + 1; }, 2s));
        }
        for (auto& l : got)
            co_await l.async_release();
    });
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
            fair a(a_cl, "fair:cluster", lease_of(10s)), b(b_cl, "fair:cluster", lease_of(10s));
            auto held = co_await a.async_acquire();
            std::vector<int> order;
            int done = 0;
            for (int i = 0; i < 4; ++i) {
                asio::co_spawn(
                    ioc,
                    [&, i]() -> awaitable<void> {
                        auto& m = i % 2 ? a : b;
                        auto [ec, l] = co_await m.async_acquire_for(20s, tuple_deferred);
                        BOOST_TEST(!ec, ec.message());
                        order.push_back(i);
                        co_await sleep_for(5ms);
                        co_await l.async_release();
                        ++done;
                    },
                    asio::detached);
                co_await sleep_for(100ms); // a clear arrival order: 0, 1, 2, 3
            }
            co_await held.async_release();
            BOOST_TEST(co_await eventually([&] { return done == 4; }, 15s));
            BOOST_TEST((order == std::vector<int>{0, 1, 2, 3}));
            a_cl.cancel();
            b_cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_fair_mutex
