// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lease_table.hpp"

#include <algorithm>

namespace corolock::detail {

namespace {

using clock = std::chrono::steady_clock;

// Renewals due within this window join the current round, to share script calls.
clock::duration renewal_slack(const lease_watch& w) noexcept {
    return std::min<clock::duration>(w.lease / 6, std::chrono::milliseconds(100));
}

} // namespace

void lease_table::extend(lease_watch& w, clock::time_point sent) noexcept {
    w.valid_until = sent + w.lease - w.drift;
    w.next_renewal = w.watchdog ? sent + w.lease / 3 : clock::time_point::max();
}

void lease_table::add(lease_watch& w, clock::time_point sent) {
    extend(w, sent);
    if (w.slot == npos) {
        w.slot = watched_.size();
        watched_.push_back(&w);
    }
}

void lease_table::remove(lease_watch& w) noexcept {
    if (w.slot == npos)
        return;
    const auto i = w.slot;
    if (i + 1 != watched_.size()) {
        watched_[i] = watched_.back();
        watched_[i]->slot = i;
    }
    watched_.pop_back();
    w.slot = npos;
}

clock::time_point lease_table::next_event(const lease_watch& w) noexcept {
    auto t = std::min(w.valid_until, w.max_hold_at);
    if (w.watchdog && !w.renew_in_flight)
        t = std::min(t, w.next_renewal);
    return t;
}

void lease_table::make_plan(clock::time_point now, plan& out) {
    out.losing.clear();
    out.due.clear();
    out.wake_at = clock::time_point::max();
    for (auto* w : watched_) {
        if (now >= w->valid_until) {
            out.losing.emplace_back(w, error::lease_lost);
            continue;
        }
        if (now >= w->max_hold_at) {
            out.losing.emplace_back(w, error::max_hold_reached);
            continue;
        }
        if (w->watchdog && !w->renew_in_flight && w->next_renewal <= now + renewal_slack(*w)) {
            w->renew_in_flight = true;
            out.due.push_back(w);
        }
        out.wake_at = std::min(out.wake_at, next_event(*w));
    }
    for (auto& [w, why] : out.losing)
        remove(*w);
}

error_code lease_table::on_renewed(lease_watch& w, clock::time_point sent, clock::time_point now,
                                   bool renewed, std::int64_t acks) noexcept {
    w.renew_in_flight = false;
    if (!renewed || now >= w.valid_until) {
        // Gone, taken, or answered too late to trust.
        remove(w);
        return error::lease_lost;
    }
    if (w.replicas > 0 && acks < w.replicas) {
        // Renewed on the master only: a failover now could lose the lock.
        remove(w);
        return error::replicas_not_synced;
    }
    extend(w, sent);
    return {};
}

void lease_table::on_renew_failed(lease_watch& w, clock::time_point now) noexcept {
    w.renew_in_flight = false;
    // Past the slack window: a retry inside it would be due at once, and a renewal refused at
    // once (an ACL, an out-of-memory server) would spin until the deadline.
    w.next_renewal =
        now + renewal_slack(w) + std::min<clock::duration>(w.lease / 10, std::chrono::seconds(1));
}

void lease_table::renew_all_now(clock::time_point now) noexcept {
    for (auto* w : watched_)
        if (w->watchdog && !w->renew_in_flight)
            w->next_renewal = std::min(w->next_renewal, now);
}

} // namespace corolock::detail
