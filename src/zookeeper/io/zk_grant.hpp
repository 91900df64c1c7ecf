// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// One granted ZooKeeper lock node, shared by its zk_lease and zk_holds; its state changes on the
// session's strand, its getters read atomics from any thread.
#ifndef COROLOCK_SRC_IO_ZK_GRANT_HPP
#define COROLOCK_SRC_IO_ZK_GRANT_HPP

#include "core/handler_list.hpp"
#include "zookeeper/io/zk_session.hpp"
#include <corolock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock::detail {

struct zk_grant : std::enable_shared_from_this<zk_grant> {
    using handler_ec = boost::asio::any_completion_handler<void(error_code)>;

    std::shared_ptr<zk_session> session;
    std::string node; // full path
    std::int64_t czxid = 0;
    unsigned session_no = 0;
    std::atomic<bool> lost{false};
    std::atomic<int> shares{1}; // the lease and its holds
    std::atomic<std::uint64_t> next_wait{0};
    // Strand only.
    error_code loss;
    bool released = false;
    bool release_requested = false;
    std::uint64_t watch_id = 0;
    handler_list<handler_ec> lost_waits;
    // Releases waiting for the delete's reply: completed by it, or with the loss when the lease
    // is lost first (a suspension past its validity, an expiry, a stop), the delete still going
    // out after a reconnect. Only ever completed all at once: every key is 0.
    handler_list<handler_ec> release_waits;

    bool valid() const noexcept {
        return !lost.load() && session->sessions() == session_no &&
               std::chrono::steady_clock::now() < session->valid_until();
    }
    std::chrono::steady_clock::time_point valid_until() const noexcept {
        if (lost.load() || session->sessions() != session_no)
            return std::chrono::steady_clock::time_point::min();
        return session->valid_until();
    }

    // Strand: starts watching the node (its deletion by anyone is a loss).
    void watch_node();
    // Strand: reports the loss to every waiter and to a release still waiting; the node, if it
    // still exists, is deleted.
    void lose(error_code why);
    // Strand: one share ends; the last one (or a release with `h`) deletes the node and completes
    // `h` (if any) with the outcome.
    void drop_share(handler_ec h, bool explicit_release);
    // Strand: completes the releases waiting with `ec`.
    void finish_release(error_code ec);
};

} // namespace corolock::detail

#endif
