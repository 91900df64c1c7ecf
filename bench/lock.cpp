// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// lock: the distributed mutex over ONE connection and one thread, each figure printed next to a
// reference from the same run and its target:
//   1. uncontended acquire + release cycles/s at 1, 50 and 256 coroutines (each on its own
//      name), next to redis-benchmark running the library's own acquire and release scripts
//      with as many commands in flight; client CPU per cycle next to redis-benchmark's;
//   2. release by dropping the lease (no await) against awaiting async_release, 1 and 50
//      coroutines;
//   3. operator new calls per uncontended cycle and per nested hold;
//   4. nested holds (`auto h = l.hold();`) against one round-trip cycle;
//   5. 50 coroutines contending for one name, holding 0 and 1 ms, against the ideal 1/hold;
//   6. many locks under the watchdog (many_locks.cpp).
// See bench/README.md.
#include "alloc_count.hpp"
#include "common.hpp"
#include "core/lock_scripts.hpp"
#include "many_locks.hpp"
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto lock_warmup = 500ms;
constexpr double default_seconds = 3;
constexpr int default_locks = 100000;
constexpr int uncontended_counts[] = {1, 50, 256};
constexpr int drop_counts[] = {1, 50};
constexpr int contended_coroutines = 50;
constexpr int nested_holds = 1000000;
constexpr int alloc_cycles = 2000;
constexpr int alloc_site_cycles = 500;
constexpr auto fixed_lease = 10s;

// The targets, printed next to each figure (never checked: a bench is not a test).
constexpr double target_allocs_per_cycle = 16;
constexpr double target_allocs_per_hold = 0;
constexpr double target_ratio_256 = 0.9;
constexpr double target_contended_share = 0.9; // of the ideal 1/hold, at 1 ms
constexpr double target_drop_speedup_1 = 1.8;

corolock::mutex_options fixed_options() {
    corolock::mutex_options mo;
    mo.lease = fixed_lease;
    mo.watchdog = false;
    return mo;
}

enum class release_mode { await, drop };

const char* to_string(release_mode m) {
    return m == release_mode::await ? "await async_release" : "drop the lease";
}

// ---- sequential acquire + release loops, each coroutine on its own name.

struct loop_result {
    int coroutines = 0;
    bool watchdog = false;
    release_mode mode = release_mode::await;
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
    double commands_per_write() const {
        return writes ? double(commands) / double(writes) : missing;
    }
};

asio::awaitable<void> cycle_worker(corolock::mutex& m, release_mode mode, crew& c,
                                   std::uint64_t& cycles) {
    while (!c.stop) {
        auto [ec, l] = co_await m.async_acquire(tuple_deferred);
        if (ec) {
            c.note(ec, "acquire");
            co_await sleep_for(10ms); // a broken connection fails fast: do not spin on it
            continue;
        }
        if (mode == release_mode::await) {
            auto [ec2] = co_await l.async_release(tuple_deferred);
            if (ec2) {
                c.note(ec2, "release");
                co_await sleep_for(10ms);
                continue;
            }
        } else {
            // The destructor sends the owner-checked release without waiting; the next acquire
            // is queued behind it on the same connection.
            l = corolock::lease{};
        }
        ++cycles;
    }
}

asio::awaitable<loop_result> run_loop(corolock::connection& conn, int coroutines, bool watchdog,
                                      release_mode mode, double seconds) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    std::uint64_t cycles = 0;
    const auto mo = watchdog ? corolock::mutex_options{} : fixed_options();
    const std::string prefix = std::string("bench:u:") + (watchdog ? "w:" : "f:") +
                               (mode == release_mode::await ? "a:" : "d:");
    std::vector<std::unique_ptr<corolock::mutex>> mutexes;
    for (int i = 0; i < coroutines; ++i) {
        mutexes.push_back(std::make_unique<corolock::mutex>(conn, prefix + std::to_string(i), mo));
        c.spawn(ex, cycle_worker(*mutexes.back(), mode, c, cycles));
    }

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
    loop_result r;
    r.server = co_await read_server_stats(conn);
    co_await c.finish();

    r.coroutines = coroutines;
    r.watchdog = watchdog;
    r.mode = mode;
    r.cycles = cycles1 - cycles0;
    r.errors = errors1 - errors0;
    r.elapsed_s = seconds_between(t0, t1);
    r.cpu_us = cpu1 - cpu0;
    r.commands = st1.commands - st0.commands;
    r.writes = st1.writes - st0.writes;
    r.pushes = st1.pushes - st0.pushes;
    r.server_cpu_s = r.server.cpu_s - server0.cpu_s;
    r.first_error = c.first_error;
    co_return r;
}

