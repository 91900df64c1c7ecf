// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
// Boost.JSON is header-only here: its implementation is compiled in this one file.
#include <boost/json/src.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <malloc.h>
#include <sstream>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

namespace corolock::bench {

// ------------------------------------------------------------------------------------------------
// options

void usage(std::ostream& os) {
    os << "usage: corolock-bench pipeline|lock|soak|multi|redlock|cluster|sync|rate|election|zk "
          "[options]\n"
          "  pipeline: K coroutines loop SET over one connection, next to redis-benchmark SET\n"
          "  lock:     acquire/release figures over one connection (uncontended, contended,\n"
          "            nested holds, dropped vs awaited release, allocations, many locks under\n"
          "            the watchdog), next to redis-benchmark running the same Lua scripts\n"
          "  soak:     N locks held under the watchdog on one connection for S seconds,\n"
          "            client memory and renewal traffic sampled every I seconds\n"
          "  multi:    multi-lock of 3 names against 3 single-name cycles, 1 and 50\n"
          "            coroutines, one connection\n"
          "  redlock:  RedLock over 5 private masters: acquire latency against a single-node\n"
          "            mutex, uncontended cycles/s (1, 50, 256 coroutines), contended (50, 1 ms)\n"
          "  cluster:  a private 3-master cluster against a private standalone server:\n"
          "            uncontended cycles/s (1, 50 coroutines), master SIGKILL to first acquire\n"
          "  rate:     rate_limiter try_acquire calls/s over one connection (1, 64 coroutines),\n"
          "            next to redis-benchmark running the same GCRA script\n"
          "  election: election hand-over after a resign (p50, p99) and after a leader's death,\n"
          "            job slots run per second (1 and 3 runners), next to kazoo's Election\n"
          "  zk:       the ZooKeeper lock (corolock::zookeeper builds only) on a private server:\n"
          "            uncontended cycles/s (1, 50 coroutines), hand-off, next to kazoo's Lock\n"
          "  --coroutines K   pipeline: concurrent coroutines on one connection (default 256);\n"
          "                   lock: run the uncontended figures at this count only\n"
          "  --seconds S      measured time per figure (pipeline: 5 after 1 s warm-up;\n"
          "                   lock: 3 after 0.5 s warm-up; soak: 300 in all)\n"
          "  --interval I     soak: seconds between samples (default 10)\n"
          "  --threads N      pipeline: io_context threads (default 1; lock and soak use one)\n"
          "  --locks N        locks held under the watchdog (lock: 100000, soak: 10000)\n"
          "  --runs N         lock: runs of each uncontended figure and its reference\n"
          "                   (default 3); median [min-max] printed\n"
          "  --only LIST      lock: only these sections, comma-separated, of uncontended,\n"
          "                   drop, allocs, contended, many (default: all)\n"
          "  --alloc-sites    lock: also print where one acquire+release cycle allocates\n"
          "                   (a backtrace per operator new; slow, measured separately)\n"
          "  --host H         use this server instead of starting one (default 127.0.0.1)\n"
          "  --port P         use this server instead of starting one\n"
          "  --json           also print the figures as one JSON object on the last line\n";
}

namespace {

template <class T>
bool parse_number(std::string_view s, T& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size();
}

} // namespace

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
        } else if (arg == "--alloc-sites") {
            o.alloc_sites = true;
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
            o.coroutines_given = ok;
        } else if (arg == "--runs") {
            auto v = value();
            ok = v && parse_number(*v, o.runs) && o.runs > 0 && o.runs <= 100;
        } else if (arg == "--only") {
            auto v = value();
            ok = v.has_value() && !v->empty();
            if (ok)
                o.only = std::string(*v);
        } else if (arg == "--locks") {
            auto v = value();
            ok = v && parse_number(*v, o.locks) && o.locks > 0;
        } else if (arg == "--threads") {
            auto v = value();
            ok = v && parse_number(*v, o.threads) && o.threads > 0;
        } else if (arg == "--seconds") {
            auto v = value();
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
// the server

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

corolock::connection_config bench_config(const target& t) {
    corolock::connection_config cfg;
    cfg.host = t.host;
    cfg.port = t.port;
    cfg.client_name = "corolock-bench";
    return cfg;
}

void run_with_connection(const target& t, int threads,
                         const std::function<asio::awaitable<void>(corolock::connection&)>& body) {
    asio::io_context ioc(threads);
    corolock::connection conn(ioc.get_executor(), bench_config(t),
                              {corolock::logger::level::error, {}});
    std::exception_ptr failure;
    conn.async_run([](corolock::error_code) {});
    asio::co_spawn(ioc, body(conn), [&](std::exception_ptr e) {
        failure = e;
        conn.cancel();
    });
    std::vector<std::thread> extra;
    for (int i = 1; i < threads; ++i)
        extra.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& th : extra)
        th.join();
    if (failure)
        std::rethrow_exception(failure);
}

