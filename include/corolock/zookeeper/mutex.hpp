// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ZOOKEEPER_MUTEX_HPP
#define COROLOCK_ZOOKEEPER_MUTEX_HPP

#include <corolock/capabilities.hpp>
#include <corolock/detail/deadline.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/lease.hpp>
#include <corolock/zookeeper/connection.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <memory>
#include <string>

// The ZooKeeper lock (doc/zookeeper.md): ephemeral sequential nodes under the lock's path, the
// lowest holds, each waiter watches only the node just before its own.
namespace corolock {

namespace detail {
struct zk_grant;
struct zk_acquire_op;
} // namespace detail

class zk_hold;

/// Proof that one acquisition holds a ZooKeeper lock: its node `<path>/<owner>-lock-<sequence>`
/// exists in its session. Move-only; destroying it deletes the node without waiting (once every
/// nested hold has ended too).
///
/// Valid while the session is connected; when the server is lost, until `valid_until()` (last
/// reply + session timeout - margin), then lost. Also lost when the session expires or anyone
/// deletes the node. `token()` is the node's `czxid`: a total order across the ensemble, with no
/// clock assumption.
///
/// Thread safety: one lease is used by one coroutine at a time; the getters may be called from
/// any thread.
/// Executors: operations complete on the token's associated executor, else the connection's.
class COROLOCK_DECL zk_lease {
public:
    /// `valid_until()`'s clock.
    using clock = std::chrono::steady_clock;

    /// An empty lease: also what a try-acquire gives when the lock is held.
    zk_lease() noexcept = default;
    /// Moves the ownership; `other` is left empty.
    zk_lease(zk_lease&&) noexcept = default;
    /// Releases what this lease owned (without waiting), then takes `other`'s.
    zk_lease& operator=(zk_lease&& other) noexcept;
    ~zk_lease();

    /// True if this object owns an acquisition it has not released (it may have been lost).
    bool owns() const noexcept { return grant_ != nullptr; }
    /// `owns()`.
    explicit operator bool() const noexcept { return owns(); }
    /// Owns, not lost, and the clock is before `valid_until()`.
    bool valid() const noexcept;
    /// The last reply from a server + the session timeout - the margin; pushed on by every
    /// reply while connected. `time_point::min()` when empty or lost.
    clock::time_point valid_until() const noexcept;
    /// The lease was lost (why: `async_wait_lost`).
    bool lost() const noexcept;
    /// The node's creation zxid, tagged `lock_backend::zookeeper` (value 0 when empty).
    fencing_token token() const noexcept;
    /// The node's full path (empty when empty).
    const std::string& name() const noexcept;
    /// A nested hold: a share of this grant, with no second node. Requires `owns()` (else
    /// `std::logic_error`).
    zk_hold hold() const;

    /// Completes when the lease is lost.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the lease may be moved or released meanwhile.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total: completes with `operation_aborted`.
    /// Errors: `lease_lost` (the session expired, or was suspended past `valid_until()`, or the
    /// node was deleted, or the connection was stopped); `operation_aborted` when it is released
    /// first or the wait is cancelled; `not_owner` for an empty lease.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_lost(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, std::shared_ptr<detail::zk_grant> g) {
                if (!g)
                    return detail::fail_empty(std::move(handler));
                wait_lost_impl(std::move(g), std::move(handler));
            },
            token, grant_);
    }

    /// Releases the lock: deletes the node (its successor's watch wakes it). The lease is empty
    /// from the call on. With nested holds alive, the last of them deletes the node.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: none (the lease is consumed when this is called).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none (it waits until the node is gone or known gone, or, with no server
    /// answering, at most until the lease's validity ends; the delete then goes out after a
    /// reconnect, or the node goes with the session).
    /// Errors: `lease_lost` (lost before the release, or while its delete was unanswered: the
    /// section may have overlapped another
    /// owner); `not_owner` for an empty lease.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_release(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, std::shared_ptr<detail::zk_grant> g) {
                if (!g)
                    return detail::fail_empty(std::move(handler));
                release_impl(std::move(g), std::move(handler));
            },
            token, std::move(grant_));
    }

    /// Writes `data` to the node `path` (created if missing) in one ZooKeeper transaction that
    /// also checks this lease's node still exists: a holder that lost the lock cannot write.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the lease may be moved meanwhile; `path` and `data` are copied.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none (it waits for the transaction's reply).
    /// Errors: `stale_token` (the node is gone: the lease was lost); `invalid_name` (bad path);
    /// `connection_lost` (no reply: the write may or may not have happened); `server_error`
    /// (refused: the log says why); `not_owner` for an empty lease.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_fenced_write(std::string path, std::string data, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, std::shared_ptr<detail::zk_grant> g, std::string path,
               std::string data) {
                if (!g)
                    return detail::fail_empty(std::move(handler));
                fenced_write_impl(std::move(g), std::move(path), std::move(data),
                                  std::move(handler));
            },
            token, grant_, std::move(path), std::move(data));
    }

private:
    friend class zk_mutex;
    friend class zk_shared_mutex;
    friend class zk_hold;
    friend struct detail::zk_acquire_op;
    using handler_ec = boost::asio::any_completion_handler<void(error_code)>;
    explicit zk_lease(std::shared_ptr<detail::zk_grant> g) noexcept : grant_(std::move(g)) {}
    static void wait_lost_impl(std::shared_ptr<detail::zk_grant> g, handler_ec h);
    static void release_impl(std::shared_ptr<detail::zk_grant> g, handler_ec h);
    static void fenced_write_impl(std::shared_ptr<detail::zk_grant> g, std::string path,
                                  std::string data, handler_ec h);

    std::shared_ptr<detail::zk_grant> grant_;
};

