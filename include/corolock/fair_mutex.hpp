// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_FAIR_MUTEX_HPP
#define COROLOCK_FAIR_MUTEX_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/lease.hpp>
#include <corolock/lock_handle_base.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace corolock {

namespace detail {
struct mutex_core;
}

class connection;
class cluster;

/// A lock granted in arrival order across processes: each waiter takes a place in a line kept
/// on the server, and when the lock is free only the head of the line may take it. Its leases
/// are a mutex's (owner, fencing token, watchdog, lost signal). See doc/fair_mutex.md.
///
/// - A waiter's place is itself a short lease: each of its attempts (at least every
///   `retry_max`) keeps it `2 × retry_max + 1 s` (5 s by default), and a waiter that gives up
///   (cancelled, timed out) leaves the line at once. A crashed waiter at the head holds the line
///   back for at most that long; dead places expire together, never one after another.
/// - A release names the new head, and only that waiter's process retries.
/// - A try never jumps a line that has a live waiter.
///
/// One name serves one kind of lock: a plain `mutex` on a fair_mutex's name ignores its line.
///
/// Acquiring (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire): as `mutex`'s.
/// A waiter takes a place in the line and is granted when it is the head and the lock is free;
/// a cancelled or timed-out waiter leaves the line at once. A try takes no place: it succeeds
/// only when the lock is free and nobody waits (else an empty lease).
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection (or cluster) must outlive the fair_mutex. Destroying it cancels its
/// pending acquires; leases already given out live on.
class COROLOCK_DECL fair_mutex : public lock_handle_base<fair_mutex, lease> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// As `mutex`'s.
    static constexpr lock_capabilities capabilities = mutex::capabilities;

    /// No I/O. Invalid arguments are reported by the first acquire.
    fair_mutex(connection& conn, std::string name, mutex_options opts = {});
    /// The same lock over a Redis Cluster: its keys share the name's slot.
    fair_mutex(cluster& c, std::string name, mutex_options opts = {});
    ~fair_mutex();
    fair_mutex(const fair_mutex&) = delete;
    fair_mutex& operator=(const fair_mutex&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const mutex_options& options() const noexcept;

    /// Cancels every pending acquire of this fair_mutex (`operation_aborted`).
    void cancel();

private:
    friend class lock_handle_base<fair_mutex, lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, lease)>;

    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::mutex_core> core_;
};

} // namespace corolock

#endif
