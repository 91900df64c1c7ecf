// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_MUTEX_HPP
#define COROLOCK_MUTEX_HPP

#include <corolock/connection.hpp>
#include <corolock/error.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace corolock {

namespace detail {
struct lock_state;
}

/// Policy of one lock object. A zero duration turns its feature off, as the comment says.
struct mutex_options {
    /// Lease of each acquisition, 10 ms to 365 days. With the watchdog it is renewed every
    /// lease/3 while held.
    std::chrono::steady_clock::duration lease = std::chrono::seconds(30);
    /// Renew the lease while held (true), or let it simply expire (false: fixed lease).
    bool watchdog = true;
    /// Stop renewing after this total hold time and report the lease lost (0: no limit).
    std::chrono::steady_clock::duration max_hold = std::chrono::steady_clock::duration::zero();
    /// Fallback back-off between attempts when no release message arrives: exponential from
    /// retry_base to retry_max, full jitter, capped by the holder's TTL and the wait deadline.
    std::chrono::steady_clock::duration retry_base = std::chrono::milliseconds(50);
    std::chrono::steady_clock::duration retry_max = std::chrono::seconds(2);
    /// Called (posted to the connection's executor) when a held lease is lost, with the reason.
    /// Being posted, it may run after a later release or acquire has completed; to tie a loss to
    /// one critical section, use `async_wait_lost` (or `async_with_lock`) instead.
    std::function<void(error_code)> on_lost;
};

/// Process-wide counters of the lock layer on one connection.
struct lock_stats {
    std::uint64_t attempts = 0;       ///< acquire scripts sent
    std::uint64_t pubsub_wakeups = 0; ///< waiters woken by a release message
    std::uint64_t timer_wakeups = 0;  ///< waiters woken by the fallback timer
    std::uint64_t renewals = 0;       ///< leases renewed by the watchdog
    std::uint64_t renewal_calls = 0;  ///< renew scripts sent (each renews up to 100 locks)
    std::uint64_t leases_lost = 0;
    std::uint64_t fast_reentries = 0; ///< nested acquires served without a round trip
};
lock_stats get_lock_stats(connection& conn);

/// A Lua write that runs only while the caller's fencing token is the newest for its lock:
/// `mutex::async_fenced_eval` fails with `error::stale_token` otherwise. The body uses KEYS and
/// ARGV as usual.
class fenced_script {
public:
    explicit fenced_script(std::string_view body);
    const script& wrapped() const noexcept { return script_; }

private:
    script script_;
};

/// A distributed, reentrant lock on one name, owned by this object (never by a thread). See
/// doc/design.md for the keys and scripts.
///
/// Ownership rule: one mutex object per logical owner. Two objects are two owners, even on one
/// thread; a coroutine that wants the lock makes its own object (no I/O on construction). A
/// second operation on an object while one is running fails with `operation_in_progress`, which
/// catches two coroutines sharing an object by accident.
///
/// Thread safety: distinct objects, safe; one object, not safe (as with Asio objects). State is
/// kept on the connection's strand; the getters are safe from any thread.
/// Lifetime: the connection must outlive the mutex. Destroying a mutex that holds the lock never
/// blocks: it stops renewing and schedules a full release.
class mutex {
public:
    using executor_type = boost::asio::any_io_executor;
    using duration = std::chrono::steady_clock::duration;

    mutex(connection& conn, std::string name, mutex_options opts = {});
    ~mutex();
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;

    executor_type get_executor() const noexcept;
    const std::string& name() const noexcept;
    /// 32 hex digits from a CSPRNG, unique to this object.
    const std::string& owner_id() const noexcept;

