// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// rate: rate_limiter::async_try_acquire over ONE connection and one thread, at 1 and 64
// coroutines, next to its reference in the same run: redis-benchmark running the limiter's own
// GCRA script (src/core/rate_scripts.hpp) with the arguments the library sends, as many requests
// in flight as coroutines. The limit (10^9 per second, burst 10^6) admits every call, so each
// call writes the key, as a busy limiter does. See bench/README.md.
#include "common.hpp"
#include "core/rate_scripts.hpp"
#include <corolock/rate_limiter.hpp>

#include <cmath>
#include <iostream>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto rate_warmup = 500ms;
constexpr double default_seconds = 3;
constexpr int rate_counts[] = {1, 64};
constexpr corolock::rate_limit bench_limit{1'000'000'000, 1s, 1'000'000};
constexpr const char* bench_key = "bench:rate";

asio::awaitable<void> try_worker(corolock::rate_limiter& lim, crew& c, std::uint64_t& calls) {
    while (!c.stop) {
        auto [ec, d] = co_await lim.async_try_acquire(1, tuple_deferred);
        if (ec) {
            c.note(ec, "rate limiter");
            co_await sleep_for(10ms);
            continue;
        }
        ++calls;
    }
}

struct rate_result {
    int coroutines = 0;
    double rate = missing, cpu_us = missing, reference = missing;
    std::uint64_t errors = 0;
    std::string first_error;
};

asio::awaitable<void> measure(corolock::connection& conn, int coroutines, double seconds,
                              rate_result& r) {
    auto ex = co_await asio::this_coro::executor;
    corolock::rate_limiter lim(conn, bench_key, bench_limit);
    crew c;
    std::uint64_t calls = 0;
    for (int i = 0; i < coroutines; ++i)
        c.spawn(ex, try_worker(lim, c, calls));
    co_await sleep_for(rate_warmup);
    const auto n0 = calls;
    const auto cpu0 = process_cpu_us();
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(seconds));
    const auto t1 = clock_type::now();
    const auto cpu1 = process_cpu_us();
    const auto n = double(calls - n0);
    co_await c.finish();
    r.rate = n / seconds_between(t0, t1);
    if (n > 0)
        r.cpu_us = (cpu1 - cpu0) / n;
    r.errors = c.errors;
    r.first_error = c.first_error;
}

// redis-benchmark -P depth running the same EVALSHA for about `seconds`.
double reference(const target& t, int depth, double seconds, std::string& output) {
    detail::rate_params p;
    if (detail::validate_rate_limit(bench_key, bench_limit, p))
        return missing;
    const auto& s = detail::rate_acquire_script();
    if (trimmed(redis_cli(t, {"SCRIPT", "LOAD", s.source()}).output) != s.sha1()) {
        output = "SCRIPT LOAD failed";
        return missing;
    }
    const std::vector<std::string> cmd{"EVALSHA",
                                       s.sha1(),
                                       "1",
                                       bench_key,
                                       std::to_string(p.t_us),
                                       std::to_string(p.t_rem),
                                       std::to_string(p.rate),
                                       std::to_string(p.tau_us),
                                       std::to_string(p.tau_rem),
                                       "1",
                                       "0"};
    auto run = [&](std::uint64_t n) {
        std::vector<std::string> args{
            "-c", "1", "-P", std::to_string(depth), "-n", std::to_string(n)};
        args.insert(args.end(), cmd.begin(), cmd.end());
        return run_redis_benchmark(t, args, output);
    };
    const double calibration = run(10000);
    if (!std::isfinite(calibration))
        return missing;
    return run(std::max<std::uint64_t>(10000, static_cast<std::uint64_t>(calibration * seconds)));
}

} // namespace

int run_rate(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_seconds;
    target t;
    open_target(o, t);
    std::vector<rate_result> results;
    std::string first_error, note;
    try {
        run_with_connection(t, 1, [&](corolock::connection& conn) -> asio::awaitable<void> {
            if (!co_await first_ping(conn, first_error))
                co_return;
            for (int n : rate_counts) {
                rate_result r;
                r.coroutines = n;
                co_await measure(conn, n, o.seconds, r);
                results.push_back(r);
            }
        });
        if (test::find_program("redis-benchmark").empty())
            note = "redis-benchmark not found: no reference";
        else
            for (auto& r : results) {
                std::string output;
                r.reference = reference(t, r.coroutines, o.seconds, output);
                if (!std::isfinite(r.reference))
                    note = "redis-benchmark failed: " + trimmed(output);
            }
    } catch (...) {
        t.stop();
        throw;
    }
    t.stop();

    std::cout << "\nrate: rate_limiter::async_try_acquire, one connection, one thread, server "
              << t.host << ":" << t.port << (t.own ? " (own)" : "") << ", " << o.seconds
              << " s per figure after " << rate_warmup.count() << " ms warm-up; " << cores()
              << " cores shared\n";
    if (!first_error.empty())
        std::cout << "  error: " << first_error << "\n";
    if (!note.empty())
        std::cout << "  " << note << "\n";
    std::uint64_t errors = 0;
    json_line j;
    for (const auto& r : results) {
        const double ratio = r.rate / r.reference;
        std::cout << "  " << r.coroutines << " coroutine(s): " << show(r.rate, 0) << " calls/s ("
                  << show(r.cpu_us, 1) << " us client CPU per call); redis-benchmark -P "
                  << r.coroutines << " of the same script " << show(r.reference, 0)
                  << " calls/s: ratio " << show(ratio, 2) << "\n";
        if (!r.first_error.empty())
            std::cout << "    error: " << r.first_error << "\n";
        errors += r.errors;
        const std::string k = "c" + std::to_string(r.coroutines) + "_";
        j.num(k + "calls_per_s", r.rate)
            .num(k + "reference_calls_per_s", r.reference)
            .num(k + "ratio", ratio)
            .num(k + "cpu_us_per_call", r.cpu_us);
    }
    if (o.json)
        j.print(std::cout);
    return errors == 0 && first_error.empty() ? 0 : 1;
}

} // namespace corolock::bench
