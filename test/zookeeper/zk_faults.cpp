// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper lock across processes and under faults: a history of grants from several
// processes (exclusion, tokens in grant order, FIFO), a SIGKILLed holder, a paused server, a
// killed leader.
#include "common/child_process.hpp"
#include "zk_test.hpp"
#include <corolock/zk_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::zk_lease;
using corolock::zk_mutex;
using corolock::test::running_zk;
using corolock::test::zk_test_config;
using steady = std::chrono::steady_clock;

namespace {

constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

// One grant as a process saw it: steady_clock is CLOCK_MONOTONIC, the same in every process.
struct grant_record {
    std::int64_t in_ns = 0;
    std::int64_t out_ns = 0;
    std::uint64_t token = 0;
    std::int32_t pid = 0;
    std::int32_t ok = 0;
};

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
        .count();
}

// A forked child: waits at the gate, takes the lock `rounds` times, writes a record per grant
// to `fd`, and exits without running the parent's destructors (the servers are the parent's).
[[noreturn]] void lock_child(corolock::test::start_gate& gate, int fd, const std::string& hosts,
                             const std::string& path, int rounds) {
    gate.wait();
    int status = 0;
    {
        asio::io_context ioc;
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                auto ex = co_await asio::this_coro::executor;
                running_zk c(ex, zk_test_config(hosts, 4s));
                zk_mutex m(*c, path);
                for (int i = 0; i < rounds; ++i) {
                    auto [ec, l] = co_await m.async_acquire(tuple);
                    grant_record r;
                    r.pid = ::getpid();
                    if (!ec && l.valid()) {
                        r.in_ns = now_ns();
                        r.token = l.token().value();
                        co_await corolock::test::sleep_for(1ms);
                        r.ok = l.valid() ? 1 : 0;
                        r.out_ns = now_ns();
                        auto [rec] = co_await l.async_release(tuple);
                        if (rec)
                            r.ok = 0;
                    }
                    (void)!::write(fd, &r, sizeof r);
                }
            },
            [&](std::exception_ptr e) { status = e ? 3 : 0; });
        ioc.run();
    }
    ::_exit(status);
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_faults)

// Three processes, twenty grants each, on one lock: the grants never overlap in time, and in
// grant order the tokens (czxid: the nodes' creation order) increase, which is FIFO.
BOOST_AUTO_TEST_CASE(history_of_three_processes) {
    auto& zk = corolock::test::shared_zk();
    constexpr int processes = 3;
    constexpr int rounds = 20;
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    corolock::test::start_gate gate;
    std::vector<pid_t> pids;
    for (int p = 0; p < processes; ++p) {
        const pid_t pid = ::fork();
        BOOST_REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(fds[0]);
            lock_child(gate, fds[1], zk.connect_string(), "/corolock/faults/history", rounds);
        }
        pids.push_back(pid);
    }
    ::close(fds[1]);
    const auto t0 = steady::now();
    gate.open(processes);
    std::vector<grant_record> history;
    grant_record r;
    while (::read(fds[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r))
        history.push_back(r);
    ::close(fds[0]);
    for (auto pid : pids) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    const auto took = std::chrono::duration<double>(steady::now() - t0).count();
    BOOST_TEST_MESSAGE("zookeeper: " << history.size() << " grants from " << processes
                                     << " processes in " << took << " s");
    BOOST_TEST(history.size() == std::size_t(processes * rounds));
    std::sort(history.begin(), history.end(),
              [](const auto& a, const auto& b) { return a.in_ns < b.in_ns; });
    int overlaps = 0, out_of_order = 0, bad = 0;
    for (std::size_t i = 0; i < history.size(); ++i) {
        bad += history[i].ok == 1 ? 0 : 1;
        if (i == 0)
            continue;
        overlaps += history[i].in_ns < history[i - 1].out_ns ? 1 : 0;
        out_of_order += history[i].token <= history[i - 1].token ? 1 : 0;
    }
    BOOST_TEST(overlaps == 0);
    BOOST_TEST(out_of_order == 0);
    BOOST_TEST(bad == 0);
    BOOST_TEST(corolock::test::ephemerals(zk) == 0);
}

