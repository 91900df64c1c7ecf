// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ELECTION_HPP
#define COROLOCK_ELECTION_HPP

#include <corolock/connection.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock {

namespace detail {
struct election_core;
struct observer_state;
} // namespace detail

class cluster;

/// Policy of one election (doc/election.md). Checked by the first campaign (`invalid_lease`,
/// `invalid_argument`, with the field named in the log).
struct election_options {
    /// The leader's lock: its lease (a leader that dies is replaced within it), watchdog,
    /// `max_hold` (a term's longest length), back-off and `fence_retention`, which is also how
    /// long the record of the last term (`{N}:leader`) outlives its last proclamation.
    mutex_options lock;
    /// After a leader is lost (its lease expired or was forced, not resigned), no new term begins
    /// before this much time has passed since the next campaigner found it lost, so that writes
    /// the lost leader still had in flight drain first (Chubby's and Consul's lock-delay). 0 to
    /// 1 h; 0: off.
    std::chrono::steady_clock::duration lock_delay = std::chrono::steady_clock::duration::zero();
};

/// Who leads, as a read or an observer sees it.
struct leader_info {
    /// A leader holds the term and has proclaimed `value`.
    bool present = false;
    /// The term: the leader's fencing token, larger than every earlier term's. Without a
    /// leader, the last term known to have begun (0: none).
    fencing_token term;
    /// Proclamations in the term: 1 for the campaign's own value, +1 for each async_proclaim.
    std::uint64_t version = 0;
    /// The leader's value (empty without a leader).
    std::string value;
};

/// A change of leader or value, as `leader_observer::async_next` delivers it.
struct leader_event : leader_info {
    /// Changes may have been missed just before this one (the subscription was re-established,
    /// or messages were dropped): this event is the state read after the gap.
    bool skipped = false;
};

/// A won campaign: the term, held as a `lease` (lost signal, `valid_until()`, watchdog, fenced
/// writes with `lease().async_fenced_eval`, whose token is the term). Move-only. Destroying it
/// releases the lock without resigning: observers see the term end when its lease expires or
/// the release lands (an explicit async_resign tells them at once).
/// Thread safety: as `lease`: one coroutine at a time; the getters from any thread.
class COROLOCK_DECL leadership {
public:
    /// An empty leadership (holds no term).
    leadership() noexcept = default;
    /// Takes `other`'s term; `other` is left empty.
    leadership(leadership&&) noexcept = default;
    /// Ends the term this one held (as the destructor does), then takes `other`'s.
    leadership& operator=(leadership&& other) noexcept;
    ~leadership();

    /// Holds the term (it may since have been lost: valid()).
    bool owns() const noexcept { return lease_.owns(); }
    /// As `lease::valid`: owns, not reported lost, and before valid_until().
    bool valid() const noexcept { return lease_.valid(); }
    /// As `lease::lost`.
    bool lost() const noexcept { return lease_.lost(); }
    /// As `lease::valid_until`.
    corolock::lease::clock::time_point valid_until() const noexcept { return lease_.valid_until(); }
    /// The term (the lease's fencing token).
    fencing_token term() const noexcept { return lease_.token(); }
    /// The value last proclaimed.
    const std::string& value() const noexcept { return value_; }
    /// Its version (1: the campaign's value).
    std::uint64_t version() const noexcept { return version_; }
    /// The lease that holds the term: for fenced writes and nested holds.
    corolock::lease& lease() noexcept { return lease_; }
    /// The same, read-only.
    const corolock::lease& lease() const noexcept { return lease_; }

    /// Waits until the term is lost, as `lease::async_wait_lost`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: as `lease::async_wait_lost`.
    /// Executor: as `lease::async_wait_lost`.
    /// Cancellation: as `lease::async_wait_lost`.
    /// Errors: as `lease::async_wait_lost` (`lease_lost`, `max_hold_reached`).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_lost(CompletionToken&& token = {}) {
        return lease_.async_wait_lost(std::forward<CompletionToken>(token));
    }

    /// Sets the leader's value without giving up the term; observers see (term, version + 1).
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the leadership must stay valid until completion.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none once sent (it completes promptly).
    /// Errors: `lease_lost` (the term is over: nothing was written); `not_owner` (empty);
    /// connection errors (unknown outcome: the value may or may not be proclaimed; it is never
    /// sent again).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_proclaim(std::string value, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, leadership* self, std::string v) {
                self->proclaim_impl(std::move(v), std::move(handler));
            },
            token, this, std::move(value));
    }

    /// Ends the term: observers see it end at once, then the lock is released and the next
    /// campaigner is woken. Leaves this object empty.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the leadership may be destroyed meanwhile.
    /// Executor: as async_proclaim.
    /// Cancellation: none (it completes promptly).
    /// Errors: as `lease::async_release` (`lease_lost` when the term was lost before);
    /// `not_owner` (empty).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_resign(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, leadership* self) { self->resign_impl(std::move(handler)); }, token,
            this);
    }

private:
    friend struct detail::access;
    leadership(corolock::lease l, std::shared_ptr<detail::election_core> core, std::string value)
        : lease_(std::move(l)), core_(std::move(core)), value_(std::move(value)), version_(1) {}
    void proclaim_impl(std::string value, boost::asio::any_completion_handler<void(error_code)> h);
    void resign_impl(boost::asio::any_completion_handler<void(error_code)> h);
    // Tells the observers that a held term ends (owner-checked, not waited for); the lease's
    // own release follows when it goes.
    void end_term() noexcept;

    corolock::lease lease_;
    std::shared_ptr<detail::election_core> core_;
    std::string value_;
    std::uint64_t version_ = 0;
};

