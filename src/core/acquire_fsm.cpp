// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/acquire_fsm.hpp"

#include <algorithm>
#include <ostream>

namespace corolock::detail {

acquire_action acquire_fsm::start(clock::time_point now, bool others_waiting) {
    if (!p_.once && others_waiting) {
        // Behind local waiters of the same name: queue at once (FIFO), never overtake them.
        queued_ = true;
        state_ = state::waiting;
        wait_until_ = p_.deadline;
        acquire_action a;
        a.join = true;
        return a;
    }
    // Try first, with no subscription: an uncontended acquire is one script.
    return attempt(now);
}

acquire_action acquire_fsm::attempt(clock::time_point now, acquire_action a) {
    state_ = state::attempting;
    sent_ = now;
    a.attempt = true;
    return a;
}

acquire_action acquire_fsm::finish(error_code ec, bool granted, acquire_action a) {
    // Ending without a grant while nothing is on the wire: a record left by an earlier refusal
    // goes now (an attempt on the wire is decided by its reply).
    if (!granted && p_.leaves_record && seen_held_ && state_ != state::attempting)
        a.give_back = true;
    state_ = state_ == state::attempting ? state::abandoned : state::done;
    a.complete = true;
    a.ec = ec;
    a.granted = granted;
    return a;
}

acquire_action acquire_fsm::stop_with(error_code ec) {
    if (state_ == state::done || state_ == state::abandoned)
        return {};
    return finish(ec);
}

acquire_action acquire_fsm::on_cancel() {
    if (p_.binding && state_ == state::attempting) {
        cancel_kept_ = true;
        return {};
    }
    return stop_with(boost::asio::error::operation_aborted);
}

acquire_action acquire_fsm::on_stop() {
    if (p_.binding && state_ == state::attempting)
        return {};
    return stop_with(error::not_connected);
}

acquire_action acquire_fsm::wait(clock::time_point now, clock::duration holder_ttl, bool head,
                                 bool woken, std::minstd_rand& rng, acquire_action a) {
    if (cancel_kept_)
        return finish(boost::asio::error::operation_aborted, false, a);
    if (now >= p_.deadline)
        return finish(error::acquire_timeout, false, a); // no attempt starts past the deadline
    if (!queued_) {
        // Held: join the local queue. As its head (nobody else queues), subscribe and retry at
        // once: the SUBSCRIBE is ahead of the retry on the socket, so a release between the two
        // cannot be missed. Behind others, wait to be promoted: the head makes the attempts.
        queued_ = true;
        a.join = true;
        if (head)
            return attempt(now, a);
        state_ = state::waiting;
        wait_until_ = p_.deadline;
        return a;
    }
    if (head && woken)
        return attempt(now, a); // a release message came while we were busy: try now
    state_ = state::waiting;
    if (!head) {
        wait_until_ = p_.deadline; // the head makes the attempts; we wait to become head
        return a;
    }
    // The fallback when no message comes: back-off, capped by the holder's lease.
    auto pause = backoff_.next(rng);
    pause = std::min(pause, holder_ttl > clock::duration::zero() ? holder_ttl : p_.retry_base);
    wait_until_ = p_.deadline - now > pause ? now + pause : p_.deadline;
    return a;
}

acquire_action acquire_fsm::on_reply(clock::time_point now, const attempt_reply& r, bool head,
                                     bool woken, std::minstd_rand& rng) {
    using kind = attempt_reply::kind;
    if (state_ == state::abandoned) {
        // Nobody waits for this attempt any more: undo it if it took (or may have taken) the lock.
        state_ = state::done;
        acquire_action a;
        a.give_back = r.what == kind::granted || r.what == kind::unknown ||
                      (p_.leaves_record && (seen_held_ || r.what == kind::held));
        return a;
    }
    if (state_ != state::attempting)
        return {};
    state_ = state::done; // the attempt is back; what follows sets the next state
    acquire_action a;
    switch (r.what) {
    case kind::failed:
    case kind::concluded:
        return finish(r.ec);
    case kind::unknown:
        // The script may have run: undo it (owner-checked, queued ahead of anything we send
        // next), then try again within the deadline. A try reports the unknown outcome.
        // A waiting acquisition keeps its place in a line (a fair lock's): it goes on.
        a.give_back = true;
        if (p_.once)
            return finish(r.ec, false, a);
        a.keep_place = true;
        return attempt(now, a);
    case kind::granted:
        token_ = r.token;
        if (p_.replicas > 0 && r.acks < p_.replicas) {
            // On the master only: a failover could lose it. Give it back and say why.
            a.give_back = true;
            return finish(error::replicas_not_synced, false, a);
        }
        if (now < valid_until())
            return finish({}, true);
        // Granted, but the reply came too late to trust the lease: give it back.
        a.give_back = true;
        if (p_.once)
            return finish(error::lease_lost, false, a);
        a.keep_place = true;
        return wait(now, clock::duration::zero(), head, woken, rng, a);
    case kind::held:
        seen_held_ = true;
        if (cancel_kept_) // cancelled while it was out: nothing of it ran
            return finish(boost::asio::error::operation_aborted);
        if (p_.once)
            return finish(p_.held_is_timeout ? error_code(error::acquire_timeout) : error_code());
        return wait(now, r.holder_ttl, head, woken, rng);
    }
    return {};
}

acquire_action acquire_fsm::on_timer(clock::time_point now, bool head, bool answered) {
    if (state_ == state::attempting && now >= p_.deadline && !p_.binding)
        // The reply is undone when it comes. Never seen held, nothing answered since the attempt
        // went out, and it had time for an answer: the server is what kept us.
        return finish(seen_held_ || answered || p_.deadline <= sent_ ? error::acquire_timeout
                                                                     : error::server_timeout);
    if (state_ != state::waiting || now < wait_until_)
        return {};
    if (now >= p_.deadline)
        return finish(error::acquire_timeout);
    if (head)
        return attempt(now); // no message came: the fallback timer
    return {};
}

acquire_action acquire_fsm::on_wake(clock::time_point now, bool head, bool woken,
                                    std::minstd_rand& rng) {
    if (state_ != state::waiting || !head)
        return {}; // an attempt on the wire finds the wake-up in the queue when it returns
    if (woken)
        return attempt(now);
    // Promoted to head with no message pending: the fallback timer takes over from here.
    auto pause = backoff_.next(rng);
    wait_until_ = p_.deadline - now > pause ? now + pause : p_.deadline;
    return {};
}

clock::time_point acquire_fsm::wake_at() const noexcept {
    switch (state_) {
    case state::attempting:
        // A stalled server cannot hold the caller past its deadline (a binding attempt's wait
        // is the server's to bound).
        return p_.binding ? clock::time_point::max() : p_.deadline;
    case state::waiting:
        return wait_until_;
    default:
        return clock::time_point::max();
    }
}

std::ostream& operator<<(std::ostream& os, acquire_fsm::state s) {
    switch (s) {
    case acquire_fsm::state::attempting:
        return os << "attempting";
    case acquire_fsm::state::waiting:
        return os << "waiting";
    case acquire_fsm::state::done:
        return os << "done";
    case acquire_fsm::state::abandoned:
        return os << "abandoned";
    }
    return os << "state(" << static_cast<int>(s) << ")";
}

std::ostream& operator<<(std::ostream& os, const acquire_action& a) {
    os << "{";
    const char* sep = "";
    auto flag = [&](bool on, const char* name) {
        if (on) {
            os << sep << name;
            sep = " ";
        }
    };
    flag(a.give_back, "give_back");
    flag(a.keep_place, "keep_place");
    flag(a.join, "join");
    flag(a.attempt, "attempt");
    if (a.complete)
        os << sep << "complete(" << a.ec.message() << (a.granted ? ", granted)" : ")");
    return os << "}";
}

} // namespace corolock::detail
