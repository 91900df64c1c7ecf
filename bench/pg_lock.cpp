// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// corolock-pg-bench: the PostgreSQL lock's cycle rates (acquire + release, each awaited) on one
// connection, next to references measured in the same run: a raw pg_try_advisory_lock /
// pg_advisory_unlock loop over the same connection and server (two round trips, no write), and
// the Redis mutex (corolock::mutex) on one connection to a redis-server of the process kit
// (persistence off), in the same shapes. Each PostgreSQL figure with fsync on (a WAL flush per
// commit) and off. A bench, never a test.
//
//   corolock-pg-bench [seconds per figure, default 2]
//
// The Redis server is the one COROLOCK_REDIS_HOST / COROLOCK_REDIS_PORT name (as tools/test.sh
// announces its own), else a private redis-server started for the run, as corolock-bench does.
#include "common/pg_process.hpp"
#include "common/redis_process.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>
#include <corolock/postgres/mutex.hpp>
#include <corolock/postgres/xact_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

struct figure {
    long cycles = 0;
    double seconds = 0;
    double rate() const { return seconds > 0 ? static_cast<double>(cycles) / seconds : 0; }
};

// `coroutines` loops of `body` for `length` on `connections` connections (pg_connection or Redis
// connection, made from `cfg`; coroutine c uses connection c % connections); counts completed
// cycles.
template <class Connection, class Config, class Body>
figure run_loops(const Config& cfg, int coroutines, clock_type::duration length, Body body,
                 int connections = 1) {
    asio::io_context ioc;
    std::deque<Connection> conns;
    for (int i = 0; i < connections; ++i) {
        conns.emplace_back(ioc.get_executor(), cfg,
                           corolock::logger{corolock::logger::level::error, {}});
        conns.back().async_run(asio::detached);
    }
    figure f;
    int running = coroutines;
    const auto start = clock_type::now();
    const auto stop = start + length;
    for (int c = 0; c < coroutines; ++c)
        asio::co_spawn(
            ioc,
            [&, c]() -> asio::awaitable<void> {
                auto& conn = conns[static_cast<std::size_t>(c % connections)];
                while (clock_type::now() < stop) {
                    if (!co_await body(conn, c))
                        break;
                    ++f.cycles;
                }
                if (--running == 0) {
                    f.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
                    for (auto& each : conns)
                        each.cancel();
                }
            },
            asio::detached);
    ioc.run();
    return f;
}

void print(const char* what, int coroutines, const figure& f) {
    std::printf("  %-44s %3d coroutine(s): %9.0f cycles/s (%ld in %.1f s)\n", what, coroutines,
                f.rate(), f.cycles, f.seconds);
}

// One mutex per coroutine (distinct names: uncontended) or one for all (contended), on either
// backend: `Mutex` is corolock::mutex or corolock::pg_mutex.
template <class Mutex>
auto cycles_of(bool shared) {
    return [shared](auto& conn, int c) -> asio::awaitable<bool> {
        Mutex m(conn, shared ? std::string("bench") : "bench:" + std::to_string(c));
        auto l = co_await m.async_acquire(asio::use_awaitable);
        co_await l.async_release(asio::use_awaitable);
        co_return true;
    };
}

// A locked transaction around one trivial query (the lock, the query and the commit in one round
// trip), every coroutine on one name.
const std::array<corolock::pg_query_view, 1> select_one{{{"SELECT 1"}}};
asio::awaitable<bool> locked_transaction(corolock::pg_connection& conn, int) {
    corolock::pg_xact_mutex m(conn, "bench");
    std::vector<corolock::pg_result> r;
    co_await m.async_transact(select_one, r, asio::use_awaitable);
    co_return true;
}

// The same around a read-modify-write of one counter row (a write: a commit with a WAL flush when
// fsync is on), from two connections, so that transactions of different sessions contend.
const std::array<corolock::pg_query_view, 2> increment{{
    {"SELECT set_config('bench.n', (SELECT n::text FROM bench_counter WHERE id = 1), true)"},
    {"UPDATE bench_counter SET n = current_setting('bench.n')::bigint + 1 WHERE id = 1"},
}};
asio::awaitable<bool> locked_increment(corolock::pg_connection& conn, int) {
    corolock::pg_xact_mutex m(conn, "bench:counter");
    std::vector<corolock::pg_result> r;
    co_await m.async_transact(increment, r, asio::use_awaitable);
    co_return true;
}

