// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_ACQUIRE_FSM_HPP
#define COROLOCK_SRC_DETAIL_ACQUIRE_FSM_HPP

#include "core/backoff.hpp"
#include <corolock/error.hpp>

#include <boost/asio/error.hpp>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <random>

namespace corolock::detail {

using clock = std::chrono::steady_clock;

// What one acquisition asks for.
struct acquire_params {
    // End of the wait (max: none). Passed with an attempt unanswered: `acquire_timeout` if a
    // reply ever said "held" or the server answered anything since the attempt was sent, else
    // `server_timeout`.
    clock::time_point deadline = clock::time_point::max();
    bool once = false; // try: one attempt, never queue
    // With `once`: a "held" reply completes with `acquire_timeout` (a wait that was already
    // over when it began: a zero wait, a deadline past) instead of an empty lease (a try).
    bool held_is_timeout = false;
    clock::duration lease{};
    clock::duration drift{}; // subtracted from the lease: clock rate error and the reply's trip
    clock::duration retry_base{};
    clock::duration retry_max{};
    int replicas = 0; // a grant must reach this many replicas (WAIT); 0: not checked
    // A refused attempt may leave a record behind it on the server (a writer's intent): an
    // acquisition that ends without a grant after a refusal gives it back (its release removes
    // it), instead of leaving it to expire.
    bool leaves_record = false;
    // The attempt is the caller's work, not only a request for the lock (a locked transaction,
    // which commits if it gets the lock): once sent, its outcome is the caller's. Neither the
    // deadline nor a cancel cuts it short (the server bounds its wait); a cancel that comes
    // while it is out ends the acquisition when it comes back held.
    bool binding = false;
};

// The outcome of one acquire script, as the driver read it.
struct attempt_reply {
    enum class kind {
        granted, // the lock is ours (token)
        held,    // another owner holds it (holder_ttl: its remaining lease, 0 if unknown)
        unknown, // the connection dropped after the script was written: it may have run
        failed,  // any other error (ec): the script did not take the lock
        // A binding attempt ended the acquisition (a locked transaction committed, failed or
        // lost its connection): complete with `ec`, success or not; never retried.
        concluded,
    };
    kind what = kind::failed;
    std::uint64_t token = 0;
    clock::duration holder_ttl{};
    std::int64_t acks = 0; // replicas the WAIT behind the script counted (-1: WAIT failed)
    error_code ec;
};

// What the driver must do next, in this order: give back, join, attempt, complete. The timer
// is not an action: after every event the driver arms it at `acquire_fsm::wake_at()`.
struct acquire_action {
    bool give_back = false;  // send the owner-checked release of this acquisition (an undo)
    bool keep_place = false; // the give-back's acquisition goes on: its place in a line stays
    bool join = false;       // join the name's local queue (subscribing) before the attempt
    bool attempt = false;    // send the acquire script
    bool complete = false;   // complete the caller with `ec` (and a lease if `granted`)
    bool granted = false;
    error_code ec;
};

// The decisions of one acquisition, from the first attempt to its completion, and the undo of a
// grant that arrives after the caller stopped waiting. Sans-io: time, queue facts and randomness
// come in with each event; the driver performs the returned actions. The queue facts: `head`,
// first of the name's local queue (for an acquisition not queued yet: the queue is empty, so it
// would be first); `woken`, a release wake-up waits for the head. See doc/design.md, "Acquire".
class acquire_fsm {
public:
    enum class state {
        attempting, // an acquire script is on the wire
        waiting,    // held by another: waiting for a wake-up, the fallback timer or the deadline
        done,       // completed, nothing on the wire
        abandoned,  // completed, but the last attempt is on the wire: undo it if it took the lock
    };

    explicit acquire_fsm(const acquire_params& p) noexcept
        : p_(p), backoff_(p.retry_base, p.retry_max) {}

    // `others_waiting`: local waiters already queue for the name; join behind them at once.
    acquire_action start(clock::time_point now, bool others_waiting);
    acquire_action on_reply(clock::time_point now, const attempt_reply& r, bool head, bool woken,
                            std::minstd_rand& rng);
    // The timer armed at wake_at() fired. `answered`: the server answered something (any script
    // of this connection) since the attempt on the wire was sent, so it is alive.
    acquire_action on_timer(clock::time_point now, bool head, bool answered = false);
    // Became the head of the queue, or a release message came for the head.
    acquire_action on_wake(clock::time_point now, bool head, bool woken, std::minstd_rand& rng);
    // Cancelled by the caller (or the mutex handle went away). A binding attempt on the wire
    // is waited for: the cancel is kept until it comes back.
    acquire_action on_cancel();
    // The connection stopped for good. A binding attempt on the wire is waited for: its reply
    // (failed with the connection) says what is known of its outcome.
    acquire_action on_stop();

    state current() const noexcept { return state_; }
    bool queued() const noexcept { return queued_; }
    // When the driver's timer must fire next (max: no timer).
    clock::time_point wake_at() const noexcept;
    // When the last attempt was sent; with a grant, the lease runs from there.
    clock::time_point sent() const noexcept { return sent_; }
    // With a grant: its token and the local end of its lease (sent + lease - drift).
    std::uint64_t token() const noexcept { return token_; }
    clock::time_point valid_until() const noexcept { return sent_ + p_.lease - p_.drift; }

private:
    acquire_action attempt(clock::time_point now, acquire_action a = {});
    acquire_action wait(clock::time_point now, clock::duration holder_ttl, bool head, bool woken,
                        std::minstd_rand& rng, acquire_action a = {});
    acquire_action finish(error_code ec, bool granted = false, acquire_action a = {});
    acquire_action stop_with(error_code ec);

    acquire_params p_;
    backoff backoff_;
    state state_ = state::done;
    bool queued_ = false;
    clock::time_point sent_{};
    clock::time_point wait_until_ = clock::time_point::max();
    std::uint64_t token_ = 0;
    bool seen_held_ = false;   // a reply said "held": a deadline is contention, not the server
    bool cancel_kept_ = false; // binding: cancelled while the attempt was out
};

std::ostream& operator<<(std::ostream& os, acquire_fsm::state s);
std::ostream& operator<<(std::ostream& os, const acquire_action& a);

} // namespace corolock::detail

#endif
