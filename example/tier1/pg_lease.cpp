// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// The PostgreSQL backend: the same lease model as the Redis mutex, kept in a table of the
// service's own database. `pg_mutex::async_install` creates the lock table, its token sequence
// and the fence function once (an explicit step: the application's role need not have the
// right to create tables). An acquisition returns a `pg_lease` with its own owner id and a
// token drawn from the sequence at the grant; `async_fenced_query` runs a statement in one
// transaction with a check that the lease is still the row's, so a holder that lost the lock
// writes nothing.
//
// Two mutexes on one name stand for two service instances sharing one `pg_connection` (the
// owner is the acquisition, not the connection): the first holds the lock while the second's
// try finds it busy, takes a unit of stock with a fenced UPDATE that records its token, and
// releases; then the second acquires with a larger token and sees the first one's write.
//
// The server comes from COROLOCK_PG_CONNINFO (a libpq connection string; CTest runs it under
// corolock_script_backend, which starts a throw-away PostgreSQL cluster of the process kit).
// Without it, it says so and exits 77 (skipped). Its row of the table corolock_example_stock is
// deleted at the end; the table and corolock's lock table stay, as a service's would.
//
//   COROLOCK_PG_CONNINFO="host=127.0.0.1 port=5432 user=app dbname=app" corolock_pg_lease
//
// Exits 0 only if each step did what it says.
#include "common.hpp"
#include <corolock/postgres/connection.hpp>
#include <corolock/postgres/mutex.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

namespace {

// The example's own table, beside corolock's: what a service guards with the lock.
constexpr const char* create_stock =
    "CREATE TABLE IF NOT EXISTS corolock_example_stock ("
    "item text PRIMARY KEY, units integer NOT NULL, written_by bigint NOT NULL DEFAULT 0)";

asio::awaitable<void> two_instances(corolock::pg_connection& conn, std::string tag,
                                    std::vector<std::string>& problems) {
    const std::string name = "pg-lease:" + tag;
    const std::string item = "item-" + tag;
    // A 10 s lease, renewed by the watchdog while held: far more than this section needs.
    corolock::pg_mutex first(conn, name, {.lease = 10s}), second(conn, name, {.lease = 10s});
    co_await first.async_install(); // idempotent: a second run (or instance) changes nothing

    corolock::pg_result r;
    co_await conn.async_query(create_stock, r);
    const std::array<corolock::pg_param, 1> item_param{item};
    co_await conn.async_query("INSERT INTO corolock_example_stock (item, units) VALUES ($1, 10)",
                              item_param, r);

    corolock::pg_lease a = co_await first.async_acquire_for(5s);
    const corolock::pg_lease busy = co_await second.async_try_acquire();
    const std::uint64_t first_token = a.token().value();
    std::cout << "first instance holds " << name << " (token " << first_token << ", owner "
              << a.owner_id() << "); the second's try found it " << (busy ? "FREE" : "busy")
              << "\n";
    if (busy)
        problems.push_back("both instances held the lock");

    // The token travels with the write: a reader of the row can tell which grant wrote it.
    const std::string token_text = std::to_string(first_token);
    const std::array<corolock::pg_param, 2> params{item, token_text};
    co_await a.async_fenced_query("UPDATE corolock_example_stock SET units = units - 1, "
                                  "written_by = $2::bigint WHERE item = $1 AND units > 0",
                                  params, r);
    if (r.affected_rows() != 1)
        problems.push_back("the fenced UPDATE changed " + std::to_string(r.affected_rows()) +
                           " rows, not 1");
    co_await a.async_release();

    corolock::pg_lease b = co_await second.async_acquire_for(5s);
    std::cout << "then the second got it (token " << b.token().value() << ")\n";
    if (b.token().value() <= first_token)
        problems.push_back("the later token is not larger");
    co_await conn.async_query(
        "SELECT units, written_by FROM corolock_example_stock WHERE item = $1", item_param, r);
    if (r.rows() != 1 || r.value(0, 0) != "9" || r.value(0, 1) != token_text)
        problems.push_back("the stock row does not show the first instance's write");
    else
        std::cout << item << ": 9 units left, written under token " << r.value(0, 1) << "\n";
    co_await b.async_release();

    co_await conn.async_query("DELETE FROM corolock_example_stock WHERE item = $1", item_param, r);
}

} // namespace

int main() {
    const char* conninfo = std::getenv("COROLOCK_PG_CONNINFO");
    if (!conninfo || !*conninfo) {
        std::cout << "COROLOCK_PG_CONNINFO names no PostgreSQL server: skipped\n";
        return 77;
    }

    std::vector<std::string> problems;
    asio::io_context ioc;
    corolock::pg_connection conn(ioc.get_executor(), {.conninfo = conninfo});
    conn.async_run(asio::detached); // exactly once; ends with conn.cancel()
    asio::steady_timer limit(ioc, 30s);
    limit.async_wait([&](corolock::error_code ec) {
        if (!ec) {
            problems.push_back("timed out");
            conn.cancel(); // fails whatever is outstanding, so the coroutine ends
        }
    });
    asio::co_spawn(ioc, two_instances(conn, ex::make_run_tag(), problems),
                   [&](std::exception_ptr e) {
                       if (e)
                           try {
                               std::rethrow_exception(e);
                           } catch (const std::exception& x) {
                               problems.push_back(x.what());
                           }
                       limit.cancel();
                       conn.cancel();
                   });
    ioc.run();

    return ex::report(problems);
}
