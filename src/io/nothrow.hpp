// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The completion token of the drivers' coroutines: an awaited operation returns its error as the
// first element of a tuple instead of throwing it, so that each failure is a value to decide on.
#ifndef COROLOCK_SRC_IO_NOTHROW_HPP
#define COROLOCK_SRC_IO_NOTHROW_HPP

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace corolock::detail {

inline constexpr auto nothrow = boost::asio::as_tuple(boost::asio::use_awaitable);

} // namespace corolock::detail

#endif
