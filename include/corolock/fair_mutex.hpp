// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_FAIR_MUTEX_HPP
#define COROLOCK_FAIR_MUTEX_HPP

#include <corolock/detail/deadline.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/lease.hpp>
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
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection (or cluster) must outlive the fair_mutex. Destroying it cancels its
/// pending acquires; leases already given out live on.
class COROLOCK_DECL fair_mutex {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// The clock that deadlines and lease ends are read on.
    using clock = std::chrono::steady_clock;
    /// A wait, lease or window length on `clock`.
    using duration = clock::duration;

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

    /// Takes a place in the line and waits until it is the head and the lock is free.
    ///
    /// Completion signature: `void(error_code, lease)`.
    /// Object lifetimes: the fair_mutex may be destroyed meanwhile (the acquire is then
    /// cancelled).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total. Completes promptly with `operation_aborted`; the
    /// place leaves the line, and a grant on the wire is given back when its reply arrives.
    /// Errors: as `mutex::async_acquire`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {}) {
        return initiate(clock::time_point::max(), false, std::forward<CompletionToken>(token));
    }

    /// As async_acquire, but gives up after `wait` (and leaves the line).
    ///
    /// Completion signature: `void(error_code, lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as `mutex::async_acquire_for`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_for(duration wait, CompletionToken&& token = {}) {
        return initiate(detail::deadline_of(wait), false, std::forward<CompletionToken>(token));
    }

    /// One attempt, no place in the line: it succeeds only when the lock is free and nobody
    /// waits.
    ///
    /// Completion signature: `void(error_code, lease)`; an empty lease with no error means the
    /// lock is held or has waiters.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as `mutex::async_try_acquire`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(CompletionToken&& token = {}) {
        return initiate(clock::time_point::max(), true, std::forward<CompletionToken>(token));
    }

    /// Cancels every pending acquire of this fair_mutex (`operation_aborted`).
    void cancel();

private:
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, lease)>;

    template <class CompletionToken>
    auto initiate(clock::time_point deadline, bool once, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, lease)>(
            [](auto handler, fair_mutex* self, clock::time_point deadline, bool once) {
                self->acquire_impl(deadline, once, std::move(handler));
            },
            token, this, deadline, once);
    }
    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::mutex_core> core_;
};

} // namespace corolock

#endif
