// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// What an operator graphs, in the Prometheus text format: the orders by outcome, counted here,
// then corolock's own lock metrics (get_lock_stats, written by corolock::write_prometheus) and
// the Redis connection's counters (connection::stats).
#ifndef COROLOCK_EXAMPLE_HTTP_FLASH_SALE_METRICS_HPP
#define COROLOCK_EXAMPLE_HTTP_FLASH_SALE_METRICS_HPP

#include "shop.hpp"
#include <corolock/connection.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace flash_sale {

/// Counters shared by every request: lock-free, so any thread may update or read them.
class metrics {
public:
    /// An answered order (or a request refused before it got to be one).
    void count(outcome o) noexcept { orders_[static_cast<int>(o)].fetch_add(1, relaxed); }
    /// The order counts on one line: "sold=3 duplicate=1 ...".
    std::string orders_line() const;
    /// Everything, as a Prometheus text exposition (version 0.0.4).
    std::string prometheus(corolock::connection& conn) const;

private:
    static constexpr auto relaxed = std::memory_order_relaxed;
    std::array<std::atomic<std::uint64_t>, outcome_count> orders_{};
};

} // namespace flash_sale

#endif
