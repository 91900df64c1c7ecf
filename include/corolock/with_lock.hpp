// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_WITH_LOCK_HPP
#define COROLOCK_WITH_LOCK_HPP

#include <corolock/error.hpp>
#include <corolock/lease.hpp>
#include <corolock/lock_concepts.hpp>
#include <corolock/metrics.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace corolock {

/// What `with_lock(m, body)` returns: `T` for a body returning `boost::asio::awaitable<T>`.
template <class Lock, class Body>
using with_lock_result_t =
    typename std::invoke_result_t<Body&, typename Lock::lease_type&>::value_type;

/// What `try_with_lock(m, body)` returns: `std::optional<T>` for a body returning
/// `boost::asio::awaitable<T>` (empty: the lock was held), `bool` for `awaitable<void>` (false:
/// held).
template <class Lock, class Body>
using try_with_lock_result_t =
    std::conditional_t<std::is_void_v<with_lock_result_t<Lock, Body>>, bool,
                       std::optional<with_lock_result_t<Lock, Body>>>;

namespace detail {

// The body's value, kept in an optional so that a body cancelled by a loss (which completes
// with an exception and no value) needs no default-constructible result type.
// A body that throws before its first suspension (a plain function returning an awaitable)
// throws here, inside the group, as one that throws later.
template <class R, class Lease, class Body>
boost::asio::awaitable<std::optional<R>> run_body(Body& body, Lease& l) {
    co_return co_await body(l);
}

template <class Lease, class Body>
boost::asio::awaitable<void> run_void_body(Body& body, Lease& l) {
    co_await body(l);
}

// Completes when `l` is lost. A release by the body itself (which completes the lease's wait
// with `operation_aborted`, or `not_owner` when it came before the wait) is not a loss: the watch
// then lasts until the body ends and the group cancels it, so a body may release early and still
// return its value.
template <class Lease>
boost::asio::awaitable<error_code> watch_lost(Lease& l) {
    namespace asio = boost::asio;
    auto [ec] = co_await l.async_wait_lost(asio::as_tuple(asio::use_awaitable));
    // not_owner: the body released or moved the lease before this wait began.
    if (ec != asio::error::operation_aborted && ec != error::not_owner)
        co_return ec;
    auto state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none)
        co_return ec; // the group cancelled the wait: the body has ended
    asio::steady_timer forever(co_await asio::this_coro::executor,
                               asio::steady_timer::time_point::max());
    co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return ec;
}

// Runs `body(l)` while `l` is held, then releases `l` on every exit path (the shared part of
// with_lock and its bounded forms).
// With a meter, counts the hold (from `granted_at`) and the loss, once, on every exit path.
template <class Lease, class Body,
          class R = typename std::invoke_result_t<Body&, Lease&>::value_type>
boost::asio::awaitable<R> run_locked(Lease l, Body& body, lock_meter* meter,
                                     std::chrono::steady_clock::time_point granted_at) {
    namespace asio = boost::asio;
    auto ex = co_await asio::this_coro::executor;
    std::exception_ptr body_error;
    error_code lost_ec;
    bool lost_first = false;
    [[maybe_unused]] std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
    if constexpr (std::is_void_v<R>) {
        auto [order, e, we, lec] =
            co_await asio::experimental::make_parallel_group(
                asio::co_spawn(ex, run_void_body(body, l), asio::deferred),
                asio::co_spawn(ex, watch_lost(l), asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), asio::deferred);
        lost_first = order[0] == 1;
        body_error = e;
        lost_ec = lec;
    } else {
        auto [order, e, v, we, lec] =
            co_await asio::experimental::make_parallel_group(
                asio::co_spawn(ex, run_body<R>(body, l), asio::deferred),
                asio::co_spawn(ex, watch_lost(l), asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), asio::deferred);
        lost_first = order[0] == 1;
        body_error = e;
        lost_ec = lec;
        value = std::move(v);
    }
    // The body has ended, by itself or cut by the loss: the release is sent now.
    const auto ended_at = std::chrono::steady_clock::now();
    // Release even when this coroutine is being cancelled.
    co_await asio::this_coro::reset_cancellation_state();
    const bool owned = l.owns(); // the body may have released it (not_owner now)
    auto [release_ec] = co_await l.async_release(asio::as_tuple(asio::use_awaitable));
    const bool lost_inside = lost_first && lost_ec && lost_ec != asio::error::operation_aborted;
    const bool lost_at_release = owned && release_ec == condition::lock_lost;
    if (meter)
        meter->record_hold(ended_at - granted_at, lost_inside || lost_at_release);
    if (lost_inside)
        throw boost::system::system_error(lost_ec);
    if (body_error)
        std::rethrow_exception(body_error);
    if (lost_at_release)
        throw boost::system::system_error(release_ec); // lost just before the release
    if constexpr (!std::is_void_v<R>)
        co_return std::move(*value);
}