asio::awaitable<bool> first_ping(corolock::connection& conn, std::string& error) {
    corolock::request ping;
    ping.push("PING");
    auto [ec, n] = co_await conn.async_exec(ping, corolock::ignore, tuple_deferred);
    if (ec)
        error = "first PING failed: " + ec.message();
    co_return !ec;
}

// ------------------------------------------------------------------------------------------------
// measuring

namespace {

double us_of(const timeval& tv) {
    return double(tv.tv_sec) * 1e6 + double(tv.tv_usec);
}

} // namespace

double process_cpu_us() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return us_of(ru.ru_utime) + us_of(ru.ru_stime);
}

double children_cpu_us() {
    rusage ru{};
    ::getrusage(RUSAGE_CHILDREN, &ru);
    return us_of(ru.ru_utime) + us_of(ru.ru_stime);
}

double rss_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f)
        return missing;
    unsigned long size = 0, resident = 0;
    const int n = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    return n == 2 ? double(resident) * double(::sysconf(_SC_PAGESIZE)) : missing;
}

double heap_bytes() {
    const auto mi = ::mallinfo2();
    return double(mi.uordblks) + double(mi.hblkhd);
}

std::string loadavg() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    if (!(f >> a >> b >> c))
        return "n/a";
    return a + " " + b + " " + c;
}

unsigned cores() {
    return std::thread::hardware_concurrency();
}

