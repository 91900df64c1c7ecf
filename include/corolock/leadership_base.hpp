// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_LEADERSHIP_BASE_HPP
#define COROLOCK_LEADERSHIP_BASE_HPP

#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/fencing_token.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

// What every backend's election shares (doc/election.md): who leads, the events an observer
// delivers, the observer, and the leadership a won campaign returns, written once.
namespace corolock {

namespace detail {
struct observer_state;
} // namespace detail

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
    /// Changes may have been missed just before this one (the subscription or watch was
    /// re-established, or events were dropped): this event is the state read after the gap.
    bool skipped = false;
};

/// Follows an election of any backend: every change of leader and value, in order
/// (doc/election.md, "Observing"). Made by the election's `observe()`, which starts following
/// at once; stops following when destroyed. The first event is the state when it started.
/// Move-only.
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
    friend struct detail::access;
    explicit leader_observer(std::shared_ptr<detail::observer_state> s) noexcept
        : state_(std::move(s)) {}
    void next_impl(boost::asio::any_completion_handler<void(error_code, leader_event)> h);
    std::shared_ptr<detail::observer_state> state_;
};

/// What every leadership is, written once: `leadership` (Redis), `zk_leadership` and
/// `pg_leadership` derive from it. A won campaign: the term, held as the backend's lease (lost
/// signal, `valid_until()`, fenced writes), whose token is the term. Move-only.
///
/// Destroying or assigning over a leadership that holds its term ends the term (observers are
/// told, owner-checked or fenced) before its lock is released.
///
/// `Derived` provides `proclaim_impl(std::string, any_completion_handler<void(error_code)>)`,
/// `resign_impl(any_completion_handler<void(error_code)>)` and `static void end_term(Lease&,
/// const std::shared_ptr<Core>&, std::uint64_t version) noexcept` (private, befriending this
/// base); `Core` is the election's shared state.
/// Thread safety: as the lease: one coroutine at a time; `owns`, `valid`, `lost`, `valid_until`
/// and `term` from any thread; `value` and `version` from the coroutine that uses it (a
/// proclamation sets them).
template <class Derived, class Lease, class Core>
class leadership_base {
public:
    /// The lease that holds the term.
    using lease_type = Lease;

    /// Holds the term (it may since have been lost: valid()).
    bool owns() const noexcept { return lease_.owns(); }
    /// As the lease's `valid`: owns, not reported lost, and before valid_until().
    bool valid() const noexcept { return lease_.valid(); }
    /// As the lease's `lost`.
    bool lost() const noexcept { return lease_.lost(); }
    /// As the lease's `valid_until`.
    typename Lease::clock::time_point valid_until() const noexcept { return lease_.valid_until(); }
    /// The term (the lease's fencing token).
    fencing_token term() const noexcept { return lease_.token(); }
    /// The value last proclaimed.
    const std::string& value() const noexcept { return value_; }
    /// Its version (1: the campaign's value).
    std::uint64_t version() const noexcept { return version_; }
    /// The lease that holds the term: for fenced writes and nested holds.
    Lease& lease() noexcept { return lease_; }
    /// The same, read-only.
    const Lease& lease() const noexcept { return lease_; }

    /// Waits until the term is lost, as the lease's `async_wait_lost`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: as the lease's `async_wait_lost`.
    /// Executor: as the lease's `async_wait_lost`.
    /// Cancellation: as the lease's `async_wait_lost`.
    /// Errors: as the lease's `async_wait_lost` (`lease_lost`, `max_hold_reached`).
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
            [](auto handler, Derived* self, std::string v) {
                self->proclaim_impl(std::move(v), std::move(handler));
            },
            token, static_cast<Derived*>(this), std::move(value));
    }

    /// Ends the term: observers see it end at once, then the lock is released and the next
    /// campaigner is woken. Leaves this object empty.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the leadership may be destroyed meanwhile.
    /// Executor: as async_proclaim.
    /// Cancellation: none (it completes promptly).
    /// Errors: as the lease's `async_release` (`lease_lost` when the term was lost before);
    /// `not_owner` (empty).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_resign(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, Derived* self) { self->resign_impl(std::move(handler)); }, token,
            static_cast<Derived*>(this));
    }

