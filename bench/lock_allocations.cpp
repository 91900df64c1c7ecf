// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// operator new calls per uncontended cycle (awaited and dropped release, default options and a
// fixed lease) and per nested hold, counted by the bench's replaced operator new
// (alloc_count.cpp); and how fast nested holds are against one round-trip cycle.
#include "alloc_count.hpp"
#include "lock.hpp"
#include <corolock/lease.hpp>

#include <iostream>

namespace corolock::bench {

namespace {

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

// One round-trip cycle in ns: the uncontended watchdog figure at 1 coroutine (median of runs).
double roundtrip_cycle_ns(const lock_figures& f) {
    const auto s = f.over_runs(
        1, true, [](const loop_result& r, const depth_reference*) { return r.cycles_per_s(); });
    return 1e9 / s.median;
}

} // namespace

asio::awaitable<std::pair<double, double>>
allocs_per_cycle(corolock::connection& conn, const std::string& name, corolock::mutex_options mo,
                 release_mode mode, int n, alloc_result& r, bool trace) {
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

asio::awaitable<void> measure_allocations(corolock::connection& conn, alloc_result& a) {
    a.per_cycle_fixed = (co_await allocs_per_cycle(conn, "bench:alloc:f", fixed_options(),
                                                   release_mode::await, alloc_cycles, a))
                            .first;
    const auto wd =
        co_await allocs_per_cycle(conn, "bench:alloc:w", {}, release_mode::await, alloc_cycles, a);
    a.per_cycle_watchdog = wd.first;
    a.bytes_per_cycle_watchdog = wd.second;
    a.per_cycle_drop =
        (co_await allocs_per_cycle(conn, "bench:alloc:d", {}, release_mode::drop, alloc_cycles, a))
            .first;
    co_await measure_holds(conn, nested_holds, a);
}

void print_allocs(std::ostream& os, const lock_figures& f, std::uint64_t& errors) {
    const auto& a = f.allocs;
    errors += a.errors;
    const double roundtrip_ns = roundtrip_cycle_ns(f);
    os << "\n3. operator new calls (counted by the bench's replaced operator new; one "
          "coroutine, "
       << alloc_cycles << " cycles)\n"
       << "  per acquire + awaited release, watchdog (default)  "
       << against(a.per_cycle_watchdog, 2, "<=", target_allocs_per_cycle) << ", "
       << show(a.bytes_per_cycle_watchdog, 0) << " B\n"
       << "  per acquire + awaited release, fixed lease         "
       << against(a.per_cycle_fixed, 2, "<=", target_allocs_per_cycle) << "\n"
       << "  per acquire + dropped lease, watchdog              " << show(a.per_cycle_drop, 2)
       << "\n"
       << "  per nested hold (auto h = l.hold(); then drop)     "
       << against(a.per_hold, 4, "<=", target_allocs_per_hold) << "\n"
       << "\n4. nested holds: " << nested_holds << " on a held watchdog lease\n"
       << "  ns per nested hold      " << show(a.hold_ns, 1) << "  (acquire scripts sent "
       << a.hold_attempts << ", expected 0)\n"
       << "  ns per round-trip cycle " << show(roundtrip_ns, 0)
       << "  (uncontended, 1 coroutine, watchdog)\n"
       << "  ratio nested/round trip " << show(a.hold_ns / roundtrip_ns, 5) << "\n";
    if (!a.first_error.empty())
        os << "  first error: " << a.first_error << "\n";
}

void json_allocs(json_line& j, const lock_figures& f) {
    const auto& a = f.allocs;
    const double roundtrip_ns = roundtrip_cycle_ns(f);
    j.num("allocs_per_cycle", a.per_cycle_watchdog)
        .num("alloc_bytes_per_cycle", a.bytes_per_cycle_watchdog)
        .num("allocs_per_cycle_fixed_lease", a.per_cycle_fixed)
        .num("allocs_per_dropped_cycle", a.per_cycle_drop)
        .num("allocs_per_nested_hold", a.per_hold)
        .num("nested_hold_ns", a.hold_ns)
        .num("nested_hold_roundtrip_cycle_ns", roundtrip_ns)
        .num("nested_hold_ratio", a.hold_ns / roundtrip_ns)
        .num("nested_hold_attempts", double(a.hold_attempts));
}

} // namespace corolock::bench
