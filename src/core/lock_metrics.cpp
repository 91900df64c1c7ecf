// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_metrics.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>

namespace corolock::detail {

void atomic_histogram::observe(std::chrono::nanoseconds d) noexcept {
    d = std::max(d, std::chrono::nanoseconds::zero());
    buckets_[duration_histogram::bucket_of(d)].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<std::uint64_t>(d.count()), std::memory_order_relaxed);
}

duration_histogram atomic_histogram::snapshot() const noexcept {
    duration_histogram h;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
        h.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
        h.count += h.buckets[i];
    }
    h.sum = std::chrono::nanoseconds(
        static_cast<std::int64_t>(sum_ns_.load(std::memory_order_relaxed)));
    return h;
}

acquire_outcome outcome_of(const error_code& ec, bool granted) noexcept {
    if (!ec)
        return granted ? acquire_outcome::granted : acquire_outcome::busy;
    if (ec == error::acquire_timeout)
        return acquire_outcome::timeout;
    if (ec == error::server_timeout)
        return acquire_outcome::server_timeout;
    if (ec == boost::asio::error::operation_aborted)
        return acquire_outcome::cancelled;
    return acquire_outcome::error;
}

lease_loss renewal_loss(const error_code& loss, bool renewed) noexcept {
    if (loss == error::replicas_not_synced)
        return lease_loss::replicas_not_synced;
    return renewed ? lease_loss::expired : lease_loss::renewal_refused;
}

lock_stats lock_metrics::snapshot() const {
    lock_stats s;
    s.attempts = attempts.load(relaxed);
    s.pubsub_wakeups = pubsub_wakeups.load(relaxed);
    s.handoffs = handoffs.load(relaxed);
    s.timer_wakeups = timer_wakeups.load(relaxed);
    s.renewals = renewals.load(relaxed);
    s.renewal_calls = renewal_calls.load(relaxed);
    s.renewal_failures = renewal_failures.load(relaxed);
    s.undos = undos.load(relaxed);
    s.leases_held = leases_held.load(relaxed);
    s.waiters = waiters.load(relaxed);
    for (std::size_t i = 0; i < acquires.size(); ++i)
        s.acquires[i] = acquires[i].load(relaxed);
    for (std::size_t i = 0; i < lost.size(); ++i) {
        s.lost[i] = lost[i].load(relaxed);
        s.leases_lost += s.lost[i];
    }
    s.acquire_wait = acquire_wait.snapshot();
    s.renewal_rtt = renewal_rtt.snapshot();
    s.hold = hold.snapshot();
    s.by_name = named.snapshot();
    return s;
}

namespace {

void observe(duration_histogram& h, std::chrono::nanoseconds d) noexcept {
    d = std::max(d, std::chrono::nanoseconds::zero());
    ++h.buckets[duration_histogram::bucket_of(d)];
    ++h.count;
    h.sum += d;
}

void add_to(named_lock_stats& into, const named_lock_stats& from) noexcept {
    for (std::size_t i = 0; i < into.acquires.size(); ++i)
        into.acquires[i] += from.acquires[i];
    into.leases_lost += from.leases_lost;
    for (std::size_t b = 0; b < into.hold.buckets.size(); ++b)
        into.hold.buckets[b] += from.hold.buckets[b];
    into.hold.count += from.hold.count;
    into.hold.sum += from.hold.sum;
}

} // namespace

void named_metrics::configure(std::size_t max, std::string overflow_name) {
    std::lock_guard lock(mutex_);
    max_ = max;
    overflow_name_ = std::move(overflow_name);
    overflow_.name = overflow_name_;
    // A name already counted on its own that becomes the overflow's: one series, not two.
    if (auto it = index_.find(overflow_name_); it != index_.end()) {
        add_to(overflow_, entries_[it->second]);
        overflowed_ = true;
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
        index_.clear();
        for (std::size_t i = 0; i < entries_.size(); ++i)
            index_.emplace(entries_[i].name, i);
    }
    on_.store(max > 0, std::memory_order_relaxed);
}

named_lock_stats& named_metrics::entry(std::string_view name) {
    if (auto it = index_.find(name); it != index_.end())
        return entries_[it->second];
    if (entries_.size() >= max_ || name == overflow_name_) {
        overflowed_ = true;
        return overflow_;
    }
    index_.emplace(std::string(name), entries_.size());
    auto& e = entries_.emplace_back();
    e.name = std::string(name);
    return e;
}

void named_metrics::acquired(std::string_view name, acquire_outcome o) {
    std::lock_guard lock(mutex_);
    ++entry(name).acquires[static_cast<std::size_t>(o)];
}

void named_metrics::held(std::string_view name, std::chrono::nanoseconds d) {
    std::lock_guard lock(mutex_);
    observe(entry(name).hold, d);
}

void named_metrics::lost(std::string_view name) {
    std::lock_guard lock(mutex_);
    ++entry(name).leases_lost;
}

std::vector<named_lock_stats> named_metrics::snapshot() const {
    std::lock_guard lock(mutex_);
    auto out = entries_;
    if (overflowed_)
        out.push_back(overflow_);
    return out;
}

} // namespace corolock::detail
