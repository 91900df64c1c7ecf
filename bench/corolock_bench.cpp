// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// corolock-bench: throughput figures next to a reference measured in the same run against the
// same server. A benchmark, not a test: it never fails because something is slow.
//
//   corolock-bench pipeline [--coroutines K] [--seconds S] [--threads N] [--host H --port P]
//                           [--json]
//
// pipeline: K coroutines each loop `SET key:<i> <16-byte value>` over ONE corolock::connection
// for S seconds (after a 1 s warm-up), then redis-benchmark (-c 1 -P 64, one connection with 64
// commands in flight) runs SET for about as long. Without --host/--port a private redis-server
// is started on a free loopback port and stopped at the end.
#include "redis_server.hpp"
#include <corolock/connection.hpp>

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
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto warmup = 1s;
constexpr std::string_view value_16 = "0123456789abcdef";
constexpr int benchmark_pipeline = 64;

// ------------------------------------------------------------------------------------------------
// Options shared by every subcommand.

struct options {
    std::optional<std::string> host;
    std::optional<std::string> port;
    int coroutines = 256;
    double seconds = 5;
    int threads = 1;
    bool json = false;
};

void usage(std::ostream& os) {
    os << "usage: corolock-bench pipeline [options]\n"
          "  --coroutines K   concurrent coroutines on one connection (default 256)\n"
          "  --seconds S      measured time after a 1 s warm-up (default 5)\n"
          "  --threads N      io_context threads (default 1)\n"
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
        } else if (arg == "--threads") {
            auto v = value();
            ok = v && parse_number(*v, o.threads) && o.threads > 0;
        } else if (arg == "--seconds") {
            auto v = value();
            // from_chars for double is in libstdc++ 11+.
            ok = v && parse_number(*v, o.seconds) && o.seconds > 0 && o.seconds < 86400;
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

int run_pipeline(const options& o) {
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

struct subcommand {
    std::string_view name;
    int (*run)(const options&);
};

// A `lock` subcommand will join this table with its own run_lock(const options&).
constexpr subcommand subcommands[] = {
    {"pipeline", run_pipeline},
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
