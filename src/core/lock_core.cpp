// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_core.hpp"

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
    const auto x = a.fsm.on_timer(now, was_head, replies_ != a.replies_at_send);
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

void lock_core::act(acquisition& a, const acquire_action& x, clock::time_point now,
                    lock_actions& out) {
    if (x.give_back)
        out.push_back(make(lock_action::kind::give_back, a));
    if (x.join)
        join(a, out);
    if (x.attempt) {
        a.named = false;
        if (a.queue && !a.independent) {
            a.queue->q.on_attempt(a.id()); // the attempt answers a pending wake-up
            a.messages_at_send = a.queue->q.messages();
        }
        a.replies_at_send = replies_;
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

void lock_core::on_release_reply(std::string_view name, bool released) {
    if (auto it = queues_.find(name); it != queues_.end())
        it->second.on_release_reply(released);
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
