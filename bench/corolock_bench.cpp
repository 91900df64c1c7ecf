// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// corolock-bench: throughput figures next to a reference measured in the same run against the
// same server. A benchmark, not a test: it never fails because something is slow.
//
//   corolock-bench pipeline [--coroutines K] [--seconds S] [--threads N] [--host H --port P]
//                           [--json]
//   corolock-bench lock [--seconds S] [--locks N] [--host H --port P] [--json]
//   corolock-bench soak [--seconds S] [--interval I] [--locks N] [--host H --port P] [--json]
//
// pipeline: K coroutines each loop `SET key:<i> <16-byte value>` over ONE corolock::connection
// for S seconds (after a 1 s warm-up), then redis-benchmark (-c 1 -P 64, one connection with 64
// commands in flight) runs SET for about as long.
//
// lock: over ONE connection, (1) acquire+release cycles/s on distinct names with 1, 50 and 256
// coroutines, next to redis-benchmark running the library's own acquire and release scripts with
// as many commands in flight; (2) 50 coroutines contending for one name, holding 0 and 1 ms;
// (3) nested re-acquisition of a held lock; (4) N locks held under the watchdog: client memory
// per lock and renewal traffic. See bench/README.md.
//
// soak: N locks (default 10,000) held under the watchdog on ONE connection for S seconds
// (default 300), sampling client memory (RSS, malloc'd bytes) and renewal traffic every I seconds
// (default 10): growth per lock per hour from a linear fit, renewals/s against the ideal, leases
// lost; then client memory after releasing them all.
//
// Without --host/--port a private redis-server is started on a free loopback port and stopped at
// the end, on every path.
#include "detail/lock_scripts.hpp"
#include "redis_server.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <malloc.h>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto warmup = 1s;
constexpr std::string_view value_16 = "0123456789abcdef";
constexpr int benchmark_pipeline = 64;
constexpr double default_pipeline_seconds = 5;
constexpr double default_lock_seconds = 3;
constexpr int default_lock_locks = 100000;
constexpr double default_soak_seconds = 300;
constexpr int default_soak_locks = 10000;

// ------------------------------------------------------------------------------------------------
// Options shared by every subcommand.

struct options {
    std::optional<std::string> host;
    std::optional<std::string> port;
    int coroutines = 256;
    double seconds = 0; // 0: the subcommand's default
    int threads = 1;
    int locks = 0;        // 0: the subcommand's default
    double interval = 10; // soak: seconds between samples
    bool json = false;
};

void usage(std::ostream& os) {
    os << "usage: corolock-bench pipeline|lock|soak [options]\n"
          "  pipeline: K coroutines loop SET over one connection, next to redis-benchmark SET\n"
          "  lock:     acquire/release figures over one connection (uncontended, contended,\n"
          "            reentrant, many locks under the watchdog), next to redis-benchmark\n"
          "            running the same Lua scripts\n"
          "  soak:     N locks held under the watchdog on one connection for S seconds,\n"
          "            client memory and renewal traffic sampled every I seconds\n"
          "  --coroutines K   pipeline: concurrent coroutines on one connection (default 256)\n"
          "  --seconds S      measured time per figure (pipeline: 5 after 1 s warm-up;\n"
          "                   lock: 3 after 0.5 s warm-up; soak: 300 in all)\n"
          "  --interval I     soak: seconds between samples (default 10)\n"
          "  --threads N      pipeline: io_context threads (default 1; lock and soak use one)\n"
          "  --locks N        locks held under the watchdog (lock: 100000, soak: 10000)\n"
          "  --host H         use this server instead of starting one (default 127.0.0.1)\n"
          "  --port P         use this server instead of starting one\n"
          "  --json           also print the figures as one JSON object on the last line\n";
}

template <class T>
bool parse_number(std::string_view s, T& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size();
}

// Parses argv[first..]; prints a message and returns nullopt on a bad option.
std::optional<options> parse_options(int argc, char** argv, int first) {
    options o;
    for (int i = first; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&]() -> std::optional<std::string_view> {
            if (i + 1 >= argc) {
                std::cerr << "corolock-bench: " << arg << " needs a value\n";
                return std::nullopt;
            }
            return std::string_view(argv[++i]);
        };
        bool ok = true;
        if (arg == "--json") {
            o.json = true;
        } else if (arg == "--host") {
            auto v = value();
            ok = v.has_value();
            if (ok)
                o.host = std::string(*v);
        } else if (arg == "--port") {
            auto v = value();
            unsigned short p = 0;
            ok = v && parse_number(*v, p) && p != 0;
            if (ok)
                o.port = std::string(*v);
        } else if (arg == "--coroutines") {
            auto v = value();
            ok = v && parse_number(*v, o.coroutines) && o.coroutines > 0;
        } else if (arg == "--locks") {
            auto v = value();
            ok = v && parse_number(*v, o.locks) && o.locks > 0;
        } else if (arg == "--threads") {
            auto v = value();
            ok = v && parse_number(*v, o.threads) && o.threads > 0;
        } else if (arg == "--seconds") {
            auto v = value();
            // from_chars for double is in libstdc++ 11+.
            ok = v && parse_number(*v, o.seconds) && o.seconds > 0 && o.seconds < 86400;
        } else if (arg == "--interval") {
            auto v = value();
            ok = v && parse_number(*v, o.interval) && o.interval >= 0.1 && o.interval < 86400;
        } else if (arg == "-h" || arg == "--help") {
            usage(std::cout);
            return std::nullopt;
        } else {
            std::cerr << "corolock-bench: unknown option " << arg << "\n";
            usage(std::cerr);
            return std::nullopt;
        }
        if (!ok) {
            std::cerr << "corolock-bench: bad value for " << arg << "\n";
            usage(std::cerr);
            return std::nullopt;
        }
    }
    return o;
}

// ------------------------------------------------------------------------------------------------
// Measuring helpers.

// User + system CPU time of this process (every thread), in microseconds.
double process_cpu_us() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    auto us = [](const timeval& tv) { return double(tv.tv_sec) * 1e6 + double(tv.tv_usec); };
    return us(ru.ru_utime) + us(ru.ru_stime);
}

// Figures that could not be measured are NaN (printed as n/a, and null in JSON). Plain doubles
// rather than std::optional: g++ 12 warns of a maybe-uninitialized optional<double> here.
constexpr double missing = std::numeric_limits<double>::quiet_NaN();

std::string json_number(double v) {
    if (!std::isfinite(v))
        return "null";
    std::ostringstream os;
    os.precision(10); // whole ops/s figures without an exponent
    os << v;
    return os.str();
}

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

// Where the benchmark talks to: a server given on the command line, or a private child.
struct target {
    std::string host;
    std::string port;
    std::optional<corolock::bench::redis_server> own;
};

void open_target(const options& o, target& t) {
    if (o.host || o.port) {
        t.host = o.host.value_or("127.0.0.1");
        t.port = o.port.value_or("6379");
        return;
    }
    t.own.emplace();
    t.host = "127.0.0.1";
    t.port = std::to_string(t.own->port());
    std::cerr << "corolock-bench: started redis-server pid " << t.own->pid() << " on port "
              << t.port << "\n";
}

// ------------------------------------------------------------------------------------------------
// pipeline: corolock

struct corolock_result {
    std::uint64_t ops = 0;
    std::uint64_t errors = 0;
    double elapsed_s = 0;
    double cpu_us = 0;
    std::uint64_t commands = 0;
    std::uint64_t writes = 0;
    std::string first_error;
};

corolock_result run_corolock_pipeline(const options& o, const target& t) {
    asio::io_context ioc(o.threads);
    corolock::connection_config cfg;
    cfg.host = t.host;
    cfg.port = t.port;
    cfg.client_name = "corolock-bench";
    corolock::connection conn(ioc.get_executor(), cfg, {corolock::logger::level::error, {}});

    std::atomic<std::uint64_t> ops{0}, errors{0};
    std::atomic<bool> stop{false};
    std::atomic<int> running{0};
    corolock_result result;
    std::mutex error_mutex;

    auto worker = [&](int id) -> asio::awaitable<void> {
        corolock::request req;
        req.push("SET", "key:" + std::to_string(id), value_16);
        while (!stop.load(std::memory_order_relaxed)) {
            auto [ec, n] =
                co_await conn.async_exec(req, corolock::ignore, asio::as_tuple(asio::deferred));
            if (ec) {
                errors.fetch_add(1, std::memory_order_relaxed);
                std::lock_guard lock(error_mutex);
                if (result.first_error.empty())
                    result.first_error = ec.message();
                // A broken connection fails fast; do not spin on it.
                asio::steady_timer pause(co_await asio::this_coro::executor, 10ms);
                co_await pause.async_wait(asio::use_awaitable);
            } else {
                ops.fetch_add(1, std::memory_order_relaxed);
            }
        }
    };

    auto controller = [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        corolock::request ping;
        ping.push("PING");
        auto [ec, n] =
            co_await conn.async_exec(ping, corolock::ignore, asio::as_tuple(asio::deferred));
        if (ec) {
            result.first_error = "first PING failed: " + ec.message();
            ++result.errors;
            conn.cancel();
            co_return;
        }

        for (int i = 0; i < o.coroutines; ++i) {
            running.fetch_add(1);
            asio::co_spawn(ex, worker(i), [&](std::exception_ptr) { running.fetch_sub(1); });
        }

        asio::steady_timer timer(ex, warmup);
        co_await timer.async_wait(asio::use_awaitable);

        const auto st0 = conn.stats();
        const auto ops0 = ops.load();
        const auto err0 = errors.load();
        const auto cpu0 = process_cpu_us();
        const auto t0 = clock_type::now();

        timer.expires_after(std::chrono::duration_cast<clock_type::duration>(
            std::chrono::duration<double>(o.seconds)));
        co_await timer.async_wait(asio::use_awaitable);

        const auto t1 = clock_type::now();
        const auto cpu1 = process_cpu_us();
        const auto ops1 = ops.load();
        const auto err1 = errors.load();
        const auto st1 = conn.stats();

        result.ops = ops1 - ops0;
        result.errors += err1 - err0;
        result.elapsed_s = std::chrono::duration<double>(t1 - t0).count();
        result.cpu_us = cpu1 - cpu0;
        result.commands = st1.commands - st0.commands;
        result.writes = st1.writes - st0.writes;

        stop = true;
        while (running.load() > 0) {
            timer.expires_after(1ms);
            co_await timer.async_wait(asio::use_awaitable);
        }
        conn.cancel();
    };

    std::exception_ptr failure;
    conn.async_run([](corolock::error_code) {});
    asio::co_spawn(ioc, controller(), [&](std::exception_ptr e) {
        failure = e;
        stop = true;
        conn.cancel();
    });

    std::vector<std::thread> extra;
    for (int i = 1; i < o.threads; ++i)
        extra.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& th : extra)
        th.join();
    if (failure)
        std::rethrow_exception(failure);
    return result;
}