    /// Waits until the lock is held (reentrant: a nested acquire adds a hold).
    ///
    /// Completion signature: `void(error_code)`.
    /// Executor: completes on the token's associated executor (else the connection's), never
    /// inside this call.
    /// Cancellation: terminal. Completes promptly with `operation_aborted`; if the acquire script
    /// had already taken the lock, the hold is released when its reply arrives, and no watchdog
    /// starts.
    /// Errors: invalid_name, invalid_lease (before anything is sent); wrong_type;
    /// operation_in_progress; connection errors.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, mutex* self) {
                self->acquire_impl(duration::max(), std::move(handler));
            },
            token, this);
    }

    /// As async_acquire, but gives up after `wait` with `error::acquire_timeout`
    /// (`invalid_wait` if negative).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_for(duration wait, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, mutex* self, duration wait) {
                self->acquire_impl(wait, std::move(handler));
            },
            token, this, wait);
    }

    /// One attempt. Completion signature: `void(error_code, bool acquired)`; false means held by
    /// another owner (not an error). Cancellation and errors as async_acquire.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, bool)>(
            [](auto handler, mutex* self) { self->try_acquire_impl(std::move(handler)); }, token,
            this);
    }

    /// Releases one hold; the last one frees the key and wakes waiters.
    ///
    /// Completion signature: `void(error_code)`.
    /// Cancellation: none once sent (the release completes when Redis answers or the connection
    /// fails, both promptly), so a lock is never left in an unknown state by a cancelled release.
    /// Errors: not_owner (not held, or the lease was lost: nothing is sent to a new holder);
    /// operation_in_progress; connection errors (the lease then simply expires).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_release(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, mutex* self) { self->release_impl(std::move(handler)); }, token, this);
    }

    /// Completes with `error::lease_lost` (or `max_hold_reached`) when the lease held now is
    /// lost; with `operation_aborted` when it is released or the wait is cancelled; at once with
    /// `not_owner` if nothing is held.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_lost(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, mutex* self) { self->wait_lost_impl(std::move(handler)); }, token,
            this);
    }

    /// The server's remaining TTL of the lock key in ms (-2: no key, -1: no TTL).
    /// Completion signature: `void(error_code, std::int64_t)`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_remaining_ttl(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::int64_t)>(
            [](auto handler, mutex* self) { self->ttl_impl(std::move(handler)); }, token, this);
    }

    /// Deletes the lock whoever holds it and wakes its waiters (admin). Completion signature:
    /// `void(error_code, bool deleted)`.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_force_unlock(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, bool)>(
            [](auto handler, mutex* self) { self->force_unlock_impl(std::move(handler)); }, token,
            this);
    }

    /// Runs a fenced write with this holder's token: `error::stale_token` if a newer acquisition
    /// of the lock exists, `not_owner` if nothing is held. Completion signature:
    /// `void(error_code)`; the body's reply is in `resp`. Lifetimes: `s` and `resp` until
    /// completion; keys and args are copied.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_fenced_eval(const fenced_script& s, std::span<const std::string_view> keys,
                           std::span<const std::string_view> args, generic_response& resp,
                           CompletionToken&& token = {}) {
        auto req = std::make_shared<request>(fenced_request(s, keys, args));
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, mutex* self, const fenced_script* s, std::shared_ptr<request> req,
               generic_response* resp) {
                self->fenced_impl(*s, std::move(req), *resp, std::move(handler));
            },
            token, this, &s, std::move(req), &resp);
    }

    /// Local view: held by this object and not known to be lost.
    bool held() const noexcept;
    /// Holds of this object (0 when not held).
    std::size_t hold_count() const noexcept;
    /// Fencing token of the current acquisition (0 when never held).
    std::uint64_t token() const noexcept;
    /// The last lease was lost (until the next acquire).
    bool lost() const noexcept;

private:
    using handler_ec = boost::asio::any_completion_handler<void(error_code)>;
    void acquire_impl(duration wait, handler_ec h);
    void try_acquire_impl(boost::asio::any_completion_handler<void(error_code, bool)> h);
    void release_impl(handler_ec h);
    void wait_lost_impl(handler_ec h);
    void ttl_impl(boost::asio::any_completion_handler<void(error_code, std::int64_t)> h);
    void force_unlock_impl(boost::asio::any_completion_handler<void(error_code, bool)> h);
    void fenced_impl(const fenced_script& s, std::shared_ptr<request> req, generic_response& resp,
                     handler_ec h);
    request fenced_request(const fenced_script& s, std::span<const std::string_view> keys,
                           std::span<const std::string_view> args) const;

    std::shared_ptr<detail::lock_state> state_;
};

} // namespace corolock

#endif
