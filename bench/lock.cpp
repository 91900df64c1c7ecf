// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// lock: the distributed mutex over ONE connection and one thread, each figure printed next to a
// reference from the same run and its target:
//   1. uncontended acquire + release cycles/s at 1, 50 and 256 coroutines (each on its own
//      name), several runs, each next to redis-benchmark running the library's own acquire and
//      release scripts with as many commands in flight; client CPU, posts and system calls per
//      cycle next to redis-benchmark's (lock_sequential.cpp, lock_reference.cpp);
//   2. release by dropping the lease (no await) against awaiting async_release, 1 and 50
//      coroutines (lock_sequential.cpp);
//   3. operator new calls per uncontended cycle and per nested hold, 4. nested holds against one
//      round-trip cycle (lock_allocations.cpp);
//   5. 50 coroutines contending for one name, holding 0 and 1 ms, against the ideal 1/hold
//      (lock_contended.cpp);
//   6. many locks under the watchdog (many_locks.cpp).
// This file runs them in that order on one io_context and prints the report. See
// bench/README.md.
#include "lock.hpp"

#include "alloc_count.hpp"

#include <algorithm>
#include <iostream>

namespace corolock::bench {

namespace {

constexpr double default_seconds = 3;
constexpr int default_locks = 100000;

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
        // On this (the io_context's) thread: its system calls are the ones counted.
        const io_event_counter counter;
        f.events_note = counter.note();
        if (const auto n = syscall_counter().note(); !n.empty())
            f.events_note += (f.events_note.empty() ? "" : "; ") + n;

        // 1. uncontended, each run of each count followed by its reference, so that both see
        // the same load.
        if (o.runs_section("uncontended")) {
            const std::function<void()> check = [&] { f.ref_note = check_reference(t); };
            co_await run_in_thread(check);
            for (const int k : uncontended_counts) {
                if (o.coroutines_given && k != o.coroutines)
                    continue;
                for (int run = 0; run < o.runs; ++run) {
                    for (const bool watchdog : {false, true}) {
                        note("uncontended, " + std::to_string(k) + " coroutine(s), " +
                             (watchdog ? "watchdog" : "fixed lease") + ", run " +
                             std::to_string(run + 1));
                        f.uncontended.push_back(co_await run_loop(
                            conn, counter, k, watchdog, release_mode::await, o.seconds, run));
                    }
                    note("the cheapest safe cycle, " + std::to_string(k) + " coroutine(s), run " +
                         std::to_string(run + 1));
                    f.cheapest.push_back(co_await run_loop(conn, counter, k, false,
                                                           release_mode::cheapest, o.seconds, run));
                    if (!f.ref_note.empty())
                        continue;
                    note("redis-benchmark -c 1 -P " + std::to_string(k) +
                         ", acquire and release scripts, run " + std::to_string(run + 1));
                    const std::function<void()> reference = [&] {
                        f.refs.push_back(run_lock_reference(t, k, o.seconds));
                        f.refs.back().run = run;
                    };
                    co_await run_in_thread(reference);
                }
            }
        }

        // 2. release by dropping the lease against awaiting it, back to back.
        if (o.runs_section("drop")) {
            if (f.refs.empty() && !o.runs_section("uncontended")) {
                // The bound needs the reference at -P 1.
                const std::function<void()> check = [&] {
                    f.ref_note = check_reference(t);
                    if (f.ref_note.empty())
                        f.refs.push_back(run_lock_reference(t, 1, o.seconds));
                };
                co_await run_in_thread(check);
            }
            for (const int k : drop_counts) {
                for (const auto mode : {release_mode::await, release_mode::drop}) {
                    note("sequential loop, " + std::to_string(k) + " coroutine(s), " +
                         to_string(mode));
                    f.drop.push_back(co_await run_loop(conn, counter, k, true, mode, o.seconds, 0));
                }
            }
        }

        // 3. and 4. allocations and nested holds.
        if (o.runs_section("allocs")) {
            note("allocations per cycle and per nested hold");
            co_await measure_allocations(conn, f.allocs);
        }

        // 5. contended.
        if (o.runs_section("contended")) {
            for (const int hold : {0, 1}) {
                note("contended, " + std::to_string(contended_coroutines) +
                     " coroutines on one name, hold " + std::to_string(hold) + " ms");
                f.contended.push_back(co_await run_contended(conn, hold, o.seconds));
            }
        }

        // 6. many locks.
        if (o.runs_section("many")) {
            note(std::to_string(o.locks) + " locks under the watchdog");
            f.many = co_await run_many(conn, static_cast<std::size_t>(o.locks),
                                       std::max(o.seconds, 3.0));
        }

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

void print_json(const options& o, const target& t, const lock_figures& f, std::uint64_t errors) {
    json_line j;
    j.str("bench", "lock")
        .num("seconds", o.seconds)
        .num("runs", o.runs)
        .boolean("own_server", t.own.has_value())
        .str("load_before", f.load_before)
        .str("load_after", f.load_after);
    json_uncontended(j, f);
    json_drop(j, f);
    json_allocs(j, f);
    json_contended(j, f);
    json_many(j, f.many);
    j.num("errors", double(errors))
        .str("error", f.first_error)
        .str("reference_note", f.ref_note)
        .str("events_note", f.events_note);
    j.print(std::cout);
}

} // namespace

int run_lock(const options& in) {
    options o = in;
    if (o.runs <= 0)
        o.runs = default_runs;
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
    if (o.runs_section("uncontended"))
        print_uncontended(std::cout, f, errors);
    if (o.runs_section("drop"))
        print_drop(std::cout, f, errors);
    if (o.runs_section("allocs"))
        print_allocs(std::cout, f, errors);
    if (o.runs_section("contended"))
        print_contended(std::cout, f, errors);
    if (o.runs_section("many")) {
        errors += f.many.errors;
        std::cout << "\n6. " << f.many.count << " locks held under the watchdog (lease "
                  << show(f.many.lease_s, 0) << " s, renewed every lease/3), " << many_in_flight
                  << " acquires in flight\n";
        print_many(std::cout, f.many);
    }
    if (o.json)
        print_json(o, t, f, errors);
    // Slowness is never a failure; errors are.
    return errors == 0 && f.first_error.empty() ? 0 : 1;
}

} // namespace corolock::bench