// ------------------------------------------------------------------------------------------------
// pipeline: redis-benchmark

struct reference_result {
    double ops_per_s = missing;
    std::uint64_t requests = 0;
    std::string note;
};

// requests/s from `redis-benchmark -q --csv` output: the row "SET","<rps>",...
std::optional<double> parse_benchmark_csv(std::string_view out) {
    std::size_t pos = 0;
    while (pos < out.size()) {
        auto end = out.find('\n', pos);
        if (end == std::string_view::npos)
            end = out.size();
        std::string_view line = out.substr(pos, end - pos);
        pos = end + 1;
        // redis-benchmark redraws a progress line with '\r'; keep what follows the last one.
        if (auto cr = line.rfind('\r'); cr != std::string_view::npos)
            line = line.substr(cr + 1);
        constexpr std::string_view head = "\"SET\",\"";
        if (line.substr(0, head.size()) != head)
            continue;
        line.remove_prefix(head.size());
        const auto quote = line.find('"');
        if (quote == std::string_view::npos)
            continue;
        const std::string field(line.substr(0, quote));
        char* stop = nullptr;
        const double v = std::strtod(field.c_str(), &stop);
        if (stop != field.c_str() && v > 0)
            return v;
    }
    return std::nullopt;
}

double run_redis_benchmark(const target& t, std::uint64_t requests, std::string& output) {
    const auto out = corolock::bench::capture_output(
        {"redis-benchmark", "-h", t.host, "-p", t.port, "-c", "1", "-P",
         std::to_string(benchmark_pipeline), "-d", std::to_string(value_16.size()), "-t", "set",
         "-n", std::to_string(requests), "-q", "--csv"});
    output = out.output;
    if (out.exit_code != 0)
        return missing;
    return parse_benchmark_csv(out.output).value_or(missing);
}

reference_result run_reference(const options& o, const target& t) {
    reference_result r;
    if (!corolock::bench::in_path("redis-benchmark")) {
        r.note = "redis-benchmark not found in PATH: no reference, ratio is null";
        return r;
    }
    // A short calibration run picks the request count for about --seconds of work.
    std::string output;
    const std::uint64_t calibration = 300000;
    const auto rate = run_redis_benchmark(t, calibration, output);
    if (!std::isfinite(rate)) {
        r.note = "redis-benchmark failed or printed no SET row: " + output;
        return r;
    }
    r.requests = std::max<std::uint64_t>(calibration, static_cast<std::uint64_t>(rate * o.seconds) /
                                                          benchmark_pipeline * benchmark_pipeline);
    r.ops_per_s = run_redis_benchmark(t, r.requests, output);
    if (!std::isfinite(r.ops_per_s))
        r.note = "redis-benchmark failed or printed no SET row: " + output;
    return r;
}

// ------------------------------------------------------------------------------------------------

int run_pipeline(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_pipeline_seconds;
    target t;
    open_target(o, t);

    std::cerr << "corolock-bench: corolock, " << o.coroutines << " coroutines, " << o.threads
              << " thread(s), " << o.seconds << " s after " << warmup.count() << " s warm-up\n";
    const auto c = run_corolock_pipeline(o, t);
    std::cerr << "corolock-bench: redis-benchmark -c 1 -P " << benchmark_pipeline << "\n";
    const auto ref = run_reference(o, t);
    if (t.own)
        t.own->stop();

    const double ops_per_s = c.elapsed_s > 0 ? double(c.ops) / c.elapsed_s : missing;
    const double cpu_per_op = c.ops > 0 ? c.cpu_us / double(c.ops) : missing;
    const double per_write = c.writes > 0 ? double(c.commands) / double(c.writes) : missing;
    const double ratio = ops_per_s / ref.ops_per_s; // NaN if either is missing

    auto show = [](double v, int precision) {
        if (!std::isfinite(v))
            return std::string("n/a");
        std::ostringstream os;
        os.setf(std::ios::fixed);
        os.precision(precision);
        os << v;
        return os.str();
    };
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
    std::cout << "  (client and server share this machine's " << std::thread::hardware_concurrency()
              << " cores)\n";
    if (o.json) {
        std::cout << "{\"bench\":\"pipeline\""
                  << ",\"corolock_ops_per_s\":" << json_number(ops_per_s)
                  << ",\"redis_benchmark_ops_per_s\":" << json_number(ref.ops_per_s)
                  << ",\"pipeline_ratio\":" << json_number(ratio)
                  << ",\"client_cpu_us_per_op\":" << json_number(cpu_per_op)
                  << ",\"commands_per_write\":" << json_number(per_write)
                  << ",\"coroutines\":" << o.coroutines << ",\"threads\":" << o.threads
                  << ",\"seconds\":" << json_number(o.seconds)
                  << ",\"measured_seconds\":" << json_number(c.elapsed_s) << ",\"ops\":" << c.ops
                  << ",\"errors\":" << c.errors << ",\"commands\":" << c.commands
                  << ",\"writes\":" << c.writes << ",\"redis_benchmark_requests\":" << ref.requests
                  << ",\"redis_benchmark_pipeline\":" << benchmark_pipeline
                  << ",\"own_server\":" << (t.own ? "true" : "false")
                  << ",\"note\":" << (ref.note.empty() ? "null" : json_string(ref.note)) << "}"
                  << std::endl;
    }
    // Slowness is never a failure; errors are.
    return c.errors == 0 && c.ops > 0 ? 0 : 1;
}

// ================================================================================================
// lock: the distributed mutex over ONE connection, next to redis-benchmark running the same Lua
// scripts against the same server.

constexpr auto tuple_deferred = asio::as_tuple(asio::deferred);
constexpr auto lock_warmup = 500ms;
constexpr int uncontended_counts[] = {1, 50, 256};
constexpr int contended_coroutines = 50;
constexpr int reentrant_pairs = 200000;
constexpr std::size_t many_in_flight = 256;
constexpr auto fixed_lease = 10s;
constexpr auto many_lease = 3s;