// ---- the reference: redis-benchmark running the same scripts.

struct script_reference {
    double rps = missing;
    std::uint64_t requests = 0;
    script_stats server;
    double server_cpu_us = missing; // server CPU per request
    double client_cpu_us = missing; // redis-benchmark's own CPU per request
};

struct depth_reference {
    int depth = 0;
    script_reference acquire, release;
    std::string note;

    double limit() const { return 1.0 / (1.0 / acquire.rps + 1.0 / release.rps); }
    double client_cpu_us_per_cycle() const { return acquire.client_cpu_us + release.client_cpu_us; }
};

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

// ---- operator new calls per cycle and per nested hold.

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

// One coroutine, `n` cycles after a warm-up: operator new calls (and bytes) per cycle.
asio::awaitable<std::pair<double, double>>
allocs_per_cycle(corolock::connection& conn, const std::string& name, corolock::mutex_options mo,
                 release_mode mode, int n, alloc_result& r, bool trace = false) {
    corolock::mutex m(conn, name, mo);
    std::uint64_t a0 = 0, b0 = 0;
    // The loop is written out (no helper coroutine), so that only the library's allocations
    // and those of co_await on its operations are counted.
    for (int i = -200; i < n; ++i) {
        if (i == 0) {
            if (trace)
                alloc::trace_begin();
            a0 = alloc::count();
            b0 = alloc::bytes();
        }
        auto [ec, l] = co_await m.async_acquire(tuple_deferred);
        if (!ec && mode == release_mode::await) {
            auto [ec2] = co_await l.async_release(tuple_deferred);
            ec = ec2;
        }
        // drop: `l` goes out of scope here and sends the release without waiting.
        if (ec && r.errors++ == 0)
            r.first_error = "allocation loop: " + ec.message();
    }
    const auto a1 = alloc::count();
    const auto b1 = alloc::bytes();
    if (trace)
        alloc::trace_end();
    co_return std::pair{double(a1 - a0) / n, double(b1 - b0) / n};
}

asio::awaitable<void> measure_holds(corolock::connection& conn, int n, alloc_result& r) {
    corolock::mutex m(conn, "bench:nested");
    auto [ec, l] = co_await m.async_acquire(tuple_deferred);
    if (ec) {
        ++r.errors;
        r.first_error = "nested: outer acquire: " + ec.message();
        co_return;
    }
    for (int i = 0; i < 1000; ++i) {
        auto h = l.hold();
    }
    const auto ls0 = corolock::get_lock_stats(conn);
    const auto a0 = alloc::count();
    const auto t0 = clock_type::now();
    for (int i = 0; i < n; ++i) {
        auto h = l.hold(); // reentrant "acquire"; its end is the reentrant "release"
    }
    const auto t1 = clock_type::now();
    const auto a1 = alloc::count();
    r.per_hold = double(a1 - a0) / n;
    r.hold_ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
    r.hold_attempts = (corolock::get_lock_stats(conn) - ls0).attempts;
    if (auto [ec2] = co_await l.async_release(tuple_deferred); ec2 && r.errors++ == 0)
        r.first_error = "nested: outer release: " + ec2.message();
}

// ---- contended: 50 coroutines sharing one mutex (one name).

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

