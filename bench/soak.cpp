// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// soak: N locks (default 10,000) held under the watchdog on ONE connection for S seconds
// (default 300), sampling client memory (RSS, malloc'd bytes) and renewal traffic every I seconds
// (default 10): growth per lock per hour from a linear fit, renewals/s against the ideal, leases
// lost; then client memory after releasing them all. Memory growth is the figure: a leak per
// renewal shows as a slope that the short `lock` window cannot see.
#include "common.hpp"
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

constexpr double default_seconds = 300;
constexpr int default_locks = 10000;
constexpr auto soak_lease = 3s;              // renewed every lease/3 = 1 s
constexpr auto soak_warmup = 2 * soak_lease; // samples before this are printed, not compared

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
    std::size_t lost_leases = 0; // leases that report lost() before the release
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
    mutex_list locks;
    std::vector<corolock::lease> leases;
    corolock::mutex_options mo;
    mo.lease = soak_lease;

    f.count = static_cast<std::size_t>(o.locks);
    // Every sample's room up front: a growing vector would show as growth in the figures.
    f.samples.reserve(static_cast<std::size_t>(std::ceil(o.seconds / o.interval)) + 2);
    f.rss_before = rss_bytes();
    f.heap_before = heap_bytes();
    locks.reserve(f.count);
    leases.reserve(f.count);
    for (std::size_t i = 0; i < f.count; ++i)
        locks.push_back(
            std::make_unique<corolock::mutex>(conn, "bench:soak:" + std::to_string(i), mo));
    const auto a0 = clock_type::now();
    co_await acquire_all(locks, leases, c);
    f.acquire_s = seconds_between(a0, clock_type::now());
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
            s.t_s = seconds_between(t0, clock_type::now());
            s.rss = rss_bytes();
            s.heap = heap_bytes();
            s.cpu_us = process_cpu_us();
            s.stats = corolock::get_lock_stats(conn);
            s.conn = conn.stats();
            s.held = count_held(leases);
            f.samples.push_back(s);
            print_soak_sample(f.samples.back(),
                              f.samples.size() > 1 ? &f.samples[f.samples.size() - 2] : nullptr);
            if (at >= o.seconds)
                break;
        }
    }

    // Release what is still held; a lost lease is counted, then dropped (its release would only
    // answer lease_lost).
    for (auto& l : leases) {
        if (l.owns() && l.lost()) {
            ++f.lost_leases;
            l = corolock::lease{};
        }
    }
    f.released = count_held(leases);
    const auto r0 = clock_type::now();
    co_await release_all(leases, c);
    f.release_s = seconds_between(r0, clock_type::now());
    f.release_errors = c.errors - f.acquire_errors;
    f.first_error = c.first_error;
    co_await sleep_for(100ms); // let posted clean-up (timers, callbacks) run
    f.rss_released = rss_bytes();
    f.heap_released = heap_bytes();
    leases.clear();
    locks.clear();
    co_await sleep_for(100ms);
    f.rss_destroyed = rss_bytes();
    f.heap_destroyed = heap_bytes();
    f.stats_end = corolock::get_lock_stats(conn);
}

soak_figures run_corolock_soak(const options& o, const target& t) {
    soak_figures f;
    run_with_connection(t, 1, [&](corolock::connection& conn) -> asio::awaitable<void> {
        if (co_await first_ping(conn, f.first_error))
            co_await run_soak_phase(conn, o, f);
        conn.cancel();
    });
    return f;
}

} // namespace

int run_soak(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_seconds;
    if (o.locks <= 0)
        o.locks = default_locks;
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
        t.stop();
        throw;
    }
    t.stop();

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
        std::max<std::uint64_t>(f.stats_end.leases_lost, f.lost_leases);
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
              << "  leases lost  " << leases_lost << "; fewest held at a sample "
              << (s.empty() ? 0 : min_held) << " of " << f.count << "\n"
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
    std::cout << "  (client and server share this machine's " << cores()
              << " cores, load average now " << loadavg()
              << "; RSS counts pages the allocator keeps after a free)\n";

    if (o.json) {
        json_line j;
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
        j.print(std::cout);
    }
    // Figures never fail the run; a failed acquire or release, or a lost lease, does.
    const bool ok =
        f.first_error.empty() && f.acquire_errors == 0 && f.release_errors == 0 && leases_lost == 0;
    return ok ? 0 : 1;
}

} // namespace corolock::bench
