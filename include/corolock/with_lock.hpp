// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_WITH_LOCK_HPP
#define COROLOCK_WITH_LOCK_HPP

#include <corolock/error.hpp>
#include <corolock/lease.hpp>
#include <corolock/lock_concepts.hpp>
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

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace corolock {

/// What `with_lock(m, body)` returns: `T` for a body returning `boost::asio::awaitable<T>`.
template <class Lock, class Body>
using with_lock_result_t =
    typename std::invoke_result_t<Body&, typename Lock::lease_type&>::value_type;

namespace detail {

// The body's value, kept in an optional so that a body cancelled by a loss (which completes
// with an exception and no value) needs no default-constructible result type.
template <class R, class Lease, class Body>
boost::asio::awaitable<std::optional<R>> run_body(Body& body, Lease& l) {
    co_return co_await body(l);
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
template <class Lease, class Body,
          class R = typename std::invoke_result_t<Body&, Lease&>::value_type>
boost::asio::awaitable<R> run_locked(Lease l, Body& body) {
    namespace asio = boost::asio;
    auto ex = co_await asio::this_coro::executor;
    std::exception_ptr body_error;
    error_code lost_ec;
    bool lost_first = false;
    [[maybe_unused]] std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
    if constexpr (std::is_void_v<R>) {
        auto [order, e, we, lec] =
            co_await asio::experimental::make_parallel_group(
                asio::co_spawn(ex, body(l), asio::deferred),
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
    // Release even when this coroutine is being cancelled.
    co_await asio::this_coro::reset_cancellation_state();
    const bool owned = l.owns(); // the body may have released it (not_owner now)
    auto [release_ec] = co_await l.async_release(asio::as_tuple(asio::use_awaitable));
    if (lost_first && lost_ec && lost_ec != asio::error::operation_aborted)
        throw boost::system::system_error(lost_ec);
    if (body_error)
        std::rethrow_exception(body_error);
    if (owned && release_ec == condition::lock_lost)
        throw boost::system::system_error(release_ec); // lost just before the release
    if constexpr (!std::is_void_v<R>)
        co_return std::move(*value);
}

} // namespace detail

/// Acquires `m`, runs `body(lease&)` (a callable returning `boost::asio::awaitable<T>`, given
/// the handle's `lease_type`), releases on every exit path (return, exception, cancellation)
/// and returns the body's `T` (`void` bodies work too). If the lease is lost while the body
/// runs, the body is cancelled through its cancellation slot and this throws
/// `system_error(error::lease_lost)` (or `max_hold_reached`). Exceptions of the body are
/// rethrown after the release; so is a failed acquire (`system_error`, as `use_awaitable`
/// throws it). Works with every `unfenced_lock_handle`: `mutex`, `redlock`, `local_mutex`,
/// `zk_mutex`, `pg_mutex` (lock_concepts.hpp). Coroutine-only (hence no `async_` prefix and no
/// token): for other completion styles, use the handle's `async_acquire` and the lease's
/// `async_release`. `T` is returned by value (no references).
template <unfenced_lock_handle Lock, class Body>
boost::asio::awaitable<with_lock_result_t<Lock, Body>> with_lock(Lock& m, Body body) {
    typename Lock::lease_type l = co_await m.async_acquire(boost::asio::use_awaitable);
    co_return co_await detail::run_locked(std::move(l), body);
}

/// As `with_lock`, but waits at most `wait` for the lock (the handle's `async_acquire_for`):
/// past it, throws `system_error(error::acquire_timeout)` (the lock was seen held) or
/// `error::server_timeout` (no attempt was answered), and the body never runs. Only the wait
/// is bounded: once the lock is held the body runs to its end, as long as the lease holds (a
/// critical section cut at an arbitrary point is rarely what a caller wants). To bound the
/// body too, give it its own deadline or race it against a timer inside.
template <unfenced_lock_handle Lock, class Body>
boost::asio::awaitable<with_lock_result_t<Lock, Body>>
with_lock_for(Lock& m, typename Lock::clock::duration wait, Body body) {
    typename Lock::lease_type l = co_await m.async_acquire_for(wait, boost::asio::use_awaitable);
    co_return co_await detail::run_locked(std::move(l), body);
}

/// As `with_lock_for`, with an absolute deadline on the handle's clock (`async_acquire_until`).
template <unfenced_lock_handle Lock, class Body>
boost::asio::awaitable<with_lock_result_t<Lock, Body>>
with_lock_until(Lock& m, typename Lock::clock::time_point deadline, Body body) {
    typename Lock::lease_type l =
        co_await m.async_acquire_until(deadline, boost::asio::use_awaitable);
    co_return co_await detail::run_locked(std::move(l), body);
}

} // namespace corolock

#endif
