// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// What every corolock-bench subcommand shares: options, the server it talks to, /proc and
// getrusage readers, the redis-benchmark / redis-cli runners, the JSON line, small coroutine
// helpers. A benchmark, not a test: nothing here fails a run because something is slow.
#ifndef COROLOCK_BENCH_COMMON_HPP
#define COROLOCK_BENCH_COMMON_HPP

#include "common/redis_process.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::bench {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

// Figures that could not be measured are NaN: printed as n/a, null in JSON.
inline constexpr double missing = std::numeric_limits<double>::quiet_NaN();
inline constexpr auto tuple_deferred = asio::as_tuple(asio::deferred);

// ---- options

struct options {
    std::optional<std::string> host;
    std::optional<std::string> port;
    int coroutines = 256;
    bool coroutines_given = false; // lock: only this count of the uncontended figures
    double seconds = 0;            // 0: the subcommand's default
    int threads = 1;
    int locks = 0;        // 0: the subcommand's default
    double interval = 10; // soak: seconds between samples
    bool json = false;
    bool alloc_sites = false; // lock: where the allocations of one cycle come from
    int runs = 0;             // lock: runs of each uncontended figure (0: the default, 3)
    std::string only;         // lock: comma-separated sections to run (empty: all)

    // `--only` names `section` (or is empty).
    bool runs_section(std::string_view section) const {
        if (only.empty())
            return true;
        std::string_view rest = only;
        while (!rest.empty()) {
            const auto comma = rest.find(',');
            if (rest.substr(0, comma) == section)
                return true;
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        }
        return false;
    }
};

void usage(std::ostream& os);
// Parses argv[first..]; prints a message and returns nullopt on a bad option or --help.
std::optional<options> parse_options(int argc, char** argv, int first);

// ---- the server

// A server given on the command line, or a private child started for this run.
struct target {
    std::string host;
    std::string port;
    std::optional<test::redis_process> own;

    void stop() {
        if (own)
            own->stop();
    }
};
void open_target(const options& o, target& t);
corolock::connection_config bench_config(const target& t);

// Runs `body` on a fresh io_context with one connection (started before, cancelled after),
// with `threads` threads. An exception from `body` is rethrown here.
void run_with_connection(const target& t, int threads,
                         const std::function<asio::awaitable<void>(corolock::connection&)>& body);
// PING on `conn`; false (and `error` set) if it failed.
asio::awaitable<bool> first_ping(corolock::connection& conn, std::string& error);

// ---- measuring

double process_cpu_us();  // user + system CPU of this process (getrusage), us
double children_cpu_us(); // the same for reaped children (getrusage RUSAGE_CHILDREN), us
double rss_bytes();       // /proc/self/statm
double heap_bytes();      // mallinfo2: in use, so freed memory counts out
std::string loadavg();    // /proc/loadavg: "1-min 5-min 15-min"
unsigned cores();

clock_type::duration seconds_of(double s);
double us_between(clock_type::time_point a, clock_type::time_point b);
double seconds_between(clock_type::time_point a, clock_type::time_point b);
// Nearest rank (p in [0, 1]); sorts `v`.
double percentile(std::vector<double>& v, double p);
// The median and the extremes of several runs of one figure (NaN runs left out).
struct spread {
    double median = missing, min = missing, max = missing;
};
spread spread_of(std::vector<double> v);

// ---- printing

std::string show(double v, int precision);
std::string signed_show(double v, int precision);
std::string kib(double bytes);
// "<median> [<min>-<max>]", or "n/a".
std::string show_spread(const spread& s, int precision);
// "<value> (target <op> <goal>: met|missed)", or "... n/a" when not measured.
std::string against(double v, int precision, std::string_view op, double goal);

// One JSON object printed on the last line with --json (Boost.JSON; NaN becomes null).
class json_line {
public:
    json_line& num(std::string_view key, double v);
    json_line& str(std::string_view key, std::string_view v); // empty: null
    json_line& boolean(std::string_view key, bool v);
    void print(std::ostream& os) const;

private:
    boost::json::object obj_;
};

// ---- coroutines

asio::awaitable<void> sleep_for(clock_type::duration d);

// Workers of one measurement: the controller sets `stop` and waits for `running` to reach 0.
// Everything runs on one thread, so plain counters are enough.
struct crew {
    bool stop = false;
    int running = 0;
    std::uint64_t errors = 0;
    std::string first_error;

    void note(corolock::error_code ec, std::string_view what);
    void spawn(const asio::any_io_executor& ex, asio::awaitable<void> work);
    asio::awaitable<void> finish();
    asio::awaitable<void> join(); // waits for running == 0 without setting stop
};

// Runs blocking work (a child process) on its own thread while the io_context keeps serving
// the connection (health checks, the watchdog).
asio::awaitable<void> run_in_thread(const std::function<void()>& work);

// ---- redis-benchmark, redis-cli and INFO

test::program_result redis_cli(const target& t, std::vector<std::string> args);
std::string trimmed(std::string s);
// requests/s of the first test row of `redis-benchmark -q --csv` ("<name>","<rps>",...).
std::optional<double> parse_csv_rate(std::string_view out);
// redis-benchmark -h -p <args...> -q --csv: requests/s, or NaN (and `output` says why).
double run_redis_benchmark(const target& t, const std::vector<std::string>& args,
                           std::string& output);

// `INFO commandstats` for EVALSHA (the server's own cost per script call) and `INFO cpu`.
struct script_stats {
    double calls = missing;
    double usec_per_call = missing;
    double failed_calls = missing;
    double cpu_s = missing; // used_cpu_user + used_cpu_sys
};
script_stats parse_evalsha_stats(std::string_view info);
asio::awaitable<void> reset_server_stats(corolock::connection& conn);
asio::awaitable<script_stats> read_server_stats(corolock::connection& conn);

corolock::lock_stats operator-(const corolock::lock_stats& a, const corolock::lock_stats& b);

// ---- subcommands (one file each)

int run_pipeline(const options& o);
int run_lock(const options& o);
int run_soak(const options& o);
int run_multi(const options& o);
int run_sync(const options& o);
int run_election(const options& o);
int run_redlock(const options& o);
int run_cluster(const options& o);
int run_rate(const options& o);
// corolock-bench zk (zk.cpp; only with corolock::zookeeper).
int run_zk(const options& o);

} // namespace corolock::bench

#endif