clock_type::duration seconds_of(double s) {
    return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

double us_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

asio::awaitable<void> sleep_for(clock_type::duration d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

// Nearest-rank percentile (p in [0, 1]); sorts `v`.
double percentile(std::vector<double>& v, double p) {
    if (v.empty())
        return missing;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p * double(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// Resident set size of this process, from /proc/self/statm (pages).
double rss_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f)
        return missing;
    unsigned long size = 0, resident = 0;
    const int n = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    return n == 2 ? double(resident) * double(::sysconf(_SC_PAGESIZE)) : missing;
}

// Bytes handed out by malloc (small blocks + mmapped ones): unlike RSS, freed memory counts out.
double heap_bytes() {
    const auto mi = ::mallinfo2();
    return double(mi.uordblks) + double(mi.hblkhd);
}

// One row of `INFO commandstats` for EVALSHA (the server's own cost per script call), and the
// server's CPU time so far (`INFO cpu`: used_cpu_user + used_cpu_sys), which also counts its
// socket I/O and protocol work.
struct script_stats {
    double calls = missing;
    double usec_per_call = missing;
    double failed_calls = missing;
    double cpu_s = missing;
};

double info_field(std::string_view info, std::string_view name) {
    const auto at = info.find(name);
    if (at == std::string_view::npos)
        return missing;
    const std::string value(info.substr(at + name.size(), 32));
    char* stop = nullptr;
    const double v = std::strtod(value.c_str(), &stop);
    return stop != value.c_str() ? v : missing;
}

script_stats parse_evalsha_stats(std::string_view info) {
    script_stats s;
    s.cpu_s = info_field(info, "used_cpu_user:") + info_field(info, "used_cpu_sys:");
    constexpr std::string_view head = "cmdstat_evalsha:";
    const auto at = info.find(head);
    if (at == std::string_view::npos)
        return s;
    auto line = info.substr(at + head.size());
    line = line.substr(0, line.find_first_of("\r\n"));
    while (!line.empty()) {
        const auto comma = line.find(',');
        const auto field = line.substr(0, comma);
        line = comma == std::string_view::npos ? std::string_view{} : line.substr(comma + 1);
        const auto eq = field.find('=');
        if (eq == std::string_view::npos)
            continue;
        const std::string value(field.substr(eq + 1));
        const double v = std::strtod(value.c_str(), nullptr);
        const auto key = field.substr(0, eq);
        if (key == "calls")
            s.calls = v;
        else if (key == "usec_per_call")
            s.usec_per_call = v;
        else if (key == "failed_calls")
            s.failed_calls = v;
    }
    return s;
}

asio::awaitable<void> reset_server_stats(corolock::connection& conn) {
    corolock::request req;
    req.push("CONFIG", "RESETSTAT");
    co_await conn.async_exec(req, corolock::ignore, tuple_deferred);
}

asio::awaitable<script_stats> read_server_stats(corolock::connection& conn) {
    corolock::request req;
    req.push("INFO", "commandstats");
    req.push("INFO", "cpu");
    corolock::generic_response resp;
    auto [ec, n] = co_await conn.async_exec(req, resp, tuple_deferred);
    std::string text;
    for (const auto& node : resp)
        text += node.value;
    co_return ec ? script_stats{} : parse_evalsha_stats(text);
}

// Workers of one measurement: the controller sets `stop` and waits for `running` to reach 0.
// Everything runs on one thread, so plain counters are enough.
struct crew {
    bool stop = false;
    int running = 0;
    std::uint64_t errors = 0;
    std::string first_error;

    void note(corolock::error_code ec, std::string_view what) {
        ++errors;
        if (first_error.empty())
            first_error = std::string(what) + ": " + ec.message();
    }
    void spawn(const asio::any_io_executor& ex, asio::awaitable<void> work) {
        ++running;
        asio::co_spawn(ex, std::move(work), [this](std::exception_ptr e) {
            --running;
            if (e) {
                ++errors;
                if (first_error.empty())
                    first_error = "a worker threw";
            }
        });
    }
    asio::awaitable<void> finish() {
        stop = true;
        while (running > 0)
            co_await sleep_for(1ms);
    }
};

// ---- 1. uncontended: each coroutine loops acquire + release on its own name.

struct uncontended_result {
    int coroutines = 0;
    bool watchdog = false;
    std::uint64_t cycles = 0;
    std::uint64_t errors = 0;
    double elapsed_s = 0;
    double cpu_us = 0;
    std::uint64_t commands = 0;
    std::uint64_t writes = 0;
    std::uint64_t pushes = 0;
    script_stats server;
    double server_cpu_s = missing;
    std::string first_error;

    double cycles_per_s() const { return elapsed_s > 0 ? double(cycles) / elapsed_s : missing; }
    double cpu_us_per_cycle() const { return cycles ? cpu_us / double(cycles) : missing; }
    double server_cpu_us_per_cycle() const {
        return cycles ? server_cpu_s * 1e6 / double(cycles) : missing;
    }
    double per_cycle(std::uint64_t v) const {
        return cycles ? double(v) / double(cycles) : missing;
    }
};

asio::awaitable<void> uncontended_worker(corolock::connection& conn, std::string name,
                                         corolock::mutex_options mo, crew& c,
                                         std::uint64_t& cycles) {
    corolock::mutex m(conn, std::move(name), std::move(mo));
    while (!c.stop) {
        auto [ec] = co_await m.async_acquire(tuple_deferred);
        if (ec) {
            c.note(ec, "acquire");
            co_await sleep_for(10ms); // a broken connection fails fast: do not spin on it
            continue;
        }
        auto [ec2] = co_await m.async_release(tuple_deferred);
        if (ec2) {
            c.note(ec2, "release");
            co_await sleep_for(10ms);
            continue;
        }
        ++cycles;
    }
}

asio::awaitable<uncontended_result> run_uncontended(corolock::connection& conn, int coroutines,
                                                    bool watchdog, double seconds) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    std::uint64_t cycles = 0;
    corolock::mutex_options mo; // the default: 30 s lease renewed by the watchdog
    if (!watchdog) {
        mo.lease = fixed_lease;
        mo.watchdog = false;
    }
    const std::string prefix = watchdog ? "bench:u:w:" : "bench:u:f:";
    for (int i = 0; i < coroutines; ++i)
        c.spawn(ex, uncontended_worker(conn, prefix + std::to_string(i), mo, c, cycles));

    co_await sleep_for(lock_warmup);
    co_await reset_server_stats(conn);
    const auto server0 = co_await read_server_stats(conn);
    const auto st0 = conn.stats();
    const auto cycles0 = cycles;
    const auto errors0 = c.errors;
    const auto cpu0 = process_cpu_us();
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(seconds));
    const auto t1 = clock_type::now();
    const auto cpu1 = process_cpu_us();
    const auto cycles1 = cycles;
    const auto errors1 = c.errors;
    const auto st1 = conn.stats();
    uncontended_result r;
    r.server = co_await read_server_stats(conn);
    co_await c.finish();

    r.coroutines = coroutines;
    r.watchdog = watchdog;
    r.cycles = cycles1 - cycles0;
    r.errors = errors1 - errors0;
    r.elapsed_s = std::chrono::duration<double>(t1 - t0).count();
    r.cpu_us = cpu1 - cpu0;
    r.commands = st1.commands - st0.commands;
    r.writes = st1.writes - st0.writes;
    r.pushes = st1.pushes - st0.pushes;
    r.server_cpu_s = r.server.cpu_s - server0.cpu_s;
    r.first_error = c.first_error;
    co_return r;
}

// ---- 2. contended: 50 coroutines, each its own mutex object, on one name.

struct contended_result {
    int hold_ms = 0;
    double elapsed_s = 0;
    std::uint64_t cycles = 0;
    std::uint64_t acquisitions = 0;
    std::uint64_t errors = 0;
    double wait_p50_us = missing, wait_p99_us = missing, wait_max_us = missing;
    double handoff_p50_us = missing, handoff_p99_us = missing;
    std::uint64_t handoffs_to_other = 0, handoffs_to_same = 0;
    double idle_p50_us = missing, idle_p99_us = missing;
    double mean_hold_us = missing;
    std::uint64_t unordered = 0; // an acquire completed before the previous release did
    corolock::lock_stats stats;  // deltas over the window
    std::string first_error;

    double cycles_per_s() const { return elapsed_s > 0 ? double(cycles) / elapsed_s : missing; }
    double ideal_per_s() const { return hold_ms > 0 ? 1000.0 / hold_ms : missing; }
    double other_share() const {
        const auto n = handoffs_to_other + handoffs_to_same;
        return n ? double(handoffs_to_other) / double(n) : missing;
    }
    double attempts_per_acquire() const {
        return acquisitions ? double(stats.attempts) / double(acquisitions) : missing;
    }
};

struct contended_state {
    bool measuring = false;
    std::vector<double> waits_us, handoffs_us, idle_us;
    double hold_us = 0;
    std::uint64_t acquisitions = 0, cycles = 0, to_other = 0, to_same = 0, unordered = 0;
    clock_type::time_point last_release{}, last_release_call{};
    bool free_since_release = false;
    int last_holder = -1;
};

asio::awaitable<void> contended_worker(corolock::connection& conn, std::string name, int id,
                                       clock_type::duration hold, crew& c, contended_state& s) {
    corolock::mutex m(conn, std::move(name));
    asio::steady_timer holding(co_await asio::this_coro::executor);
    while (!c.stop) {
        const auto t0 = clock_type::now();
        auto [ec] = co_await m.async_acquire(tuple_deferred);
        const auto t1 = clock_type::now();
        if (ec) {
            c.note(ec, "acquire");
            co_await sleep_for(10ms);
            continue;
        }
        if (s.measuring) {
            s.waits_us.push_back(us_between(t0, t1));
            ++s.acquisitions;
            if (s.free_since_release) {
                s.handoffs_us.push_back(us_between(s.last_release, t1));
                s.idle_us.push_back(us_between(s.last_release_call, t1));
                ++(id != s.last_holder ? s.to_other : s.to_same);
            } else if (s.last_holder >= 0) {
                ++s.unordered;
            }
        }
        s.free_since_release = false;
        if (hold > clock_type::duration::zero()) {
            holding.expires_after(hold);
            co_await holding.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        const auto t2 = clock_type::now();
        auto [ec2] = co_await m.async_release(tuple_deferred);
        if (ec2) {
            c.note(ec2, "release");
            co_await sleep_for(10ms);
            continue;
        }
        s.last_release_call = t2;
        s.last_release = clock_type::now();
        s.free_since_release = true;
        s.last_holder = id;
        if (s.measuring) {
            ++s.cycles;
            s.hold_us += us_between(t1, t2);
        }
    }
}

corolock::lock_stats operator-(const corolock::lock_stats& a, const corolock::lock_stats& b) {
    return {a.attempts - b.attempts,
            a.pubsub_wakeups - b.pubsub_wakeups,
            a.timer_wakeups - b.timer_wakeups,
            a.renewals - b.renewals,
            a.renewal_calls - b.renewal_calls,
            a.leases_lost - b.leases_lost,
            a.fast_reentries - b.fast_reentries};
}

asio::awaitable<contended_result> run_contended(corolock::connection& conn, int hold_ms,
                                                double seconds) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    contended_state s;
    const std::string name = "bench:contended:hold" + std::to_string(hold_ms);
    for (int i = 0; i < contended_coroutines; ++i)
        c.spawn(ex, contended_worker(conn, name, i, std::chrono::milliseconds(hold_ms), c, s));

    co_await sleep_for(lock_warmup);
    const auto ls0 = corolock::get_lock_stats(conn);
    const auto t0 = clock_type::now();
    s.measuring = true;
    co_await sleep_for(seconds_of(seconds));
    s.measuring = false;
    const auto t1 = clock_type::now();
    const auto ls1 = corolock::get_lock_stats(conn);
    co_await c.finish();

    contended_result r;
    r.hold_ms = hold_ms;
    r.elapsed_s = std::chrono::duration<double>(t1 - t0).count();
    r.cycles = s.cycles;
    r.acquisitions = s.acquisitions;
    r.errors = c.errors;
    r.first_error = c.first_error;
    r.handoffs_to_other = s.to_other;
    r.handoffs_to_same = s.to_same;
    r.unordered = s.unordered;
    r.stats = ls1 - ls0;
    r.wait_p50_us = percentile(s.waits_us, 0.50);
    r.wait_p99_us = percentile(s.waits_us, 0.99);
    r.wait_max_us = s.waits_us.empty() ? missing : s.waits_us.back();
    r.handoff_p50_us = percentile(s.handoffs_us, 0.50);
    r.handoff_p99_us = percentile(s.handoffs_us, 0.99);
    r.idle_p50_us = percentile(s.idle_us, 0.50);
    r.idle_p99_us = percentile(s.idle_us, 0.99);
    r.mean_hold_us = s.cycles ? s.hold_us / double(s.cycles) : missing;
    co_return r;
}

