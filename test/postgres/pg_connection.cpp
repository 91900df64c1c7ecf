// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/coro_test.hpp"
#include "common/test_config.hpp"
#include "pg_test.hpp"
#include <corolock/postgres/connection.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace postgres_pg_connection {

namespace asio = boost::asio;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::pg_param;
using corolock::pg_result;
using corolock::test::eventually;
using corolock::test::pg_config_for;
using corolock::test::pg_process;
using corolock::test::quiet;
using corolock::test::sleep_for;
using corolock::test::tuple_deferred;
using namespace std::chrono_literals;

namespace {

struct fixture {
    pg_process srv;
    asio::io_context ioc;
    corolock::pg_connection conn{ioc.get_executor(), pg_config_for(srv), quiet()};
    fixture() { conn.async_run(asio::detached); }
    void run(awaitable<void> body, std::chrono::seconds limit = 30s) {
        corolock::test::run_coroutine_test(ioc, std::move(body), limit);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(pg_connection)

// 500 coroutines' statements share the connection in flight; each gets its own answer.
BOOST_FIXTURE_TEST_CASE(many_coroutines_pipeline_on_one_connection, fixture) {
    run([&]() -> awaitable<void> {
        int ok = 0, done = 0;
        constexpr int n = 500;
        for (int i = 0; i < n; ++i)
            asio::co_spawn(
                ioc,
                [&, i]() -> awaitable<void> {
                    const auto arg = std::to_string(i);
                    std::array<pg_param, 1> p{arg};
                    pg_result r;
                    auto [ec] =
                        co_await conn.async_query("SELECT $1::int * 2", p, r, tuple_deferred);
                    if (!ec && r.rows() == 1 && r.value(0, 0) == std::to_string(2 * i))
                        ++ok;
                    ++done;
                },
                asio::detached);
        co_await eventually([&] { return done == n; }, 20s);
        BOOST_TEST(ok == n);
        BOOST_TEST(conn.stats().connects == 1u);
        BOOST_TEST(conn.stats().results >= static_cast<std::uint64_t>(n));
        conn.cancel();
    }());
}

// A failing statement keeps its SQLSTATE and text, and aborts nothing else in the pipeline.
BOOST_FIXTURE_TEST_CASE(a_server_error_is_its_own, fixture) {
    run([&]() -> awaitable<void> {
        pg_result bad, good, nulls, readonly;
        auto [e1] = co_await conn.async_query("SELECT 1 / 0", bad, tuple_deferred);
        BOOST_TEST(e1 == error::server_error);
        BOOST_TEST(bad.sqlstate() == "22012");
        BOOST_TEST(bad.error_message().find("division by zero") != std::string::npos);
        auto [e2] = co_await conn.async_query("SELECT 'x', NULL::text", good, tuple_deferred);
        BOOST_TEST(!e2);
        BOOST_TEST(good.value(0, 0) == "x");
        BOOST_TEST(good.is_null(0, 1));
        std::array<pg_param, 2> p{std::nullopt, "y"};
        auto [e3] = co_await conn.async_query("SELECT $1::text IS NULL, $2::text", p, nulls,
                                              tuple_deferred);
        BOOST_TEST(!e3);
        BOOST_TEST(nulls.value(0, 0) == "t");
        BOOST_TEST(nulls.value(0, 1) == "y");
        // A write on a read-only session (as on a standby): refused with its own code.
        auto cfg = pg_config_for(srv);
        cfg.conninfo += " options='-c default_transaction_read_only=on'";
        corolock::pg_connection ro(ioc.get_executor(), cfg, quiet());
        ro.async_run(asio::detached);
        auto [e4] = co_await ro.async_query("CREATE TABLE t (v int)", readonly, tuple_deferred);
        BOOST_TEST(e4 == error::readonly, e4.message() << " " << readonly.error_message());
        BOOST_TEST(readonly.sqlstate() == "25006");
        ro.cancel();
        // Refused before anything is sent.
        pg_result r;
        auto [e5] = co_await conn.async_query(std::string("SELECT 1\0", 9), r, tuple_deferred);
        BOOST_TEST(e5 == error::invalid_argument);
        auto [e6] = co_await conn.async_query("INSERT INTO nowhere VALUES (1)", r, tuple_deferred);
        BOOST_TEST(e6 == error::server_error);
        BOOST_TEST(r.sqlstate() == "42P01");
        conn.cancel();
    }());
}

// NOTIFY from this connection and from another session reaches the listener on the same
// socket.
BOOST_FIXTURE_TEST_CASE(notifications_reach_listeners, fixture) {
    run([&]() -> awaitable<void> {
        auto l = conn.listen("corolock_test");
        pg_result r;
        co_await conn.async_query("SELECT pg_notify('corolock_test', 'from us')", r);
        corolock::pg_notification n;
        auto [e1] = co_await l.async_receive(n, tuple_deferred);
        BOOST_TEST(!e1);
        BOOST_TEST(n.channel == "corolock_test");
        BOOST_TEST(n.payload == "from us");
        co_await corolock::test::off_loop([&] { srv.sql("NOTIFY corolock_test, 'from psql'"); });
        auto [e2] = co_await l.async_receive(n, tuple_deferred);
        BOOST_TEST(!e2);
        BOOST_TEST(n.payload == "from psql");
        // A receive can be cancelled and loses nothing.
        asio::cancellation_signal sig;
        auto waiting = l.async_receive(
            n, asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
        asio::steady_timer t(ioc, 20ms);
        t.async_wait([&](error_code) { sig.emit(asio::cancellation_type::terminal); });
        auto [e3] = co_await std::move(waiting);
        BOOST_TEST(e3 == asio::error::operation_aborted);
        conn.cancel();
    }());
}

// A statement in flight when the server dies fails at once with connection_lost (never sent
// again); the connection comes back when the server does.
BOOST_FIXTURE_TEST_CASE(a_killed_server_fails_in_flight_statements_and_reconnects, fixture) {
    run([&]() -> awaitable<void> {
        pg_result r;
        co_await conn.async_query("SELECT 1", r);
        corolock::test::background_query slow;
        slow.start(ioc, conn, "SELECT pg_sleep(30)");
        co_await sleep_for(200ms);
        const auto start = std::chrono::steady_clock::now();
        srv.kill();
        BOOST_TEST(co_await eventually([&] { return slow.done; }, 5s));
        BOOST_TEST(slow.ec == error::connection_lost, slow.ec.message());
        BOOST_TEST((slow.ended - start < 1s));
        co_await corolock::test::off_loop([&] { srv.start(); });
        auto [e2] = co_await conn.async_query("SELECT 2", r, tuple_deferred);
        BOOST_TEST(!e2, e2.message());
        BOOST_TEST(r.value(0, 0) == "2");
        BOOST_TEST(conn.stats().connects >= 2u);
        conn.cancel();
    }());
}

// pg_terminate_backend of the connection's session: in-flight statements fail, the next ones
// go to a new session.
BOOST_FIXTURE_TEST_CASE(a_terminated_backend_fails_in_flight_statements, fixture) {
    run([&]() -> awaitable<void> {
        pg_result pid;
        co_await conn.async_query("SELECT pg_backend_pid()", pid);
        corolock::test::background_query slow;
        slow.start(ioc, conn, "SELECT pg_sleep(30)");
        co_await sleep_for(100ms);
        const std::string victim(pid.value(0, 0));
        co_await corolock::test::off_loop(
            [&] { srv.sql("SELECT pg_terminate_backend(" + victim + ")"); });
        BOOST_TEST(co_await eventually([&] { return slow.done; }, 3s));
        BOOST_TEST(slow.ec == error::connection_lost, slow.ec.message());
        pg_result again;
        auto [e2] = co_await conn.async_query("SELECT pg_backend_pid()", again, tuple_deferred);
        BOOST_TEST(!e2);
        BOOST_TEST(again.value(0, 0) != victim);
        conn.cancel();
    }());
}

// A statement cancelled in flight completes at once; its result is read and dropped, and the
// statements behind it get their own. (The health check is off: a 10 s statement holds every
// answer back, which the check takes for a stalled server.)
BOOST_FIXTURE_TEST_CASE(cancellation, fixture) {
    auto cfg = pg_config_for(srv);
    cfg.health_check_interval = 0s;
    corolock::pg_connection conn(ioc.get_executor(), cfg, quiet());
    conn.async_run(asio::detached);
    fixture::conn.cancel();
    run(
        [&]() -> awaitable<void> {
            pg_result r;
            co_await conn.async_query("CREATE TABLE marks (v int)", r);
            asio::cancellation_signal sig;
            auto op = conn.async_query(
                "SELECT pg_sleep(2)", r,
                asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
            asio::steady_timer t(ioc, 100ms);
            t.async_wait([&](error_code) { sig.emit(asio::cancellation_type::terminal); });
            const auto start = std::chrono::steady_clock::now();
            auto [e1] = co_await std::move(op);
            BOOST_TEST(e1 == asio::error::operation_aborted);
            BOOST_TEST((std::chrono::steady_clock::now() - start < 2s));
            // The sleep still runs on the server: the insert below waits for it, then runs.
            BOOST_TEST(r.rows() == 0u); // the cancelled statement's result was not stored
            pg_result ins;
            auto [e2] =
                co_await conn.async_query("INSERT INTO marks VALUES (1)", ins, tuple_deferred);
            BOOST_TEST(!e2);
            BOOST_TEST(ins.affected_rows() == 1u);
            conn.cancel();
        }(),
        40s);
}

// Without a server, a statement waits max_wait_for_connection, then fails with not_connected;
// a cancelled connection fails what is queued with operation_aborted.
BOOST_AUTO_TEST_CASE(no_server) {
    asio::io_context ioc;
    corolock::pg_config cfg;
    cfg.conninfo = "host=127.0.0.1 port=" + std::to_string(corolock::test::pick_free_port()) +
                   " user=postgres dbname=postgres";
    cfg.max_wait_for_connection = 300ms;
    cfg.reconnect_wait = 20ms;
    cfg.reconnect_wait_max = 50ms;
    corolock::pg_connection conn(ioc.get_executor(), cfg, quiet());
    conn.async_run(asio::detached);
    corolock::test::run_coroutine_test(ioc, [&]() -> awaitable<void> {
        pg_result r;
        const auto start = std::chrono::steady_clock::now();
        auto [e1] = co_await conn.async_query("SELECT 1", r, tuple_deferred);
        BOOST_TEST(e1 == error::not_connected);
        BOOST_TEST((std::chrono::steady_clock::now() - start >= 250ms));
        bool done = false;
        error_code e2;
        conn.async_query("SELECT 1", r, [&](error_code ec) {
            e2 = ec;
            done = true;
        });
        conn.cancel();
        BOOST_TEST(co_await eventually([&] { return done; }, 2s));
        BOOST_TEST(e2 == asio::error::operation_aborted);
    }());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace postgres_pg_connection
