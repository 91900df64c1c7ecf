// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The decisions of RedLock (doc/redlock.md): the vote tally of one round over N nodes, the
// acquisition (rounds, early decision, validity, retry schedule) and the held lease (quorum
// extensions, loss, release). Sans-io: time, votes and randomness come in with each event; the
// driver (src/io/redlock_driver.cpp) sends what the returned actions say and arms one timer at
// wake_at().
#ifndef COROLOCK_SRC_DETAIL_REDLOCK_FSM_HPP
#define COROLOCK_SRC_DETAIL_REDLOCK_FSM_HPP

#include "core/backoff.hpp"
#include <corolock/error.hpp>

#include <boost/asio/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <random>
#include <vector>

namespace corolock::detail {

using clock = std::chrono::steady_clock;

// One node's answer in a round.
enum class vote : signed char {
    granted, // acquire: the key is ours; extend: renewed; release: deleted
    refused, // the key is another owner's (or gone, for extend and release)
    failed,  // an error, an unknown outcome, or no answer within the node timeout
};

// The votes of one round. Quorum is N/2 + 1 of the configured N, never of the nodes that
// answered. The outcome is decided as soon as it is certain: `reached` at the quorum-th grant,
// `impossible` as soon as the votes still missing cannot make a quorum.
class redlock_tally {
public:
    enum class outcome { pending, reached, impossible };

    redlock_tally() = default;
    explicit redlock_tally(std::size_t nodes) : votes_(nodes, pending_vote) {}

    std::size_t nodes() const noexcept { return votes_.size(); }
    std::size_t quorum() const noexcept { return votes_.size() / 2 + 1; }
    // A node's first vote counts; a repeated vote or an unknown node is ignored.
    outcome add(std::size_t node, vote v) noexcept;
    // The node timeout: every missing vote counts as failed.
    outcome close() noexcept;
    outcome current() const noexcept;
    std::size_t count(vote v) const noexcept { return counts_[static_cast<int>(v)]; }
    std::size_t missing() const noexcept;
    // The other owner's keys alone make a quorum impossible: the lock is held, not unreachable.
    bool contended() const noexcept { return count(vote::refused) > nodes() - quorum(); }

private:
    static constexpr signed char pending_vote = -1;
    std::vector<signed char> votes_;
    std::size_t counts_[3] = {0, 0, 0};
};

// What one acquisition asks for.
struct redlock_params {
    std::size_t nodes = 0;
    clock::time_point deadline = clock::time_point::max(); // end of the wait (max: none)
    bool once = false;                                     // try: one round, no retry
    // A wait already over when it began (a zero wait, a deadline past): one round, as a try,
    // but a lock held by another is `acquire_timeout`, not an empty lease.
    bool held_is_timeout = false;
    clock::duration lease{};
    clock::duration drift{};        // lease × drift_factor + 2 ms
    clock::duration node_timeout{}; // a vote missing this long after the round went out fails
    clock::duration retry_base{};
    clock::duration retry_max{};
};

// What the driver must do, in this order: release, subscribe, send, complete.
struct redlock_action {
    bool release_all =
        false;              // owner-checked release to EVERY node (behind the round on each socket)
    bool subscribe = false; // listen to the release channel on every node, before the round
    bool send_round = false; // the acquire script to every node, all at once (round())
    bool complete = false;   // complete the caller with `ec` (a lease if `granted`)
    bool granted = false;
    bool round_timed_out = false; // the round was decided by the node timeout, not by the votes
    error_code ec;
};

// One acquisition: rounds until a valid quorum, the deadline, or cancellation. Every failed or
// abandoned round is followed at once by a release to every node: it queues behind the round's
// acquire on each node's connection, so it cleans up whatever the round left, even on a node
// that answers only later (a paused node runs both in order when it resumes).
class redlock_acquire_fsm {
public:
    enum class state {
        attempting, // a round is out and undecided
        waiting,    // a round failed: waiting for a release message, the back-off or the deadline
        done,
    };

    explicit redlock_acquire_fsm(const redlock_params& p) noexcept
        : p_(p), backoff_(p.retry_base, p.retry_max) {}

