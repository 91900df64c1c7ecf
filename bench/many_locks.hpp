// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Many locks held under the watchdog on one connection: part of `lock` (figure 5), and the
// acquire-all / release-all passes that `soak` uses too.
#ifndef COROLOCK_BENCH_MANY_LOCKS_HPP
#define COROLOCK_BENCH_MANY_LOCKS_HPP

#include "common.hpp"
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <vector>

namespace corolock::bench {

inline constexpr std::size_t many_in_flight = 256;
inline constexpr std::size_t renew_batch = 100; // leases per renewal script (mutex.hpp)

using mutex_list = std::vector<std::unique_ptr<corolock::mutex>>;

// leases[i] = an acquisition of locks[i], with many_in_flight acquires at a time.
asio::awaitable<void> acquire_all(mutex_list& locks, std::vector<corolock::lease>& leases, crew& c);
// Awaits the release of every lease that still owns its lock (a lost one answers lease_lost,
// counted as an error), many_in_flight at a time; every lease is empty afterwards.
asio::awaitable<void> release_all(std::vector<corolock::lease>& leases, crew& c);
// Leases that own an acquisition not reported lost.
std::size_t count_held(const std::vector<corolock::lease>& leases);

struct many_result {
    std::size_t count = 0;
    double lease_s = 0;
    double acquire_s = missing, release_s = missing;
    double rss_per_lock = missing, heap_per_lock = missing;
    double window_s = 0;
    double window_cpu_us = 0;
    corolock::lock_stats stats;   // deltas over the window
    std::uint64_t lost_total = 0; // leases lost from the first acquire to the window's end
    std::size_t held_after = 0;
    std::uint64_t errors = 0;
    std::string first_error;

    double per_s(std::uint64_t v) const { return window_s > 0 ? double(v) / window_s : missing; }
    double per_call() const {
        return stats.renewal_calls ? double(stats.renewals) / double(stats.renewal_calls) : missing;
    }
};

// `count` locks acquired (watchdog, 3 s lease) and held for `window` seconds, then released.
asio::awaitable<many_result> run_many(corolock::connection& conn, std::size_t count, double window);
void print_many(std::ostream& os, const many_result& m);
void json_many(json_line& j, const many_result& m);

} // namespace corolock::bench

#endif
