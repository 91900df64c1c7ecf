// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The writer: every waiting request goes out in one write, then it sleeps until woken.
#include "io/connection_impl.hpp"
#include "io/nothrow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace corolock::detail {

namespace asio = boost::asio;
using asio::awaitable;

void connection_impl::notify_writer() {
    // No write under way and the multiplexer says now (multiplexer::write_at_once): a lone
    // request (one coroutine's next script), or a batch of them behind pending replies, goes out
    // in the call that queued it. Waking the writer instead cost a timer completion, the
    // coroutine's resumption, an async_write and its posted completion: about a third of the
    // handlers and system calls (a reactor poll per handler chain) of an awaited acquire +
    // release at one coroutine. Otherwise the writer is woken and writes everything queued until
    // it runs in one go (pipelining at many coroutines).
    if (can_write_now() && mpx_.write_at_once() &&
        write_batches_.load(std::memory_order_relaxed) == 0)
        return write_now();
    writer_timer_.cancel();
}

void connection_impl::write_now() {
    std::size_t commands = 0;
    const auto buf = mpx_.prepare_write(commands);
    error_code ec;
    const auto n = stream_.write_now(asio::buffer(buf), ec);
    if (n == buf.size())
        return wrote(commands, n);
    // Partly written, would block, or failed: the writer goes on from there (and meets the
    // error, if any, on its own write).
    unwritten_ = buf.substr(n);
    unwritten_commands_ = commands;
    unwritten_done_ = n;
    writer_timer_.cancel();
}

void connection_impl::wrote(std::size_t commands, std::size_t bytes) {
    mpx_.commit_write();
    commands_.fetch_add(commands, std::memory_order_relaxed);
    writes_.fetch_add(1, std::memory_order_relaxed);
    bytes_written_.fetch_add(bytes, std::memory_order_relaxed);
}

awaitable<error_code> connection_impl::writer() {
    for (;;) {
        while (!unwritten_.empty() || mpx_.has_waiting()) {
            std::size_t commands = unwritten_commands_;
            std::size_t done = unwritten_done_;
            auto buf = unwritten_;
            unwritten_ = {};
            unwritten_commands_ = unwritten_done_ = 0;
            if (buf.empty())
                buf = mpx_.prepare_write(commands);
            writing_ = true;
            auto [ec, n] = co_await stream_.write(asio::buffer(buf));
            writing_ = false;
            if (ec)
                co_return ec;
            wrote(commands, done + n);
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
