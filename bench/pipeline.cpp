// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// pipeline: K coroutines each loop `SET key:<i> <16-byte value>` over ONE corolock::connection
// for S seconds (after a 1 s warm-up), then redis-benchmark (-c 1 -P 64, one connection with 64
// commands in flight) runs SET for about as long.
#include "common.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iostream>
#include <mutex>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto warmup = 1s;
constexpr std::string_view value_16 = "0123456789abcdef";
constexpr int benchmark_pipeline = 64;
constexpr double default_seconds = 5;

struct corolock_result {
    std::uint64_t ops = 0;
    std::uint64_t errors = 0;
    double elapsed_s = 0;
    double cpu_us = 0;
    std::uint64_t commands = 0;
    std::uint64_t writes = 0;
    std::string first_error;
};

corolock_result run_corolock(const options& o, const target& t) {
    std::atomic<std::uint64_t> ops{0}, errors{0};
    std::atomic<bool> stop{false};
    std::atomic<int> running{0};
    corolock_result result;
    std::mutex error_mutex;

    auto worker = [&](corolock::connection& conn, int id) -> asio::awaitable<void> {
        corolock::request req;
        req.push("SET", "key:" + std::to_string(id), value_16);
        while (!stop.load(std::memory_order_relaxed)) {
            auto [ec, n] = co_await conn.async_exec(req, corolock::ignore, tuple_deferred);
            if (ec) {
                errors.fetch_add(1, std::memory_order_relaxed);
                {
                    std::lock_guard lock(error_mutex);
                    if (result.first_error.empty())
                        result.first_error = ec.message();
                }
                co_await sleep_for(10ms); // a broken connection fails fast: do not spin on it
            } else {
                ops.fetch_add(1, std::memory_order_relaxed);
            }
        }
    };

    run_with_connection(t, o.threads, [&](corolock::connection& conn) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        if (!co_await first_ping(conn, result.first_error)) {
            ++result.errors;
            conn.cancel();
            co_return;
        }
        for (int i = 0; i < o.coroutines; ++i) {
            running.fetch_add(1);
            asio::co_spawn(ex, worker(conn, i), [&](std::exception_ptr) { running.fetch_sub(1); });
        }
        co_await sleep_for(warmup);

        const auto st0 = conn.stats();
        const auto ops0 = ops.load();
        const auto err0 = errors.load();
        const auto cpu0 = process_cpu_us();
        const auto t0 = clock_type::now();
        co_await sleep_for(seconds_of(o.seconds));
        const auto t1 = clock_type::now();
        const auto cpu1 = process_cpu_us();
        const auto ops1 = ops.load();
        const auto err1 = errors.load();
        const auto st1 = conn.stats();

        result.ops = ops1 - ops0;
        result.errors += err1 - err0;
        result.elapsed_s = seconds_between(t0, t1);
        result.cpu_us = cpu1 - cpu0;
        result.commands = st1.commands - st0.commands;
        result.writes = st1.writes - st0.writes;

        stop = true;
        while (running.load() > 0)
            co_await sleep_for(1ms);
        conn.cancel();
    });
    return result;
}

struct reference_result {
    double ops_per_s = missing;
    std::uint64_t requests = 0;
    std::string note;
};

double run_set_benchmark(const target& t, std::uint64_t requests, std::string& output) {
    return run_redis_benchmark(t,
                               {"-c", "1", "-P", std::to_string(benchmark_pipeline), "-d",
                                std::to_string(value_16.size()), "-t", "set", "-n",
                                std::to_string(requests)},
                               output);
}

reference_result run_reference(const options& o, const target& t) {
    reference_result r;
    if (test::find_program("redis-benchmark").empty()) {
        r.note = "redis-benchmark not found in PATH: no reference, ratio is null";
        return r;
    }
    // A short calibration run picks the request count for about --seconds of work.
    std::string output;
    const std::uint64_t calibration = 300000;
    const auto rate = run_set_benchmark(t, calibration, output);
    if (!std::isfinite(rate)) {
        r.note = "redis-benchmark failed or printed no SET row: " + trimmed(output);
        return r;
    }
    r.requests = std::max<std::uint64_t>(calibration, static_cast<std::uint64_t>(rate * o.seconds) /
                                                          benchmark_pipeline * benchmark_pipeline);
    r.ops_per_s = run_set_benchmark(t, r.requests, output);
    if (!std::isfinite(r.ops_per_s))
        r.note = "redis-benchmark failed or printed no SET row: " + trimmed(output);
    return r;
}

} // namespace

int run_pipeline(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_seconds;
    target t;
    open_target(o, t);

    std::cerr << "corolock-bench: corolock, " << o.coroutines << " coroutines, " << o.threads
              << " thread(s), " << o.seconds << " s after " << warmup.count() << " s warm-up\n";
    const auto load0 = loadavg();
    const auto c = run_corolock(o, t);
    std::cerr << "corolock-bench: redis-benchmark -c 1 -P " << benchmark_pipeline << "\n";
    const auto ref = run_reference(o, t);
    t.stop();

    const double ops_per_s = c.elapsed_s > 0 ? double(c.ops) / c.elapsed_s : missing;
    const double cpu_per_op = c.ops > 0 ? c.cpu_us / double(c.ops) : missing;
    const double per_write = c.writes > 0 ? double(c.commands) / double(c.writes) : missing;
    const double ratio = ops_per_s / ref.ops_per_s; // NaN if either is missing

    std::cout << "pipeline: " << o.coroutines << " coroutines, " << o.threads << " thread(s), "
              << c.elapsed_s << " s measured, server " << t.host << ":" << t.port
              << (t.own ? " (own)" : "") << "\n"
              << "  corolock ops/s            " << show(ops_per_s, 0) << "  (" << c.ops << " ops, "
              << c.errors << " errors)\n"
              << "  redis-benchmark ops/s     " << show(ref.ops_per_s, 0) << "  (-c 1 -P "
              << benchmark_pipeline << ", " << ref.requests << " requests)\n"
              << "  ratio corolock/reference  " << show(ratio, 3) << "\n"
              << "  client CPU us per op      " << show(cpu_per_op, 3) << "\n"
              << "  commands per write        " << show(per_write, 1) << "  (" << c.commands
              << " commands, " << c.writes << " writes)\n";
    if (!ref.note.empty())
        std::cout << "  note: " << ref.note << "\n";
    if (!c.first_error.empty())
        std::cout << "  first error: " << c.first_error << "\n";
    std::cout << "  (client and server share this machine's " << cores() << " cores; load average "
              << load0 << " before, " << loadavg() << " after)\n";
    if (o.json) {
        json_line j;
        j.str("bench", "pipeline")
            .num("corolock_ops_per_s", ops_per_s)
            .num("redis_benchmark_ops_per_s", ref.ops_per_s)
            .num("pipeline_ratio", ratio)
            .num("client_cpu_us_per_op", cpu_per_op)
            .num("commands_per_write", per_write)
            .num("coroutines", o.coroutines)
            .num("threads", o.threads)
            .num("seconds", o.seconds)
            .num("measured_seconds", c.elapsed_s)
            .num("ops", double(c.ops))
            .num("errors", double(c.errors))
            .num("commands", double(c.commands))
            .num("writes", double(c.writes))
            .num("redis_benchmark_requests", double(ref.requests))
            .num("redis_benchmark_pipeline", benchmark_pipeline)
            .boolean("own_server", t.own.has_value())
            .str("note", ref.note);
        j.print(std::cout);
    }
    // Slowness is never a failure; errors are.
    return c.errors == 0 && c.ops > 0 ? 0 : 1;
}

} // namespace corolock::bench
