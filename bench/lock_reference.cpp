// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// The reference of the uncontended figures: redis-benchmark, in the same run against the same
// server, running the library's own acquire and release scripts (read from
// src/core/lock_scripts.hpp, so always its current Lua) with the arguments the library sends and
// as many requests in flight as the figure has coroutines.
#include "core/lock_scripts.hpp"
#include "lock.hpp"

#include <algorithm>
#include <cmath>

namespace corolock::bench {

namespace {

// The arguments the library sends with the fixed 10 s lease (lock_service.cpp: lease ms, lease +
// fence_retention ms).
std::vector<std::string> acquire_command() {
    const corolock::mutex_options mo = fixed_options();
    const auto ms = [](auto d) {
        return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    };
    return {"EVALSHA",
            corolock::detail::acquire_script().sha1(),
            "2",
            "bench:k:__rand_int__",
            "{bench:k:__rand_int__}:fence",
            "0123456789abcdef0123456789abcdef",
            ms(mo.lease),
            ms(mo.lease + mo.fence_retention)};
}

std::vector<std::string> release_command() {
    return {"EVALSHA",
            corolock::detail::release_script().sha1(),
            "1",
            "bench:k:__rand_int__",
            "0123456789abcdef0123456789abcdef",
            "{bench:k:__rand_int__}:released"};
}

double run_script_benchmark(const target& t, int depth, std::uint64_t n,
                            const std::vector<std::string>& command, std::string& output,
                            double* client_cpu_us = nullptr) {
    std::vector<std::string> args{
        "-c", "1", "-P", std::to_string(depth), "-n", std::to_string(n), "-r", "100000"};
    args.insert(args.end(), command.begin(), command.end());
    const double cpu0 = children_cpu_us();
    const double rps = run_redis_benchmark(t, args, output);
    if (client_cpu_us)
        *client_cpu_us = (children_cpu_us() - cpu0) / double(n);
    return rps;
}

} // namespace

// `acquire` then `release` (same count, so the holds taken are the holds given back), each with
// the server's per-call cost; a short calibration first picks the count for about `seconds`.
depth_reference run_lock_reference(const target& t, int depth, double seconds) {
    depth_reference r;
    r.depth = depth;
    const auto acquire_cmd = acquire_command();
    const auto release_cmd = release_command();
    auto round = [depth](std::uint64_t n) {
        const auto d = static_cast<std::uint64_t>(depth);
        return std::max<std::uint64_t>(d, n / d * d);
    };
    std::string output;
    redis_cli(t, {"FLUSHALL"});
    const std::uint64_t calibration = round(10000);
    const double rate = run_script_benchmark(t, depth, calibration, acquire_cmd, output);
    run_script_benchmark(t, depth, calibration, release_cmd, output);
    if (!std::isfinite(rate)) {
        r.note = "redis-benchmark failed: " + trimmed(output);
        return r;
    }
    const auto n =
        round(std::max<std::uint64_t>(calibration, static_cast<std::uint64_t>(rate * seconds)));
    redis_cli(t, {"FLUSHALL"});
    for (auto* which : {&r.acquire, &r.release}) {
        redis_cli(t, {"CONFIG", "RESETSTAT"});
        const auto before = parse_evalsha_stats(redis_cli(t, {"INFO", "cpu"}).output);
        which->requests = n;
        which->rps =
            run_script_benchmark(t, depth, n, which == &r.acquire ? acquire_cmd : release_cmd,
                                 output, &which->client_cpu_us);
        which->server = parse_evalsha_stats(redis_cli(t, {"INFO", "everything"}).output);
        which->server_cpu_us = (which->server.cpu_s - before.cpu_s) * 1e6 / double(n);
        if (!std::isfinite(which->rps))
            r.note = "redis-benchmark failed: " + trimmed(output);
        else if (which->server.failed_calls > 0)
            r.note = "the server failed some script calls (NOSCRIPT?): figures are not comparable";
    }
    redis_cli(t, {"FLUSHALL"});
    return r;
}

// Empty when redis-benchmark can run the library's scripts on this server; else why not.
std::string check_reference(const target& t) {
    if (test::find_program("redis-benchmark").empty() || test::find_program("redis-cli").empty())
        return "redis-benchmark or redis-cli not found in PATH: no reference, ratios are null";
    for (const auto* s :
         {&corolock::detail::acquire_script(), &corolock::detail::release_script()}) {
        const auto sha = trimmed(redis_cli(t, {"SCRIPT", "LOAD", s->source()}).output);
        if (sha != s->sha1())
            return "SCRIPT LOAD answered '" + sha + "', expected " + s->sha1() +
                   ": no reference, ratios are null";
    }
    return {};
}

} // namespace corolock::bench
