// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What every campaign (Redis, ZooKeeper, PostgreSQL) and every job begin share: the coroutine
// on a strand with its result to a handler, and the lock-delay's wait.
#ifndef COROLOCK_SRC_IO_SPAWN_OP_HPP
#define COROLOCK_SRC_IO_SPAWN_OP_HPP

#include "io/deliver.hpp"
#include <corolock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace corolock::detail {

// Runs `op` on `strand` with `h`'s cancellation slot reaching it (the coroutine enables total
// cancellation itself); completes `h` with its result on h's executor (else `fallback`), keeping
// that executor's work until then. An exception (only an allocation can throw in there) is
// `no_memory`.
template <class T>
void spawn_op(const boost::asio::any_io_executor& strand,
              const boost::asio::any_io_executor& fallback,
              boost::asio::awaitable<std::tuple<error_code, T>> op,
              boost::asio::any_completion_handler<void(error_code, T)> h) {
    namespace asio = boost::asio;
    auto slot = asio::get_associated_cancellation_slot(h);
    auto work = tracked_work(handler_executor(h, fallback));
    asio::co_spawn(
        strand, std::move(op),
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(strand, [fallback, h = std::move(h), work = std::move(work)](
                                                  std::exception_ptr ep,
                                                  std::tuple<error_code, T> r) mutable {
                if (ep)
                    r = {asio::error::no_memory, T{}};
                deliver(std::move(h), fallback, std::get<0>(r), std::move(std::get<1>(r)));
                work = {};
            })));
}

// The log line of a campaign that waits an election's lock-delay.
inline std::string lock_delay_text(std::string_view election,
                                   std::chrono::steady_clock::duration d) {
    return "election " + std::string(election) +
           ": the last leader was lost, not resigned; waiting the lock-delay (" +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) +
           " ms) before the term begins";
}

// Waits an election's lock-delay `d` while holding `l`: operation_aborted when the campaign is
// cancelled (before or meanwhile), lease_lost when the lease was lost, else nothing.
template <class Lease>
boost::asio::awaitable<error_code> wait_lock_delay(std::chrono::steady_clock::duration d,
                                                   const Lease& l) {
    namespace asio = boost::asio;
    // A cancellation that came during the steps before (which ignore it) ends the campaign here.
    const auto cs = co_await asio::this_coro::cancellation_state;
    if (cs.cancelled() != asio::cancellation_type::none)
        co_return asio::error::operation_aborted;
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec)
        co_return asio::error::operation_aborted;
    co_return l.valid() ? error_code() : error_code(error::lease_lost);
}

} // namespace corolock::detail

#endif
