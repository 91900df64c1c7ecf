// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// One composed operation as a coroutine on a strand, its result to a handler: what every
// campaign (Redis, ZooKeeper, PostgreSQL) and every job begin does to start.
#ifndef COROLOCK_SRC_IO_SPAWN_OP_HPP
#define COROLOCK_SRC_IO_SPAWN_OP_HPP

#include "io/deliver.hpp"
#include <corolock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>

#include <exception>
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

} // namespace corolock::detail

#endif