// A holder SIGKILLed: its node goes with its session (1 s), and the waiter gets in then.
BOOST_AUTO_TEST_CASE(killed_holder_node_vanishes_after_its_session_timeout) {
    auto& zk = corolock::test::shared_zk();
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(ready[0]);
        asio::io_context ioc;
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                auto ex = co_await asio::this_coro::executor;
                running_zk c(ex, zk_test_config(zk.connect_string(), 1s));
                zk_mutex m(*c, "/corolock/faults/killed");
                auto l = co_await m.async_acquire(asio::use_awaitable);
                (void)!::write(ready[1], "h", 1);
                co_await corolock::test::sleep_for(60s);
            },
            asio::detached);
        ioc.run();
        ::_exit(0);
    }
    ::close(ready[1]);
    char c = 0;
    BOOST_REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    asio::io_context ioc;
    corolock::test::run_coroutine_test(ioc, [&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk conn(ex, zk_test_config());
        zk_mutex m(*conn, "/corolock/faults/killed");
        auto [ec, none] = co_await m.async_try_acquire(tuple);
        BOOST_TEST(!none.owns());
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        const auto t0 = steady::now();
        auto l = co_await m.async_acquire(asio::use_awaitable);
        const auto waited = steady::now() - t0;
        BOOST_TEST_MESSAGE("zookeeper: next waiter in after "
                           << std::chrono::duration<double>(waited).count() << " s");
        BOOST_TEST((waited >= 500ms)); // not before the dead session's timeout
        BOOST_TEST((waited < 3s));
        co_await l.async_release(asio::use_awaitable);
    }());
}

// The client's only server SIGSTOPped past the session timeout: the lease is reported lost at
// its valid_until (before the server, once resumed, could expire the session and let anyone
// else in), and its node is gone afterwards.
BOOST_AUTO_TEST_CASE(paused_server_reports_the_lease_lost) {
    corolock::test::zk_ensemble zk(1);
    asio::io_context ioc;
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            running_zk conn(ex, zk_test_config(zk.connect_string(), 1s));
            zk_mutex m(*conn, "/corolock/faults/paused");
            auto l = co_await m.async_acquire(asio::use_awaitable);
            const auto t0 = steady::now();
            zk.pause(0);
            auto [lost] = co_await l.async_wait_lost(tuple);
            const auto after = steady::now() - t0;
            BOOST_TEST(lost == corolock::error::lease_lost);
            BOOST_TEST(!l.valid());
            BOOST_TEST((conn->state() == corolock::zk_session_state::suspended));
            BOOST_TEST_MESSAGE("zookeeper: lost reported "
                               << std::chrono::duration<double>(after).count()
                               << " s after the server stopped");
            BOOST_TEST((after < 1s)); // within the session timeout
            zk.resume(0);
            BOOST_TEST(co_await corolock::test::wait_ephemerals(zk, 0) == 0);
            auto [rec] = co_await l.async_release(tuple);
            BOOST_TEST(rec == corolock::error::lease_lost);
            // The connection carries on (the same session, or a new one after an expiry).
            auto l2 = co_await m.async_acquire(asio::use_awaitable);
            BOOST_TEST(l2.valid());
            co_await l2.async_release(asio::use_awaitable);
        }(),
        40s);
}

// The ensemble's leader SIGKILLed while two connections contend: never two holders, and grants
// go on once a new leader is elected.
BOOST_AUTO_TEST_CASE(leader_killed_under_load) {
    corolock::test::zk_ensemble zk(3);
    asio::io_context ioc;
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            running_zk a(ex, zk_test_config(zk.connect_string(), 6s));
            running_zk b(
                ex, zk_test_config(zk.address(2) + "," + zk.address(1) + "," + zk.address(0), 6s));
            zk_mutex ma(*a, "/corolock/faults/leader");
            zk_mutex mb(*b, "/corolock/faults/leader");
            int inside = 0, max_inside = 0, grants = 0, after_kill = 0, errors = 0;
            bool killed = false;
            auto last = corolock::fencing_token(corolock::lock_backend::zookeeper, 0);
            int not_increasing = 0;
            const auto stop_at = steady::now() + 4s;
            auto worker = [&](zk_mutex& m) -> awaitable<void> {
                while (steady::now() < stop_at) {
                    auto [ec, l] = co_await m.async_acquire_for(3s, tuple);
                    if (ec || !l) {
                        ++errors;
                        continue;
                    }
                    max_inside = std::max(max_inside, ++inside);
                    ++grants;
                    after_kill += killed ? 1 : 0;
                    not_increasing += l.token() > last ? 0 : 1;
                    last = l.token();
                    co_await corolock::test::sleep_for(1ms);
                    --inside;
                    co_await l.async_release(tuple);
                }
            };
            int left = 4;
            asio::steady_timer all_done(ex, steady::time_point::max());
            for (auto* m : {&ma, &mb, &ma, &mb})
                asio::co_spawn(ex, worker(*m), [&](std::exception_ptr) {
                    if (--left == 0)
                        all_done.cancel();
                });
            co_await corolock::test::sleep_for(800ms);
            const int leader = zk.leader();
            BOOST_TEST(leader >= 0);
            zk.kill(leader);
            killed = true;
            co_await all_done.async_wait(tuple);
            BOOST_TEST_MESSAGE("zookeeper: " << grants << " grants, " << after_kill
                                             << " after the leader was killed, " << errors
                                             << " timeouts");
            BOOST_TEST(max_inside == 1);
            BOOST_TEST(not_increasing == 0);
            BOOST_TEST(after_kill > 0);
        }(),
        60s);
}

BOOST_AUTO_TEST_SUITE_END()
