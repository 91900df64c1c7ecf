// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_WITH_LOCK_HPP
#define COROLOCK_WITH_LOCK_HPP

#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <cstdint>
#include <exception>
#include <utility>

namespace corolock {

/// What a critical section sees of the lock it runs under.
class lease {
public:
    explicit lease(mutex& m) noexcept : m_(&m) {}
    std::uint64_t token() const noexcept { return m_->token(); }
    bool lost() const noexcept { return m_->lost(); }
    mutex& lock() const noexcept { return *m_; }

private:
    mutex* m_;
};

/// Acquires `m`, runs `body(lease&)` (a callable returning `boost::asio::awaitable<void>`), and
/// releases on every exit path: return, exception, cancellation. If the lease is lost while the
/// body runs, the body is cancelled through its cancellation slot and this throws
/// `system_error(error::lease_lost)` (or `max_hold_reached`). Exceptions of the body are
/// rethrown after the release. Coroutine-only.
template <class Body>
boost::asio::awaitable<void> async_with_lock(mutex& m, Body body) {
    namespace asio = boost::asio;
    co_await m.async_acquire(asio::use_awaitable);
    lease l(m);
    auto ex = co_await asio::this_coro::executor;
    auto [order, body_error, lost_ec] =
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ex, body(l), asio::deferred), m.async_wait_lost(asio::deferred))
            .async_wait(asio::experimental::wait_for_one(), asio::deferred);
    // Release even when this coroutine is being cancelled.
    co_await asio::this_coro::reset_cancellation_state();
    auto [release_ec] = co_await m.async_release(asio::as_tuple(asio::use_awaitable));
    (void)release_ec; // not_owner after a loss is expected; anything else the lease covers
    if (order[0] == 1 && lost_ec && lost_ec != asio::error::operation_aborted)
        throw boost::system::system_error(lost_ec);
    if (body_error)
        std::rethrow_exception(body_error);
}

/// Releases on destruction for code that cannot use `async_with_lock`. The destructor never
/// blocks: if the lock is still held it schedules the release (the same as destroying the
/// mutex would, but the mutex lives on).
class unique_hold {
public:
    explicit unique_hold(mutex& m) noexcept : m_(&m) {}
    unique_hold(unique_hold&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
    unique_hold& operator=(unique_hold&&) = delete;
    ~unique_hold() {
        if (m_ && m_->held())
            m_->async_release(boost::asio::detached);
    }
    /// Gives up the guard without releasing.
    void dismiss() noexcept { m_ = nullptr; }

private:
    mutex* m_;
};

} // namespace corolock

#endif