/// A nested hold on a zk_lease (see `zk_lease::hold`): the node is deleted when the lease and
/// every hold are gone.
class COROLOCK_DECL zk_hold {
public:
    /// An empty hold.
    zk_hold() noexcept = default;
    /// Moves the hold; `other` is left empty.
    zk_hold(zk_hold&&) noexcept = default;
    /// Ends this hold, then takes `other`'s.
    zk_hold& operator=(zk_hold&& other) noexcept;
    ~zk_hold();

    /// True while this hold is a share of a grant.
    bool owns() const noexcept { return grant_ != nullptr; }
    /// `owns()`.
    explicit operator bool() const noexcept { return owns(); }
    /// As the lease's.
    bool valid() const noexcept;
    /// As the lease's.
    fencing_token token() const noexcept;
    /// Ends this hold now (as the last share of a released lease, deletes the node).
    void reset() noexcept;

    /// Ends this hold; as the last share of a lease already released, deletes the node and
    /// completes with the outcome, otherwise completes at once.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: none (the hold is consumed when this is called).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none.
    /// Errors: `lease_lost` (the lease was lost before the release); `not_owner` when empty.
    /// Thread safety: as zk_lease.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_release(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, std::shared_ptr<detail::zk_grant> g) {
                if (!g)
                    return detail::fail_empty(std::move(handler));
                zk_lease::release_impl(std::move(g), std::move(handler));
            },
            token, std::move(grant_));
    }

private:
    friend class zk_lease;
    explicit zk_hold(std::shared_ptr<detail::zk_grant> g) noexcept : grant_(std::move(g)) {}
    std::shared_ptr<detail::zk_grant> grant_;
};

/// A lock on one ZooKeeper path of a `zk_connection` (doc/zookeeper.md). Shared by the
/// coroutines that take it, like `mutex`; each acquisition creates its own node under `path`
/// named by a CSPRNG owner id and gets its own `zk_lease`. Waiters are served in the order of
/// their nodes (FIFO), and a release wakes exactly one waiter.
///
/// Thread safety: as zk_connection.
/// Lifetime: the connection must outlive the mutex; leases keep the session's state alive.
class COROLOCK_DECL zk_mutex {
public:
    /// The executor of the connection.
    using executor_type = boost::asio::any_io_executor;
    /// The clock of deadlines and of `valid_until()`.
    using clock = std::chrono::steady_clock;
    /// Durations of waits.
    using duration = clock::duration;
    /// What an acquisition gives.
    using lease_type = zk_lease;
    /// czxid tokens (a total order, no clock); a grant acknowledged by a quorum survives a
    /// leader's failure; a holder knows its loss by `valid_until()`; an owner per acquisition
    /// (its node), within the connection's session.
    static constexpr lock_capabilities capabilities{
        .backend = lock_backend::zookeeper,
        .fencing = fencing_kind::total_order,
        .grant_survives_failover = true,
        .loss_detected_in_bounded_time = true,
        .owner = lock_owner::acquisition,
    };

    /// No work. `path` (absolute, e.g. "/locks/orders") is checked by the first acquire.
    zk_mutex(zk_connection& conn, std::string path);
    /// Cancels the pending acquires (their nodes are deleted).
    ~zk_mutex();
    zk_mutex(const zk_mutex&) = delete;
    zk_mutex& operator=(const zk_mutex&) = delete;

    /// The connection's executor.
    executor_type get_executor() const noexcept;
    /// The lock's path.
    const std::string& name() const noexcept { return path_; }

    /// Waits until the lock is ours.
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: the mutex and its connection must outlive the operation.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total: completes with `operation_aborted` at once, even
    /// with no server answering; the waiter's node is deleted (when the server cannot be
    /// reached, after the reconnect, or it goes with the session).
    /// Errors: `invalid_name` (before anything is sent); `auth_failed`, `server_error`
    /// (refused, e.g. by an ACL); `connection_lost` (the connection was stopped).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {}) {
        return initiate(clock::time_point::max(), false, std::forward<CompletionToken>(token));
    }

    /// As async_acquire, but gives up after `wait`.
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// A zero wait is one attempt (as a try: a free lock is granted). The deadline holds even
    /// with no server answering.
    /// Errors: as async_acquire, plus `invalid_wait` (negative) and `acquire_timeout` (its node
    /// deleted).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_for(duration wait, CompletionToken&& token = {}) {
        return initiate(detail::deadline_of(wait), false, std::forward<CompletionToken>(token));
    }

    /// As async_acquire, but gives up at `deadline`.
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire, plus `acquire_timeout` (also with no server answering; a
    /// deadline already passed is one attempt).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_until(clock::time_point deadline, CompletionToken&& token = {}) {
        return initiate(deadline, false, std::forward<CompletionToken>(token));
    }

    /// One attempt: an empty lease with no error when an earlier node exists (its own node is
    /// deleted before completing).
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire, plus `connection_lost` (no server answered the attempt within
    /// the session timeout, or the connection dropped with it unanswered: the lock may be free).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(CompletionToken&& token = {}) {
        return initiate(clock::time_point::max(), true, std::forward<CompletionToken>(token));
    }

    /// Cancels every pending acquire of this mutex (`operation_aborted`). Leases are untouched.
    void cancel();

private:
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, zk_lease)>;

    template <class CompletionToken>
    auto initiate(clock::time_point deadline, bool once, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, zk_lease)>(
            [](auto handler, zk_mutex* self, clock::time_point deadline, bool once) {
                self->acquire_impl(deadline, once, std::move(handler));
            },
            token, this, deadline, once);
    }
    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::zk_session> session_;
    std::string path_;
    std::uint64_t id_;
};

} // namespace corolock

#endif