protected:
    /// Empty.
    leadership_base() noexcept = default;
    /// Holds the term `l` of `core`'s election with its first value (version 1).
    leadership_base(Lease l, std::shared_ptr<Core> core, std::string value) noexcept
        : lease_(std::move(l)), core_(std::move(core)), value_(std::move(value)), version_(1) {}
    /// Moves the term; `other` is left empty.
    leadership_base(leadership_base&& other) noexcept
        : lease_(std::move(other.lease_)), core_(std::move(other.core_)),
          value_(std::move(other.value_)), version_(std::exchange(other.version_, 0)) {}
    /// Ends the term this one held, then takes `other`'s; `other` is left empty.
    leadership_base& operator=(leadership_base&& other) noexcept {
        if (this != &other) {
            end();
            lease_ = std::move(other.lease_);
            core_ = std::move(other.core_);
            value_ = std::move(other.value_);
            version_ = std::exchange(other.version_, 0);
        }
        return *this;
    }
    /// Ends the term it holds, if any.
    ~leadership_base() { end(); }

    /// Holds a term to act on: the lease and its election.
    bool held() const noexcept { return lease_.owns() && core_; }

    /// The lease that holds the term (empty: no term).
    Lease lease_;
    /// The election's shared state (empty: no term).
    std::shared_ptr<Core> core_;
    /// The value last proclaimed.
    std::string value_;
    /// Its version (0: no term).
    std::uint64_t version_ = 0;

private:
    void end() noexcept {
        if (held())
            Derived::end_term(lease_, core_, version_);
    }
};

/// What every backend's election shares, written once: `election` (Redis), `zk_election` and
/// `pg_election` derive from it. The campaign family and the leader read; `Leadership` is what a
/// won campaign gives (`leadership`, `zk_leadership`, `pg_leadership`). What is the backend's own
/// (its keys or nodes, what a lost leader is) is in the derived class's paragraph, which the
/// sections below refer to.
///
/// `Derived` provides `campaign_impl(steady_clock::duration, std::string, handler)` and
/// `leader_impl(handler)` (private, befriending this base).
/// Thread safety: every member function may be called from any thread.
template <class Derived, class Leadership>
class election_base {
public:
    /// What a won campaign gives.
    using leadership_type = Leadership;

    /// Waits for the term, then proclaims `value` (version 1) and completes with the
    /// leadership. With a lock-delay, a campaign that finds the last leader lost waits it out
    /// first, holding the lock.
    ///
    /// Completion signature: `void(error_code, Leadership)`.
    /// Object lifetimes: the election may be destroyed meanwhile: a campaign still waiting for
    /// the lock completes with `operation_aborted`, one past it completes as it would have.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial and total: the lock, if it was granted, is released.
    /// Errors: as the backend's mutex's `async_acquire`; `invalid_argument` (lock_delay out of
    /// range, before anything is sent); `lease_lost` (the lock was lost before the value was
    /// proclaimed).
    /// Thread safety: any thread, concurrently.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_campaign(std::string value, CompletionToken&& token = {}) {
        return campaign(duration::max(), std::move(value), std::forward<CompletionToken>(token));
    }

    /// As async_campaign, waiting at most `wait` for the term.
    ///
    /// Completion signature: `void(error_code, Leadership)`.
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
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: as the connection's requests (the read's outcome is only dropped).
    /// Errors: `invalid_name` (before anything is sent); `wrong_type` (a foreign key at the
    /// name, Redis); `unexpected_reply` (a record that is not an election's); connection errors.
    /// Thread safety: any thread, concurrently.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_leader(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, leader_info)>(
            [](auto handler, Derived* self) { self->leader_impl(std::move(handler)); }, token,
            static_cast<Derived*>(this));
    }

protected:
    /// Nothing to set up: the derived class holds the election's state.
    election_base() = default;
    ~election_base() = default;

private:
    using duration = std::chrono::steady_clock::duration;
    template <class CompletionToken>
    auto campaign(duration wait, std::string value, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, Leadership)>(
            [](auto handler, Derived* self, duration w, std::string v) {
                self->campaign_impl(w, std::move(v), std::move(handler));
            },
            token, static_cast<Derived*>(this), wait, std::move(value));
    }
};

} // namespace corolock

#endif
