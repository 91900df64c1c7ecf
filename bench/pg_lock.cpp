// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// corolock-pg-bench: the PostgreSQL lock's cycle rates (acquire + release, each awaited) on one
// connection, next to a reference measured in the same run on the same server: a raw
// pg_try_advisory_lock / pg_advisory_unlock loop over the same connection (two round trips, no
// write). Each figure with fsync on (a WAL flush per commit) and off. A bench, never a test.
//
//   corolock-pg-bench [seconds per figure, default 2]
#include "common/pg_process.hpp"
#include <corolock/pg_mutex.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

struct figure {
    long cycles = 0;
    double seconds = 0;
    double rate() const { return seconds > 0 ? static_cast<double>(cycles) / seconds : 0; }
};

// `coroutines` loops of `body` for `length` on one connection; counts completed cycles.
template <class Body>
figure run_loops(const corolock::pg_config& cfg, int coroutines, clock_type::duration length,
                 Body body) {
    asio::io_context ioc;
    corolock::pg_connection conn(ioc.get_executor(), cfg,
                                 corolock::logger{corolock::logger::level::error, {}});
    conn.async_run(asio::detached);
    figure f;
    int running = coroutines;
    const auto start = clock_type::now();
    const auto stop = start + length;
    for (int c = 0; c < coroutines; ++c)
        asio::co_spawn(
            ioc,
            [&, c]() -> asio::awaitable<void> {
                while (clock_type::now() < stop) {
                    if (!co_await body(conn, c))
                        break;
                    ++f.cycles;
                }
                if (--running == 0) {
                    f.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
                    conn.cancel();
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
        corolock::pg_mutex m(conn, "install");
        m.async_install([&](corolock::error_code ec) {
            if (ec)
                std::fprintf(stderr, "install failed: %s\n", ec.message().c_str());
            conn.cancel();
        });
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
    // One mutex per coroutine (distinct names: uncontended) or one for all (contended).
    auto table = [](bool shared) {
        return [shared](corolock::pg_connection& conn, int c) -> asio::awaitable<bool> {
            corolock::pg_mutex m(conn,
                                 shared ? std::string("bench") : "bench:" + std::to_string(c));
            auto l = co_await m.async_acquire(asio::use_awaitable);
            co_await l.async_release(asio::use_awaitable);
            co_return true;
        };
    };
    for (int n : {1, 50}) {
        print("reference: pg_try_advisory_lock + unlock", n, run_loops(cfg, n, length, advisory));
        print("pg_mutex, uncontended (a name each)", n, run_loops(cfg, n, length, table(false)));
    }
    print("pg_mutex, contended (one name)", 50, run_loops(cfg, 50, length, table(true)));
}

} // namespace

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
    const auto length = std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(seconds > 0 ? seconds : 2.0));
    try {
        measure(false, length);
        measure(true, length);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corolock-pg-bench: %s\n", e.what());
        return 1;
    }
}