// Acquires with `acquire(token)` (one of the handle's four acquire operations), counts the
// outcome in `meter` (if any), then runs the body as run_locked. `Out` is the body's `R`, or
// try_with_lock's result for a try, whose empty lease gives an empty `Out`.
template <class Lease, class Out, class Acquire, class Body>
boost::asio::awaitable<Out> acquire_and_run(Acquire acquire, Body body, lock_meter* meter) {
    namespace asio = boost::asio;
    using R = typename std::invoke_result_t<Body&, Lease&>::value_type;
    const auto called_at = std::chrono::steady_clock::now();
    std::tuple<error_code, Lease> got = co_await acquire(asio::as_tuple(asio::use_awaitable));
    const auto granted_at = std::chrono::steady_clock::now();
    const error_code ec = std::get<0>(got);
    Lease& l = std::get<1>(got);
    if (meter)
        meter->record_acquire(ec, l.owns(), granted_at - called_at);
    if (ec)
        throw boost::system::system_error(ec);
    if constexpr (std::is_same_v<Out, R>) {
        co_return co_await run_locked(std::move(l), body, meter, granted_at);
    } else {
        if (!l.owns())
            co_return Out{}; // held by another owner
        if constexpr (std::is_void_v<R>) {
            co_await run_locked(std::move(l), body, meter, granted_at);
            co_return true;
        } else {
            co_return Out(co_await run_locked(std::move(l), body, meter, granted_at));
        }
    }
}

// The handle's four acquire operations, each as acquire_and_run's `acquire(token)`.
template <class Lock>
auto acquire_now(Lock& m) {
    return [&m](auto token) { return m.async_acquire(token); };
}
template <class Lock>
auto acquire_within(Lock& m, typename Lock::clock::duration wait) {
    return [&m, wait](auto token) { return m.async_acquire_for(wait, token); };
}
template <class Lock>
auto acquire_by(Lock& m, typename Lock::clock::time_point deadline) {
    return [&m, deadline](auto token) { return m.async_acquire_until(deadline, token); };
}
template <class Lock>
auto acquire_once(Lock& m) {
    return [&m](auto token) { return m.async_try_acquire(token); };
}

} // namespace detail

/// Acquires `m`, runs `body(lease&)` (a callable returning `boost::asio::awaitable<T>`, given
/// the handle's `lease_type`), releases on every exit path (return, exception, cancellation)
/// and returns the body's `T` (`void` bodies work too). If the lease is lost while the body
/// runs, the body is cancelled through its cancellation slot and this throws
/// `system_error(error::lease_lost)` (or `max_hold_reached`). Exceptions of the body are
/// rethrown after the release; so is a failed acquire (`system_error`, as `use_awaitable`
/// throws it). Releasing on cancellation does not recall a write the body started on another
/// connection: it can land after the next owner's, so fence such writes
/// (`lease::async_fenced_eval`, or the lease's token checked by the store; doc/usage.md,
/// "The scoped form"). Works with every `unfenced_lock_handle`: `mutex`, `redlock`, `local_mutex`,
/// `zk_mutex`, `pg_mutex` (lock_concepts.hpp). Coroutine-only (hence no `async_` prefix and no
/// token): for other completion styles, use the handle's `async_acquire` and the lease's
/// `async_release`. `T` is returned by value (no references).
///
/// With a `meter` (metrics.hpp; not owned: it must outlive the call), counts there the
/// acquisition's outcome and wait, the hold, and a loss once (inside the body or reported by the
/// release), on every path. Any thread may read the meter meanwhile.
template <unfenced_lock_handle Lock, class Body>
boost::asio::awaitable<with_lock_result_t<Lock, Body>> with_lock(Lock& m, Body body,
                                                                 lock_meter* meter = nullptr) {
    return detail::acquire_and_run<typename Lock::lease_type, with_lock_result_t<Lock, Body>>(
        detail::acquire_now(m), std::move(body), meter);
}

/// As `with_lock`, but waits at most `wait` for the lock (the handle's `async_acquire_for`):
/// past it, throws `system_error(error::acquire_timeout)` (the lock was seen held) or
/// `error::server_timeout` (no attempt was answered), and the body never runs. Only the wait
/// is bounded: once the lock is held the body runs to its end, as long as the lease holds (a
/// critical section cut at an arbitrary point is rarely what a caller wants). To bound the
/// body too, give it its own deadline or race it against a timer inside. `meter`: as
/// `with_lock`'s.
template <unfenced_lock_handle Lock, class Body>
boost::asio::awaitable<with_lock_result_t<Lock, Body>>
with_lock_for(Lock& m, typename Lock::clock::duration wait, Body body,
              lock_meter* meter = nullptr) {
    return detail::acquire_and_run<typename Lock::lease_type, with_lock_result_t<Lock, Body>>(
        detail::acquire_within(m, wait), std::move(body), meter);
}

/// As `with_lock_for`, with an absolute deadline on the handle's clock (`async_acquire_until`),
/// metered alike.
template <unfenced_lock_handle Lock, class Body>
boost::asio::awaitable<with_lock_result_t<Lock, Body>>
with_lock_until(Lock& m, typename Lock::clock::time_point deadline, Body body,
                lock_meter* meter = nullptr) {
    return detail::acquire_and_run<typename Lock::lease_type, with_lock_result_t<Lock, Body>>(
        detail::acquire_by(m, deadline), std::move(body), meter);
}

/// As `with_lock`, but one attempt (the handle's `async_try_acquire`): if another owner holds
/// the lock, the body does not run and this returns an empty `std::optional<T>` (`false` for a
/// `void` body); else the body's value (`true`). Errors are thrown, and `meter` counts (a held
/// lock as `acquire_outcome::busy`), as by `with_lock`.
template <unfenced_lock_handle Lock, class Body>
boost::asio::awaitable<try_with_lock_result_t<Lock, Body>>
try_with_lock(Lock& m, Body body, lock_meter* meter = nullptr) {
    return detail::acquire_and_run<typename Lock::lease_type, try_with_lock_result_t<Lock, Body>>(
        detail::acquire_once(m), std::move(body), meter);
}

} // namespace corolock

#endif
