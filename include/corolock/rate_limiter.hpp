// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_RATE_LIMITER_HPP
#define COROLOCK_RATE_LIMITER_HPP

#include <corolock/connection.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock {

class cluster;

namespace detail {
struct rate_core;
}

/// The limit of a rate_limiter: `rate` units per `period` on average, with up to `burst` units
/// admitted at once. Every process that shares a limiter's name should use the same limit (a
/// different one is honoured per call, see doc/rate_limiter.md). Checked before anything is sent
/// (`invalid_argument`).
struct rate_limit {
    /// Units per period, at least 1.
    std::uint64_t rate = 1;
    /// 1 ms to 365 days; used in whole microseconds (rounded up).
    std::chrono::steady_clock::duration period = std::chrono::seconds(1);
    /// Units admitted at once, at least 1 (and at least the largest cost). burst x rate must stay
    /// below 2^52, and burst x period / rate at or below 365 days.
    std::uint64_t burst = 1;
};

/// What the server decided for one call.
struct rate_decision {
    /// True: the units were taken (now, or for a slot `wait` from the reply). False: nothing
    /// was taken.
    bool admitted = false;
    /// When admitted: how long after the reply the slot starts (zero: at once).
    std::chrono::steady_clock::duration wait{};
    /// When refused: how long, counted by the server, until the same call would be admitted if
    /// nobody else took units meanwhile.
    std::chrono::steady_clock::duration retry_after{};
    /// The server's TIME when it decided, in microseconds since the Unix epoch.
    std::int64_t server_time_us = 0;
};

/// A rate limit shared by every process that uses the same name on the same Redis: GCRA (the
/// generic cell rate algorithm) on the server's clock. One string key, the name, holds the
/// theoretical arrival time; its TTL never exceeds burst x period / rate + the call's max_wait
/// (rounded up to the millisecond), so an idle limiter leaves nothing in Redis. Over any window of
/// server time of length L, the units admitted are at most burst + L x rate / period (see
/// doc/rate_limiter.md).
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection (or cluster) must outlive the limiter. Destroying the limiter cancels
/// its sleeping acquires (as `cancel`).
class COROLOCK_DECL rate_limiter {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// A wait, lease or window length on `clock`.
    using duration = std::chrono::steady_clock::duration;
    /// The type-erased handler that `async_acquire` hands to the compiled code.
    using handler_type = boost::asio::any_completion_handler<void(error_code, rate_decision)>;

    /// No I/O. Invalid arguments are reported by every call (`invalid_name`, `invalid_argument`).
    rate_limiter(connection& conn, std::string name, rate_limit limit);
    /// The same over a Redis Cluster: the key goes to the master of the name's slot (following
    /// MOVED and ASK). `cluster::async_run` must be running. No I/O here.
    rate_limiter(cluster& c, std::string name, rate_limit limit);
    ~rate_limiter();
    rate_limiter(const rate_limiter&) = delete;
    rate_limiter& operator=(const rate_limiter&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The limit given at construction.
    const rate_limit& limit() const noexcept;

    /// Takes `cost` units now if the limit allows it, else nothing. One script, one round trip.
    ///
    /// Completion signature: `void(error_code, rate_decision)`; `admitted` false with no error
    /// means refused (not an error), `retry_after` then says when to try again.
    /// Object lifetimes: the limiter may be destroyed meanwhile (the call is then cancelled); the
    /// connection must outlive it.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total. Completes promptly with `operation_aborted`; if the
    /// script had already taken the units, they are refunded when its reply arrives (best
    /// effort: only while nobody took units after them).
    /// Errors: `invalid_name`, `invalid_argument` (cost outside 1..burst, a bad limit), before
    /// anything is sent; `wrong_type` (another kind of key at the name); `not_connected`;
    /// `connection_lost` (the outcome is unknown: the units may be spent; never re-sent);
    /// `unexpected_reply`; other server errors.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(std::uint64_t cost = 1, CompletionToken&& token = {}) {
        return initiate(cost, duration::zero(), false, std::forward<CompletionToken>(token));
    }

    /// Takes `cost` units in one round trip if their slot starts within `max_wait`: the server
    /// reserves the slot at once and the reply says how long to wait before using it (no retry,
    /// no herd: every caller gets its own slot). The caller does the waiting.
    ///
    /// Completion signature: `void(error_code, rate_decision)`; `admitted` with `wait` = how long
    /// until the slot; not admitted (nothing taken, no error) when the slot would start later
    /// than `max_wait`.
    /// Object lifetimes: as async_try_acquire.
    /// Executor: as async_try_acquire.
    /// Cancellation: as async_try_acquire (a reservation made before the cancellation is
    /// refunded, best effort). A reservation whose reply is lost stays spent.
    /// Errors: as async_try_acquire, plus `invalid_argument` for `max_wait` outside 0..365 days.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_reserve(std::uint64_t cost, duration max_wait, CompletionToken&& token = {}) {
        return initiate(cost, max_wait, false, std::forward<CompletionToken>(token));
    }

    /// async_reserve, then sleeps on a timer until the slot starts: completes when the caller may
    /// use its units.
    ///
    /// Completion signature: `void(error_code, rate_decision)`; `admitted` once the slot has
    /// started; not admitted (nothing taken, no error, at once) when it would start later than
    /// `max_wait`.
    /// Object lifetimes: the limiter may be destroyed meanwhile (the sleep is then cancelled);
    /// the connection must outlive the operation.
    /// Executor: as async_try_acquire; the sleep runs on the connection's strand.
    /// Cancellation: terminal, partial, total, and `cancel()`. Completes promptly with
    /// `operation_aborted`; a slot already reserved is refunded by a script that moves the
    /// limiter back only while its key still holds this reservation (nobody reserved after it),
    /// so a refund never gives away another caller's slot; else the slot stays spent.
    /// Errors: as async_reserve.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(std::uint64_t cost, duration max_wait, CompletionToken&& token = {}) {
        return initiate(cost, max_wait, true, std::forward<CompletionToken>(token));
    }

    /// Cancels every sleeping or pending acquire of this limiter (as a terminal cancellation).
    /// Any thread; no I/O but the refunds.
    void cancel();

private:
    template <class CompletionToken>
    auto initiate(std::uint64_t cost, duration max_wait, bool sleep, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, rate_decision)>(
            [](auto handler, rate_limiter* self, std::uint64_t cost, duration max_wait,
               bool sleep) { self->call_impl(cost, max_wait, sleep, std::move(handler)); },
            token, this, cost, max_wait, sleep);
    }
    void call_impl(std::uint64_t cost, duration max_wait, bool sleep, handler_type h);

    std::shared_ptr<detail::rate_core> core_;
};

} // namespace corolock

#endif
