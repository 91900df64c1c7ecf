// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Many locks under the watchdog: client bytes per held lock (RSS and malloc'd, before and after
// acquiring), renewal script calls/s and leases renewed/s against the ideal, leases lost, and
// the time to acquire and release them all with 256 in flight.
#include "many_locks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ostream>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto many_lease = 3s;

asio::awaitable<void> acquire_worker(mutex_list& locks, std::vector<corolock::lease>& leases,
                                     std::size_t& next, crew& c) {
    while (next < locks.size()) {
        const auto i = next++;
        auto [ec, l] = co_await locks[i]->async_acquire(tuple_deferred);
        if (ec)
            c.note(ec, "acquire");
        else
            leases[i] = std::move(l);
    }
}

asio::awaitable<void> release_worker(std::vector<corolock::lease>& leases, std::size_t& next,
                                     crew& c) {
    while (next < leases.size()) {
        auto& l = leases[next++];
        if (!l.owns())
            continue;
        if (auto [ec] = co_await l.async_release(tuple_deferred); ec)
            c.note(ec, "release");
    }
}

} // namespace

asio::awaitable<void> acquire_all(mutex_list& locks, std::vector<corolock::lease>& leases,
                                  crew& c) {
    auto ex = co_await asio::this_coro::executor;
    leases.resize(locks.size());
    std::size_t next = 0;
    for (std::size_t i = 0; i < std::min(many_in_flight, locks.size()); ++i)
        c.spawn(ex, acquire_worker(locks, leases, next, c));
    co_await c.join();
}

asio::awaitable<void> release_all(std::vector<corolock::lease>& leases, crew& c) {
    auto ex = co_await asio::this_coro::executor;
    std::size_t next = 0;
    for (std::size_t i = 0; i < std::min(many_in_flight, leases.size()); ++i)
        c.spawn(ex, release_worker(leases, next, c));
    co_await c.join();
}

std::size_t count_held(const std::vector<corolock::lease>& leases) {
    return static_cast<std::size_t>(std::count_if(
        leases.begin(), leases.end(), [](const auto& l) { return l.owns() && !l.lost(); }));
}

asio::awaitable<many_result> run_many(corolock::connection& conn, std::size_t count,
                                      double window) {
    many_result r;
    r.count = count;
    r.lease_s = std::chrono::duration<double>(many_lease).count();
    crew c;
    mutex_list locks;
    std::vector<corolock::lease> leases;
    corolock::mutex_options mo;
    mo.lease = many_lease;

    const double rss0 = rss_bytes(), heap0 = heap_bytes();
    locks.reserve(count);
    for (std::size_t i = 0; i < count; ++i)
        locks.push_back(
            std::make_unique<corolock::mutex>(conn, "bench:many:" + std::to_string(i), mo));
    const auto ls_start = corolock::get_lock_stats(conn);
    const auto a0 = clock_type::now();
    co_await acquire_all(locks, leases, c);
    r.acquire_s = seconds_between(a0, clock_type::now());
    const double rss1 = rss_bytes(), heap1 = heap_bytes();
    r.rss_per_lock = (rss1 - rss0) / double(count);
    r.heap_per_lock = (heap1 - heap0) / double(count);

    const auto ls0 = corolock::get_lock_stats(conn);
    const auto cpu0 = process_cpu_us();
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(window));
    const auto t1 = clock_type::now();
    r.window_cpu_us = process_cpu_us() - cpu0;
    const auto ls1 = corolock::get_lock_stats(conn);
    r.stats = ls1 - ls0;
    r.lost_total = (ls1 - ls_start).leases_lost;
    r.window_s = seconds_between(t0, t1);
    r.held_after = count_held(leases);

    const auto rel0 = clock_type::now();
    co_await release_all(leases, c);
    r.release_s = seconds_between(rel0, clock_type::now());
    leases.clear();
    locks.clear();
    r.errors = c.errors;
    r.first_error = c.first_error;
    co_return r;
}

void print_many(std::ostream& os, const many_result& m) {
    const double period = m.lease_s / 3;
    os << "  acquire all / release all s   " << show(m.acquire_s, 2) << " / "
       << show(m.release_s, 2) << "\n"
       << "  client bytes per lock         " << show(m.rss_per_lock, 0) << " RSS, "
       << show(m.heap_per_lock, 0) << " malloc'd (mutex object + lease + watch entry)\n"
       << "  window                        " << show(m.window_s, 2) << " s, client CPU "
       << show(m.window_cpu_us / 1e4 / m.window_s, 1) << "%\n"
       << "  renewal script calls/s        " << show(m.per_s(m.stats.renewal_calls), 1)
       << "  (ideal ceil(locks/" << renew_batch
       << ")/(lease/3) = " << show(std::ceil(double(m.count) / double(renew_batch)) / period, 0)
       << ")\n"
       << "  locks renewed/s               " << show(m.per_s(m.stats.renewals), 0)
       << "  (ideal locks/(lease/3) = " << show(double(m.count) / period, 0) << ")\n"
       << "  locks renewed per call        " << show(m.per_call(), 1) << "  (at most "
       << renew_batch << ")\n"
       << "  leases lost in window / in all / held after  " << m.stats.leases_lost << " / "
       << m.lost_total << " / " << m.held_after << "  (of " << m.count
       << "; expected 0 / 0 / all)\n";
    if (!m.first_error.empty())
        os << "  first error: " << m.first_error << "\n";
}

void json_many(json_line& j, const many_result& m) {
    j.num("many_locks", double(m.count))
        .num("many_acquire_s", m.acquire_s)
        .num("many_release_s", m.release_s)
        .num("many_rss_bytes_per_lock", m.rss_per_lock)
        .num("many_heap_bytes_per_lock", m.heap_per_lock)
        .num("many_window_s", m.window_s)
        .num("many_client_cpu_percent", m.window_cpu_us / 1e4 / m.window_s)
        .num("many_renewal_calls_per_s", m.per_s(m.stats.renewal_calls))
        .num("many_renewals_per_s", m.per_s(m.stats.renewals))
        .num("many_renewals_ideal_per_s", double(m.count) / (m.lease_s / 3))
        .num("many_locks_per_renewal_call", m.per_call())
        .num("many_leases_lost", double(m.stats.leases_lost))
        .num("many_leases_lost_total", double(m.lost_total))
        .num("many_held_after_window", double(m.held_after))
        .num("many_errors", double(m.errors));
}

} // namespace corolock::bench