// ---- 3. reentrant: nested acquire + release on a held watchdog lock (no round trip).

struct reentrant_result {
    int pairs = 0;
    double pair_ns = missing;
    std::uint64_t errors = 0;
    std::uint64_t fast_reentries = 0;
    std::uint64_t attempts = 0; // acquire scripts sent during the nested loop (expected 0)
    std::string first_error;
};

asio::awaitable<reentrant_result> run_reentrant(corolock::connection& conn, int pairs) {
    reentrant_result r;
    r.pairs = pairs;
    corolock::mutex m(conn, "bench:reentrant");
    if (auto [ec] = co_await m.async_acquire(tuple_deferred); ec) {
        ++r.errors;
        r.first_error = "outer acquire: " + ec.message();
        co_return r;
    }
    auto nested = [&](int n) -> asio::awaitable<void> {
        for (int i = 0; i < n; ++i) {
            auto [ec] = co_await m.async_acquire(tuple_deferred);
            if (!ec) {
                auto [ec2] = co_await m.async_release(tuple_deferred);
                ec = ec2;
            }
            if (ec && r.errors++ == 0)
                r.first_error = "nested: " + ec.message();
        }
    };
    co_await nested(1000); // warm-up
    const auto ls0 = corolock::get_lock_stats(conn);
    const auto t0 = clock_type::now();
    co_await nested(pairs);
    const auto t1 = clock_type::now();
    const auto d = corolock::get_lock_stats(conn) - ls0;
    r.pair_ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / pairs;
    r.fast_reentries = d.fast_reentries;
    r.attempts = d.attempts;
    if (auto [ec] = co_await m.async_release(tuple_deferred); ec && r.errors++ == 0)
        r.first_error = "outer release: " + ec.message();
    co_return r;
}

// ---- 4. many locks held under the watchdog on one connection.

struct many_result {
    std::size_t count = 0;
    double acquire_s = missing, release_s = missing;
    double rss_per_lock = missing, heap_per_lock = missing;
    double window_s = 0;
    double window_cpu_us = 0;
    corolock::lock_stats stats; // deltas over the window
    std::size_t held_after = 0;
    std::uint64_t errors = 0;
    std::string first_error;

    double per_s(std::uint64_t v) const { return window_s > 0 ? double(v) / window_s : missing; }
    double per_call() const {
        return stats.renewal_calls ? double(stats.renewals) / double(stats.renewal_calls) : missing;
    }
};

asio::awaitable<void> many_worker(std::vector<std::unique_ptr<corolock::mutex>>& locks,
                                  std::size_t& next, bool release, crew& c) {
    while (next < locks.size()) {
        auto& m = *locks[next++];
        if (release) {
            if (auto [ec] = co_await m.async_release(tuple_deferred); ec)
                c.note(ec, "release");
        } else {
            if (auto [ec] = co_await m.async_acquire(tuple_deferred); ec)
                c.note(ec, "acquire");
        }
    }
}

asio::awaitable<void> run_many_pass(std::vector<std::unique_ptr<corolock::mutex>>& locks,
                                    bool release, crew& c) {
    auto ex = co_await asio::this_coro::executor;
    std::size_t next = 0;
    c.stop = false;
    for (std::size_t i = 0; i < std::min(many_in_flight, locks.size()); ++i)
        c.spawn(ex, many_worker(locks, next, release, c));
    while (c.running > 0)
        co_await sleep_for(1ms);
}

asio::awaitable<many_result> run_many(corolock::connection& conn, std::size_t count,
                                      double window) {
    many_result r;
    r.count = count;
    crew c;
    std::vector<std::unique_ptr<corolock::mutex>> locks;
    corolock::mutex_options mo;
    mo.lease = many_lease;

    const double rss0 = rss_bytes(), heap0 = heap_bytes();
    locks.reserve(count);
    for (std::size_t i = 0; i < count; ++i)
        locks.push_back(
            std::make_unique<corolock::mutex>(conn, "bench:many:" + std::to_string(i), mo));
    const auto a0 = clock_type::now();
    co_await run_many_pass(locks, false, c);
    r.acquire_s = std::chrono::duration<double>(clock_type::now() - a0).count();
    const double rss1 = rss_bytes(), heap1 = heap_bytes();
    r.rss_per_lock = (rss1 - rss0) / double(count);
    r.heap_per_lock = (heap1 - heap0) / double(count);

    const auto ls0 = corolock::get_lock_stats(conn);
    const auto cpu0 = process_cpu_us();
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(window));
    const auto t1 = clock_type::now();
    r.window_cpu_us = process_cpu_us() - cpu0;
    r.stats = corolock::get_lock_stats(conn) - ls0;
    r.window_s = std::chrono::duration<double>(t1 - t0).count();
    for (const auto& m : locks)
        r.held_after += m->held() ? 1 : 0;

    const auto rel0 = clock_type::now();
    co_await run_many_pass(locks, true, c);
    r.release_s = std::chrono::duration<double>(clock_type::now() - rel0).count();
    locks.clear();
    r.errors = c.errors;
    r.first_error = c.first_error;
    co_return r;
}

// ---- the corolock side of `lock`, in one io_context with one connection.

struct lock_figures {
    std::vector<uncontended_result> uncontended; // fixed lease, then watchdog, per count
    std::vector<contended_result> contended;
    reentrant_result reentrant;
    many_result many;
    std::string first_error;
};

const uncontended_result* find_uncontended(const lock_figures& f, int coroutines, bool watchdog) {
    for (const auto& u : f.uncontended)
        if (u.coroutines == coroutines && u.watchdog == watchdog)
            return &u;
    return nullptr;
}

// ---- the reference: redis-benchmark running the same scripts.

struct script_reference {
    double rps = missing;
    std::uint64_t requests = 0;
    script_stats server;
    double server_cpu_us = missing; // server CPU per request
};

struct depth_reference {
    int depth = 0;
    script_reference acquire, release;
    std::string note;

    double limit() const { return 1.0 / (1.0 / acquire.rps + 1.0 / release.rps); }
};

// requests/s of the one test row of `redis-benchmark -q --csv <command>`.
std::optional<double> parse_csv_rate(std::string_view out) {
    std::size_t pos = 0;
    while (pos < out.size()) {
        auto end = out.find('\n', pos);
        if (end == std::string_view::npos)
            end = out.size();
        std::string_view line = out.substr(pos, end - pos);
        pos = end + 1;
        if (auto cr = line.rfind('\r'); cr != std::string_view::npos)
            line = line.substr(cr + 1);
        if (line.empty() || line.front() != '"' || line.starts_with("\"test\""))
            continue;
        // "<command>","<rps>",... : the command has no quote (ours never does).
        const auto sep = line.find("\",\"");
        if (sep == std::string_view::npos)
            continue;
        const std::string field(line.substr(sep + 3, line.find('"', sep + 3) - (sep + 3)));
        char* stop = nullptr;
        const double v = std::strtod(field.c_str(), &stop);
        if (stop != field.c_str() && v > 0)
            return v;
    }
    return std::nullopt;
}

corolock::bench::captured redis_cli(const target& t, std::vector<std::string> args) {
    std::vector<std::string> full{"redis-cli", "-h", t.host, "-p", t.port};
    full.insert(full.end(), args.begin(), args.end());
    return corolock::bench::capture_output(full);
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
        s.pop_back();
    return s;
}

double run_script_benchmark(const target& t, int depth, std::uint64_t n,
                            const std::vector<std::string>& command, std::string& output) {
    std::vector<std::string> args{"redis-benchmark",
                                  "-h",
                                  t.host,
                                  "-p",
                                  t.port,
                                  "-c",
                                  "1",
                                  "-P",
                                  std::to_string(depth),
                                  "-n",
                                  std::to_string(n),
                                  "-r",
                                  "100000",
                                  "-q",
                                  "--csv"};
    args.insert(args.end(), command.begin(), command.end());
    const auto out = corolock::bench::capture_output(args);
    output = out.output;
    if (out.exit_code != 0)
        return missing;
    return parse_csv_rate(out.output).value_or(missing);
}

