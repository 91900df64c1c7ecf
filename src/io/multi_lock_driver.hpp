// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The multi-lock's driver (io/multi_lock_driver.cpp): what one multi-lock shares between its
// public body (multi_lock.cpp) and the coroutine that sequences one acquisition.
#ifndef COROLOCK_SRC_IO_MULTI_LOCK_DRIVER_HPP
#define COROLOCK_SRC_IO_MULTI_LOCK_DRIVER_HPP

#include "io/lock_transport.hpp"
#include <corolock/multi_lock.hpp>

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace corolock::detail {

struct multi_core {
    std::shared_ptr<const lock_transport> conn;
    std::vector<std::string> names; // sorted
    mutex_options opts;
    error_code invalid;
    std::vector<std::unique_ptr<mutex>> mutexes; // one per name, in name order
    std::vector<std::shared_ptr<boost::asio::cancellation_signal>> pending; // strand only
};

using wait_lost_op = decltype(std::declval<lease&>().async_wait_lost(boost::asio::deferred));
struct multi_wait {
    std::vector<wait_lost_op> ops;
    std::shared_ptr<const lock_transport> conn;
};

// Strand only: lists `signal` among the core's pending acquisitions and runs one acquisition
// (until `deadline`; `once`: a try) under it; the result goes to `h` on its executor, `work`
// (the caller's tracked executor) is kept until then.
void spawn_acquire(std::shared_ptr<multi_core> core,
                   std::shared_ptr<boost::asio::cancellation_signal> signal,
                   std::chrono::steady_clock::time_point deadline, bool once,
                   boost::asio::any_completion_handler<void(error_code, multi_lease)> h,
                   boost::asio::any_completion_executor work);

} // namespace corolock::detail

#endif