/// Follows an election: every change of leader and value, in order (doc/election.md,
/// "Observing"). Subscribes when made (election::observe) and unsubscribes when destroyed.
/// The first event is the state when it started. Move-only.
/// Thread safety: one async_next at a time.
class COROLOCK_DECL leader_observer {
public:
    /// An empty observer (follows nothing).
    leader_observer() noexcept = default;
    /// Takes `other`'s subscription; `other` is left empty.
    leader_observer(leader_observer&&) noexcept = default;
    /// Ends this observer's subscription, then takes `other`'s.
    leader_observer& operator=(leader_observer&&) noexcept;
    ~leader_observer();

    /// The next change (changes that come while nobody waits are kept, in order, up to 64; past
    /// that the oldest are dropped and the next event says `skipped`).
    ///
    /// Completion signature: `void(error_code, leader_event)`.
    /// Object lifetimes: the observer may be destroyed meanwhile (`operation_aborted`).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial and total (no event is lost when cancelled).
    /// Errors: `operation_aborted` (cancelled, destroyed, or the connection stopped for good);
    /// `not_owner` for an empty observer; `invalid_argument` for a second call while one waits.
    /// Thread safety: one async_next at a time per observer.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_next(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, leader_event)>(
            [](auto handler, leader_observer* self) { self->next_impl(std::move(handler)); }, token,
            this);
    }

private:
    friend class election;
    explicit leader_observer(std::shared_ptr<detail::observer_state> s) noexcept
        : state_(std::move(s)) {}
    void next_impl(boost::asio::any_completion_handler<void(error_code, leader_event)> h);
    std::shared_ptr<detail::observer_state> state_;
};

/// Leader election on one name (doc/election.md): campaigners wait for the term (woken by the
/// release, not polling), the winner proclaims a value, observers follow every change. A
/// handle meant to be shared, as `mutex`; the term is the `leadership` a campaign returns.
/// Keys: the lock's (doc/keys.md, `mutex`), the record `{N}:leader` and the channel
/// `{N}:leader`.
///
/// Thread safety: every member function may be called from any thread.
/// Lifetime: the connection (or cluster) must outlive the election and its observers.
class COROLOCK_DECL election {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// The guarantees of the term, the same as `mutex`'s (doc/backends.md).
    static constexpr lock_capabilities capabilities = mutex::capabilities;

    /// No I/O. Invalid arguments are reported by the first call.
    election(connection& conn, std::string name, election_options opts = {});
    /// Over a Redis Cluster: the lock, the record and the channel share the name's slot.
    election(cluster& c, std::string name, election_options opts = {});
    ~election();
    election(const election&) = delete;
    election& operator=(const election&) = delete;

    /// The executor given at construction.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const election_options& options() const noexcept;

    /// Waits for the term, then proclaims `value` (version 1) and completes with the
    /// leadership. With a lock-delay, a campaign that finds the last leader lost waits it out
    /// first, holding the lock.
    ///
    /// Completion signature: `void(error_code, leadership)`.
    /// Object lifetimes: the election may be destroyed meanwhile (`operation_aborted`).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial and total: the lock, if it was granted, is released.
    /// Errors: as `mutex::async_acquire`; `invalid_argument` (lock_delay out of range, before
    /// anything is sent); `lease_lost` (the lock was lost before the value was proclaimed).
    /// Thread safety: any thread, concurrently.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_campaign(std::string value, CompletionToken&& token = {}) {
        return campaign(duration::max(), std::move(value), std::forward<CompletionToken>(token));
    }

    /// As async_campaign, waiting at most `wait` for the term.
    ///
    /// Completion signature: `void(error_code, leadership)`.
    /// Object lifetimes: as async_campaign.
    /// Executor: as async_campaign.
    /// Cancellation: as async_campaign.
    /// Errors: as async_campaign; `acquire_timeout` past `wait` (a zero wait is one attempt).
    /// Thread safety: any thread, concurrently.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_campaign_for(std::chrono::steady_clock::duration wait, std::string value,
                            CompletionToken&& token = {}) {
        return campaign(wait, std::move(value), std::forward<CompletionToken>(token));
    }

    /// The leader now: one read.
    ///
    /// Completion signature: `void(error_code, leader_info)`.
    /// Object lifetimes: the election may be destroyed meanwhile.
    /// Executor: as `connection::async_exec`. Cancellation: as `connection::async_exec`.
    /// Errors: `invalid_name` (before anything is sent); `wrong_type` (a foreign key at the
    /// name); connection errors.
    /// Thread safety: any thread, concurrently.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_leader(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
            [](auto handler, election* self) { self->leader_impl(std::move(handler)); }, token,
            this);
    }

    /// An observer of this election, subscribed from now on (its first event is the state it
    /// reads once subscribed).
    leader_observer observe();

private:
    using duration = std::chrono::steady_clock::duration;
    template <class CompletionToken>
    auto campaign(duration wait, std::string value, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, leadership)>(
            [](auto handler, election* self, duration w, std::string v) {
                self->campaign_impl(w, std::move(v), std::move(handler));
            },
            token, this, wait, std::move(value));
    }
    void campaign_impl(duration wait, std::string value,
                       boost::asio::any_completion_handler<void(error_code, leadership)> h);
    void leader_impl(boost::asio::any_completion_handler<void(error_code, leader_info)> h);

    std::shared_ptr<detail::election_core> core_;
};

} // namespace corolock

#endif
