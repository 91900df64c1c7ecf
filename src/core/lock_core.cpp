// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_core.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <ostream>

namespace corolock::detail {

namespace {

lock_action make(lock_action::kind k, acquisition& a) {
    lock_action x{};
    x.what = k;
    x.acq = &a;
    return x;
}

} // namespace

bool lock_core::head(const acquisition& a) const {
    if (a.independent)
        return true; // the server decides, not a local queue
    // Not queued yet: it would be first if nobody queues for the name.
    return a.queue ? a.queue->q.is_head(a.id()) : !has_waiters(a.name);
}

void lock_core::start(acquisition& a, clock::time_point now, lock_actions& out) {
    act(a, a.fsm.start(now, !a.independent && has_waiters(a.name)), now, out);
}

void lock_core::on_reply(acquisition& a, const attempt_reply& r, clock::time_point now,
                         lock_actions& out) {
    // Refused, and no message came since the attempt went out: the wake-ups still pending were
    // for permits (or a lock) that someone else has taken. Dropping them keeps one message from
    // making the head retry once per waiter.
    if (r.what == attempt_reply::kind::held && a.queue && !a.independent &&
        a.queue->q.is_head(a.id()) && a.queue->q.messages() == a.messages_at_send)
        a.queue->q.clear_wakes();
    act(a, a.fsm.on_reply(now, r, head(a), woken(a), rng_), now, out);
}

bool lock_core::on_timer(acquisition& a, clock::time_point now, lock_actions& out) {
    const bool was_head = head(a);
    const auto x = a.fsm.on_timer(now, was_head, replies(slot_of(a.name)) != a.replies_at_send);
    act(a, x, now, out);
    return x.attempt && was_head;
}

void lock_core::cancel(acquisition& a, clock::time_point now, lock_actions& out) {
    act(a, a.fsm.on_cancel(), now, out);
}

void lock_core::stop(clock::time_point now, lock_actions& out) {
    std::vector<acquisition*> queued;
    for_each_waiter([&](acquisition& a) { queued.push_back(&a); });
    for (auto* a : queued)
        act(*a, a->fsm.on_stop(), now, out);
}

void lock_core::forget(acquisition& a) noexcept {
    if (!a.queue)
        return;
    a.queue = nullptr;
    auto it = queues_.find(a.name);
    if (it == queues_.end())
        return;
    --waiters_;
    it->second.q.erase(a.id());
    if (it->second.q.empty())
        queues_.erase(it);
}

void lock_core::act(acquisition& a, const acquire_action& x, clock::time_point now,
                    lock_actions& out) {
    if (x.give_back) {
        out.push_back(make(lock_action::kind::give_back, a));
        out.back().keep_place = x.keep_place;
    }
    if (x.join)
        join(a, out);
    if (x.attempt) {
        a.named = false;
        if (a.queue && !a.independent) {
            a.queue->q.on_attempt(a.id()); // the attempt answers a pending wake-up
            a.messages_at_send = a.queue->q.messages();
        }
        a.replies_at_send = replies(slot_of(a.name));
        out.push_back(make(lock_action::kind::attempt, a));
    }
    if (x.complete) {
        // Out of the queue first: the next head decides (and may attempt) before the caller of
        // this one resumes.
        leave(a, now, out);
        auto c = make(lock_action::kind::complete, a);
        c.ec = x.ec;
        c.granted = x.granted;
        out.push_back(c);
    }
    auto t = make(lock_action::kind::arm, a);
    t.at = a.fsm.wake_at();
    out.push_back(t);
}

void lock_core::join(acquisition& a, lock_actions& out) {
    auto [it, fresh] = queues_.try_emplace(std::string(a.name));
    if (fresh) { // ahead of the attempt on the socket: a release between the two is not missed
        it->second.capacity = a.capacity;
        it->second.independent = a.independent;
        out.push_back(make(lock_action::kind::subscribe, a));
    }
    it->second.q.push(a.id());
    a.queue = &it->second;
    ++waiters_;
}

void lock_core::leave(acquisition& a, clock::time_point now, lock_actions& out) {
    if (!a.queue)
        return;
    auto it = queues_.find(a.name);
    a.queue = nullptr;
    if (it == queues_.end())
        return;
    --waiters_;
    const auto next = it->second.q.erase(a.id());
    if (it->second.q.empty()) {
        out.push_back(make(lock_action::kind::unsubscribe, a));
        queues_.erase(it);
        return;
    }
    if (next && !a.independent)
        wake(acquisition::from_id(next), now, out); // promoted: it may have a wake-up to consume
}

void lock_core::wake(acquisition& a, clock::time_point now, lock_actions& out) {
    if (a.fsm.current() != acquire_fsm::state::waiting)
        return; // an attempt on the wire finds the wake-up in the queue when it returns
    act(a, a.fsm.on_wake(now, head(a), woken(a), rng_), now, out);
}

bool lock_core::on_release_message(std::string_view name, std::size_t n, clock::time_point now,
                                   lock_actions& out) {
    auto it = queues_.find(name);
    if (it == queues_.end())
        return false;
    const auto h = it->second.on_message(n);
    if (h)
        wake(acquisition::from_id(h), now, out);
    return h != 0;
}

bool lock_core::on_independent_message(std::string_view name, std::string_view member,
                                       bool writers_only, clock::time_point now,
                                       lock_actions& out) {
    auto it = queues_.find(name);
    if (it == queues_.end())
        return false;
    std::vector<acquisition*> hit;
    it->second.q.for_each([&](waiter_queue::id id) {
        auto& a = acquisition::from_id(id);
        if (!member.empty() ? a.record_member == member : !writers_only || a.writer)
            hit.push_back(&a);
    });
    for (auto* a : hit) {
        a->named = true;
        wake(*a, now, out);
    }
    return !hit.empty();
}

bool lock_core::release_hands_over(std::string_view name) {
    // Independent waiters are never handed over to: the server says who is next.
    auto it = queues_.find(name);
    return it != queues_.end() && !it->second.independent && it->second.release_hands_over();
}

bool lock_core::hand_off(std::string_view name, std::size_t n, clock::time_point now,
                         lock_actions& out) {
    auto it = queues_.find(name);
    if (it == queues_.end())
        return false;
    const auto h = it->second.hand_off(n);
    if (h)
        wake(acquisition::from_id(h), now, out);
    return h != 0;
}

bool lock_core::on_release_reply(std::string_view name, bool handed_off, bool released,
                                 bool published, std::size_t n, clock::time_point now,
                                 lock_actions& out) {
    auto it = queues_.find(name);
    if (it == queues_.end() || it->second.independent)
        return false;
    const auto h = it->second.on_release_reply(handed_off, released, published, n);
    if (h)
        wake(acquisition::from_id(h), now, out);
    return h != 0;
}

// ---------------------------------------------------------------------------------------------
// Leases: the watchdog and the renewals

namespace {

lease_action make(lease_action::kind k, lease_watch* w = nullptr) {
    lease_action x{};
    x.what = k;
    x.lease = w;
    return x;
}

lease_action lose(lease_watch& w, error why, lease_loss reason) {
    auto x = make(lease_action::kind::lose, &w);
    x.why = why;
    x.reason = reason;
    return x;
}

} // namespace

void lock_core::watch(lease_watch& w, clock::time_point sent, lease_actions& out) {
    table_.add(w, sent);
    auto x = make(lease_action::kind::replan);
    x.at = lease_table::next_event(w);
    out.push_back(x);
}

void lock_core::renew(std::span<lease_watch* const> batch, lease_actions& out) const {
    // One WAIT for the batch, as strict as its strictest lease: each lease checks its own count.
    std::vector<replica_ask> asks;
    asks.reserve(batch.size());
    for (const auto* w : batch)
        asks.push_back({w->replicas, w->wait_timeout, w->count_connected});
    const auto wait = strictest_wait(asks);
    auto x = make(lease_action::kind::renew);
    x.batch.assign(batch.begin(), batch.end());
    x.wait = wait.strictest ? batch[*wait.strictest] : nullptr;
    x.count_connected = wait.count_connected;
    out.push_back(std::move(x));
}

void lock_core::on_watchdog(clock::time_point now, lease_actions& out) {
    table_.make_plan(now, plan_);
    for (auto& [w, why] : plan_.losing)
        out.push_back(lose(
            *w, why, why == error::max_hold_reached ? lease_loss::max_hold : lease_loss::expired));
    if (!plan_.due.empty()) {
        std::vector<std::uint16_t> slots;
        slots.reserve(plan_.due.size());
        for (const auto* w : plan_.due)
            slots.push_back(sharded_ ? w->cluster_slot : std::uint16_t{0});
        std::vector<lease_watch*> leases;
        for (const auto& batch : renew_batches(slots, sharded_)) {
            leases.clear();
            for (auto i : batch)
                leases.push_back(plan_.due[i]);
            renew(leases, out);
        }
    }
    auto x = make(lease_action::kind::arm);
    x.at = table_.empty() ? clock::time_point::max() : plan_.wake_at;
    out.push_back(x);
}

bool lock_core::on_renew_reply(std::span<lease_watch* const> batch, clock::time_point sent,
                               const renew_reply& r, clock::time_point now, lease_actions& out) {
    // TRYAGAIN (a cluster): the batch's slot is being migrated and its keys are split between
    // the two nodes. Each lease alone: an ASK takes the moved ones to the importing node, the
    // others run where they are.
    if (split_on_try_again(r.ec, batch.size())) {
        for (auto* w : batch)
            if (lease_table::contains(*w))
                renew(std::span<lease_watch* const>(&w, 1), out);
        return false;
    }
    const bool answered =
        r.ec != condition::connection_failure && r.ec != boost::asio::error::operation_aborted;
    if (answered && !batch.empty())
        on_script_reply(sharded_ ? batch.front()->cluster_slot : std::uint16_t{0});
    auto ec = r.ec;
    if (!ec && r.renewed.size() != batch.size())
        ec = error::unexpected_reply;
    auto earliest = clock::time_point::max();
    for (std::size_t i = 0; i < batch.size(); ++i) {
        auto& w = *batch[i];
        if (!lease_table::contains(w))
            continue; // released or lost meanwhile: the reply revives nothing
        if (ec) {
            table_.on_renew_failed(w, now);
            auto x = make(lease_action::kind::renew_failed, &w);
            x.ec = ec;
            out.push_back(x);
        } else if (auto loss = table_.on_renewed(w, sent, now, r.renewed[i], r.acks)) {
            auto x = lose(w, static_cast<error>(loss.value()), renewal_loss(loss, r.renewed[i]));
            x.acks = r.acks;
            out.push_back(x);
        } else {
            out.push_back(make(lease_action::kind::renewed, &w));
        }
        if (lease_table::contains(w))
            earliest = std::min(earliest, lease_table::next_event(w));
    }
    auto x = make(lease_action::kind::replan);
    x.at = earliest;
    out.push_back(x);
    return answered;
}

void lock_core::renew_now(lease_watch& w, lease_actions& out) {
    auto* p = &w;
    renew(std::span<lease_watch* const>(&p, 1), out);
}

void lock_core::on_reconnect(clock::time_point now, lease_actions& out) {
    // A lease the server does not have (granted on a master that a failover replaced) is then
    // reported lost within a round trip of the reconnection, not at its next lease/3 tick.
    table_.renew_all_now(now);
    auto x = make(lease_action::kind::replan);
    x.at = clock::time_point::min();
    out.push_back(x);
}

std::ostream& operator<<(std::ostream& os, lease_action::kind k) {
    switch (k) {
    case lease_action::kind::lose:
        return os << "lose";
    case lease_action::kind::renew:
        return os << "renew";
    case lease_action::kind::renewed:
        return os << "renewed";
    case lease_action::kind::renew_failed:
        return os << "renew_failed";
    case lease_action::kind::arm:
        return os << "arm";
    case lease_action::kind::replan:
        return os << "replan";
    }
    return os << "kind(" << static_cast<int>(k) << ")";
}

std::ostream& operator<<(std::ostream& os, lock_action::kind k) {
    switch (k) {
    case lock_action::kind::subscribe:
        return os << "subscribe";
    case lock_action::kind::unsubscribe:
        return os << "unsubscribe";
    case lock_action::kind::give_back:
        return os << "give_back";
    case lock_action::kind::attempt:
        return os << "attempt";
    case lock_action::kind::complete:
        return os << "complete";
    case lock_action::kind::arm:
        return os << "arm";
    }
    return os << "kind(" << static_cast<int>(k) << ")";
}

} // namespace corolock::detail
