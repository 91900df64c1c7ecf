// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The listener behind a corolock::subscription: a bounded message buffer (oldest dropped) and
// at most one pending receive.
#ifndef COROLOCK_SRC_IO_SUBSCRIPTION_STATE_HPP
#define COROLOCK_SRC_IO_SUBSCRIPTION_STATE_HPP

#include "io/connection_impl.hpp"
#include "io/deliver.hpp"
#include "io/push_listener.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/error.hpp>

#include <atomic>
#include <deque>
#include <memory>
#include <string>

namespace corolock::detail {

namespace asio = boost::asio;

struct subscription_state final : push_listener, std::enable_shared_from_this<subscription_state> {
    subscription_state(std::shared_ptr<connection_impl> c, std::string ch)
        : conn(std::move(c)), channel(std::move(ch)), capacity(conn->push_buffer_size()) {}

    void on_message(std::string_view ch, std::string_view payload) override {
        if (pending) {
            out->channel = ch;
            out->payload = payload;
            finish({});
            return;
        }
        queue.push_back({std::string(ch), std::string(payload)});
        if (queue.size() > capacity) {
            queue.pop_front();
            dropped.fetch_add(1, std::memory_order_relaxed);
            conn->count_dropped_push();
        }
    }
    void on_stop() override {
        if (pending)
            finish(asio::error::operation_aborted);
    }
    void on_subscribe_failed(error_code ec) override {
        failed = ec;
        if (pending)
            finish(ec);
    }
    void finish(error_code ec) {
        out = nullptr;
        deliver(std::move(pending), conn->executor(), ec);
        pending = nullptr;
    }

    std::shared_ptr<connection_impl> conn;
    std::string channel;
    std::size_t capacity;
    std::deque<message> queue;
    std::atomic<std::size_t> dropped{0};
    error_code failed; // the server refused the subscription: receives fail with it
    asio::any_completion_handler<void(error_code)> pending;
    message* out = nullptr;
};

} // namespace corolock::detail

#endif
