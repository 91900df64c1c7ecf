// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// What an operator graphs, in the Prometheus text format: orders by outcome and the lock wait,
// counted here, next to corolock's own counters (get_lock_stats, connection::stats).
#ifndef COROLOCK_EXAMPLE_HTTP_FLASH_SALE_METRICS_HPP
#define COROLOCK_EXAMPLE_HTTP_FLASH_SALE_METRICS_HPP

#include "shop.hpp"
#include <corolock/connection.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace flash_sale {

/// Counters shared by every request: lock-free, so any thread may update or read them.
class metrics {
public:
    /// An answered order (or a request refused before it got to be one).
    void count(outcome o) noexcept { orders_[static_cast<int>(o)].fetch_add(1, relaxed); }
    /// A lock acquisition that took `waited` and ended with `ec`.
    void acquired(std::chrono::steady_clock::duration waited,
                  const corolock::error_code& ec) noexcept;
    /// The order counts on one line: "sold=3 duplicate=1 ...".
    std::string orders_line() const;
    /// Everything, as a Prometheus text exposition (version 0.0.4).
    std::string prometheus(corolock::connection& conn) const;

private:
    static constexpr auto relaxed = std::memory_order_relaxed;
    // Upper bounds of the wait histogram's buckets, in microseconds; one more bucket is +Inf.
    static constexpr std::array<std::uint64_t, 14> bounds_us_ = {
        100,    250,    500,     1'000,   2'500,   5'000,     10'000,
        25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 2'500'000};
    enum acquire_outcome { granted, timeout, cancelled, error, acquire_outcomes };

    std::array<std::atomic<std::uint64_t>, outcome_count> orders_{};
    std::array<std::atomic<std::uint64_t>, acquire_outcomes> acquires_{};
    std::array<std::atomic<std::uint64_t>, bounds_us_.size() + 1> wait_buckets_{}; // not cumulative
    std::atomic<std::uint64_t> wait_sum_us_{0};
};

} // namespace flash_sale

#endif
