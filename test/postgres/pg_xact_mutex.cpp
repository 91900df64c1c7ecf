// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The locked transaction (pg_xact_mutex) against a real PostgreSQL 15: no lost update across
// processes, a failing query rolls back and frees the lock, the wait deadline, the stall of a
// shared connection, invalid arguments.
#include "common/child_process.hpp"
#include "common/coro_test.hpp"
#include "common/test_config.hpp"
#include "pg_test.hpp"
#include <corolock/postgres/xact_mutex.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace postgres_pg_xact_mutex {

namespace asio = boost::asio;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::pg_param;
using corolock::pg_query_view;
using corolock::pg_result;
using corolock::pg_xact_mutex;
using corolock::pg_xact_options;
using corolock::test::eventually;
using corolock::test::pg_config_for;
using corolock::test::pg_process;
using corolock::test::quiet;
using corolock::test::tuple_deferred;
using namespace std::chrono_literals;

namespace {

// A read-modify-write across three queries of one transaction (read the counter into a
// transaction-local setting, widen the window, write it back plus one): under READ COMMITTED two
// of them interleaved lose an update, unless the lock serialises them.
const std::array<pg_query_view, 3> increment{{
    {"SELECT set_config('test.n', (SELECT n::text FROM counter WHERE id = 1), true)"},
    {"SELECT pg_sleep(0.001)"},
    {"UPDATE counter SET n = current_setting('test.n')::int + 1 WHERE id = 1"},
}};

// The other transactions' queries.
const std::array<pg_query_view, 2> update_then_fail{{
    {"UPDATE counter SET n = 100 WHERE id = 1"},
    {"INSERT INTO nowhere VALUES (1)"},
}};
const std::array<pg_query_view, 1> add_one{{{"UPDATE counter SET n = n + 1 WHERE id = 1"}}};
const std::array<pg_query_view, 1> select_one{{{"SELECT 1"}}};
const std::array<pg_query_view, 1> mark_waiter{{{"INSERT INTO marks VALUES ('waiter')"}}};
const std::array<pg_query_view, 1> mark_cancelled{{{"INSERT INTO marks VALUES ('cancelled')"}}};
const std::array<pg_query_view, 2> slow_then_mark{{
    {"SELECT pg_sleep(0.5)"},
    {"INSERT INTO marks VALUES ('committed')"},
}};
const std::string with_nul("SELECT 1\0", 9);
const std::array<pg_query_view, 1> nul_query{{{with_nul}}};

// `coroutines` coroutines on one connection, `rounds` locked increments each; true if all
// committed.
bool increment_all(const corolock::pg_config& cfg, int coroutines, int rounds) {
    asio::io_context ioc;
    corolock::pg_connection conn(ioc.get_executor(), cfg, quiet());
    conn.async_run(asio::detached);
    pg_xact_mutex m(conn, "counter");
    int ok = 0, done = 0;
    for (int c = 0; c < coroutines; ++c)
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                for (int i = 0; i < rounds; ++i) {
                    std::vector<pg_result> r;
                    auto [ec] = co_await m.async_transact(increment, r, tuple_deferred);
                    if (!ec && r.size() == 3 && r[2].affected_rows() == 1)
                        ++ok;
                }
                if (++done == coroutines)
                    conn.cancel();
            },
            asio::detached);
    ioc.run_for(90s);
    return ok == coroutines * rounds;
}

struct fixture : corolock::test::pg_fixture {
    fixture() {
        srv.sql("CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)");
        srv.sql("INSERT INTO counter VALUES (1, 0)");
        srv.sql("CREATE TABLE marks (what text)");
    }
    // For a connection that holds the lock for seconds in one transaction: the health check
    // would take that silence for a dead server (doc/postgres.md, "Deployment").
    corolock::pg_config holder_config() const {
        auto c = config();
        c.health_check_interval = {};
        return c;
    }
    std::string advisory_locks() const {
        return srv.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted");
    }
};

// A transaction that holds the lock for `seconds` (a pg_sleep inside), in the background.
struct holder {
    bool done = false;
    error_code ec;
    std::vector<pg_result> results;
    std::string sleep;
    std::array<pg_query_view, 2> queries;

