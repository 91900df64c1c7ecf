// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_MULTI_LOCK_HPP
#define COROLOCK_MULTI_LOCK_HPP

#include <corolock/connection.hpp>
#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/lease.hpp>
#include <corolock/lock_handle_base.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corolock {

namespace detail {
class lock_transport;
struct multi_core;
struct multi_wait;
} // namespace detail

/// What `multi_lock` gives: one acquisition of every name of the set, all-or-nothing. Move-only.
/// It holds one `lease` per name, in name order (byte-wise sorted), each with its own fencing
/// token and watchdog; nothing else can release or prove them.
///
/// Destroying a multi_lease that owns its names never blocks: every member is released without
/// waiting (one owner-checked release per name, queued together).
///
/// Thread safety: one multi_lease is used by one coroutine at a time; the getters may be called
/// from any thread.
/// Executors, lifetime: as `lease`.
class COROLOCK_DECL multi_lease {
public:
    /// The clock that deadlines and lease ends are read on.
    using clock = std::chrono::steady_clock;

    /// Owns nothing: also what a try-acquire gives when another owner holds one of the names.
    multi_lease() noexcept = default;
    /// Takes `other`'s ownership; `other` is left empty.
    multi_lease(multi_lease&&) noexcept = default;
    /// Releases what this multi_lease owned (without waiting), then takes `other`'s.
    multi_lease& operator=(multi_lease&&) noexcept = default;
    ~multi_lease() = default;

    /// True if this object owns an acquisition it has not released (a member may be lost).
    bool owns() const noexcept { return !members_.empty(); }
    /// Same as `owns()`.
    explicit operator bool() const noexcept { return owns(); }

    /// Owns, and every member is valid (not reported lost, before its local deadline).
    bool valid() const noexcept;
    /// The earliest `valid_until()` of the members; `time_point::min()` when empty.
    clock::time_point valid_until() const noexcept;
    /// Some member was reported lost (which one: `members()`).
    bool lost() const noexcept;
    /// The fencing token of `name`'s member (as `lease::token`); value 0 when empty or `name`
    /// is not in the set.
    fencing_token token(std::string_view name) const noexcept;
    /// Every member's token, in name order (as `multi_lock::names()`).
    std::vector<fencing_token> tokens() const;
    /// The members, in name order, for their names, tokens, owner ids and nested holds.
    std::span<const lease> members() const noexcept { return members_; }

    /// Completes when any member is lost.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the multi_lease may be moved or released meanwhile.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total: completes with `operation_aborted`.
    /// Errors: `lease_lost` or `max_hold_reached` (the first member lost);
    /// `operation_aborted` when released first or cancelled; `not_owner` when empty.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_lost(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, std::shared_ptr<detail::multi_wait> w) {
                if (!w)
                    return detail::fail_empty(std::move(handler));
                wait_lost_impl(std::move(w), std::move(handler));
            },
            token, prepare_wait());
    }

    /// Releases every member (owner-checked compare-and-delete each, sent in one write) and
    /// wakes their waiters. The multi_lease is empty from the call on.
    ///
    /// Completion signature: `void(error_code)`, once every member's release has answered.
    /// Object lifetimes: none (the multi_lease is consumed when this is called).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none once called (it completes promptly).
    /// Errors: `lease_lost` or `max_hold_reached` when any member was lost (the critical
    /// section may have overlapped a later owner of that name); `not_owner` when empty;
    /// connection errors (unknown outcome: the keys expire with their leases). A loss is
    /// reported before any other error.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_release(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, std::vector<lease> members,
               std::shared_ptr<const detail::lock_transport> conn) {
                if (members.empty())
                    return detail::fail_empty(std::move(handler));
                release_impl(std::move(members), std::move(conn), std::move(handler));
            },
            token, std::move(members_), std::move(conn_));
    }

private:
    friend struct detail::access;
    using handler_ec = boost::asio::any_completion_handler<void(error_code)>;
    multi_lease(std::vector<lease> members,
                std::shared_ptr<const detail::lock_transport> conn) noexcept
        : members_(std::move(members)), conn_(std::move(conn)) {}
    std::shared_ptr<detail::multi_wait> prepare_wait();
    static void wait_lost_impl(std::shared_ptr<detail::multi_wait> w, handler_ec h);
    static void release_impl(std::vector<lease> members,
                             std::shared_ptr<const detail::lock_transport> conn, handler_ec h);

    std::vector<lease> members_; // in name order
    std::shared_ptr<const detail::lock_transport> conn_;
};

/// An all-or-nothing lock over several names on one connection: a handle meant to be shared,
/// like `mutex`. Every acquisition holds every name (one `lease` per name, inside a
/// `multi_lease`) or none of them: no partial hold survives a try that finds a name held, a
/// timeout, a cancellation or an error. Two multi_locks over overlapping sets never deadlock:
/// names are waited for in one global order (byte-wise sorted). See doc/multi_lock.md.
///
/// Acquiring (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire): the lease
/// owns every name. On any error, cancellation or timeout every name taken so far is released,
/// and a grant still on the wire is given back.
/// - Object lifetimes: the multi_lock may be destroyed meanwhile (the acquire is cancelled).
/// - Errors: `invalid_argument` (empty set, duplicate name), `invalid_name`, `invalid_lease`
///   (before anything is sent); `wrong_type`; `not_connected`; other connection and server
///   errors.
/// - A try makes one attempt at every name, sent in one write: the names granted are released at
///   once unless all were (an empty lease: another owner holds at least one name); it also
///   fails with `connection_lost` when the connection drops with the attempt on the wire (what
///   it took is undone).
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection (or cluster) must outlive the multi_lock. Destroying it cancels its
/// pending acquires (`operation_aborted`); multi_leases already given out live on.
class COROLOCK_DECL multi_lock : public lock_handle_base<multi_lock, multi_lease> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;

    /// No I/O. `opts` applies to every name. An empty set or a name given twice is reported by
    /// the first acquire (`invalid_argument`), an invalid name as `mutex` does.
    multi_lock(connection& conn, std::vector<std::string> names, mutex_options opts = {});
    /// The same over a Redis Cluster: each name is locked at its own slot's master (the names
    /// need not share a slot); the cluster must outlive the multi_lock. No I/O.
    multi_lock(cluster& cl, std::vector<std::string> names, mutex_options opts = {});
    ~multi_lock();
    multi_lock(const multi_lock&) = delete;
    multi_lock& operator=(const multi_lock&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The names in acquisition order (sorted, as given when they contain a duplicate).
    const std::vector<std::string>& names() const noexcept;
    /// The options given at construction.
    const mutex_options& options() const noexcept;

    /// Cancels every pending acquire of this multi_lock (`operation_aborted`).
    void cancel();

private:
    friend class lock_handle_base<multi_lock, multi_lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, multi_lease)>;

    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::multi_core> core_;
};

} // namespace corolock

#endif
