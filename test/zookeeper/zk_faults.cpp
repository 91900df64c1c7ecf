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
#include <functional>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace zookeeper_zk_faults {

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

// What a forked child does: `rounds` acquisitions, or, with `rounds` 0, acquisitions until
// `run_for` has passed; each gives up after `wait` (a fault may make some of them fail).
struct child_plan {
    int rounds = 0;
    steady::duration run_for{};
    steady::duration wait = steady::duration::max(); // max: no deadline
    std::chrono::milliseconds session_timeout = 4s;
};

// A forked child: waits at the gate, takes the lock as `plan` says, writes a record per attempt
// to `fd` (in_ns 0: the acquire failed), and exits without running the parent's destructors
// (the servers are the parent's).
[[noreturn]] void lock_child(corolock::test::start_gate& gate, int fd, const std::string& hosts,
                             const std::string& path, const child_plan& plan) {
    gate.wait();
    int status = 0;
    {
        asio::io_context ioc;
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                auto ex = co_await asio::this_coro::executor;
                running_zk c(ex, zk_test_config(hosts, plan.session_timeout));
                zk_mutex m(*c, path);
                const auto stop_at = steady::now() + plan.run_for;
                for (int i = 0; plan.rounds > 0 ? i < plan.rounds : steady::now() < stop_at; ++i) {
                    auto [ec, l] = co_await m.async_acquire_for(plan.wait, tuple);
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

// Forks one lock_child per entry of `hosts` (its connect string) on `path`, lets them go
// together, calls `meanwhile()`, and collects their records until every one has exited (each
// must exit with 0).
std::vector<grant_record> run_lock_children(const std::vector<std::string>& hosts,
                                            const std::string& path, const child_plan& plan,
                                            const std::function<void()>& meanwhile = {}) {
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    corolock::test::start_gate gate;
    std::vector<pid_t> pids;
    for (const auto& h : hosts) {
        const pid_t pid = ::fork();
        BOOST_REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(fds[0]);
            lock_child(gate, fds[1], h, path, plan);
        }
        pids.push_back(pid);
    }
    ::close(fds[1]);
    gate.open(static_cast<int>(hosts.size()));
    if (meanwhile)
        meanwhile(); // the pipe holds about 2000 records meanwhile
    auto [history, failed] = corolock::test::collect_children<grant_record>(fds[0], pids);
    BOOST_TEST(failed == 0u);
    return history;
}

// What a history of attempts shows, its grants taken in the order they began: sections that
// began before the previous one ended, tokens not above the previous grant's, leases not valid
// at the end of their section or not released cleanly, and acquires that failed.
struct history_summary {
    std::vector<grant_record> grants; // in grant order
    int overlaps = 0;
    int out_of_order = 0;
    int lost = 0;
    int failed = 0;
};

history_summary check_history(const std::vector<grant_record>& history) {
    history_summary s;
    for (const auto& r : history) {
        if (r.in_ns == 0)
            ++s.failed;
        else
            s.grants.push_back(r);
    }
    std::sort(s.grants.begin(), s.grants.end(),
              [](const auto& a, const auto& b) { return a.in_ns < b.in_ns; });
    for (std::size_t i = 0; i < s.grants.size(); ++i) {
        s.lost += s.grants[i].ok == 1 ? 0 : 1;
        if (i == 0)
            continue;
        s.overlaps += s.grants[i].in_ns < s.grants[i - 1].out_ns ? 1 : 0;
        s.out_of_order += s.grants[i].token <= s.grants[i - 1].token ? 1 : 0;
    }
    return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_faults)

// Three processes, twenty grants each, on one lock: the grants never overlap in time, and in
// grant order the tokens (czxid: the nodes' creation order) increase, which is FIFO.
BOOST_AUTO_TEST_CASE(history_of_three_processes) {
    auto& zk = corolock::test::shared_zk();
    constexpr int processes = 3;
    constexpr int rounds = 20;
    const auto t0 = steady::now();
    const auto history =
        run_lock_children(std::vector<std::string>(processes, zk.connect_string()),
                          "/corolock/faults/history", child_plan{.rounds = rounds});
    const auto took = std::chrono::duration<double>(steady::now() - t0).count();
    BOOST_TEST_MESSAGE("zookeeper: " << history.size() << " grants from " << processes
                                     << " processes in " << took << " s");
    BOOST_TEST(history.size() == std::size_t(processes * rounds));
    const auto s = check_history(history);
    BOOST_TEST(s.grants.size() == std::size_t(processes * rounds));
    BOOST_TEST(s.overlaps == 0);
    BOOST_TEST(s.out_of_order == 0);
    BOOST_TEST(s.lost == 0);
    BOOST_TEST(s.failed == 0);
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
// its valid_until, once the syncs go unanswered (before the server, once resumed, could expire
// the session and let anyone else in), and its node is gone afterwards.
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
            // Reported when no sync was answered within the lease's validity: the connection may
            // not even be declared lost yet (the C client waits two thirds of the timeout).
            BOOST_TEST((conn->state() != corolock::zk_session_state::expired));
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

// The leader SIGKILLed while three processes contend, each with its own session on the
// ensemble (connected to different servers first): in the history of all their grants, never two
// holders at once, tokens increasing in grant order, no lease lost, and grants after the kill.
BOOST_AUTO_TEST_CASE(leader_killed_under_load_from_three_processes) {
    corolock::test::zk_ensemble zk(3);
    std::vector<std::string> hosts;
    for (int first = 0; first < 3; ++first)
        hosts.push_back(zk.address(first) + "," + zk.address((first + 1) % 3) + "," +
                        zk.address((first + 2) % 3));
    std::int64_t killed_ns = 0;
    const auto history =
        run_lock_children(hosts, "/corolock/faults/leader-processes",
                          child_plan{.run_for = 5s, .wait = 3s, .session_timeout = 6s}, [&] {
                              std::this_thread::sleep_for(1s);
                              const int leader = zk.leader();
                              BOOST_TEST(leader >= 0);
                              if (leader >= 0)
                                  zk.kill(leader);
                              killed_ns = now_ns();
                          });
    const auto s = check_history(history);
    const auto after_kill = std::count_if(s.grants.begin(), s.grants.end(),
                                          [&](const auto& g) { return g.in_ns > killed_ns; });
    BOOST_TEST_MESSAGE("zookeeper: " << s.grants.size() << " grants from 3 processes, "
                                     << after_kill << " after the leader was killed, " << s.failed
                                     << " acquires timed out");
    BOOST_TEST(s.overlaps == 0);
    BOOST_TEST(s.out_of_order == 0);
    BOOST_TEST(s.lost == 0);
    BOOST_TEST(after_kill > 0);
    BOOST_TEST(std::size_t(after_kill) < s.grants.size()); // under load: grants before it too
    std::set<std::int32_t> holders;
    for (const auto& g : s.grants)
        holders.insert(g.pid);
    BOOST_TEST(holders.size() == 3u); // every process got in
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace zookeeper_zk_faults
