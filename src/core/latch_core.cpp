// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/latch_core.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <ostream>

namespace corolock::detail {

std::ostream& operator<<(std::ostream& os, latch_action::kind k) {
    switch (k) {
    case latch_action::kind::subscribe:
        return os << "subscribe";
    case latch_action::kind::unsubscribe:
        return os << "unsubscribe";
    case latch_action::kind::read:
        return os << "read";
    case latch_action::kind::arm_timer:
        return os << "arm_timer";
    case latch_action::kind::cancel_timer:
        return os << "cancel_timer";
    case latch_action::kind::complete:
        return os << "complete";
    }
    return os << "kind(" << static_cast<int>(k) << ")";
}

std::ostream& operator<<(std::ostream& os, const latch_action& a) {
    os << a.what;
    switch (a.what) {
    case latch_action::kind::read:
        return os << " #" << a.id;
    case latch_action::kind::complete:
        return os << " " << a.id << " (" << a.ec.message() << ")";
    case latch_action::kind::arm_timer:
        return os << " @" << a.at.time_since_epoch().count();
    default:
        return os;
    }
}

namespace {

latch_action act(latch_action::kind k, std::uint64_t id = 0, error_code ec = {},
                 std::chrono::steady_clock::time_point at = {}) {
    latch_action a;
    a.what = k;
    a.id = id;
    a.ec = ec;
    a.at = at;
    return a;
}

// Errors after which the latch is read again on the timer, the awaiters untouched: the read was
// not executed or its reply was lost; the latch itself is as it was.
bool transient(error_code ec) {
    return ec == condition::connection_failure || ec == condition::not_executed;
}

} // namespace

void latch_core::add(std::uint64_t id, time_point deadline, time_point, latch_actions& out) {
    if (!subscribed_) {
        out.push_back(act(latch_action::kind::subscribe));
        subscribed_ = true;
    }
    auto& w = waiters_[id];
    w.deadline = deadline;
    if (in_flight_ != 0) {
        // The read on the wire may have run before this await began: the next one answers it.
        w.read_no = sent_ + 1;
        read_again_ = true;
    } else {
        send_read(out);
        w.read_no = sent_;
    }
    settle(out);
}

void latch_core::send_read(latch_actions& out) {
    in_flight_ = ++sent_;
    read_again_ = false;
    next_read_ = time_point::max();
    out.push_back(act(latch_action::kind::read, in_flight_));
}

void latch_core::complete(std::map<std::uint64_t, waiter>::iterator it, error_code ec,
                          latch_actions& out) {
    out.push_back(act(latch_action::kind::complete, it->first, ec));
    waiters_.erase(it);
}

void latch_core::on_read(std::uint64_t seq, error_code ec, const latch_snapshot& s, time_point now,
                         latch_actions& out) {
    if (seq == 0 || seq != in_flight_)
        return; // not the read on the wire (cannot happen: one at a time)
    in_flight_ = 0;
    const bool retry = ec && transient(ec);
    if (!ec && (s.generation != seen_generation_ || s.remaining != seen_remaining_)) {
        // Progress (a count-down or a new round): poll briskly again.
        seen_generation_ = s.generation;
        seen_remaining_ = s.remaining;
        backoff_.reset();
    }
    for (auto it = waiters_.begin(); it != waiters_.end();) {
        auto& w = it->second;
        if (w.generation == 0 && w.read_no > seq) {
            ++it; // joined after this read was sent: the next read answers it
            continue;
        }
        if (retry) {
            ++it;
            continue;
        }
        if (ec) {
            complete(it++, ec, out); // no_latch, wrong_type, a hostile reply, a server error
            continue;
        }
        if (w.generation == 0 || w.generation == s.generation) {
            if (s.open) {
                complete(it++, {}, out);
                continue;
            }
            w.generation = s.generation;
            ++it;
            continue;
        }
        // The round it waited for is over: it opened if the round after it says so; else the
        // latch expired and was made again, and that round never opened as far as anyone knows.
        complete(it++, s.previous == w.generation ? error_code() : error::stale_generation, out);
    }
    // Deadlines that passed while this read was on the wire: its answer (or failure) came first,
    // so a wait_for(0) is one read, a "try".
    for (auto it = waiters_.begin(); it != waiters_.end();) {
        const auto& w = it->second;
        if (w.deadline <= now && (w.generation != 0 || w.read_no <= seq))
            complete(it++, error::acquire_timeout, out);
        else
            ++it;
    }
    if (!waiters_.empty()) {
        if (read_again_ && !retry)
            send_read(out);
        else
            next_read_ = now + backoff_.next(rng_);
    }
    settle(out);
}

void latch_core::on_message(std::string_view payload, time_point now, latch_actions& out) {
    const auto gen = parse_open_message(payload);
    if (!gen) {
        // Not an open message we can read (an empty one, or another primitive's on the name's
        // channel): something happened, read again.
        if (!payload.starts_with("open "))
            on_reconnect(now, out);
        return;
    }
    // Every awaiter of that round, in every position: the message is for all of them (Redisson
    // woke one, #5349). Awaiters whose first read has not answered yet are left to it: the
    // message may be from an earlier round than the one their read will show.
    bool woke = false;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (it->second.generation == *gen) {
            complete(it++, {}, out);
            woke = true;
        } else {
            ++it;
        }
    }
    if (woke)
        backoff_.reset();
    settle(out);
}

void latch_core::on_timer(time_point now, latch_actions& out) {
    armed_ = time_point::max(); // it fired
    for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (it->second.deadline <= now && timeable(it->second))
            complete(it++, error::acquire_timeout, out);
        else
            ++it;
    }
    if (!waiters_.empty() && in_flight_ == 0 && next_read_ <= now)
        send_read(out);
    settle(out);
}

void latch_core::on_reconnect(time_point, latch_actions& out) {
    if (waiters_.empty())
        return;
    backoff_.reset();
    if (in_flight_ != 0)
        read_again_ = true;
    else
        send_read(out);
    settle(out);
}

void latch_core::cancel(std::uint64_t id, time_point, latch_actions& out) {
    auto it = waiters_.find(id);
    if (it == waiters_.end())
        return;
    complete(it, error_code(boost::asio::error::operation_aborted), out);
    settle(out);
}

void latch_core::cancel_all(error_code ec, latch_actions& out) {
    while (!waiters_.empty())
        complete(waiters_.begin(), ec, out);
    settle(out);
}

void latch_core::settle(latch_actions& out) {
    if (waiters_.empty()) {
        if (subscribed_) {
            out.push_back(act(latch_action::kind::unsubscribe));
            subscribed_ = false;
        }
        if (armed_ != time_point::max())
            out.push_back(act(latch_action::kind::cancel_timer));
        armed_ = time_point::max();
        next_read_ = time_point::max();
        read_again_ = false;
        backoff_.reset();
        return;
    }
    auto at = in_flight_ != 0 ? time_point::max() : next_read_;
    for (const auto& [id, w] : waiters_)
        if (timeable(w))
            at = std::min(at, w.deadline);
    if (at == armed_)
        return;
    armed_ = at;
    if (at == time_point::max())
        out.push_back(act(latch_action::kind::cancel_timer));
    else
        out.push_back({latch_action::kind::arm_timer, 0, {}, at});
}

} // namespace corolock::detail