    void start(asio::io_context& ioc, pg_xact_mutex& m, const std::string& seconds) {
        sleep = "SELECT pg_sleep(" + seconds + ")";
        queries = {{{sleep}, {"INSERT INTO marks VALUES ('holder')"}}};
        asio::co_spawn(
            ioc,
            [this, &m]() -> awaitable<void> {
                auto [e] = co_await m.async_transact(queries, results, tuple_deferred);
                ec = e;
                done = true;
            },
            asio::detached);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(pg_xact_mutex_suite)

// Two child processes and this one, 3 coroutines each, 10 locked read-modify-write increments
// each: the counter ends at 90 (no update lost), and no advisory lock is left.
BOOST_AUTO_TEST_CASE(no_lost_update_across_processes) {
    pg_process srv;
    srv.sql("CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)");
    srv.sql("INSERT INTO counter VALUES (1, 0)");
    const auto cfg = pg_config_for(srv);
    corolock::test::start_gate g;
    std::vector<pid_t> children;
    for (int p = 0; p < 2; ++p) {
        const pid_t child = ::fork();
        BOOST_REQUIRE(child >= 0);
        if (child == 0) {
            g.wait();
            ::_exit(increment_all(cfg, 3, 10) ? 0 : 1);
        }
        children.push_back(child);
    }
    g.open(2);
    BOOST_TEST(increment_all(cfg, 3, 10));
    for (pid_t c : children) {
        int status = 0;
        BOOST_REQUIRE(::waitpid(c, &status, 0) == c);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    BOOST_TEST(srv.sql("SELECT n FROM counter WHERE id = 1") == "90");
    BOOST_TEST(srv.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == "0");
}

// A failing query rolls back the queries before it and gives the lock back with the rollback:
// the next transaction gets in on its first attempt (a zero wait allows only one).
BOOST_FIXTURE_TEST_CASE(a_failing_query_rolls_back_and_releases, fixture) {
    corolock::test::pg_clients c(ioc, {config(), config()});
    auto &a = c[0], &b = c[1];
    run([&]() -> awaitable<void> {
        pg_xact_mutex ma(a, "rollback"), mb(b, "rollback");
        std::vector<pg_result> r;
        auto [e1] = co_await ma.async_transact(update_then_fail, r, tuple_deferred);
        BOOST_TEST(e1 == error::server_error, e1.message());
        BOOST_REQUIRE(r.size() == 2u);
        BOOST_TEST(r[0].affected_rows() == 1u); // it ran, then was rolled back
        BOOST_TEST(r[1].sqlstate() == "42P01");
        BOOST_TEST(srv.sql("SELECT n FROM counter WHERE id = 1") == "0");
        BOOST_TEST(advisory_locks() == "0");
        // Another connection: one attempt, and it gets the lock.
        auto [e2] = co_await mb.async_transact_for(0ms, add_one, r, tuple_deferred);
        BOOST_TEST(!e2, e2.message());
        BOOST_TEST(srv.sql("SELECT n FROM counter WHERE id = 1") == "1");
        c.stop();
    }());
}

// The wait deadline ends a wait behind a holder with acquire_timeout, long before the holder
// is done, and nothing of the waiter's queries ran; an unbounded waiter gets in after the
// holder commits (woken by its NOTIFY).
BOOST_FIXTURE_TEST_CASE(the_deadline_bounds_the_wait, fixture) {
    corolock::test::pg_clients c(ioc, {holder_config(), config()});
    auto &a = c[0], &b = c[1];
    run([&]() -> awaitable<void> {
        pg_xact_mutex ma(a, "deadline"), mb(b, "deadline");
        holder h;
        h.start(ioc, ma, "2");
        // The holder has the lock once it is in pg_locks.
        BOOST_TEST(co_await eventually([&] { return advisory_locks() == "1"; }, 5s));
        std::vector<pg_result> r;
        auto [e1] = co_await mb.async_transact_for(300ms, mark_waiter, r, tuple_deferred);
        BOOST_TEST(e1 == error::acquire_timeout, e1.message());
        BOOST_TEST(!h.done, "the timeout came only after the holder was done");
        BOOST_TEST(r.empty());
        BOOST_TEST(srv.sql("SELECT count(*) FROM marks WHERE what = 'waiter'") == "0");
        auto [e2] = co_await mb.async_transact(mark_waiter, r, tuple_deferred);
        BOOST_TEST(!e2, e2.message());
        BOOST_TEST(co_await eventually([&] { return h.done; }, 5s));
        BOOST_TEST(!h.ec, h.ec.message());
        BOOST_TEST(srv.sql("SELECT string_agg(what, ',' ORDER BY ctid) FROM marks") ==
                   "holder,waiter");
        c.stop();
    }());
}

// An attempt waits inside the server for at most attempt_wait, and everything queued behind it
// on the same connection waits with it: with attempt_wait as long as the whole wait (500 ms), a
// SELECT 1 sent 50 ms after the attempt cannot be answered before the server gave up the lock
// wait (a lower bound, set by lock_timeout); with the default (2 ms) the figure is printed.
BOOST_FIXTURE_TEST_CASE(a_waiting_attempt_stalls_its_connection_for_attempt_wait, fixture) {
    // No health check on the waiter's connection either: its 300 ms interval would drop the
    // connection that a 500 ms server-side wait blocks (two silent intervals on a loaded machine).
    corolock::test::pg_clients c(ioc, {holder_config(), holder_config()});
    auto &a = c[0], &b = c[1];
    run([&]() -> awaitable<void> {
        pg_xact_mutex ma(a, "stall");
        holder h;
        h.start(ioc, ma, "3");
        BOOST_TEST(co_await eventually([&] { return advisory_locks() == "1"; }, 5s));
        for (int round = 0; round < 2; ++round) {
            const bool long_attempt = round == 0;
            pg_xact_options o;
            if (long_attempt)
                o.attempt_wait = 500ms;
            pg_xact_mutex mb(b, "stall", o);
            bool transact_done = false;
            error_code tec;
            std::vector<pg_result> r;
            asio::co_spawn(
                ioc,
                [&]() -> awaitable<void> {
                    auto [e] = co_await mb.async_transact_for(500ms, select_one, r, tuple_deferred);
                    tec = e;
                    transact_done = true;
                },
                asio::detached);
            co_await corolock::test::sleep_for(50ms); // the attempt is on the wire
            const auto sent = std::chrono::steady_clock::now();
            pg_result sr;
            auto [qec] = co_await b.async_query("SELECT 1", sr, tuple_deferred);
            BOOST_TEST(!qec, qec.message());
            const auto took = std::chrono::steady_clock::now() - sent;
            BOOST_TEST_MESSAGE(
                "attempt_wait "
                << (long_attempt ? "500 ms" : "2 ms (default)")
                << ": a SELECT 1 queued behind the waiting "
                   "attempt was answered after "
                << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
            if (long_attempt)
                BOOST_TEST((took >= 300ms), "the SELECT overtook the lock wait");
            // Required: the transaction writes `r`, which this iteration owns.
            BOOST_REQUIRE(co_await eventually([&] { return transact_done; }, 5s));
            BOOST_TEST(tec == error::acquire_timeout, tec.message());
        }
        BOOST_TEST(co_await eventually([&] { return h.done; }, 10s));
        BOOST_TEST(!h.ec, h.ec.message());
        c.stop();
    }());
}

// Bad names, options, waits and queries fail before anything is sent; cancelling a waiter
// between attempts completes it at once and runs nothing.
BOOST_FIXTURE_TEST_CASE(invalid_arguments_send_nothing_and_cancellation, fixture) {
    corolock::test::pg_clients c(ioc, {config(), holder_config()});
    auto &conn = c[0], &other = c[1];
    run([&]() -> awaitable<void> {
        pg_result pr;
        co_await conn.async_query("SELECT 1", pr);
        const auto sent = conn.stats().statements;
        const auto& one = select_one;
        std::vector<pg_result> r;
        pg_xact_mutex empty(conn, ""), bad_utf8(conn, "\xff");
        auto [e1] = co_await empty.async_transact(one, r, tuple_deferred);
        BOOST_TEST(e1 == error::invalid_name);
        auto [e2] = co_await bad_utf8.async_transact_for(1s, one, r, tuple_deferred);
        BOOST_TEST(e2 == error::invalid_name);
        pg_xact_options zero;
        zero.attempt_wait = 0ms;
        pg_xact_mutex bad_options(conn, "x", zero);
        auto [e3] = co_await bad_options.async_transact(one, r, tuple_deferred);
        BOOST_TEST(e3 == error::invalid_argument);
        pg_xact_mutex fine(conn, "x");
        auto [e4] =
            co_await fine.async_transact(std::span<const pg_query_view>(), r, tuple_deferred);
        BOOST_TEST(e4 == error::invalid_argument);
        auto [e5] = co_await fine.async_transact(nul_query, r, tuple_deferred);
        BOOST_TEST(e5 == error::invalid_argument);
        auto [e6] = co_await fine.async_transact_for(-1ms, one, r, tuple_deferred);
        BOOST_TEST(e6 == error::invalid_wait);
        BOOST_TEST(conn.stats().statements == sent);

        // Cancellation while it waits behind a holder (of another connection).
        pg_xact_mutex held_elsewhere(other, "x");
        holder h;
        h.start(ioc, held_elsewhere, "1");
        BOOST_TEST(co_await eventually([&] { return advisory_locks() == "1"; }, 5s));
        asio::steady_timer t(ioc, 200ms);
        t.async_wait([&](error_code) { fine.cancel(); });
        auto [e7] = co_await fine.async_transact(mark_cancelled, r, tuple_deferred);
        BOOST_TEST(e7 == asio::error::operation_aborted, e7.message());
        BOOST_TEST(!h.done);
        BOOST_TEST(co_await eventually([&] { return h.done; }, 5s));
        BOOST_TEST(!h.ec, h.ec.message());
        BOOST_TEST(srv.sql("SELECT count(*) FROM marks WHERE what = 'cancelled'") == "0");
        c.stop();
    }());
}

// A cancellation that comes while the attempt is in flight waits for its answer: this one took
// the lock and committed, and it is reported as committed, not as aborted.
BOOST_FIXTURE_TEST_CASE(a_cancelled_attempt_in_flight_reports_its_commit, fixture) {
    corolock::test::pg_clients c(ioc, {holder_config()});
    run([&]() -> awaitable<void> {
        pg_xact_mutex m(c[0], "in-flight");
        asio::cancellation_signal sig;
        asio::steady_timer t(ioc, 100ms);
        t.async_wait([&](error_code) { sig.emit(asio::cancellation_type::terminal); });
        std::vector<pg_result> r;
        auto [ec] = co_await m.async_transact(
            slow_then_mark, r,
            asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(r.size() == 2u);
        BOOST_TEST(srv.sql("SELECT count(*) FROM marks WHERE what = 'committed'") == "1");
        BOOST_TEST(advisory_locks() == "0");
        c.stop();
    }());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace postgres_pg_xact_mutex
