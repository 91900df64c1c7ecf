// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ZOOKEEPER_MUTEX_HPP
#define COROLOCK_ZOOKEEPER_MUTEX_HPP

#include <corolock/capabilities.hpp>
#include <corolock/detail/access.hpp>
#include <corolock/detail/deadline.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/lease_base.hpp>
#include <corolock/lock_handle_base.hpp>
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
/// Loss and release (`lease_base`: async_wait_lost, async_release):
/// - Lost (`lease_lost`) when the session expires, or is suspended past `valid_until()`, or
///   anyone deletes the node, or the connection is stopped.
/// - The release deletes the node (its successor's watch wakes it). It waits until the node is
///   gone or known gone, or, with no server answering, at most until the lease's validity ends
///   (the delete then goes out after a reconnect, or the node goes with the session). It fails
///   with `lease_lost` when the lease was lost before the release, or while its delete was
///   unanswered (the section may have overlapped another owner).
///
/// Thread safety: one lease is used by one coroutine at a time; the getters may be called from
/// any thread.
/// Executors: operations complete on the token's associated executor, else the connection's.
class COROLOCK_DECL zk_lease : public lease_base<zk_lease, std::shared_ptr<detail::zk_grant>> {
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
        return detail::initiate_on(std::forward<CompletionToken>(token), &fenced_write_impl, share_,
                                   std::move(path), std::move(data));
    }

private:
    friend class lease_base<zk_lease, std::shared_ptr<detail::zk_grant>>;
    friend class zk_mutex;
    friend class zk_shared_mutex;
    friend class zk_hold;
    friend struct detail::access;
    explicit zk_lease(std::shared_ptr<detail::zk_grant> g) noexcept : lease_base(std::move(g)) {}
    static void wait_lost_impl(std::shared_ptr<detail::zk_grant> g, handler_ec h);
    static void release_impl(std::shared_ptr<detail::zk_grant> g, handler_ec h);
    static void fenced_write_impl(std::shared_ptr<detail::zk_grant> g, std::string path,
                                  std::string data, handler_ec h);
};

/// A nested hold on a zk_lease (see `zk_lease::hold`): the node is deleted when the lease and
/// every hold are gone.
class COROLOCK_DECL zk_hold : public hold_base<zk_hold, std::shared_ptr<detail::zk_grant>> {
public:
    /// An empty hold.
    zk_hold() noexcept = default;
    /// Moves the hold; `other` is left empty.
    zk_hold(zk_hold&&) noexcept = default;
    /// Ends this hold, then takes `other`'s.
    zk_hold& operator=(zk_hold&& other) noexcept;
    ~zk_hold();

    /// As the lease's.
    bool valid() const noexcept;
    /// As the lease's.
    fencing_token token() const noexcept;
    /// Ends this hold now (as the last share of a released lease, deletes the node).
    void reset() noexcept;

private:
    friend class hold_base<zk_hold, std::shared_ptr<detail::zk_grant>>;
    friend class zk_lease;
    explicit zk_hold(std::shared_ptr<detail::zk_grant> g) noexcept : hold_base(std::move(g)) {}
    static void release_impl(std::shared_ptr<detail::zk_grant> g, handler_ec h) {
        zk_lease::release_impl(std::move(g), std::move(h));
    }
};

/// A lock on one ZooKeeper path of a `zk_connection` (doc/zookeeper.md). Shared by the
/// coroutines that take it, like `mutex`; each acquisition creates its own node under `path`
/// named by a CSPRNG owner id and gets its own `zk_lease`. Waiters are served in the order of
/// their nodes (FIFO), and a release wakes exactly one waiter.
///
/// Acquiring (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire):
/// - Object lifetimes: the mutex and its connection must outlive the operation.
/// - Cancellation: completes at once, even with no server answering; the waiter's node is
///   deleted (when the server cannot be reached, after the reconnect, or it goes with the
///   session). A bounded wait that runs out deletes its node the same way.
/// - Errors: `invalid_name` (before anything is sent); `auth_failed`, `server_error` (refused,
///   e.g. by an ACL); `connection_lost` (the connection was stopped). A try also fails with
///   `connection_lost` when no server answered its attempt within the session timeout, or the
///   connection dropped with it unanswered (the lock may be free); a try's own node is deleted
///   before it completes.
///
/// Thread safety: as zk_connection.
/// Lifetime: the connection must outlive the mutex; leases keep the session's state alive.
class COROLOCK_DECL zk_mutex : public lock_handle_base<zk_mutex, zk_lease> {
public:
    /// The executor of the connection.
    using executor_type = boost::asio::any_io_executor;
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

    /// Cancels every pending acquire of this mutex (`operation_aborted`). Leases are untouched.
    void cancel();

private:
    friend class lock_handle_base<zk_mutex, zk_lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, zk_lease)>;

    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::zk_session> session_;
    std::string path_;
    std::uint64_t id_;
};

} // namespace corolock

#endif
