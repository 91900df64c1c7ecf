// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_LOCK_HANDLE_BASE_HPP
#define COROLOCK_LOCK_HANDLE_BASE_HPP

#include <corolock/detail/deadline.hpp>
#include <corolock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <utility>

namespace corolock {

/// The acquire family, written once for every lock handle whose acquisition gives one
/// `Lease` (`mutex`, `fair_mutex`, `multi_lock`, `redlock`, `local_mutex`, `pg_mutex`,
/// `zk_mutex`, and the writer side of `shared_mutex` and `zk_shared_mutex`). The four calls
/// mean the same on every backend; what is the backend's own (its errors, what a cancelled
/// attempt leaves, how long the handle must live) is in the derived class's "Acquiring"
/// paragraph, which the sections below refer to.
///
/// `Derived` provides `void acquire_impl(time_point deadline, bool once,
/// any_completion_handler<void(error_code, Lease)>)` (it may be private if `Derived` befriends
/// this base); a deadline of `time_point::min()` there means a negative wait (`invalid_wait`,
/// before anything is sent). A `Derived` whose deadlines are not read on `steady_clock` provides
/// `deadline_in(duration)` too.
template <class Derived, class Lease>
class lock_handle_base {
public:
    /// The clock of deadlines: the lease's.
    using clock = typename Lease::clock;
    /// A wait on `clock`.
    using duration = typename clock::duration;
    /// What an acquisition gives.
    using lease_type = Lease;

    /// Waits until the lock is ours.
    ///
    /// Completion signature: `void(error_code, lease_type)`; the lease owns the lock on success.
    /// Object lifetimes: the class's "Acquiring" paragraph.
    /// Executor: the token's associated executor, else the handle's `get_executor()`; never
    /// inline.
    /// Cancellation: terminal, partial, total: completes promptly with `operation_aborted`, and
    /// a grant that arrives later is given back (how: the class's "Acquiring" paragraph).
    /// Errors: the class's "Acquiring" paragraph; invalid arguments fail before anything is
    /// sent.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {}) {
        return initiate(clock::time_point::max(), false, std::forward<CompletionToken>(token));
    }

    /// As async_acquire, but gives up after `wait`. Any duration is accepted: a huge one means
    /// "forever". A zero wait is one attempt: the lock if it is free.
    ///
    /// Completion signature: `void(error_code, lease_type)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire, plus `invalid_wait` when `wait` is negative (before anything is
    /// sent) and, when `wait` passed first, `acquire_timeout` (the lock was seen held) or the
    /// reason the class's "Acquiring" paragraph gives. The deadline holds with no server
    /// answering.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_for(duration wait, CompletionToken&& token = {}) {
        return initiate(self().deadline_in(wait), false, std::forward<CompletionToken>(token));
    }

    /// As async_acquire, but gives up at `deadline`. A deadline already past, `time_point::min()`
    /// included, is a zero wait: one attempt, the lock if it is free.
    ///
    /// Completion signature: `void(error_code, lease_type)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire_for, without `invalid_wait`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_until(typename clock::time_point deadline, CompletionToken&& token = {}) {
        // min() marks a negative wait inside: a deadline of min() is merely past.
        if (deadline == clock::time_point::min())
            deadline += duration(1);
        return initiate(deadline, false, std::forward<CompletionToken>(token));
    }

    /// One attempt, no waiting for the lock.
    ///
    /// Completion signature: `void(error_code, lease_type)`; an empty lease with no error means
    /// another owner holds the lock.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire, plus what the class's "Acquiring" paragraph gives for a try
    /// (an attempt whose outcome is unknown, such as one the connection dropped, is undone).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(CompletionToken&& token = {}) {
        return initiate(clock::time_point::max(), true, std::forward<CompletionToken>(token));
    }

protected:
    /// Only a derived handle makes one.
    lock_handle_base() = default;
    ~lock_handle_base() = default;

    /// The end of a wait of `wait` from now (`detail::deadline_of`); a `Derived` on another
    /// clock hides it.
    static typename clock::time_point deadline_in(duration wait) noexcept {
        return detail::deadline_of(wait);
    }

private:
    Derived& self() noexcept { return static_cast<Derived&>(*this); }

    template <class CompletionToken>
    auto initiate(typename clock::time_point deadline, bool once, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, Lease)>(
            [](auto handler, Derived* d, typename clock::time_point deadline, bool once) {
                d->acquire_impl(deadline, once, std::move(handler));
            },
            token, &self(), deadline, once);
    }
};

/// The reader side of a read-write lock, written once (`shared_mutex`, `zk_shared_mutex`): the
/// same four calls as `lock_handle_base`'s, for a reader, which shares the lock with the other
/// readers. `Derived` provides `acquire_shared_impl` with `acquire_impl`'s parameters.
template <class Derived, class Lease>
class shared_lock_handle_base {
    using time_point = typename Lease::clock::time_point;

public:
    /// Waits until this acquisition is a reader (the class says when a reader may enter).
    ///
    /// Completion signature: `void(error_code, Lease)`.
    /// Object lifetimes: as `lock_handle_base::async_acquire`.
    /// Executor: as `lock_handle_base::async_acquire`.
    /// Cancellation: as `lock_handle_base::async_acquire`.
    /// Errors: as `lock_handle_base::async_acquire`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_shared(CompletionToken&& token = {}) {
        return initiate(time_point::max(), false, std::forward<CompletionToken>(token));
    }

    /// As async_acquire_shared, but gives up after `wait` (as
    /// `lock_handle_base::async_acquire_for`).
    ///
    /// Completion signature: `void(error_code, Lease)`.
    /// Object lifetimes: as async_acquire_shared.
    /// Executor: as async_acquire_shared.
    /// Cancellation: as async_acquire_shared.
    /// Errors: as `lock_handle_base::async_acquire_for`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_shared_for(typename Lease::clock::duration wait,
                                  CompletionToken&& token = {}) {
        return initiate(detail::deadline_of(wait), false, std::forward<CompletionToken>(token));
    }

    /// As async_acquire_shared, but gives up at `deadline` (as
    /// `lock_handle_base::async_acquire_until`).
    ///
    /// Completion signature: `void(error_code, Lease)`.
    /// Object lifetimes: as async_acquire_shared.
    /// Executor: as async_acquire_shared.
    /// Cancellation: as async_acquire_shared.
    /// Errors: as `lock_handle_base::async_acquire_until`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_shared_until(time_point deadline, CompletionToken&& token = {}) {
        if (deadline == time_point::min())
            deadline += typename Lease::clock::duration(1);
        return initiate(deadline, false, std::forward<CompletionToken>(token));
    }

    /// One attempt as a reader, no waiting: an empty lease with no error when it must wait.
    ///
    /// Completion signature: `void(error_code, Lease)`.
    /// Object lifetimes: as async_acquire_shared.
    /// Executor: as async_acquire_shared.
    /// Cancellation: as async_acquire_shared.
    /// Errors: as `lock_handle_base::async_try_acquire`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire_shared(CompletionToken&& token = {}) {
        return initiate(time_point::max(), true, std::forward<CompletionToken>(token));
    }

protected:
    /// Only a derived handle makes one.
    shared_lock_handle_base() = default;
    ~shared_lock_handle_base() = default;

private:
    template <class CompletionToken>
    auto initiate(time_point deadline, bool once, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, Lease)>(
            [](auto handler, Derived* d, time_point deadline, bool once) {
                d->acquire_shared_impl(deadline, once, std::move(handler));
            },
            token, static_cast<Derived*>(this), deadline, once);
    }
};

} // namespace corolock

#endif