clock_type::duration seconds_of(double s) {
    return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

double us_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

double percentile(std::vector<double>& v, double p) {
    if (v.empty())
        return missing;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p * double(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

spread spread_of(std::vector<double> v) {
    std::erase_if(v, [](double x) { return !std::isfinite(x); });
    if (v.empty())
        return {};
    std::sort(v.begin(), v.end());
    const auto n = v.size();
    const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return {median, v.front(), v.back()};
}

// ------------------------------------------------------------------------------------------------
// printing

std::string show(double v, int precision) {
    if (!std::isfinite(v))
        return "n/a";
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(precision);
    os << v;
    return os.str();
}

std::string signed_show(double v, int precision) {
    return std::isfinite(v) && v >= 0 ? "+" + show(v, precision) : show(v, precision);
}

std::string kib(double bytes) {
    return show(bytes / 1024.0, 0);
}

std::string show_spread(const spread& s, int precision) {
    if (!std::isfinite(s.median))
        return "n/a";
    return show(s.median, precision) + " [" + show(s.min, precision) + "-" +
           show(s.max, precision) + "]";
}

std::string against(double v, int precision, std::string_view op, double goal) {
    std::string out = show(v, precision) + "  (target " + std::string(op) + " " +
                      show(goal, goal == std::floor(goal)             ? 0
                                 : goal * 10 == std::floor(goal * 10) ? 1
                                                                      : 2) +
                      ": ";
    if (!std::isfinite(v))
        return out + "n/a)";
    const bool met = op == "<=" ? v <= goal : op == ">=" ? v >= goal : v == goal;
    return out + (met ? "met)" : "MISSED)");
}

json_line& json_line::num(std::string_view key, double v) {
    // Whole numbers as integers: Boost.JSON writes every double with an exponent (3E0).
    constexpr double exact = 9007199254740992.0; // 2^53
    if (!std::isfinite(v))
        obj_[key] = nullptr;
    else if (v == std::floor(v) && std::fabs(v) < exact)
        obj_[key] = static_cast<std::int64_t>(v);
    else
        obj_[key] = v;
    return *this;
}

json_line& json_line::str(std::string_view key, std::string_view v) {
    if (v.empty())
        obj_[key] = nullptr;
    else
        obj_[key] = v;
    return *this;
}

json_line& json_line::boolean(std::string_view key, bool v) {
    obj_[key] = v;
    return *this;
}

void json_line::print(std::ostream& os) const {
    os << boost::json::serialize(obj_) << std::endl;
}

// ------------------------------------------------------------------------------------------------
// coroutines

asio::awaitable<void> sleep_for(clock_type::duration d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

void crew::note(corolock::error_code ec, std::string_view what) {
    ++errors;
    if (first_error.empty())
        first_error = std::string(what) + ": " + ec.message();
}

void crew::spawn(const asio::any_io_executor& ex, asio::awaitable<void> work) {
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

asio::awaitable<void> crew::finish() {
    stop = true;
    co_await join();
}

asio::awaitable<void> crew::join() {
    while (running > 0)
        co_await sleep_for(std::chrono::milliseconds(1));
}

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
        co_await sleep_for(std::chrono::milliseconds(5));
    th.join();
    if (failure)
        std::rethrow_exception(failure);
}

// ------------------------------------------------------------------------------------------------
// redis-benchmark, redis-cli and INFO

test::program_result redis_cli(const target& t, std::vector<std::string> args) {
    std::vector<std::string> full{"redis-cli", "-h", t.host, "-p", t.port};
    full.insert(full.end(), args.begin(), args.end());
    return test::run_program(full);
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
        s.pop_back();
    return s;
}

std::optional<double> parse_csv_rate(std::string_view out) {
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

double run_redis_benchmark(const target& t, const std::vector<std::string>& args,
                           std::string& output) {
    // Options first: redis-benchmark takes everything from the first non-option on as the
    // command to run.
    std::vector<std::string> full{"redis-benchmark", "-h", t.host, "-p", t.port, "-q", "--csv"};
    full.insert(full.end(), args.begin(), args.end());
    const auto out = test::run_program(full);
    output = out.output;
    if (out.exit_code != 0)
        return missing;
    return parse_csv_rate(out.output).value_or(missing);
}

namespace {

double info_field(std::string_view info, std::string_view name) {
    const auto at = info.find(name);
    if (at == std::string_view::npos)
        return missing;
    const std::string value(info.substr(at + name.size(), 32));
    char* stop = nullptr;
    const double v = std::strtod(value.c_str(), &stop);
    return stop != value.c_str() ? v : missing;
}

} // namespace

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

corolock::lock_stats operator-(const corolock::lock_stats& a, const corolock::lock_stats& b) {
    corolock::lock_stats d;
    d.attempts = a.attempts - b.attempts;
    d.pubsub_wakeups = a.pubsub_wakeups - b.pubsub_wakeups;
    d.timer_wakeups = a.timer_wakeups - b.timer_wakeups;
    d.renewals = a.renewals - b.renewals;
    d.renewal_calls = a.renewal_calls - b.renewal_calls;
    d.leases_lost = a.leases_lost - b.leases_lost;
    d.undos = a.undos - b.undos;
    d.handoffs = a.handoffs - b.handoffs;
    d.renewal_failures = a.renewal_failures - b.renewal_failures;
    for (std::size_t i = 0; i < d.acquires.size(); ++i)
        d.acquires[i] = a.acquires[i] - b.acquires[i];
    for (std::size_t i = 0; i < d.lost.size(); ++i)
        d.lost[i] = a.lost[i] - b.lost[i];
    const auto minus = [](const corolock::duration_histogram& x,
                          const corolock::duration_histogram& y) {
        corolock::duration_histogram h;
        for (std::size_t i = 0; i < h.buckets.size(); ++i)
            h.buckets[i] = x.buckets[i] - y.buckets[i];
        h.count = x.count - y.count;
        h.sum = x.sum - y.sum;
        return h;
    };
    d.acquire_wait = minus(a.acquire_wait, b.acquire_wait);
    d.renewal_rtt = minus(a.renewal_rtt, b.renewal_rtt);
    // Gauges, not counters: the later value.
    d.leases_held = a.leases_held;
    d.waiters = a.waiters;
    return d;
}

} // namespace corolock::bench