// `acquire` then `release` (same count, so the holds taken are the holds given back), each with
// the server's per-call cost; a short calibration first picks the count for about `seconds`.
depth_reference run_lock_reference(const target& t, int depth, double seconds) {
    depth_reference r;
    r.depth = depth;
    const auto& acq = corolock::detail::acquire_script();
    const auto& rel = corolock::detail::release_script();
    // Each __rand_int__ is drawn on its own, so the fence key and channel do not follow the
    // lock name: another key of the same kind, at the same cost.
    const std::vector<std::string> acquire_cmd{
        "EVALSHA", acq.sha1(), "2", "bench:k:__rand_int__", "{bench:k:__rand_int__}:fence",
        "owner",   "10000"};
    const std::vector<std::string> release_cmd{"EVALSHA", rel.sha1(),
                                               "1",       "bench:k:__rand_int__",
                                               "owner",   "{bench:k:__rand_int__}:released",
                                               "one"};
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
        which->rps = run_script_benchmark(t, depth, n,
                                          which == &r.acquire ? acquire_cmd : release_cmd, output);
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
    if (!corolock::bench::in_path("redis-benchmark") || !corolock::bench::in_path("redis-cli"))
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

// Runs blocking work (a child process) on its own thread while the io_context keeps serving the
// connection (health checks, the watchdog).
asio::awaitable<void> run_in_thread(const std::function<void()>& work) {
    std::atomic<bool> done{false};
    std::exception_ptr failure;
    std::thread th([&] {
        try {
            work();
        } catch (...) {
            failure = std::current_exception();
        }
        done = true;
    });
    while (!done)
        co_await sleep_for(5ms);
    th.join();
    if (failure)
        std::rethrow_exception(failure);
}

// Everything of `lock` in one io_context with one connection. The reference for each depth runs
// right after corolock's figures at that depth, so both see the same machine load.
lock_figures run_corolock_lock(const options& o, const target& t,
                               std::vector<depth_reference>& refs, std::string& ref_note) {
    asio::io_context ioc(1);
    corolock::connection_config cfg;
    cfg.host = t.host;
    cfg.port = t.port;
    cfg.client_name = "corolock-bench";
    corolock::connection conn(ioc.get_executor(), cfg, {corolock::logger::level::error, {}});
    lock_figures f;

    auto controller = [&]() -> asio::awaitable<void> {
        corolock::request ping;
        ping.push("PING");
        if (auto [ec, n] = co_await conn.async_exec(ping, corolock::ignore, tuple_deferred); ec) {
            f.first_error = "first PING failed: " + ec.message();
            conn.cancel();
            co_return;
        }
        const std::function<void()> check = [&] { ref_note = check_reference(t); };
        co_await run_in_thread(check);
        for (const int k : uncontended_counts) {
            for (const bool watchdog : {false, true}) {
                std::cerr << "corolock-bench: uncontended, " << k << " coroutine(s), "
                          << (watchdog ? "watchdog" : "fixed lease") << "\n";
                f.uncontended.push_back(co_await run_uncontended(conn, k, watchdog, o.seconds));
            }
            if (!ref_note.empty())
                continue;
            std::cerr << "corolock-bench: redis-benchmark -c 1 -P " << k
                      << ", acquire and release scripts\n";
            const std::function<void()> reference = [&] {
                refs.push_back(run_lock_reference(t, k, o.seconds));
            };
            co_await run_in_thread(reference);
        }
        for (const int hold : {0, 1}) {
            std::cerr << "corolock-bench: contended, " << contended_coroutines
                      << " coroutines on one name, hold " << hold << " ms\n";
            f.contended.push_back(co_await run_contended(conn, hold, o.seconds));
        }
        std::cerr << "corolock-bench: reentrant, " << reentrant_pairs << " nested pairs\n";
        f.reentrant = co_await run_reentrant(conn, reentrant_pairs);
        std::cerr << "corolock-bench: " << o.locks << " locks under the watchdog\n";
        f.many =
            co_await run_many(conn, static_cast<std::size_t>(o.locks), std::max(o.seconds, 3.0));
        conn.cancel();
    };

    std::exception_ptr failure;
    conn.async_run([](corolock::error_code) {});
    asio::co_spawn(ioc, controller(), [&](std::exception_ptr e) {
        failure = e;
        conn.cancel();
    });
    ioc.run();
    if (failure)
        std::rethrow_exception(failure);
    return f;
}

// ---- report

std::string show(double v, int precision) {
    if (!std::isfinite(v))
        return "n/a";
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(precision);
    os << v;
    return os.str();
}

// Appends `,"key":value` to a JSON object under construction.
struct json_object {
    std::ostringstream os;
    json_object() { os << "{"; }
    json_object& num(std::string_view key, double v) {
        sep();
        os << json_string(key) << ":" << json_number(v);
        return *this;
    }
    json_object& str(std::string_view key, std::string_view v) {
        sep();
        os << json_string(key) << ":" << (v.empty() ? "null" : json_string(v));
        return *this;
    }
    json_object& boolean(std::string_view key, bool v) {
        sep();
        os << json_string(key) << ":" << (v ? "true" : "false");
        return *this;
    }
    std::string done() { return os.str() + "}"; }

private:
    void sep() {
        if (!first_)
            os << ",";
        first_ = false;
    }
    bool first_ = true;
};

int run_lock(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_lock_seconds;
    if (o.locks <= 0)
        o.locks = default_lock_locks;
    if (o.threads != 1) {
        std::cerr << "corolock-bench: lock runs on one thread (--threads 1)\n";
        return 2;
    }
    target t;
    open_target(o, t);

    lock_figures f;
    std::vector<depth_reference> refs;
    std::string ref_note;
    try {
        f = run_corolock_lock(o, t, refs, ref_note);
    } catch (...) {
        if (t.own)
            t.own->stop();
        throw;
    }
    if (t.own)
        t.own->stop();

    auto ref_for = [&](int depth) -> const depth_reference* {
        for (const auto& r : refs)
            if (r.depth == depth)
                return &r;
        return nullptr;
    };
    auto limit_for = [&](int depth) {
        const auto* r = ref_for(depth);
        return r ? r->limit() : missing;
    };

    std::uint64_t errors = 0;
    std::cout << "lock: one connection, server " << t.host << ":" << t.port
              << (t.own ? " (own)" : "") << ", " << o.seconds << " s per figure after "
              << lock_warmup.count() << " ms warm-up\n";
    if (!f.first_error.empty())
        std::cout << "  error: " << f.first_error << "\n";

    std::cout << "\n1. uncontended acquire+release cycles/s (each coroutine its own name)\n"
              << "  coroutines  fixed 10s lease  watchdog (default)  reference limit  ratio  "
                 "ratio(wd)\n";
    for (const int k : uncontended_counts) {
        const auto* fx = find_uncontended(f, k, false);
        const auto* wd = find_uncontended(f, k, true);
        const double limit = limit_for(k);
        const double fx_rate = fx ? fx->cycles_per_s() : missing;
        const double wd_rate = wd ? wd->cycles_per_s() : missing;
        std::cout << "  " << std::setw(10) << k << "  " << std::setw(15) << show(fx_rate, 0) << "  "
                  << std::setw(18) << show(wd_rate, 0) << "  " << std::setw(15) << show(limit, 0)
                  << "  " << std::setw(5) << show(fx_rate / limit, 3) << "  " << std::setw(9)
                  << show(wd_rate / limit, 3) << "\n";
    }
    std::cout << "  per cycle (fixed lease): client CPU us, server CPU us, server us in scripts, "
                 "commands, pushes, commands per write\n";
    for (const int k : uncontended_counts) {
        const auto* fx = find_uncontended(f, k, false);
        if (!fx)
            continue;
        std::cout << "  " << std::setw(10) << k << "  " << std::setw(8)
                  << show(fx->cpu_us_per_cycle(), 2) << std::setw(8)
                  << show(fx->server_cpu_us_per_cycle(), 2) << std::setw(8)
                  << show(2 * fx->server.usec_per_call, 2) << std::setw(8)
                  << show(fx->per_cycle(fx->commands), 2) << std::setw(8)
                  << show(fx->per_cycle(fx->pushes), 2) << std::setw(8)
                  << show(fx->writes ? double(fx->commands) / double(fx->writes) : missing, 1)
                  << "\n";
    }
    for (const auto& u : f.uncontended) {
        errors += u.errors;
        if (!u.first_error.empty())
            std::cout << "  first error (" << u.coroutines << ", "
                      << (u.watchdog ? "watchdog" : "fixed") << "): " << u.first_error << "\n";
    }
    std::cout << "  reference: redis-benchmark -c 1 -P <coroutines> -r 100000 EVALSHA <script> "
                 "(same scripts, same server); limit = 1/(1/acquire + 1/release)\n";
    for (const auto& r : refs)
        std::cout << "    -P " << std::setw(3) << r.depth << ": acquire " << show(r.acquire.rps, 0)
                  << "/s (server " << show(r.acquire.server.usec_per_call, 2) << " us/call, CPU "
                  << show(r.acquire.server_cpu_us, 2) << " us/req), release "
                  << show(r.release.rps, 0) << "/s (server "
                  << show(r.release.server.usec_per_call, 2) << " us/call, CPU "
                  << show(r.release.server_cpu_us, 2) << " us/req), " << r.acquire.requests
                  << " requests each" << (r.note.empty() ? "" : "; note: " + r.note) << "\n";
    if (!ref_note.empty())
        std::cout << "  note: " << ref_note << "\n";

    std::cout << "\n2. contended: " << contended_coroutines
              << " coroutines, each its own mutex, one name\n"
              << "  hold  cycles/s  ideal  wait p50/p99/max us      handoff p50/p99 us  "
                 "to other  pubsub  timer  attempts/acq\n"
              << "  (handoff: from the release's completion to the next holder's acquire "
                 "completing)\n";
    for (const auto& c : f.contended) {
        errors += c.errors;
        std::cout << "  " << std::setw(2) << c.hold_ms << "ms  " << std::setw(8)
                  << show(c.cycles_per_s(), 0) << "  " << std::setw(5) << show(c.ideal_per_s(), 0)
                  << "  " << std::setw(23)
                  << (show(c.wait_p50_us, 0) + "/" + show(c.wait_p99_us, 0) + "/" +
                      show(c.wait_max_us, 0))
                  << "  " << std::setw(18)
                  << (show(c.handoff_p50_us, 0) + "/" + show(c.handoff_p99_us, 0)) << "  "
                  << std::setw(8) << show(c.other_share() * 100, 1) << "%  " << std::setw(6)
                  << c.stats.pubsub_wakeups << "  " << std::setw(5) << c.stats.timer_wakeups << "  "
                  << std::setw(12) << show(c.attempts_per_acquire(), 3) << "\n";
        std::cout << "        release call -> next acquire done p50/p99 us "
                  << show(c.idle_p50_us, 0) << "/" << show(c.idle_p99_us, 0)
                  << "; mean hold as measured " << show(c.mean_hold_us, 0) << " us\n";
        if (c.unordered)
            std::cout << "    " << c.unordered
                      << " acquisitions completed before the previous release had\n";
        if (!c.first_error.empty())
            std::cout << "    first error: " << c.first_error << "\n";
    }

    const auto* wd1 = find_uncontended(f, 1, true);
    const double roundtrip_ns = wd1 ? 1e9 / wd1->cycles_per_s() : missing;
    const auto& re = f.reentrant;
    errors += re.errors;
    std::cout << "\n3. reentrant: " << re.pairs
              << " nested acquire+release pairs on a held "
                 "watchdog lock\n"
              << "  ns per nested pair      " << show(re.pair_ns, 0) << "  (fast re-entries "
              << re.fast_reentries << ", acquire scripts sent " << re.attempts << ")\n"
              << "  ns per round-trip cycle " << show(roundtrip_ns, 0)
              << "  (uncontended, 1 coroutine, watchdog)\n"
              << "  ratio nested/round trip " << show(re.pair_ns / roundtrip_ns, 4) << "\n";
    if (!re.first_error.empty())
        std::cout << "  first error: " << re.first_error << "\n";

    const auto& m = f.many;
    errors += m.errors;
    std::cout << "\n4. " << m.count << " locks held under the watchdog (lease "
              << std::chrono::duration_cast<std::chrono::seconds>(many_lease).count()
              << " s, renewed every lease/3), " << many_in_flight << " acquires in flight\n"
              << "  acquire all / release all s   " << show(m.acquire_s, 2) << " / "
              << show(m.release_s, 2) << "\n"
              << "  client bytes per lock         " << show(m.rss_per_lock, 0) << " RSS, "
              << show(m.heap_per_lock, 0) << " malloc'd\n"
              << "  window                        " << show(m.window_s, 2) << " s, client CPU "
              << show(m.window_cpu_us / 1e4 / m.window_s, 1) << "%\n"
              << "  renewal script calls/s        " << show(m.per_s(m.stats.renewal_calls), 1)
              << "  (ideal " << show(double(m.count) / 100.0 / 1.0, 0) << ")\n"
              << "  locks renewed/s               " << show(m.per_s(m.stats.renewals), 0)
              << "  (ideal " << m.count << ")\n"
              << "  locks renewed per call        " << show(m.per_call(), 1) << "\n"
              << "  leases lost / held after      " << m.stats.leases_lost << " / " << m.held_after
              << "\n";
    if (!m.first_error.empty())
        std::cout << "  first error: " << m.first_error << "\n";
    std::cout << "\n(client and server share this machine's " << std::thread::hardware_concurrency()
              << " cores)\n";

    if (o.json) {
        json_object j;
        j.str("bench", "lock").num("seconds", o.seconds).boolean("own_server", t.own.has_value());
        for (const int k : uncontended_counts) {
            const std::string p = "uncontended_" + std::to_string(k);
            const auto* fx = find_uncontended(f, k, false);
            const auto* wd = find_uncontended(f, k, true);
            const auto* ref = ref_for(k);
            const double limit = limit_for(k);
            const double fx_rate = fx ? fx->cycles_per_s() : missing;
            const double wd_rate = wd ? wd->cycles_per_s() : missing;
            j.num(p + "_cycles_per_s", fx_rate)
                .num(p + "_ratio", fx_rate / limit)
                .num(p + "_watchdog_cycles_per_s", wd_rate)
                .num(p + "_watchdog_ratio", wd_rate / limit)
                .num(p + "_reference_limit", limit)
                .num(p + "_reference_acquire_rps", ref ? ref->acquire.rps : missing)
                .num(p + "_reference_release_rps", ref ? ref->release.rps : missing)
                .num(p + "_reference_acquire_server_us",
                     ref ? ref->acquire.server.usec_per_call : missing)
                .num(p + "_reference_release_server_us",
                     ref ? ref->release.server.usec_per_call : missing)
                .num(p + "_server_us_per_script", fx ? fx->server.usec_per_call : missing)
                .num(p + "_server_cpu_us_per_cycle", fx ? fx->server_cpu_us_per_cycle() : missing)
                .num(p + "_reference_acquire_server_cpu_us",
                     ref ? ref->acquire.server_cpu_us : missing)
                .num(p + "_reference_release_server_cpu_us",
                     ref ? ref->release.server_cpu_us : missing)
                .num(p + "_commands_per_cycle", fx ? fx->per_cycle(fx->commands) : missing)
                .num(p + "_pushes_per_cycle", fx ? fx->per_cycle(fx->pushes) : missing)
                .num(p + "_client_cpu_us_per_cycle", fx ? fx->cpu_us_per_cycle() : missing)
                .num(p + "_watchdog_client_cpu_us_per_cycle", wd ? wd->cpu_us_per_cycle() : missing)
                .num(p + "_commands_per_write",
                     fx && fx->writes ? double(fx->commands) / double(fx->writes) : missing)
                .num(p + "_errors", double(fx ? fx->errors : 0) + double(wd ? wd->errors : 0));
        }
        for (const auto& c : f.contended) {
            const std::string p = "contended_hold" + std::to_string(c.hold_ms) + "ms";
            j.num(p + "_cycles_per_s", c.cycles_per_s())
                .num(p + "_ideal_per_s", c.ideal_per_s())
                .num(p + "_efficiency", c.cycles_per_s() / c.ideal_per_s())
                .num(p + "_wait_p50_us", c.wait_p50_us)
                .num(p + "_wait_p99_us", c.wait_p99_us)
                .num(p + "_wait_max_us", c.wait_max_us)
                .num(p + "_handoff_p50_us", c.handoff_p50_us)
                .num(p + "_handoff_p99_us", c.handoff_p99_us)
                .num(p + "_handoff_to_other_share", c.other_share())
                .num(p + "_release_call_to_next_acquire_p50_us", c.idle_p50_us)
                .num(p + "_release_call_to_next_acquire_p99_us", c.idle_p99_us)
                .num(p + "_mean_hold_us", c.mean_hold_us)
                .num(p + "_pubsub_wakeups", double(c.stats.pubsub_wakeups))
                .num(p + "_timer_wakeups", double(c.stats.timer_wakeups))
                .num(p + "_attempts_per_acquire", c.attempts_per_acquire())
                .num(p + "_unordered", double(c.unordered))
                .num(p + "_errors", double(c.errors));
        }
        j.num("reentrant_pair_ns", re.pair_ns)
            .num("reentrant_roundtrip_cycle_ns", roundtrip_ns)
            .num("reentrant_ratio", re.pair_ns / roundtrip_ns)
            .num("reentrant_fast_reentries", double(re.fast_reentries))
            .num("reentrant_attempts", double(re.attempts));
        j.num("many_locks", double(m.count))
            .num("many_acquire_s", m.acquire_s)
            .num("many_release_s", m.release_s)
            .num("many_rss_bytes_per_lock", m.rss_per_lock)
            .num("many_heap_bytes_per_lock", m.heap_per_lock)
            .num("many_window_s", m.window_s)
            .num("many_client_cpu_percent", m.window_cpu_us / 1e4 / m.window_s)
            .num("many_renewal_calls_per_s", m.per_s(m.stats.renewal_calls))
            .num("many_renewals_per_s", m.per_s(m.stats.renewals))
            .num("many_locks_per_renewal_call", m.per_call())
            .num("many_leases_lost", double(m.stats.leases_lost))
            .num("many_held_after_window", double(m.held_after))
            .num("many_errors", double(m.errors));
        j.num("errors", double(errors)).str("error", f.first_error).str("reference_note", ref_note);
        std::cout << j.done() << std::endl;
    }
    // Slowness is never a failure; errors are.
    return errors == 0 && f.first_error.empty() ? 0 : 1;
}

// ================================================================================================
// soak: N locks held under the watchdog on ONE connection for a long time, the client's memory
// and the renewal traffic sampled at a fixed interval. Memory growth is the figure: a leak per
// renewal shows as a slope that the short `lock` window cannot see.

constexpr auto soak_lease = 3s;              // renewed every lease/3 = 1 s
constexpr auto soak_warmup = 2 * soak_lease; // samples before this are printed, not compared
constexpr std::size_t renew_batch = 100;     // locks per renewal script (mutex.hpp)

struct soak_sample {
    double t_s = 0; // since every lock was held
    double rss = missing, heap = missing;
    double cpu_us = 0;          // process CPU so far
    corolock::lock_stats stats; // cumulative, since the connection was made
    corolock::connection_stats conn;
    std::size_t held = 0;
};

struct soak_figures {
    std::size_t count = 0;
    double rss_before = missing, heap_before = missing;     // before making the mutex objects
    double rss_acquired = missing, heap_acquired = missing; // right after acquiring them all
    double acquire_s = missing, release_s = missing;
    std::vector<soak_sample> samples;
    std::size_t released = 0;
    double rss_released = missing, heap_released = missing;   // released, objects alive
    double rss_destroyed = missing, heap_destroyed = missing; // mutex objects destroyed
    corolock::lock_stats stats_end;                           // after release
    std::uint64_t acquire_errors = 0, release_errors = 0;
    std::uint64_t lost_callbacks = 0;
    std::string first_lost;
    std::string first_error;
};

// Least-squares slope of `field` over time (per second) for samples[from..]; NaN below 2 points.
double slope_per_s(const std::vector<soak_sample>& s, std::size_t from,
                   double soak_sample::*field) {
    double n = 0, st = 0, sv = 0;
    for (std::size_t i = from; i < s.size(); ++i) {
        if (!std::isfinite(s[i].*field))
            continue;
        n += 1;
        st += s[i].t_s;
        sv += s[i].*field;
    }
    if (n < 2)
        return missing;
    const double mt = st / n, mv = sv / n;
    double cov = 0, var = 0;
    for (std::size_t i = from; i < s.size(); ++i) {
        if (!std::isfinite(s[i].*field))
            continue;
        cov += (s[i].t_s - mt) * (s[i].*field - mv);
        var += (s[i].t_s - mt) * (s[i].t_s - mt);
    }
    return var > 0 ? cov / var : missing;
}

std::string kib(double bytes) {
    return show(bytes / 1024.0, 0);
}

std::string signed_show(double v, int precision) {
    return std::isfinite(v) && v >= 0 ? "+" + show(v, precision) : show(v, precision);
}

void print_soak_header() {
    std::cout << "       t s    RSS KiB  malloc'd KiB    renewals  renewals/s  renew calls   lost  "
                 "   held    commands    KiB out     KiB in  CPU %\n";
}

void print_soak_sample(const soak_sample& s, const soak_sample* prev) {
    const double dt = prev ? s.t_s - prev->t_s : 0;
    const double rate =
        prev && dt > 0 ? double(s.stats.renewals - prev->stats.renewals) / dt : missing;
    const double cpu = prev && dt > 0 ? (s.cpu_us - prev->cpu_us) / 1e4 / dt : missing;
    std::cout << "  " << std::setw(6) << show(s.t_s, 1) << "  " << std::setw(9) << kib(s.rss)
              << "  " << std::setw(12) << kib(s.heap) << "  " << std::setw(10) << s.stats.renewals
              << "  " << std::setw(10) << show(rate, 0) << "  " << std::setw(11)
              << s.stats.renewal_calls << "  " << std::setw(5) << s.stats.leases_lost << "  "
              << std::setw(7) << s.held << "  " << std::setw(10) << s.conn.commands << "  "
              << std::setw(9) << kib(double(s.conn.bytes_written)) << "  " << std::setw(9)
              << kib(double(s.conn.bytes_read)) << "  " << std::setw(5) << show(cpu, 1)
              << std::endl;
}

asio::awaitable<void> run_soak_phase(corolock::connection& conn, const options& o,
                                     soak_figures& f) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    std::vector<std::unique_ptr<corolock::mutex>> locks;
    corolock::mutex_options mo;
    mo.lease = soak_lease;
    mo.on_lost = [&f](corolock::error_code ec) {
        if (f.lost_callbacks++ == 0)
            f.first_lost = ec.message();
    };

    f.count = static_cast<std::size_t>(o.locks);
    // Every sample's room up front: a growing vector would show as growth in the figures.
    f.samples.reserve(static_cast<std::size_t>(std::ceil(o.seconds / o.interval)) + 2);
    f.rss_before = rss_bytes();
    f.heap_before = heap_bytes();
    locks.reserve(f.count);
    for (std::size_t i = 0; i < f.count; ++i)
        locks.push_back(
            std::make_unique<corolock::mutex>(conn, "bench:soak:" + std::to_string(i), mo));
    const auto a0 = clock_type::now();
    co_await run_many_pass(locks, false, c);
    f.acquire_s = std::chrono::duration<double>(clock_type::now() - a0).count();
    f.acquire_errors = c.errors;
    f.rss_acquired = rss_bytes();
    f.heap_acquired = heap_bytes();
    std::cout << "  acquire all " << show(f.acquire_s, 2) << " s (" << many_in_flight
              << " in flight, " << f.acquire_errors << " errors); client "
              << signed_show((f.rss_acquired - f.rss_before) / 1024.0, 0) << " KiB RSS ("
              << show((f.rss_acquired - f.rss_before) / double(f.count), 0) << " B/lock), "
              << signed_show((f.heap_acquired - f.heap_before) / 1024.0, 0) << " KiB malloc'd ("
              << show((f.heap_acquired - f.heap_before) / double(f.count), 0) << " B/lock)"
              << std::endl;

    if (f.acquire_errors == 0) {
        std::cerr << "corolock-bench: holding " << f.count << " locks for " << o.seconds
                  << " s, a sample every " << o.interval << " s\n";
        print_soak_header();
        asio::steady_timer timer(ex);
        const auto t0 = clock_type::now();
        for (int k = 0;; ++k) {
            const double at = std::min(double(k) * o.interval, o.seconds);
            timer.expires_at(t0 + seconds_of(at));
            co_await timer.async_wait(asio::use_awaitable);
            soak_sample s;
            s.t_s = std::chrono::duration<double>(clock_type::now() - t0).count();
            s.rss = rss_bytes();
            s.heap = heap_bytes();
            s.cpu_us = process_cpu_us();
            s.stats = corolock::get_lock_stats(conn);
            s.conn = conn.stats();
            for (const auto& m : locks)
                s.held += m->held() ? 1 : 0;
            f.samples.push_back(s);
            print_soak_sample(f.samples.back(),
                              f.samples.size() > 1 ? &f.samples[f.samples.size() - 2] : nullptr);
            if (at >= o.seconds)
                break;
        }
    }

    // Release what is still held (a lost lease answers not_owner: it is reported as lost).
    std::vector<std::unique_ptr<corolock::mutex>> held;
    for (auto& m : locks)
        if (m->held())
            held.push_back(std::move(m));
    f.released = held.size();
    const auto r0 = clock_type::now();
    co_await run_many_pass(held, true, c);
    f.release_s = std::chrono::duration<double>(clock_type::now() - r0).count();
    f.release_errors = c.errors - f.acquire_errors;
    f.first_error = c.first_error;
    co_await sleep_for(100ms); // let posted clean-up (timers, callbacks) run
    f.rss_released = rss_bytes();
    f.heap_released = heap_bytes();
    held.clear();
    locks.clear();
    co_await sleep_for(100ms);
    f.rss_destroyed = rss_bytes();
    f.heap_destroyed = heap_bytes();
    f.stats_end = corolock::get_lock_stats(conn);
}

