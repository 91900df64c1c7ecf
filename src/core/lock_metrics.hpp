// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock layer's counters: lock-free atomics that any thread may bump or read, and the
// snapshot of them that get_lock_stats returns. Pure: no clock, no I/O; callers pass durations.
#ifndef COROLOCK_SRC_DETAIL_LOCK_METRICS_HPP
#define COROLOCK_SRC_DETAIL_LOCK_METRICS_HPP

#include <corolock/error.hpp>
#include <corolock/metrics.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace corolock::detail {

// A duration_histogram that many threads fill (relaxed atomics). Its count is the sum of its
// buckets, so a snapshot's count always matches its buckets.
class atomic_histogram {
public:
    void observe(std::chrono::nanoseconds d) noexcept;
    duration_histogram snapshot() const noexcept;

private:
    std::array<std::atomic<std::uint64_t>, duration_histogram::bound_count + 1> buckets_{};
    std::atomic<std::uint64_t> sum_ns_{0};
};

// How an acquisition that completed with `ec` (and a lease if `granted`) counts.
acquire_outcome outcome_of(const error_code& ec, bool granted) noexcept;
// Why a renewal (or extension) that lease_table::on_renewed reported as `loss` lost the lease:
// `renewed` is Redis' answer (false: the key was gone or taken).
lease_loss renewal_loss(const error_code& loss, bool renewed) noexcept;

// Per-name counters bounded to `max` names (lock_metrics_options::max_named_locks); names past
// the bound share the overflow entry. Any thread (a mutex: only when on; off costs one branch).
class named_metrics {
public:
    void configure(std::size_t max, std::string overflow_name);
    bool on() const noexcept { return on_.load(std::memory_order_relaxed); }
    void acquired(std::string_view name, acquire_outcome o);
    void held(std::string_view name, std::chrono::nanoseconds d);
    void lost(std::string_view name);
    std::vector<named_lock_stats> snapshot() const;

private:
    // The entry of `name`, or the overflow one (mutex_ held).
    named_lock_stats& entry(std::string_view name);

    std::atomic<bool> on_{false};
    mutable std::mutex mutex_;
    std::size_t max_ = 0;
    std::string overflow_name_;
    std::map<std::string, std::size_t, std::less<>> index_; // name -> place in entries_
    std::vector<named_lock_stats> entries_;                 // in the order first seen
    named_lock_stats overflow_;
    bool overflowed_ = false;
};

struct lock_metrics {
    static constexpr auto relaxed = std::memory_order_relaxed;

    std::atomic<std::uint64_t> attempts{0}, pubsub_wakeups{0}, handoffs{0}, timer_wakeups{0},
        renewals{0}, renewal_calls{0}, renewal_failures{0}, undos{0}, leases_held{0}, waiters{0};
    std::array<std::atomic<std::uint64_t>, acquire_outcome_count> acquires{};
    std::array<std::atomic<std::uint64_t>, lease_loss_count> lost{};
    atomic_histogram acquire_wait, renewal_rtt, hold;
    named_metrics named;

    // One completed acquisition; only a grant's wait enters the histogram.
    void acquired(acquire_outcome o, std::chrono::nanoseconds waited) noexcept {
        acquires[static_cast<std::size_t>(o)].fetch_add(1, relaxed);
        if (o == acquire_outcome::granted)
            acquire_wait.observe(waited);
    }
    void lease_lost(lease_loss why) noexcept {
        lost[static_cast<std::size_t>(why)].fetch_add(1, relaxed);
    }
    lock_stats snapshot() const;
};

} // namespace corolock::detail

#endif
