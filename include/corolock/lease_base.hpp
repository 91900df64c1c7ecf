// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_LEASE_BASE_HPP
#define COROLOCK_LEASE_BASE_HPP

#include <corolock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace corolock {

namespace detail {
// An operation on an empty lease fails with not_owner on the handler's own executor (an empty
// lease has no connection to fall back on), while the handler's type is still known.
template <class Handler>
void fail_empty(Handler h) {
    auto ex = boost::asio::get_associated_executor(h);
    boost::asio::post(ex,
                      [h = std::move(h)]() mutable { std::move(h)(error_code(error::not_owner)); });
}

// Starts an operation on a lease's or hold's state: `impl(state, args..., handler)`, or
// `not_owner` when the state is empty.
template <class CompletionToken, class Impl, class State, class... Args>
auto initiate_on(CompletionToken&& token, Impl impl, State state, Args... args) {
    return boost::asio::async_initiate<CompletionToken, void(error_code)>(
        [impl](auto handler, State s, Args... a) {
            if (!s)
                return fail_empty(std::move(handler));
            impl(std::move(s), std::move(a)..., std::move(handler));
        },
        token, std::move(state), std::move(args)...);
}
} // namespace detail

/// What every lease is, written once: `lease`, `pg_lease`, `zk_lease`, `local_lease`,
/// `redlock_lease` and `multi_lease` derive from it. A lease is the move-only owner of one
/// acquisition (`Share`: its share of the grant's state). What is the backend's own (what a loss
/// is, what the release sends, its errors) is in the derived class's "Loss and release"
/// paragraph, which the sections below refer to.
///
/// `Derived` provides `static void wait_lost_impl(W, any_completion_handler<void(error_code)>)`
/// and `release_impl(Share, ...)` (private, befriending this base), where `W` is what its
/// `lost_watch()` gives (the share itself unless `Derived` hides `lost_watch`).
template <class Derived, class Share>
class lease_base {
public:
    /// True if this object owns an acquisition it has not released (it may have been lost).
    bool owns() const noexcept { return static_cast<bool>(share_); }
    /// Same as `owns()`.
    explicit operator bool() const noexcept { return owns(); }

    /// Completes when the lease is lost.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the lease may be moved or released meanwhile.
    /// Executor: the token's associated executor, else the lease's connection's (or backend's);
    /// never inline.
    /// Cancellation: terminal, partial, total: completes with `operation_aborted`.
    /// Errors: the class's "Loss and release" paragraph for a loss; `operation_aborted` when the
    /// lease is released first or the wait is cancelled; `not_owner` for an empty lease (on the
    /// token's associated executor).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_lost(CompletionToken&& token = {}) {
        return detail::initiate_on(std::forward<CompletionToken>(token), &Derived::wait_lost_impl,
                                   static_cast<const Derived&>(*this).lost_watch());
    }

    /// Releases the lock (owner-checked: only this acquisition's grant is given back). The lease
    /// is empty from the call on. With nested holds still alive, nothing is sent and this
    /// completes at once (with the loss, if the lease was lost): the last hold to end releases.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: none (the lease is consumed when this is called).
    /// Executor: as async_wait_lost.
    /// Cancellation: none once called (the class's "Loss and release" paragraph says how long
    /// it can take).
    /// Errors: a loss before or during the release (the class's "Loss and release" paragraph:
    /// the critical section may have overlapped a later owner); `not_owner` for an empty lease;
    /// connection errors where the paragraph names them (the outcome is unknown).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_release(CompletionToken&& token = {}) {
        return detail::initiate_on(std::forward<CompletionToken>(token), &Derived::release_impl,
                                   std::move(share_));
    }

protected:
    /// The handler type of the derived class's `*_impl` functions.
    using handler_ec = boost::asio::any_completion_handler<void(error_code)>;

    /// Empty.
    lease_base() noexcept = default;
    /// Owns `s`.
    explicit lease_base(Share s) noexcept : share_(std::move(s)) {}
    /// Moves the share; `other` is left empty.
    lease_base(lease_base&&) noexcept = default;
    /// Moves the share (what the derived class owned is its to end first).
    lease_base& operator=(lease_base&&) noexcept = default;
    ~lease_base() = default;

    /// What `async_wait_lost` watches: the share, unless `Derived` hides this.
    const Share& lost_watch() const noexcept { return share_; }

    /// This lease's share of the grant (empty: owns nothing).
    Share share_;
};

/// What every nested hold is, written once: `nested_hold`, `pg_nested_hold`, `zk_hold` and
/// `local_hold` derive from it. A hold is a share of a lease's grant with no second hold on the
/// server; the lock is released when the lease and every hold are gone. `Derived` provides
/// `static void release_impl(Share, any_completion_handler<void(error_code)>)`.
template <class Derived, class Share>
class hold_base {
public:
    /// True while this hold is a share of a grant (not ended or released).
    bool owns() const noexcept { return static_cast<bool>(share_); }
    /// Same as `owns()`.
    explicit operator bool() const noexcept { return owns(); }

    /// Ends this hold. If it is the last share of a lease whose `async_release` was already
    /// called (which completed at once because this hold was alive), this releases the lock and
    /// completes with the release's outcome; otherwise it completes at once.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: none (the hold is consumed when this is called).
    /// Executor: as the lease's `async_release`.
    /// Cancellation: none once called.
    /// Errors: as the lease's `async_release`; `not_owner` for an empty hold.
    /// Thread safety: as the lease.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_release(CompletionToken&& token = {}) {
        return detail::initiate_on(std::forward<CompletionToken>(token), &Derived::release_impl,
                                   std::move(share_));
    }

protected:
    /// The handler type of the derived class's `release_impl`.
    using handler_ec = boost::asio::any_completion_handler<void(error_code)>;

    /// Empty.
    hold_base() noexcept = default;
    /// Holds `s`.
    explicit hold_base(Share s) noexcept : share_(std::move(s)) {}
    /// Moves the share; `other` is left empty.
    hold_base(hold_base&&) noexcept = default;
    /// Moves the share (what the derived class held is its to end first).
    hold_base& operator=(hold_base&&) noexcept = default;
    ~hold_base() = default;

    /// This hold's share of the grant (empty: holds nothing).
    Share share_;
};

} // namespace corolock

#endif