soak_figures run_corolock_soak(const options& o, const target& t) {
    asio::io_context ioc(1);
    corolock::connection_config cfg;
    cfg.host = t.host;
    cfg.port = t.port;
    cfg.client_name = "corolock-bench";
    corolock::connection conn(ioc.get_executor(), cfg, {corolock::logger::level::error, {}});
    soak_figures f;

    auto controller = [&]() -> asio::awaitable<void> {
        corolock::request ping;
        ping.push("PING");
        if (auto [ec, n] = co_await conn.async_exec(ping, corolock::ignore, tuple_deferred); ec) {
            f.first_error = "first PING failed: " + ec.message();
            conn.cancel();
            co_return;
        }
        co_await run_soak_phase(conn, o, f);
        conn.cancel();
    };

    std::exception_ptr failure;
    conn.async_run([](corolock::error_code) {});
    asio::co_spawn(ioc, controller(), [&](std::exception_ptr e) {
        failure = e;
        conn.cancel();
    });
    ioc.run();
    if (failure)
        std::rethrow_exception(failure);
    return f;
}

int run_soak(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_soak_seconds;
    if (o.locks <= 0)
        o.locks = default_soak_locks;
    if (o.threads != 1) {
        std::cerr << "corolock-bench: soak runs on one thread (--threads 1)\n";
        return 2;
    }
    target t;
    open_target(o, t);
    const double lease_s = std::chrono::duration<double>(soak_lease).count();
    std::cout << "soak: " << o.locks << " locks held under the watchdog on one connection (lease "
              << show(lease_s, 0) << " s, renewed every " << show(lease_s / 3, 0) << " s), "
              << o.seconds << " s, a sample every " << o.interval << " s, server " << t.host << ":"
              << t.port << (t.own ? " (own)" : "") << std::endl;

    soak_figures f;
    try {
        f = run_corolock_soak(o, t);
    } catch (...) {
        if (t.own)
            t.own->stop();
        throw;
    }
    if (t.own)
        t.own->stop();

    // Samples from the end of the warm-up on are compared and fitted (all of them if fewer than
    // two are left: a run shorter than the warm-up).
    const auto& s = f.samples;
    const double warmup_s = std::chrono::duration<double>(soak_warmup).count();
    std::size_t from = 0;
    while (from < s.size() && s[from].t_s < warmup_s)
        ++from;
    if (s.size() - from < 2)
        from = 0;
    const bool have = s.size() >= 2;
    const soak_sample* first = have ? &s[from] : nullptr;
    const soak_sample* last = have ? &s.back() : nullptr;
    const double n = double(f.count);
    const double rss_growth = have ? last->rss - first->rss : missing;
    const double heap_growth = have ? last->heap - first->heap : missing;
    const double rss_slope_h = slope_per_s(s, from, &soak_sample::rss) * 3600;
    const double heap_slope_h = slope_per_s(s, from, &soak_sample::heap) * 3600;
    // Renewal traffic over the whole hold (from the first sample to the last).
    const double span_s = have ? s.back().t_s - s.front().t_s : missing;
    auto rate = [&](auto member) {
        return have && span_s > 0
                   ? double(s.back().stats.*member - s.front().stats.*member) / span_s
                   : missing;
    };
    const double renewals_per_s = rate(&corolock::lock_stats::renewals);
    const double calls_per_s = rate(&corolock::lock_stats::renewal_calls);
    const double ideal_renewals = n / (lease_s / 3);
    const double ideal_calls = std::ceil(n / double(renew_batch)) / (lease_s / 3);
    const double cpu_percent =
        have && span_s > 0 ? (s.back().cpu_us - s.front().cpu_us) / 1e4 / span_s : missing;
    auto conn_rate = [&](auto member) {
        return have && span_s > 0 ? double(s.back().conn.*member - s.front().conn.*member) / span_s
                                  : missing;
    };
    const double commands_per_s = conn_rate(&corolock::connection_stats::commands);
    const double out_per_s = conn_rate(&corolock::connection_stats::bytes_written);
    const double in_per_s = conn_rate(&corolock::connection_stats::bytes_read);
    const std::uint64_t leases_lost =
        std::max<std::uint64_t>(f.stats_end.leases_lost, f.lost_callbacks);
    std::size_t min_held = f.count;
    for (const auto& x : s)
        min_held = std::min(min_held, x.held);

    std::cout << "\nsummary (" << s.size() << " samples; warm-up " << show(warmup_s, 0)
              << " s: compared and fitted from t = " << (have ? show(first->t_s, 1) : "n/a")
              << " s to t = " << (have ? show(last->t_s, 1) : "n/a") << " s)\n"
              << "  RSS          " << (have ? kib(first->rss) : "n/a") << " -> "
              << (have ? kib(last->rss) : "n/a") << " KiB: growth " << signed_show(rss_growth, 0)
              << " B; fit " << signed_show(rss_slope_h, 0)
              << " B/h = " << signed_show(rss_slope_h / n, 3) << " B per lock per hour\n"
              << "  malloc'd     " << (have ? kib(first->heap) : "n/a") << " -> "
              << (have ? kib(last->heap) : "n/a") << " KiB: growth " << signed_show(heap_growth, 0)
              << " B; fit " << signed_show(heap_slope_h, 0)
              << " B/h = " << signed_show(heap_slope_h / n, 3) << " B per lock per hour\n"
              << "  renewals/s   " << show(renewals_per_s, 0)
              << " (ideal locks/(lease/3) = " << show(ideal_renewals, 0) << ", ratio "
              << show(renewals_per_s / ideal_renewals, 3) << "); renewal script calls/s "
              << show(calls_per_s, 1) << " (ideal " << show(ideal_calls, 1) << ")\n"
              << "  connection   " << show(commands_per_s, 1) << " commands/s, "
              << show(out_per_s / 1024, 1) << " KiB/s out, " << show(in_per_s / 1024, 1)
              << " KiB/s in; client CPU " << show(cpu_percent, 1) << "%\n"
              << "  leases lost  " << leases_lost
              << (f.first_lost.empty() ? "" : " (first: " + f.first_lost + ")")
              << "; fewest held at a sample " << (s.empty() ? 0 : min_held) << " of " << f.count
              << "\n"
              << "  release all  " << f.released << " locks in " << show(f.release_s, 2) << " s ("
              << f.release_errors << " errors); client RSS " << kib(f.rss_released)
              << " KiB, malloc'd " << kib(f.heap_released) << " KiB\n"
              << "  objects gone client RSS " << kib(f.rss_destroyed) << " KiB ("
              << signed_show((f.rss_destroyed - f.rss_before) / 1024, 0)
              << " KiB vs before acquiring), malloc'd " << kib(f.heap_destroyed) << " KiB ("
              << signed_show((f.heap_destroyed - f.heap_before) / 1024, 0) << " KiB)\n";
    const double fitted_s = have ? last->t_s - first->t_s : missing;
    if (have && fitted_s < 120)
        std::cout << "  note: fitted over " << show(fitted_s, 0)
                  << " s only; a step of one page or one malloc chunk dominates the per-hour "
                     "figures (the default run holds for 300 s)\n";
    if (!f.first_error.empty())
        std::cout << "  error: " << f.first_error << "\n";
    if (leases_lost > 0)
        std::cout << "  error: " << leases_lost << " lease(s) lost\n";
    std::cout << "  (client and server share this machine's " << std::thread::hardware_concurrency()
              << " cores; RSS counts pages the allocator keeps after a free)\n";

    if (o.json) {
        json_object j;
        j.str("bench", "soak")
            .num("soak_locks", n)
            .num("soak_seconds", o.seconds)
            .num("soak_interval_s", o.interval)
            .num("soak_lease_s", lease_s)
            .num("soak_warmup_s", warmup_s)
            .num("soak_samples", double(s.size()))
            .num("soak_compared_from_s", have ? first->t_s : missing)
            .num("soak_compared_to_s", have ? last->t_s : missing)
            .boolean("own_server", t.own.has_value())
            .num("soak_acquire_s", f.acquire_s)
            .num("soak_rss_before_bytes", f.rss_before)
            .num("soak_heap_before_bytes", f.heap_before)
            .num("soak_rss_acquired_bytes", f.rss_acquired)
            .num("soak_heap_acquired_bytes", f.heap_acquired)
            .num("soak_rss_bytes_per_lock", (f.rss_acquired - f.rss_before) / n)
            .num("soak_heap_bytes_per_lock", (f.heap_acquired - f.heap_before) / n)
            .num("soak_rss_first_bytes", have ? first->rss : missing)
            .num("soak_rss_last_bytes", have ? last->rss : missing)
            .num("soak_rss_growth_bytes", rss_growth)
            .num("soak_rss_slope_bytes_per_hour", rss_slope_h)
            .num("soak_rss_growth_bytes_per_lock_per_hour", rss_slope_h / n)
            .num("soak_heap_first_bytes", have ? first->heap : missing)
            .num("soak_heap_last_bytes", have ? last->heap : missing)
            .num("soak_heap_growth_bytes", heap_growth)
            .num("soak_heap_slope_bytes_per_hour", heap_slope_h)
            .num("soak_heap_growth_bytes_per_lock_per_hour", heap_slope_h / n)
            .num("soak_renewals_per_s", renewals_per_s)
            .num("soak_renewals_ideal_per_s", ideal_renewals)
            .num("soak_renewals_ratio", renewals_per_s / ideal_renewals)
            .num("soak_renewal_calls_per_s", calls_per_s)
            .num("soak_renewal_calls_ideal_per_s", ideal_calls)
            .num("soak_commands_per_s", commands_per_s)
            .num("soak_bytes_written_per_s", out_per_s)
            .num("soak_bytes_read_per_s", in_per_s)
            .num("soak_client_cpu_percent", cpu_percent)
            .num("soak_leases_lost", double(leases_lost))
            .num("soak_min_held", s.empty() ? missing : double(min_held))
            .num("soak_release_s", f.release_s)
            .num("soak_released", double(f.released))
            .num("soak_rss_after_release_bytes", f.rss_released)
            .num("soak_heap_after_release_bytes", f.heap_released)
            .num("soak_rss_after_destroy_bytes", f.rss_destroyed)
            .num("soak_heap_after_destroy_bytes", f.heap_destroyed)
            .num("soak_acquire_errors", double(f.acquire_errors))
            .num("soak_release_errors", double(f.release_errors))
            .str("error", f.first_error);
        std::cout << j.done() << std::endl;
    }
    // Figures never fail the run; a failed acquire or release, or a lost lease, does.
    const bool ok =
        f.first_error.empty() && f.acquire_errors == 0 && f.release_errors == 0 && leases_lost == 0;
    return ok ? 0 : 1;
}

// ------------------------------------------------------------------------------------------------

struct subcommand {
    std::string_view name;
    int (*run)(const options&);
};

constexpr subcommand subcommands[] = {
    {"pipeline", run_pipeline},
    {"lock", run_lock},
    {"soak", run_soak},
};

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(std::cerr);
        return 2;
    }
    const std::string_view name = argv[1];
    if (name == "-h" || name == "--help") {
        usage(std::cout);
        return 0;
    }
    for (const auto& sc : subcommands) {
        if (sc.name != name)
            continue;
        const auto o = parse_options(argc, argv, 2);
        if (!o)
            return 2;
        try {
            return sc.run(*o);
        } catch (const std::exception& e) {
            std::cerr << "corolock-bench: " << e.what() << "\n";
            return 1;
        }
    }
    std::cerr << "corolock-bench: unknown subcommand " << name << "\n";
    usage(std::cerr);
    return 2;
}