    redlock_action start(clock::time_point now);
    // A vote of round `round` from `node`; votes of earlier rounds are ignored.
    redlock_action on_vote(clock::time_point now, std::uint64_t round, std::size_t node, vote v,
                           std::minstd_rand& rng);
    // The timer armed at wake_at() fired (node timeout, back-off end, or deadline).
    redlock_action on_timer(clock::time_point now, std::minstd_rand& rng);
    // A release message from any node (or a reconnect, after which messages may be lost). It
    // ends a wait only after a round another owner won outright (not after a split vote, a
    // late quorum or silent nodes: those back off, and our own cleanup publishes too).
    redlock_action on_wake(clock::time_point now);
    redlock_action on_cancel();

    state current() const noexcept { return state_; }
    std::uint64_t round() const noexcept { return round_; }
    clock::time_point wake_at() const noexcept;
    // The send time of the last round: a grant's lease runs from there.
    clock::time_point sent() const noexcept { return sent_; }
    // The local end of a lease granted by the last round: sent + lease - drift.
    clock::time_point valid_until() const noexcept { return sent_ + p_.lease - p_.drift; }
    const redlock_tally& tally() const noexcept { return tally_; }

private:
    redlock_action attempt(clock::time_point now, redlock_action a = {});
    redlock_action decide(clock::time_point now, redlock_tally::outcome o, std::minstd_rand& rng);
    // Waits for the back-off; `wakeable`: a release message ends the wait early.
    redlock_action retry_later(clock::time_point now, std::minstd_rand& rng, redlock_action a,
                               bool wakeable);
    redlock_action finish(error_code ec, bool granted = false, redlock_action a = {});
    error_code timeout_error() const noexcept;

    redlock_params p_;
    backoff backoff_;
    state state_ = state::done;
    std::uint64_t round_ = 0;
    redlock_tally tally_;
    clock::time_point sent_{};
    clock::time_point wait_until_ = clock::time_point::max();
    error_code last_; // why the last round failed: reported at the deadline
    bool subscribed_ = false;
    bool woken_ = false;
    bool wakeable_ = false;
};

// What a held lease needs.
struct redlock_hold_params {
    std::size_t nodes = 0;
    clock::duration lease{};
    clock::duration drift{};
    clock::duration node_timeout{};
    bool watchdog = true;
    clock::time_point max_hold_at = clock::time_point::max(); // max: no limit
};

struct redlock_lease_action {
    bool send_extend = false; // the extension script to every node (round())
    bool release_all = false; // owner-checked release to every node
    bool lost = false;        // report the lease lost with `ec`
    bool released = false;    // the release is decided: complete it with `ec`
    error_code ec;
};

// A held RedLock lease: a quorum extension every lease/3 (watchdog), the loss (an extension
// with fewer than a quorum of grants, a late one, the local deadline, max_hold), the release.
class redlock_lease_fsm {
public:
    enum class state { held, extending, releasing, lost, done };

    // `sent`: when the granting round went out.
    redlock_lease_fsm(const redlock_hold_params& p, clock::time_point sent) noexcept;

    redlock_lease_action on_timer(clock::time_point now);
    redlock_lease_action on_vote(clock::time_point now, std::uint64_t round, std::size_t node,
                                 vote v);
    // The owner gives the lease up (async_release, or the last owner went away).
    redlock_lease_action on_release(clock::time_point now);

    state current() const noexcept { return state_; }
    std::uint64_t round() const noexcept { return round_; }
    const redlock_tally& tally() const noexcept { return tally_; }
    clock::time_point valid_until() const noexcept { return valid_until_; }
    clock::time_point wake_at() const noexcept;
    error_code lost_reason() const noexcept { return lost_reason_; }

private:
    redlock_lease_action lose(error e);
    redlock_lease_action decide_extend(clock::time_point now, redlock_tally::outcome o);
    redlock_lease_action decide_release(redlock_tally::outcome o);

    redlock_hold_params p_;
    state state_ = state::held;
    std::uint64_t round_ = 0;
    redlock_tally tally_;
    clock::time_point valid_until_;
    clock::time_point next_extend_;
    clock::time_point round_sent_{};
    error_code lost_reason_;
};

std::ostream& operator<<(std::ostream& os, vote v);
std::ostream& operator<<(std::ostream& os, redlock_tally::outcome o);
std::ostream& operator<<(std::ostream& os, redlock_acquire_fsm::state s);
std::ostream& operator<<(std::ostream& os, redlock_lease_fsm::state s);
std::ostream& operator<<(std::ostream& os, const redlock_action& a);
std::ostream& operator<<(std::ostream& os, const redlock_lease_action& a);

} // namespace corolock::detail

#endif
