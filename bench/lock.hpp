// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// The `lock` subcommand's pieces, one file per kind of figure:
//   lock.cpp              the order of the figures, the report's head and the JSON line
//   lock_sequential.cpp   acquire + release loops, each coroutine on its own name: uncontended
//                         (awaited release) at 1, 50 and 256 coroutines, and dropped against
//                         awaited release
//   lock_reference.cpp    redis-benchmark running the library's own acquire and release scripts
//   lock_allocations.cpp  operator new calls per cycle and per nested hold; nested holds' speed
//   lock_contended.cpp    50 coroutines sharing one name
//   many_locks.cpp        many locks held under the watchdog (shared with `soak`)
// See bench/README.md.
#ifndef COROLOCK_BENCH_LOCK_HPP
#define COROLOCK_BENCH_LOCK_HPP

#include "common.hpp"
#include "io_events.hpp"
#include "many_locks.hpp"
#include <corolock/mutex.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corolock::bench {

using namespace std::chrono_literals;

inline constexpr auto lock_warmup = 500ms;
inline constexpr int uncontended_counts[] = {1, 50, 256};
inline constexpr int drop_counts[] = {1, 50};
inline constexpr int default_runs = 3;
inline constexpr int contended_coroutines = 50;
inline constexpr int nested_holds = 1000000;
inline constexpr int alloc_cycles = 2000;
inline constexpr int alloc_site_cycles = 500;
inline constexpr auto fixed_lease = 10s;

// The targets, printed next to each figure (never checked: a bench is not a test).
inline constexpr double target_allocs_per_cycle = 12;
inline constexpr double target_allocs_per_hold = 0;
inline constexpr double target_contended_share = 0.9; // of the ideal 1/hold, at 1 ms
inline constexpr double target_drop_speedup_1 = 1.8;
inline constexpr double target_client_cpu_us_1 = 35; // per awaited cycle at 1 coroutine
// Server CPU per uncontended cycle (fixed lease) over the cheapest safe cycle's, same run: at
// most 1.5 (aim 1.3); and at 50 and 256 coroutines cycles/s at least 0.95 of what the server's
// CPU per cycle allows (1 / server CPU per cycle).
inline constexpr double target_server_work = 1.5;
inline constexpr double target_server_bound = 0.95;
// Of the same-run limit, per coroutine count (uncontended_counts order).
inline constexpr double target_ratio[] = {0.85, 0.95, 0.95};

corolock::mutex_options fixed_options();

// `cheapest`: not corolock's lock but the cheapest safe cycle on the same connection, the
// reference of the server's work per cycle: `SET <name> <owner> NX PX 10000`, then a Lua
// compare-and-delete of the same name and owner (a fresh owner per cycle).
enum class release_mode { await, drop, cheapest };
const char* to_string(release_mode m);

// ---- sequential acquire + release loops (lock_sequential.cpp)

struct loop_result {
    int coroutines = 0;
    int run = 0;
    bool watchdog = false;
    release_mode mode = release_mode::await;
    std::uint64_t cycles = 0;
    std::uint64_t errors = 0;
    double elapsed_s = 0;
    double cpu_us = 0;
    std::uint64_t commands = 0;
    std::uint64_t writes = 0;
    std::uint64_t pushes = 0;
    io_events events; // over the window
    // System calls over a shorter window of their own, after the timed one (syscall_counter).
    double syscalls = missing;
    std::uint64_t syscall_cycles = 0;
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
    double commands_per_write() const {
        return writes ? double(commands) / double(writes) : missing;
    }
    io_events events_per_cycle() const {
        auto e = events.per(double(cycles));
        e.syscalls = syscall_cycles ? syscalls / double(syscall_cycles) : missing;
        return e;
    }
};

// `coroutines` coroutines loop acquire + release for `seconds` after a warm-up.
asio::awaitable<loop_result> run_loop(corolock::connection& conn, const io_event_counter& counter,
                                      int coroutines, bool watchdog, release_mode mode,
                                      double seconds, int run);

// ---- the reference: redis-benchmark running the same scripts (lock_reference.cpp)

