// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SEMAPHORE_HPP
#define COROLOCK_SEMAPHORE_HPP

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
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace corolock {

namespace detail {
struct semaphore_core;
}

class connection;
class cluster;

/// What a semaphore's name holds on the server (`semaphore::async_usage`).
struct semaphore_usage {
    std::int64_t limit = 0; ///< the limit the name is in use with (0: no key, nothing held)
    std::int64_t used = 0;  ///< permits held by live leases
};

/// A counting semaphore across processes: at most `limit` permits of one name are held at any
/// instant, each acquisition a `lease` of k permits (k = 1 by default) with its own owner, its
/// own deadline on the server's clock, the watchdog's renewals and `async_wait_lost`, exactly as
/// a mutex's lease. A crashed holder's permits come back when its lease ends; a release or a
/// renewal by anyone but the owner changes nothing. A handle meant to be shared, like `mutex`.
/// See doc/semaphore.md for the keys, scripts and guarantees.
///
/// A semaphore's lease has no fencing token (`lease::token().value()` is 0): its
/// `lease::async_fenced_eval` runs the body only while the lease's permits are live on the
/// server's clock, so a holder stalled past its lease is refused at the server.
///
/// Every acquisition of one name must pass the same limit: another limit is refused with
/// `limit_mismatch` (two deployments that disagree, or a stale configuration), never mixed;
/// `async_set_limit` changes it.
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection (or cluster) must outlive the semaphore. Destroying it cancels its
/// pending acquires; leases already given out live on.
class COROLOCK_DECL semaphore {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// The clock that deadlines and lease ends are read on.
    using clock = std::chrono::steady_clock;
    /// A wait, lease or window length on `clock`.
    using duration = clock::duration;

    /// No I/O. Invalid arguments (a limit of 0 or above 10^9, options out of range) are reported
    /// by the first acquire. `opts.fence_retention` is not used (no tokens).
    semaphore(connection& conn, std::string name, std::size_t limit, mutex_options opts = {});
    /// The same semaphore over a Redis Cluster: its one key lives in the name's slot.
    semaphore(cluster& c, std::string name, std::size_t limit, mutex_options opts = {});
    ~semaphore();
    semaphore(const semaphore&) = delete;
    semaphore& operator=(const semaphore&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The limit given at construction.
    std::size_t limit() const noexcept;
    /// The options given at construction.
    const mutex_options& options() const noexcept;

    /// Waits until `permits` permits are ours, as one lease.
    ///
    /// Completion signature: `void(error_code, lease)`; the lease holds the permits on success.
    /// Object lifetimes: the semaphore may be destroyed meanwhile (the acquire is then
    /// cancelled).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total. Completes promptly with `operation_aborted`; if
    /// the script on the wire took the permits, they are given back when its reply arrives.
    /// Errors: `invalid_name`, `invalid_lease`, `invalid_argument` (`permits` is 0 or above the
    /// limit, or an option out of range; before anything is sent); `limit_mismatch` (the name is
    /// in use with another limit); `wrong_type` (a foreign key at the name); `not_connected`;
    /// other connection and server errors. A lost connection during the wait is ridden out (the
    /// unknown attempt is undone).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(std::size_t permits = 1, CompletionToken&& token = {}) {
        return initiate(permits, clock::time_point::max(), false,
                        std::forward<CompletionToken>(token));
    }

    /// As async_acquire, but gives up after `wait`.
    ///
    /// Completion signature: `void(error_code, lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire, plus `invalid_wait` when `wait` is negative, and when `wait`
    /// passed first: `acquire_timeout` if the permits were seen taken, `server_timeout` if no
    /// attempt was ever answered.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_for(duration wait, std::size_t permits = 1, CompletionToken&& token = {}) {
        return initiate(permits, detail::deadline_of(wait), false,
                        std::forward<CompletionToken>(token));
    }

    /// One attempt, no waiting for permits; the reply is waited for at most
    /// `mutex_options::try_timeout`.
    ///
    /// Completion signature: `void(error_code, lease)`; an empty lease with no error means the
    /// permits are taken.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire, plus `connection_lost`, `server_timeout` and `lease_lost` as
    /// for `mutex::async_try_acquire` (each undoes the attempt if it took the permits).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(std::size_t permits = 1, CompletionToken&& token = {}) {
        return initiate(permits, clock::time_point::max(), true,
                        std::forward<CompletionToken>(token));
    }

    /// Cancels every pending acquire of this semaphore (`operation_aborted`). Leases are
    /// untouched.
    void cancel();

    /// The limit and the permits held by live leases, as the server sees them now.
    ///
    /// Completion signature: `void(error_code, semaphore_usage)`.
    /// Object lifetimes: the semaphore may be destroyed meanwhile.
    /// Executor: as `connection::async_exec`.
    /// Cancellation: as `connection::async_exec`.
    /// Errors: as `connection::async_exec`, plus `invalid_name` (before anything is sent) and
    /// `wrong_type`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_usage(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, semaphore_usage)>(
            [](auto handler, semaphore* self) { self->usage_impl(std::move(handler)); }, token,
            this);
    }

    /// Changes the limit the name is in use with (an administrator's tool). Leases held stay
    /// held, even above a lower limit; new acquisitions then need the new limit (a handle made
    /// with the old one gets `limit_mismatch`). A name not in use takes its limit from its next
    /// acquisition, so this does nothing there.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the semaphore may be destroyed meanwhile.
    /// Executor: as `connection::async_exec`.
    /// Cancellation: as `connection::async_exec`.
    /// Errors: as `connection::async_exec`, plus `invalid_name`, `invalid_argument` (0 or above
    /// 10^9; before anything is sent) and `wrong_type`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_set_limit(std::size_t limit, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, semaphore* self, std::size_t limit) {
                self->set_limit_impl(limit, std::move(handler));
            },
            token, this, limit);
    }

private:
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, lease)>;

    template <class CompletionToken>
    auto initiate(std::size_t permits, clock::time_point deadline, bool once,
                  CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, lease)>(
            [](auto handler, semaphore* self, std::size_t permits, clock::time_point deadline,
               bool once) { self->acquire_impl(permits, deadline, once, std::move(handler)); },
            token, this, permits, deadline, once);
    }
    void acquire_impl(std::size_t permits, clock::time_point deadline, bool once,
                      acquire_handler h);
    void usage_impl(boost::asio::any_completion_handler<void(error_code, semaphore_usage)> h);
    void set_limit_impl(std::size_t limit, boost::asio::any_completion_handler<void(error_code)> h);

    std::shared_ptr<detail::semaphore_core> core_;
};

} // namespace corolock

#endif
