// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Starts the acquisition of a ZooKeeper lock node (io/zk_lock_op.cpp).
#ifndef COROLOCK_SRC_IO_ZK_LOCK_OP_HPP
#define COROLOCK_SRC_IO_ZK_LOCK_OP_HPP

#include "zookeeper/core/zk_lock_recipe.hpp"
#include "zookeeper/io/zk_session.hpp"
#include <corolock/zookeeper/mutex.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock::detail {

using zk_acquire_handler = boost::asio::any_completion_handler<void(error_code, zk_lease)>;

struct zk_lock_request {
    std::string path;
    zk_node_kind kind = zk_node_kind::lock;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    bool once = false;
    std::uint64_t op_id = 0;
    std::uint64_t mutex_id = 0;
    bool zero_wait = false; // a wait over when started: one attempt (acquire_timeout if held)
};

// Any thread: checks the path and the deadline (invalid_name, invalid_wait: before anything is
// sent), then runs the acquisition on the session's strand and completes `h` on its executor.
// `req.op_id` is given here.
void start_zk_acquire(std::shared_ptr<zk_session> s, zk_lock_request req, zk_acquire_handler h);

// Any thread: cancels the acquisitions of the mutex `mutex_id` (on the strand).
void cancel_zk_acquires(const std::shared_ptr<zk_session>& s, std::uint64_t mutex_id);

} // namespace corolock::detail

#endif