asio::awaitable<void> contended_worker(corolock::mutex& m, int id, clock_type::duration hold,
                                       crew& c, contended_state& s) {
    asio::steady_timer holding(co_await asio::this_coro::executor);
    while (!c.stop) {
        const auto t0 = clock_type::now();
        auto [ec, l] = co_await m.async_acquire(tuple_deferred);
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
        auto [ec2] = co_await l.async_release(tuple_deferred);
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

asio::awaitable<contended_result> run_contended(corolock::connection& conn, int hold_ms,
                                                double seconds) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    contended_state s;
    // One shared handle, as the API intends (mutex.hpp); the waiters queue per name anyway.
    corolock::mutex m(conn, "bench:contended:hold" + std::to_string(hold_ms));
    for (int i = 0; i < contended_coroutines; ++i)
        c.spawn(ex, contended_worker(m, i, std::chrono::milliseconds(hold_ms), c, s));

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
    r.elapsed_s = seconds_between(t0, t1);
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

// ---- everything of `lock`, in one io_context with one connection.

struct lock_figures {
    std::vector<loop_result> uncontended; // fixed lease, then watchdog, per count (awaited)
    std::vector<loop_result> drop;        // awaited then dropped, per count (default options)
    std::vector<depth_reference> refs;
    std::string ref_note;
    alloc_result allocs;
    std::vector<contended_result> contended;
    many_result many;
    std::string load_before, load_after;
    std::string first_error;

    const loop_result* find(const std::vector<loop_result>& v, int k, bool watchdog,
                            release_mode mode) const {
        for (const auto& u : v)
            if (u.coroutines == k && u.watchdog == watchdog && u.mode == mode)
                return &u;
        return nullptr;
    }
    const depth_reference* ref_for(int depth) const {
        for (const auto& r : refs)
            if (r.depth == depth)
                return &r;
        return nullptr;
    }
    double limit_for(int depth) const {
        const auto* r = ref_for(depth);
        return r ? r->limit() : missing;
    }
};

void note(std::string_view what) {
    std::cerr << "corolock-bench: " << what << " (load " << loadavg() << ")\n";
}

lock_figures run_corolock_lock(const options& o, const target& t) {
    lock_figures f;
    f.load_before = loadavg();
    run_with_connection(t, 1, [&](corolock::connection& conn) -> asio::awaitable<void> {
        if (!co_await first_ping(conn, f.first_error)) {
            conn.cancel();
            co_return;
        }
        const std::function<void()> check = [&] { f.ref_note = check_reference(t); };
        co_await run_in_thread(check);

        // 1. uncontended, each count followed by its reference so both see the same load.
        for (const int k : uncontended_counts) {
            for (const bool watchdog : {false, true}) {
                note("uncontended, " + std::to_string(k) + " coroutine(s), " +
                     (watchdog ? "watchdog" : "fixed lease"));
                f.uncontended.push_back(
                    co_await run_loop(conn, k, watchdog, release_mode::await, o.seconds));
            }
            if (!f.ref_note.empty())
                continue;
            note("redis-benchmark -c 1 -P " + std::to_string(k) + ", acquire and release scripts");
            const std::function<void()> reference = [&] {
                f.refs.push_back(run_lock_reference(t, k, o.seconds));
            };
            co_await run_in_thread(reference);
        }

        // 2. release by dropping the lease against awaiting it, back to back.
        for (const int k : drop_counts) {
            for (const auto mode : {release_mode::await, release_mode::drop}) {
                note("sequential loop, " + std::to_string(k) + " coroutine(s), " + to_string(mode));
                f.drop.push_back(co_await run_loop(conn, k, true, mode, o.seconds));
            }
        }

        // 3. and 4. allocations and nested holds.
        note("allocations per cycle and per nested hold");
        auto& a = f.allocs;
        a.per_cycle_fixed = (co_await allocs_per_cycle(conn, "bench:alloc:f", fixed_options(),
                                                       release_mode::await, alloc_cycles, a))
                                .first;
        const auto wd = co_await allocs_per_cycle(conn, "bench:alloc:w", {}, release_mode::await,
                                                  alloc_cycles, a);
        a.per_cycle_watchdog = wd.first;
        a.bytes_per_cycle_watchdog = wd.second;
        a.per_cycle_drop = (co_await allocs_per_cycle(conn, "bench:alloc:d", {}, release_mode::drop,
                                                      alloc_cycles, a))
                               .first;
        co_await measure_holds(conn, nested_holds, a);

        // 5. contended.
        for (const int hold : {0, 1}) {
            note("contended, " + std::to_string(contended_coroutines) +
                 " coroutines on one name, hold " + std::to_string(hold) + " ms");
            f.contended.push_back(co_await run_contended(conn, hold, o.seconds));
        }

        // 6. many locks.
        note(std::to_string(o.locks) + " locks under the watchdog");
        f.many =
            co_await run_many(conn, static_cast<std::size_t>(o.locks), std::max(o.seconds, 3.0));

        // Last, and apart: a backtrace per allocation slows everything down.
        if (o.alloc_sites) {
            note("allocation sites of one acquire + awaited release (default options)");
            alloc_result ignored;
            co_await allocs_per_cycle(conn, "bench:alloc:sites", {}, release_mode::await,
                                      alloc_site_cycles, ignored, true);
            std::cout << "\nallocation sites of one uncontended acquire + awaited release "
                         "(default options, "
                      << alloc_site_cycles << " cycles):\n";
            alloc::print_sites(std::cout, alloc_site_cycles, 30);
        }
        conn.cancel();
    });
    f.load_after = loadavg();
    return f;
}

// ---- report

void print_uncontended(const lock_figures& f, std::uint64_t& errors) {
    std::cout << "\n1. uncontended acquire + awaited release, cycles/s (each coroutine its own "
                 "name)\n"
              << "  coroutines  fixed 10s lease  watchdog (default)  reference limit  ratio  "
                 "ratio(wd)\n";
    for (const int k : uncontended_counts) {
        const auto* fx = f.find(f.uncontended, k, false, release_mode::await);
        const auto* wd = f.find(f.uncontended, k, true, release_mode::await);
        const double limit = f.limit_for(k);
        const double fx_rate = fx ? fx->cycles_per_s() : missing;
        const double wd_rate = wd ? wd->cycles_per_s() : missing;
        std::cout << "  " << std::setw(10) << k << "  " << std::setw(15) << show(fx_rate, 0) << "  "
                  << std::setw(18) << show(wd_rate, 0) << "  " << std::setw(15) << show(limit, 0)
                  << "  " << std::setw(5) << show(fx_rate / limit, 3) << "  " << std::setw(9)
                  << show(wd_rate / limit, 3) << "\n";
    }
    if (const auto* fx = f.find(f.uncontended, 256, false, release_mode::await))
        std::cout << "  ratio at 256, fixed lease   "
                  << against(fx->cycles_per_s() / f.limit_for(256), 3, ">=", target_ratio_256)
                  << "\n";
    if (const auto* wd = f.find(f.uncontended, 256, true, release_mode::await))
        std::cout << "  ratio at 256, watchdog      "
                  << against(wd->cycles_per_s() / f.limit_for(256), 3, ">=", target_ratio_256)
                  << "\n";

    std::cout << "  per cycle (fixed lease): client CPU us [redis-benchmark's CPU us for the "
                 "same two scripts], watchdog client CPU us,\n"
                 "  server CPU us [reference], server us in scripts, commands, pushes, "
                 "commands per write\n";
    for (const int k : uncontended_counts) {
        const auto* fx = f.find(f.uncontended, k, false, release_mode::await);
        const auto* wd = f.find(f.uncontended, k, true, release_mode::await);
        const auto* ref = f.ref_for(k);
        if (!fx)
            continue;
        const double ref_server =
            ref ? ref->acquire.server_cpu_us + ref->release.server_cpu_us : missing;
        std::cout << "  " << std::setw(10) << k << "  " << std::setw(7)
                  << show(fx->cpu_us_per_cycle(), 2) << " [" << std::setw(5)
                  << show(ref ? ref->client_cpu_us_per_cycle() : missing, 2) << "]  "
                  << std::setw(7) << show(wd ? wd->cpu_us_per_cycle() : missing, 2) << "  "
                  << std::setw(7) << show(fx->server_cpu_us_per_cycle(), 2) << " [" << std::setw(5)
                  << show(ref_server, 2) << "]  " << std::setw(6)
                  << show(2 * fx->server.usec_per_call, 2) << "  " << std::setw(5)
                  << show(fx->per_cycle(fx->commands), 2) << "  " << std::setw(5)
                  << show(fx->per_cycle(fx->pushes), 2) << "  " << std::setw(6)
                  << show(fx->commands_per_write(), 1) << "\n";
    }
    for (const auto& u : f.uncontended) {
        errors += u.errors;
        if (!u.first_error.empty())
            std::cout << "  first error (" << u.coroutines << ", "
                      << (u.watchdog ? "watchdog" : "fixed") << "): " << u.first_error << "\n";
    }
    std::cout << "  reference: redis-benchmark -c 1 -P <coroutines> -r 100000 EVALSHA <script> "
                 "(same scripts and arguments, same server); limit = 1/(1/acquire + 1/release)\n";
    for (const auto& r : f.refs)
        std::cout << "    -P " << std::setw(3) << r.depth << ": acquire " << show(r.acquire.rps, 0)
                  << "/s (server " << show(r.acquire.server.usec_per_call, 2) << " us/call, CPU "
                  << show(r.acquire.server_cpu_us, 2) << " us/req), release "
                  << show(r.release.rps, 0) << "/s (server "
                  << show(r.release.server.usec_per_call, 2) << " us/call, CPU "
                  << show(r.release.server_cpu_us, 2) << " us/req), " << r.acquire.requests
                  << " requests each" << (r.note.empty() ? "" : "; note: " + r.note) << "\n";
    if (!f.ref_note.empty())
        std::cout << "  note: " << f.ref_note << "\n";
}

// What a perfect client could reach, from the reference measured in the same run: the
// dropped loop pays one acquire round trip per cycle, the awaited loop an acquire and a release.
double drop_speedup_bound(const depth_reference& r) {
    return (1.0 / r.acquire.rps + 1.0 / r.release.rps) / (1.0 / r.acquire.rps);
}
// A hand-off costs at least one acquire round trip after the hold.
double contended_bound(const contended_result& c, const depth_reference& r) {
    return 1.0 / (c.mean_hold_us * 1e-6 + 1.0 / r.acquire.rps);
}

void print_drop(const lock_figures& f, std::uint64_t& errors) {
    std::cout << "\n2. sequential acquire + release, default options (watchdog), each coroutine "
                 "its own name:\n"
                 "   release by dropping the lease (no await) against awaiting async_release\n"
              << "  coroutines  awaited cycles/s  dropped cycles/s  speedup  client CPU us/cycle "
                 "awaited/dropped  commands/write awaited/dropped\n";
    for (const int k : drop_counts) {
        const auto* aw = f.find(f.drop, k, true, release_mode::await);
        const auto* dr = f.find(f.drop, k, true, release_mode::drop);
        if (!aw || !dr)
            continue;
        std::cout << "  " << std::setw(10) << k << "  " << std::setw(16)
                  << show(aw->cycles_per_s(), 0) << "  " << std::setw(16)
                  << show(dr->cycles_per_s(), 0) << "  " << std::setw(7)
                  << show(dr->cycles_per_s() / aw->cycles_per_s(), 2) << "  " << std::setw(18)
                  << (show(aw->cpu_us_per_cycle(), 2) + " / " + show(dr->cpu_us_per_cycle(), 2))
                  << "  " << std::setw(16)
                  << (show(aw->commands_per_write(), 1) + " / " + show(dr->commands_per_write(), 1))
                  << "\n";
    }
    const auto* aw1 = f.find(f.drop, 1, true, release_mode::await);
    const auto* dr1 = f.find(f.drop, 1, true, release_mode::drop);
    std::cout << "  speedup at 1 coroutine      "
              << against(aw1 && dr1 ? dr1->cycles_per_s() / aw1->cycles_per_s() : missing, 2,
                         ">=", target_drop_speedup_1)
              << "\n";
    // A dropped-lease cycle still waits for one acquire round trip: when the server's acquire
    // costs more than its release, even a perfect client stays under 2.
    if (const auto* r = f.ref_for(1))
        std::cout << "  bound from the reference at -P 1 (acquire + release round trip over the "
                     "acquire's alone) "
                  << show(drop_speedup_bound(*r), 2) << "; speedup / bound "
                  << show(aw1 && dr1
                              ? dr1->cycles_per_s() / aw1->cycles_per_s() / drop_speedup_bound(*r)
                              : missing,
                          2)
                  << "\n";
    for (const auto& u : f.drop) {
        errors += u.errors;
        if (!u.first_error.empty())
            std::cout << "  first error (" << u.coroutines << ", " << to_string(u.mode)
                      << "): " << u.first_error << "\n";
    }
}

void print_allocs(const lock_figures& f, std::uint64_t& errors) {
    const auto& a = f.allocs;
    errors += a.errors;
    const auto* wd1 = f.find(f.uncontended, 1, true, release_mode::await);
    const double roundtrip_ns = wd1 ? 1e9 / wd1->cycles_per_s() : missing;
    std::cout << "\n3. operator new calls (counted by the bench's replaced operator new; one "
                 "coroutine, "
              << alloc_cycles << " cycles)\n"
              << "  per acquire + awaited release, watchdog (default)  "
              << against(a.per_cycle_watchdog, 2, "<=", target_allocs_per_cycle) << ", "
              << show(a.bytes_per_cycle_watchdog, 0) << " B\n"
              << "  per acquire + awaited release, fixed lease         "
              << against(a.per_cycle_fixed, 2, "<=", target_allocs_per_cycle) << "\n"
              << "  per acquire + dropped lease, watchdog              "
              << show(a.per_cycle_drop, 2) << "\n"
              << "  per nested hold (auto h = l.hold(); then drop)     "
              << against(a.per_hold, 4, "<=", target_allocs_per_hold) << "\n"
              << "\n4. nested holds: " << nested_holds << " on a held watchdog lease\n"
              << "  ns per nested hold      " << show(a.hold_ns, 1) << "  (acquire scripts sent "
              << a.hold_attempts << ", expected 0)\n"
              << "  ns per round-trip cycle " << show(roundtrip_ns, 0)
              << "  (uncontended, 1 coroutine, watchdog)\n"
              << "  ratio nested/round trip " << show(a.hold_ns / roundtrip_ns, 5) << "\n";
    if (!a.first_error.empty())
        std::cout << "  first error: " << a.first_error << "\n";
}

void print_contended(const lock_figures& f, std::uint64_t& errors) {
    std::cout << "\n5. contended: " << contended_coroutines
              << " coroutines sharing one mutex (one name), awaited release\n"
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
        if (c.hold_ms == 1)
            std::cout << "  hold 1 ms cycles/s        "
                      << against(c.cycles_per_s(), 0,
                                 ">=", target_contended_share * c.ideal_per_s())
                      << "  (ideal 1/hold = " << show(c.ideal_per_s(), 0) << "/s, ratio "
                      << show(c.cycles_per_s() / c.ideal_per_s(), 3) << ")\n";
        if (c.hold_ms == 1)
            if (const auto* r = f.ref_for(1))
                std::cout << "  bound 1/(hold as measured + one acquire round trip at -P 1) "
                          << show(contended_bound(c, *r), 0) << "/s; cycles/s / bound "
                          << show(c.cycles_per_s() / contended_bound(c, *r), 3) << "\n";
        if (c.unordered)
            std::cout << "    " << c.unordered
                      << " acquisitions completed before the previous release had\n";
        if (!c.first_error.empty())
            std::cout << "    first error: " << c.first_error << "\n";
    }
}

void print_json(const options& o, const target& t, const lock_figures& f, std::uint64_t errors) {
    json_line j;
    j.str("bench", "lock")
        .num("seconds", o.seconds)
        .boolean("own_server", t.own.has_value())
        .str("load_before", f.load_before)
        .str("load_after", f.load_after);
    for (const int k : uncontended_counts) {
        const std::string p = "uncontended_" + std::to_string(k);
        const auto* fx = f.find(f.uncontended, k, false, release_mode::await);
        const auto* wd = f.find(f.uncontended, k, true, release_mode::await);
        const auto* ref = f.ref_for(k);
        const double limit = f.limit_for(k);
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
            .num(p + "_reference_client_cpu_us_per_cycle",
                 ref ? ref->client_cpu_us_per_cycle() : missing)
            .num(p + "_server_us_per_script", fx ? fx->server.usec_per_call : missing)
            .num(p + "_server_cpu_us_per_cycle", fx ? fx->server_cpu_us_per_cycle() : missing)
            .num(p + "_reference_acquire_server_cpu_us", ref ? ref->acquire.server_cpu_us : missing)
            .num(p + "_reference_release_server_cpu_us", ref ? ref->release.server_cpu_us : missing)
            .num(p + "_commands_per_cycle", fx ? fx->per_cycle(fx->commands) : missing)
            .num(p + "_pushes_per_cycle", fx ? fx->per_cycle(fx->pushes) : missing)
            .num(p + "_client_cpu_us_per_cycle", fx ? fx->cpu_us_per_cycle() : missing)
            .num(p + "_watchdog_client_cpu_us_per_cycle", wd ? wd->cpu_us_per_cycle() : missing)
            .num(p + "_commands_per_write", fx ? fx->commands_per_write() : missing)
            .num(p + "_errors", double(fx ? fx->errors : 0) + double(wd ? wd->errors : 0));
    }
    for (const int k : drop_counts) {
        const std::string p = "release_" + std::to_string(k);
        const auto* aw = f.find(f.drop, k, true, release_mode::await);
        const auto* dr = f.find(f.drop, k, true, release_mode::drop);
        const double a = aw ? aw->cycles_per_s() : missing;
        const double d = dr ? dr->cycles_per_s() : missing;
        j.num(p + "_awaited_cycles_per_s", a)
            .num(p + "_dropped_cycles_per_s", d)
            .num(p + "_drop_speedup", d / a)
            .num(p + "_drop_speedup_bound",
                 f.ref_for(1) ? drop_speedup_bound(*f.ref_for(1)) : missing)
            .num(p + "_awaited_client_cpu_us_per_cycle", aw ? aw->cpu_us_per_cycle() : missing)
            .num(p + "_dropped_client_cpu_us_per_cycle", dr ? dr->cpu_us_per_cycle() : missing);
    }
    const auto& a = f.allocs;
    const auto* wd1 = f.find(f.uncontended, 1, true, release_mode::await);
    const double roundtrip_ns = wd1 ? 1e9 / wd1->cycles_per_s() : missing;
    j.num("allocs_per_cycle", a.per_cycle_watchdog)
        .num("alloc_bytes_per_cycle", a.bytes_per_cycle_watchdog)
        .num("allocs_per_cycle_fixed_lease", a.per_cycle_fixed)
        .num("allocs_per_dropped_cycle", a.per_cycle_drop)
        .num("allocs_per_nested_hold", a.per_hold)
        .num("nested_hold_ns", a.hold_ns)
        .num("nested_hold_roundtrip_cycle_ns", roundtrip_ns)
        .num("nested_hold_ratio", a.hold_ns / roundtrip_ns)
        .num("nested_hold_attempts", double(a.hold_attempts));
    for (const auto& c : f.contended) {
        const std::string p = "contended_hold" + std::to_string(c.hold_ms) + "ms";
        j.num(p + "_cycles_per_s", c.cycles_per_s())
            .num(p + "_ideal_per_s", c.ideal_per_s())
            .num(p + "_efficiency", c.cycles_per_s() / c.ideal_per_s())
            .num(p + "_round_trip_bound_per_s",
                 f.ref_for(1) ? contended_bound(c, *f.ref_for(1)) : missing)
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
    json_many(j, f.many);
    j.num("errors", double(errors)).str("error", f.first_error).str("reference_note", f.ref_note);
    j.print(std::cout);
}

} // namespace

int run_lock(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_seconds;
    if (o.locks <= 0)
        o.locks = default_locks;
    if (o.threads != 1) {
        std::cerr << "corolock-bench: lock runs on one thread (--threads 1)\n";
        return 2;
    }
    target t;
    open_target(o, t);
    lock_figures f;
    try {
        f = run_corolock_lock(o, t);
    } catch (...) {
        t.stop();
        throw;
    }
    t.stop();

    std::uint64_t errors = 0;
    std::cout << "\nlock: one connection, one thread, server " << t.host << ":" << t.port
              << (t.own ? " (own)" : "") << ", " << o.seconds << " s per figure after "
              << lock_warmup.count() << " ms warm-up\n"
              << "  load average " << f.load_before << " before, " << f.load_after
              << " after; client and server share this machine's " << cores() << " cores\n";
    if (!f.first_error.empty())
        std::cout << "  error: " << f.first_error << "\n";
    print_uncontended(f, errors);
    print_drop(f, errors);
    print_allocs(f, errors);
    print_contended(f, errors);
    errors += f.many.errors;
    std::cout << "\n6. " << f.many.count << " locks held under the watchdog (lease "
              << show(f.many.lease_s, 0) << " s, renewed every lease/3), " << many_in_flight
              << " acquires in flight\n";
    print_many(std::cout, f.many);
    if (o.json)
        print_json(o, t, f, errors);
    // Slowness is never a failure; errors are.
    return errors == 0 && f.first_error.empty() ? 0 : 1;
}

} // namespace corolock::bench
