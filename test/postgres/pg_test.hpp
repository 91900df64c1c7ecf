// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What the PostgreSQL suites share.
#ifndef COROLOCK_TEST_POSTGRES_PG_TEST_HPP
#define COROLOCK_TEST_POSTGRES_PG_TEST_HPP

#include "common/coro_test.hpp"
#include "common/pg_process.hpp"
#include "common/test_config.hpp"
#include <corolock/postgres/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <initializer_list>
#include <string>

struct pg_conn; // libpq's PGconn

namespace corolock::test {

// A connection to `srv` tuned for tests: faults are noticed and repaired within a few hundred
// milliseconds (health check 300 ms, reconnect 20..200 ms, connect timeout 1 s).
inline pg_config pg_config_for(const pg_process& srv) {
    using namespace std::chrono_literals;
    pg_config cfg;
    cfg.conninfo = srv.conninfo() + " application_name=corolock-test";
    cfg.connect_timeout = 1s;
    cfg.health_check_interval = 300ms;
    cfg.reconnect_wait = 20ms;
    cfg.reconnect_wait_max = 200ms;
    return cfg;
}

// What a PostgreSQL test case starts with: a throw-away server and an io_context, connection
// settings for it, and the coroutine runner (a time limit, the io_context drained).
struct pg_fixture {
    pg_process srv;
    boost::asio::io_context ioc;
    pg_config config() const { return pg_config_for(srv); }
    void run(boost::asio::awaitable<void> body,
             std::chrono::steady_clock::duration limit = std::chrono::seconds(60)) {
        run_coroutine_test(ioc, std::move(body), limit);
    }
};

// Connections of one test, each running from construction (quiet logs); stop() cancels them all
// (call it at the end of the test's coroutine, so that the io_context drains).
class pg_clients {
public:
    pg_clients(boost::asio::io_context& ioc, std::initializer_list<pg_config> configs) {
        for (const auto& c : configs) {
            conns_.emplace_back(ioc.get_executor(), c, quiet());
            conns_.back().async_run(boost::asio::detached);
        }
    }
    pg_connection& operator[](std::size_t i) { return conns_[i]; }
    void stop() {
        for (auto& c : conns_)
            c.cancel();
    }

private:
    std::deque<pg_connection> conns_;
};

// A statement left running in the background (a long pg_sleep the test then interrupts): when
// it ends, `done`, its error and the time.
struct background_query {
    bool done = false;
    error_code ec;
    std::chrono::steady_clock::time_point ended{};

    void start(boost::asio::io_context& ioc, pg_connection& conn, std::string sql) {
        boost::asio::co_spawn(
            ioc,
            [this, &conn, sql = std::move(sql)]() -> boost::asio::awaitable<void> {
                pg_result r;
                auto [e] = co_await conn.async_query(
                    sql, r, boost::asio::as_tuple(boost::asio::use_awaitable));
                ec = e;
                ended = std::chrono::steady_clock::now();
                done = true;
            },
            boost::asio::detached);
    }
};

// A plain blocking libpq session beside corolock's, for a test that needs a transaction of its
// own across several statements (BEGIN, a row lock held while corolock waits on it, COMMIT).
// In pg_test.cpp: libpq's header declares a `pg_result` of its own, which the suites' `using
// corolock::pg_result` would clash with.
class raw_session {
public:
    // Throws std::runtime_error with libpq's message when it cannot connect.
    explicit raw_session(const std::string& conninfo);
    ~raw_session();
    raw_session(const raw_session&) = delete;
    raw_session& operator=(const raw_session&) = delete;

    // Runs `sql` and returns the first value of its first row ("" when there is none); throws
    // std::runtime_error with the server's message when it fails.
    std::string exec(const std::string& sql);

private:
    ::pg_conn* conn_;
};

} // namespace corolock::test

#endif