// The Redis mutex in the same shapes as pg_mutex.
void measure_redis(const corolock::connection_config& cfg, clock_type::duration length) {
    using redis = corolock::connection;
    std::printf("Redis (same machine, persistence off, one connection, one io_context thread)\n");
    for (int n : {1, 50})
        print("Redis mutex, uncontended (a name each)", n,
              run_loops<redis>(cfg, n, length, cycles_of<corolock::mutex>(false)));
    print("Redis mutex, contended (one name)", 50,
          run_loops<redis>(cfg, 50, length, cycles_of<corolock::mutex>(true)));
}

void measure(bool fsync, clock_type::duration length) {
    corolock::test::pg_options opts;
    opts.fsync = fsync;
    corolock::test::pg_process srv(opts);
    corolock::pg_config cfg;
    cfg.conninfo = srv.conninfo();
    {
        asio::io_context ioc;
        corolock::pg_connection conn(ioc.get_executor(), cfg);
        conn.async_run(asio::detached);
        asio::co_spawn(
            ioc,
            [&]() -> asio::awaitable<void> {
                corolock::pg_mutex m(conn, "install");
                corolock::pg_result r;
                auto [e1] = co_await m.async_install(asio::as_tuple(asio::use_awaitable));
                auto [e2] = co_await conn.async_query(
                    "CREATE TABLE bench_counter (id int PRIMARY KEY, n bigint NOT NULL)", r,
                    asio::as_tuple(asio::use_awaitable));
                auto [e3] = co_await conn.async_query("INSERT INTO bench_counter VALUES (1, 0)", r,
                                                      asio::as_tuple(asio::use_awaitable));
                if (e1 || e2 || e3)
                    std::fprintf(stderr, "install failed: %s\n",
                                 (e1   ? e1
                                  : e2 ? e2
                                       : e3)
                                     .message()
                                     .c_str());
                conn.cancel();
            },
            asio::detached);
        ioc.run();
    }
    std::printf("fsync %s (PostgreSQL 15 on 127.0.0.1, one connection, one io_context thread)\n",
                fsync ? "on, synchronous_commit on" : "off, synchronous_commit off");
    auto advisory = [](corolock::pg_connection& conn, int c) -> asio::awaitable<bool> {
        const auto key = std::to_string(c + 1);
        std::array<corolock::pg_param, 1> p{key};
        corolock::pg_result r;
        co_await conn.async_query("SELECT pg_try_advisory_lock($1::bigint)", p, r);
        co_await conn.async_query("SELECT pg_advisory_unlock($1::bigint)", p, r);
        co_return true;
    };
    using pg = corolock::pg_connection;
    for (int n : {1, 50}) {
        print("reference: pg_try_advisory_lock + unlock", n,
              run_loops<pg>(cfg, n, length, advisory));
        print("pg_mutex, uncontended (a name each)", n,
              run_loops<pg>(cfg, n, length, cycles_of<corolock::pg_mutex>(false)));
    }
    print("pg_mutex, contended (one name)", 50,
          run_loops<pg>(cfg, 50, length, cycles_of<corolock::pg_mutex>(true)));
    for (int n : {1, 50})
        print("pg_xact_mutex transaction (one name)", n,
              run_loops<pg>(cfg, n, length, locked_transaction));
    print("pg_xact_mutex increment, 2 connections", 50,
          run_loops<pg>(cfg, 50, length, locked_increment, 2));
}

} // namespace

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
    const auto length = std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(seconds > 0 ? seconds : 2.0));
    try {
        corolock::connection_config redis_cfg;
        std::optional<corolock::test::redis_process> own_redis;
        const char* host = std::getenv("COROLOCK_REDIS_HOST");
        const char* port = std::getenv("COROLOCK_REDIS_PORT");
        if (port != nullptr && *port != '\0') {
            redis_cfg.host = host != nullptr && *host != '\0' ? host : "127.0.0.1";
            redis_cfg.port = port;
        } else if (corolock::test::redis_process::available()) {
            own_redis.emplace();
            redis_cfg.port = std::to_string(own_redis->port());
        }
        redis_cfg.client_name = "corolock-pg-bench";
        if (own_redis || port != nullptr)
            measure_redis(redis_cfg, length);
        else
            std::printf("Redis: no redis-server found, its figures are left out\n");
        measure(false, length);
        measure(true, length);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corolock-pg-bench: %s\n", e.what());
        return 1;
    }
}
