// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What the drivers' coroutines share: their completion token (an awaited operation returns its
// error as the first element of a tuple instead of throwing it, so that each failure is a value
// to decide on), and the test of whether the coroutine has been cancelled.
#ifndef COROLOCK_SRC_IO_NOTHROW_HPP
#define COROLOCK_SRC_IO_NOTHROW_HPP

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace corolock::detail {

inline constexpr auto nothrow = boost::asio::as_tuple(boost::asio::use_awaitable);

// Whether the calling coroutine's cancellation state records a cancellation.
inline boost::asio::awaitable<bool> cancelled() {
    auto cs = co_await boost::asio::this_coro::cancellation_state;
    co_return cs.cancelled() != boost::asio::cancellation_type::none;
}

} // namespace corolock::detail

#endif
