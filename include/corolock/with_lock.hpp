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
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <exception>

namespace corolock {

/// Acquires `m`, runs `body(lease&)` (a callable returning `boost::asio::awaitable<void>`, given
/// the handle's `lease_type`), and releases on every exit path: return, exception, cancellation.
/// If the lease is lost while the body runs, the body is cancelled through its cancellation slot
/// and this throws `system_error(error::lease_lost)` (or `max_hold_reached`). Exceptions of the
/// body are rethrown after the release. Works with every `unfenced_lock_handle`: `mutex`,
/// `redlock`, `local_mutex` (lock_concepts.hpp). Coroutine-only (hence no `async_` prefix and no
/// token): for other completion styles, use the handle's `async_acquire` and the lease's
/// `async_release`.
template <unfenced_lock_handle Lock, class Body>
boost::asio::awaitable<void> with_lock(Lock& m, Body body) {
    namespace asio = boost::asio;
    typename Lock::lease_type l = co_await m.async_acquire(asio::use_awaitable);
    auto ex = co_await asio::this_coro::executor;
    auto [order, body_error, lost_ec] =
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ex, body(l), asio::deferred), l.async_wait_lost(asio::deferred))
            .async_wait(asio::experimental::wait_for_one(), asio::deferred);
    // Release even when this coroutine is being cancelled.
    co_await asio::this_coro::reset_cancellation_state();
    auto [release_ec] = co_await l.async_release(asio::as_tuple(asio::use_awaitable));
    if (order[0] == 1 && lost_ec && lost_ec != asio::error::operation_aborted)
        throw boost::system::system_error(lost_ec);
    if (body_error)
        std::rethrow_exception(body_error);
    if (release_ec == condition::lock_lost)
        throw boost::system::system_error(release_ec); // lost just before the release
}

} // namespace corolock

#endif
