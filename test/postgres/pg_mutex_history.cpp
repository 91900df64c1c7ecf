// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/child_process.hpp"
#include "common/coro_test.hpp"
#include "common/test_config.hpp"
#include "pg_test.hpp"
#include <corolock/postgres/mutex.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace postgres_pg_mutex_history {

namespace asio = boost::asio;
using asio::awaitable;
using corolock::test::pg_config_for;
using corolock::test::pg_process;
using corolock::test::quiet;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// The run: processes x coroutines on a few names (several waiters per name, so acquires are
// called while the lock is held and wait in the server on its row), each section a fenced query
// (the fence's share lock is one of the row locks a waiter's statement waits behind).
constexpr int processes = 4;
constexpr int coroutines = 12;
constexpr int names = 8;
constexpr long sections_needed = 100'000;
constexpr long per_process = sections_needed / processes + 1'000;
constexpr auto budget = 110s; // the processes' own limit; the CTest entry's is 180 s

long long ns(clock_type::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// One process: takes the locks until it has its share of sections or the budget is spent, then
// appends its history ("name token granted ended", steady_clock ns: CLOCK_MONOTONIC, one clock
// for every process of the machine) in one write. Exit status 0 unless something failed.
int run_process(const corolock::pg_config& cfg, const char* path, clock_type::time_point until) {
    asio::io_context ioc;
    corolock::pg_connection conn(ioc.get_executor(), cfg, quiet());
    conn.async_run(asio::detached);
    std::vector<std::unique_ptr<corolock::pg_mutex>> mutexes;
    corolock::pg_mutex_options o;
    o.lease = 2s;
    for (int n = 0; n < names; ++n)
        mutexes.push_back(
            std::make_unique<corolock::pg_mutex>(conn, "hist" + std::to_string(n), o));
    std::string history;
    long sections = 0;
    int errors = 0, finished = 0;
    for (int c = 0; c < coroutines; ++c)
        asio::co_spawn(
            ioc,
            [&, c]() -> awaitable<void> {
                for (unsigned i = 0; sections < per_process && clock_type::now() < until; ++i) {
                    auto& m = *mutexes[(c + i * 3) % names];
                    auto [ec, l] = co_await m.async_acquire_for(10s, tuple_deferred);
                    if (ec) {
                        ++errors;
                        continue;
                    }
                    const auto granted = clock_type::now();
                    corolock::pg_result r;
                    auto [fe] = co_await l.async_fenced_query("SELECT 1", {}, r, tuple_deferred);
                    const auto ended = std::min(clock_type::now(), l.valid_until());
                    if (fe)
                        ++errors;
                    history += m.name() + " " + std::to_string(l.token().value()) + " " +
                               std::to_string(ns(granted)) + " " + std::to_string(ns(ended)) + "\n";
                    ++sections;
                    auto [re] = co_await l.async_release(tuple_deferred);
                    if (re)
                        ++errors;
                }
                if (++finished == coroutines)
                    conn.cancel();
            },
            asio::detached);
    ioc.run_for(budget + 30s);
    if (finished != coroutines)
        ++errors;
    if (!corolock::test::append_whole(path, history))
        ++errors;
    return errors == 0 ? 0 : 1;
}

struct section {
    unsigned long long token;
    long long granted, ended;
};

} // namespace

BOOST_AUTO_TEST_SUITE(pg_mutex_history)

// Over 100,000 sections of 4 processes: per name, sections in grant order never overlap and
// their tokens strictly increase (a store that keeps the largest token refuses no holder). The
// tokens were drawn before an acquire's wait on the row: a waiter could be granted after a larger
// token (scale-out review K1: 34 inversions in 185 k sections).
BOOST_AUTO_TEST_CASE(tokens_increase_in_grant_order_over_100k_sections) {
    pg_process srv;
    const auto cfg = pg_config_for(srv);
    char path[] = "/tmp/corolock-pg-history-XXXXXX";
    const int fd = ::mkstemp(path);
    BOOST_REQUIRE(fd >= 0);
    ::close(fd);
    corolock::test::start_gate g;
    std::vector<pid_t> children;
    const auto until = clock_type::now() + budget;
    for (int p = 0; p < processes; ++p) {
        const pid_t child = ::fork();
        BOOST_REQUIRE(child >= 0);
        if (child == 0) {
            g.wait();
            ::_exit(run_process(cfg, path, until));
        }
        children.push_back(child);
    }
    {
        // Only now: a coroutine test starts a (watchdog) thread.
        asio::io_context ioc;
        corolock::pg_connection conn(ioc.get_executor(), cfg, quiet());
        conn.async_run(asio::detached);
        corolock::test::run_coroutine_test(ioc, [&]() -> awaitable<void> {
            corolock::pg_mutex m(conn, "any");
            co_await m.async_install();
            conn.cancel();
        }());
    }
    const auto start = clock_type::now();
    g.open(processes);
    for (pid_t c : children) {
        int status = 0;
        BOOST_REQUIRE(::waitpid(c, &status, 0) == c);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    const auto took = clock_type::now() - start;
    std::map<std::string, std::vector<section>> by_name;
    FILE* f = std::fopen(path, "r");
    BOOST_REQUIRE(f != nullptr);
    char name[64];
    section s{};
    long total = 0;
    while (std::fscanf(f, "%63s %llu %lld %lld", name, &s.token, &s.granted, &s.ended) == 4) {
        by_name[name].push_back(s);
        ++total;
    }
    std::fclose(f);
    std::remove(path);
    long overlaps = 0, inversions = 0;
    for (auto& [n, v] : by_name) {
        std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.granted < b.granted; });
        for (std::size_t i = 1; i < v.size(); ++i) {
            if (v[i].granted < v[i - 1].ended)
                ++overlaps;
            if (v[i].token <= v[i - 1].token) {
                if (++inversions <= 5)
                    BOOST_TEST_MESSAGE(n << ": token " << v[i].token << " granted at "
                                         << v[i].granted << " after token " << v[i - 1].token
                                         << " (granted " << v[i - 1].granted << ", ended "
                                         << v[i - 1].ended << ")");
            }
        }
    }
    BOOST_TEST_MESSAGE(total << " sections on " << by_name.size() << " names in "
                             << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                             << " ms: " << overlaps << " overlaps, " << inversions
                             << " token inversions");
    BOOST_TEST(total >= sections_needed);
    BOOST_TEST(overlaps == 0);
    BOOST_TEST(inversions == 0);
    BOOST_TEST(srv.sql("SELECT count(*) FROM corolock_locks") == "0");
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace postgres_pg_mutex_history
