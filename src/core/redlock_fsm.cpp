// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/redlock_fsm.hpp"

#include <algorithm>
#include <ostream>

namespace corolock::detail {

namespace {

clock::time_point saturating_add(clock::time_point t, clock::duration d) noexcept {
    return clock::time_point::max() - t > d ? t + d : clock::time_point::max();
}

} // namespace

// ---------------------------------------------------------------------------------------------
// redlock_tally

redlock_tally::outcome redlock_tally::add(std::size_t node, vote v) noexcept {
    if (node < votes_.size() && votes_[node] == pending_vote) {
        votes_[node] = static_cast<signed char>(v);
        ++counts_[static_cast<int>(v)];
    }
    return current();
}

redlock_tally::outcome redlock_tally::close() noexcept {
    for (std::size_t i = 0; i < votes_.size(); ++i)
        add(i, vote::failed);
    return current();
}

std::size_t redlock_tally::missing() const noexcept {
    return votes_.size() - count(vote::granted) - count(vote::refused) - count(vote::failed);
}

redlock_tally::outcome redlock_tally::current() const noexcept {
    if (votes_.empty())
        return outcome::impossible;
    if (count(vote::granted) >= quorum())
        return outcome::reached;
    if (count(vote::granted) + missing() < quorum())
        return outcome::impossible;
    return outcome::pending;
}

// ---------------------------------------------------------------------------------------------
// redlock_acquire_fsm

redlock_action redlock_acquire_fsm::start(clock::time_point now) {
    return attempt(now);
}

redlock_action redlock_acquire_fsm::attempt(clock::time_point now, redlock_action a) {
    state_ = state::attempting;
    ++round_;
    tally_ = redlock_tally(p_.nodes);
    sent_ = now;
    woken_ = false;
    a.send_round = true;
    return a;
}

redlock_action redlock_acquire_fsm::finish(error_code ec, bool granted, redlock_action a) {
    state_ = state::done;
    a.complete = true;
    a.granted = granted;
    a.ec = ec;
    return a;
}

error_code redlock_acquire_fsm::timeout_error() const noexcept {
    // The last round's reason (held, unreachable, too late); with none decided, a timeout.
    return last_ && last_ != error_code(error::acquire_timeout)
               ? last_
               : error_code(error::acquire_timeout);
}

redlock_action redlock_acquire_fsm::retry_later(clock::time_point now, std::minstd_rand& rng,
                                                redlock_action a, bool wakeable) {
    if (now >= p_.deadline)
        return finish(timeout_error(), false, a);
    state_ = state::waiting;
    wakeable_ = wakeable;
    const auto pause = backoff_.next(rng);
    wait_until_ = p_.deadline - now > pause ? now + pause : p_.deadline;
    return a;
}

redlock_action redlock_acquire_fsm::decide(clock::time_point now, redlock_tally::outcome o,
                                           std::minstd_rand& rng) {
    redlock_action a;
    // Whatever follows, a failed round is cleaned up on every node, including the silent ones.
    a.release_all = true;
    if (o == redlock_tally::outcome::reached) {
        if (now < valid_until())
            return finish({}, true);
        last_ = error::validity_expired; // a majority, but too late to trust it
        if (p_.once)
            return finish(last_, false, a);
        return retry_later(now, rng, a, false);
    }
    const bool contended = tally_.contended();
    last_ = contended ? error_code(error::acquire_timeout) : error_code(error::quorum_not_reached);
    if (p_.once) // held by another: an empty lease, not an error (as mutex), unless a wait ran out
        return finish(contended && !p_.held_is_timeout ? error_code() : last_, false, a);
    // A split vote (some nodes granted, yet others hold a majority) means contenders collided:
    // they must spread out (random back-off, wake-ups ignored) or they collide again forever.
    // Only a round that another owner won outright retries on a release message.
    const bool split = tally_.count(vote::granted) > 0;
    if (contended && !split && now < p_.deadline) {
        if (!subscribed_) {
            // Listen for releases, then try again at once: the SUBSCRIBE is ahead of the next
            // round on every socket, so a release between the two cannot be missed.
            subscribed_ = true;
            a.subscribe = true;
            return attempt(now, a);
        }
        if (woken_)
            return attempt(now, a); // a release message came while the round was out
    }
    if (contended && !subscribed_) {
        subscribed_ = true;
        a.subscribe = true;
    }
    return retry_later(now, rng, a, contended && !split);
}

redlock_action redlock_acquire_fsm::on_vote(clock::time_point now, std::uint64_t round,
                                            std::size_t node, vote v, std::minstd_rand& rng) {
    if (state_ != state::attempting || round != round_)
        return {}; // a straggler of a decided round: its release is queued behind it already
    const auto o = tally_.add(node, v);
    if (o == redlock_tally::outcome::pending)
        return {};
    return decide(now, o, rng);
}

redlock_action redlock_acquire_fsm::on_timer(clock::time_point now, std::minstd_rand& rng) {
    switch (state_) {
    case state::attempting:
        if (now >= p_.deadline) {
            redlock_action a;
            a.release_all = true; // the round is abandoned: clean up behind it
            return finish(timeout_error(), false, a);
        }
        if (now >= sent_ + p_.node_timeout) {
            auto a = decide(now, tally_.close(), rng);
            a.round_timed_out = true;
            return a;
        }
        return {};
    case state::waiting:
        if (now >= p_.deadline)
            return finish(timeout_error());
        if (now >= wait_until_)
            return attempt(now);
        return {};
    case state::done:
        return {};
    }
    return {};
}

redlock_action redlock_acquire_fsm::on_wake(clock::time_point now) {
    if (state_ == state::attempting) {
        woken_ = true;
        return {};
    }
    if (state_ == state::waiting && wakeable_ && now < p_.deadline)
        return attempt(now);
    return {};
}

redlock_action redlock_acquire_fsm::on_cancel() {
    if (state_ == state::done)
        return {};
    redlock_action a;
    a.release_all = state_ == state::attempting;
    return finish(boost::asio::error::operation_aborted, false, a);
}

clock::time_point redlock_acquire_fsm::wake_at() const noexcept {
    switch (state_) {
    case state::attempting:
        return std::min(saturating_add(sent_, p_.node_timeout), p_.deadline);
    case state::waiting:
        return wait_until_;
    case state::done:
        return clock::time_point::max();
    }
    return clock::time_point::max();
}

// ---------------------------------------------------------------------------------------------
// redlock_lease_fsm

redlock_lease_fsm::redlock_lease_fsm(const redlock_hold_params& p, clock::time_point sent) noexcept
    : p_(p), valid_until_(sent + p.lease - p.drift),
      next_extend_(p.watchdog ? sent + p.lease / 3 : clock::time_point::max()) {}

redlock_lease_action redlock_lease_fsm::lose(error e) {
    state_ = state::lost;
    lost_reason_ = e;
    redlock_lease_action a;
    a.lost = true;
    a.ec = e;
    // Some nodes may still hold our key (an extension that ran but came late): delete it now
    // rather than lock everyone out until it expires.
    a.release_all = true;
    return a;
}

redlock_lease_action redlock_lease_fsm::on_timer(clock::time_point now) {
    if (state_ == state::held || state_ == state::extending) {
        if (now >= valid_until_)
            return lose(error::lease_lost);
        if (now >= p_.max_hold_at)
            return lose(error::max_hold_reached);
    }
    if (state_ == state::held && now >= next_extend_) {
        state_ = state::extending;
        ++round_;
        tally_ = redlock_tally(p_.nodes);
        round_sent_ = now;
        redlock_lease_action a;
        a.send_extend = true;
        return a;
    }
    if (state_ == state::extending && now >= round_sent_ + p_.node_timeout)
        return decide_extend(now, tally_.close());
    if (state_ == state::releasing && now >= round_sent_ + p_.node_timeout)
        return decide_release(tally_.close());
    return {};
}

redlock_lease_action redlock_lease_fsm::decide_extend(clock::time_point now,
                                                      redlock_tally::outcome o) {
    // Fewer than a quorum, or a quorum after the local deadline: another owner may hold a
    // majority now, so the lease is lost at once (no retry until the deadline, unlike mutex).
    if (o != redlock_tally::outcome::reached || now >= valid_until_)
        return lose(error::lease_lost);
    state_ = state::held;
    valid_until_ = round_sent_ + p_.lease - p_.drift;
    next_extend_ = round_sent_ + p_.lease / 3;
    return {};
}

redlock_lease_action redlock_lease_fsm::decide_release(redlock_tally::outcome o) {
    state_ = state::done;
    redlock_lease_action a;
    a.released = true;
    if (o != redlock_tally::outcome::reached)
        a.ec = tally_.contended() ? error_code(error::lease_lost)
                                  : error_code(error::quorum_not_reached);
    return a;
}

redlock_lease_action redlock_lease_fsm::on_vote(clock::time_point now, std::uint64_t round,
                                                std::size_t node, vote v) {
    if (round != round_ || (state_ != state::extending && state_ != state::releasing))
        return {};
    const auto o = tally_.add(node, v);
    if (o == redlock_tally::outcome::pending)
        return {};
    return state_ == state::extending ? decide_extend(now, o) : decide_release(o);
}

redlock_lease_action redlock_lease_fsm::on_release(clock::time_point now) {
    redlock_lease_action a;
    switch (state_) {
    case state::held:
    case state::extending:
        state_ = state::releasing;
        ++round_; // an extension still out no longer counts
        tally_ = redlock_tally(p_.nodes);
        round_sent_ = now;
        a.release_all = true;
        return a;
    case state::lost:
        state_ = state::done; // released when it was lost
        a.released = true;
        a.ec = lost_reason_;
        return a;
    case state::releasing:
    case state::done:
        return a;
    }
    return a;
}

clock::time_point redlock_lease_fsm::wake_at() const noexcept {
    switch (state_) {
    case state::held:
        return std::min({valid_until_, p_.max_hold_at, next_extend_});
    case state::extending:
        return std::min({valid_until_, p_.max_hold_at, round_sent_ + p_.node_timeout});
    case state::releasing:
        return round_sent_ + p_.node_timeout;
    case state::lost:
    case state::done:
        return clock::time_point::max();
    }
    return clock::time_point::max();
}

// ---------------------------------------------------------------------------------------------
// printing

std::ostream& operator<<(std::ostream& os, vote v) {
    switch (v) {
    case vote::granted:
        return os << "granted";
    case vote::refused:
        return os << "refused";
    case vote::failed:
        return os << "failed";
    }
    return os << "vote(" << static_cast<int>(v) << ")";
}

std::ostream& operator<<(std::ostream& os, redlock_tally::outcome o) {
    switch (o) {
    case redlock_tally::outcome::pending:
        return os << "pending";
    case redlock_tally::outcome::reached:
        return os << "reached";
    case redlock_tally::outcome::impossible:
        return os << "impossible";
    }
    return os << "outcome(" << static_cast<int>(o) << ")";
}

std::ostream& operator<<(std::ostream& os, redlock_acquire_fsm::state s) {
    switch (s) {
    case redlock_acquire_fsm::state::attempting:
        return os << "attempting";
    case redlock_acquire_fsm::state::waiting:
        return os << "waiting";
    case redlock_acquire_fsm::state::done:
        return os << "done";
    }
    return os << "state(" << static_cast<int>(s) << ")";
}

std::ostream& operator<<(std::ostream& os, redlock_lease_fsm::state s) {
    switch (s) {
    case redlock_lease_fsm::state::held:
        return os << "held";
    case redlock_lease_fsm::state::extending:
        return os << "extending";
    case redlock_lease_fsm::state::releasing:
        return os << "releasing";
    case redlock_lease_fsm::state::lost:
        return os << "lost";
    case redlock_lease_fsm::state::done:
        return os << "done";
    }
    return os << "state(" << static_cast<int>(s) << ")";
}

namespace {

struct flags {
    std::ostream& os;
    const char* sep = "";
    void operator()(bool on, const char* name) {
        if (on) {
            os << sep << name;
            sep = " ";
        }
    }
};

} // namespace

std::ostream& operator<<(std::ostream& os, const redlock_action& a) {
    os << "{";
    flags f{os};
    f(a.release_all, "release_all");
    f(a.subscribe, "subscribe");
    f(a.send_round, "send_round");
    if (a.complete)
        os << f.sep << "complete(" << a.ec.message() << (a.granted ? ", granted)" : ")");
    return os << "}";
}

std::ostream& operator<<(std::ostream& os, const redlock_lease_action& a) {
    os << "{";
    flags f{os};
    f(a.send_extend, "send_extend");
    f(a.release_all, "release_all");
    if (a.lost)
        os << f.sep << "lost(" << a.ec.message() << ")";
    else if (a.released)
        os << f.sep << "released(" << a.ec.message() << ")";
    return os << "}";
}

} // namespace corolock::detail
