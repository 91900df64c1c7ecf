// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The writer: every waiting request goes out in one write, then it sleeps until woken.
#include "io/connection_impl.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace corolock::detail {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

} // namespace

awaitable<error_code> connection_impl::writer() {
    for (;;) {
        while (mpx_.has_waiting()) {
            std::size_t commands = 0;
            auto buf = mpx_.prepare_write(commands);
            auto [ec, n] = co_await stream_.write(asio::buffer(buf));
            if (ec)
                co_return ec;
            mpx_.commit_write();
            commands_.fetch_add(commands, std::memory_order_relaxed);
            writes_.fetch_add(1, std::memory_order_relaxed);
            bytes_written_.fetch_add(n, std::memory_order_relaxed);
        }
        writer_timer_.expires_at(clock::time_point::max());
        co_await writer_timer_.async_wait(nothrow);
        // Woken by notify_writer, or cancelled because the connection is going down.
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none)
            co_return asio::error::operation_aborted;
    }
}

} // namespace corolock::detail