struct script_reference {
    double rps = missing;
    std::uint64_t requests = 0;
    script_stats server;
    double server_cpu_us = missing; // server CPU per request
    double client_cpu_us = missing; // redis-benchmark's own CPU per request
};

struct depth_reference {
    int depth = 0;
    int run = 0;
    script_reference acquire, release;
    std::string note;

    double limit() const { return 1.0 / (1.0 / acquire.rps + 1.0 / release.rps); }
    double client_cpu_us_per_cycle() const { return acquire.client_cpu_us + release.client_cpu_us; }
};

// Empty when redis-benchmark can run the library's scripts on this server; else why not.
std::string check_reference(const target& t);
// `acquire` then `release` at `depth` in flight, about `seconds` each.
depth_reference run_lock_reference(const target& t, int depth, double seconds);

// ---- operator new calls and nested holds (lock_allocations.cpp)

struct alloc_result {
    double per_cycle_watchdog = missing; // default options, awaited release
    double per_cycle_fixed = missing;    // fixed lease, awaited release
    double per_cycle_drop = missing;     // default options, dropped lease
    double bytes_per_cycle_watchdog = missing;
    double per_hold = missing;
    double hold_ns = missing;
    std::uint64_t hold_attempts = 0; // acquire scripts sent while holding (expected 0)
    std::uint64_t errors = 0;
    std::string first_error;
};

asio::awaitable<void> measure_allocations(corolock::connection& conn, alloc_result& r);
// One coroutine, `n` cycles after a warm-up: operator new calls (and bytes) per cycle; with
// `trace`, every allocation's backtrace is recorded (alloc_count.hpp).
asio::awaitable<std::pair<double, double>>
allocs_per_cycle(corolock::connection& conn, const std::string& name, corolock::mutex_options mo,
                 release_mode mode, int n, alloc_result& r, bool trace = false);

// ---- contended: 50 coroutines sharing one mutex (lock_contended.cpp)

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

asio::awaitable<contended_result> run_contended(corolock::connection& conn, int hold_ms,
                                                double seconds);

// ---- everything of `lock`, in one io_context with one connection

struct lock_figures {
    std::vector<loop_result> uncontended; // fixed lease and watchdog, per count and run
    std::vector<loop_result> cheapest;    // the cheapest safe cycle, per count and run
    std::vector<loop_result> drop;        // awaited then dropped, per count (default options)
    std::vector<depth_reference> refs;    // per count and run
    std::string ref_note;
    std::string events_note; // what io_event_counter or syscall_counter could not count
    alloc_result allocs;
    std::vector<contended_result> contended;
    many_result many;
    std::string load_before, load_after;
    std::string first_error;

    // Every run of one loop figure.
    std::vector<const loop_result*> runs(const std::vector<loop_result>& v, int k, bool watchdog,
                                         release_mode mode) const;
    const loop_result* find(const std::vector<loop_result>& v, int k, bool watchdog,
                            release_mode mode) const;
    const depth_reference* ref_for(int depth, int run = 0) const;
    double limit_for(int depth, int run) const;
    // A figure of each run of a loop, median and extremes: `f(run, its reference or null)`.
    template <class F>
    spread over_runs(int k, bool watchdog, F f) const {
        std::vector<double> v;
        for (const auto* r : runs(uncontended, k, watchdog, release_mode::await))
            v.push_back(f(*r, ref_for(k, r->run)));
        return spread_of(std::move(v));
    }
};

void print_uncontended(std::ostream& os, const lock_figures& f, std::uint64_t& errors);
void json_uncontended(json_line& j, const lock_figures& f);
void print_drop(std::ostream& os, const lock_figures& f, std::uint64_t& errors);
void json_drop(json_line& j, const lock_figures& f);
void print_allocs(std::ostream& os, const lock_figures& f, std::uint64_t& errors);
void json_allocs(json_line& j, const lock_figures& f);
void print_contended(std::ostream& os, const lock_figures& f, std::uint64_t& errors);
void json_contended(json_line& j, const lock_figures& f);

} // namespace corolock::bench

#endif
