// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/multiplexer.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>

namespace corolock::detail {

void multiplexer::add(entry_ptr e) {
    waiting_.push_back(std::move(e));
}

void multiplexer::add_front(entry_ptr e) {
    waiting_.push_front(std::move(e));
}

std::optional<exec_entry::clock::time_point> multiplexer::oldest_waiting() const noexcept {
    if (waiting_.empty())
        return std::nullopt;
    // add_front may put a newer entry first; the queue is short when this matters.
    auto t = waiting_.front()->enqueued();
    for (const auto& e : waiting_)
        t = std::min(t, e->enqueued());
    return t;
}

std::string_view multiplexer::prepare_write(std::size_t& commands) {
    buffer_.clear();
    commands = 0;
    for (auto& e : waiting_) {
        buffer_.append(e->payload_);
        commands += e->commands_;
        e->written_ = true;
        if (e->expected_ == 0)
            no_reply_.push_back(std::move(e));
        else
            in_flight_.push_back(std::move(e));
    }
    waiting_.clear();
    return buffer_;
}

void multiplexer::commit_write() {
    auto done = std::move(no_reply_);
    no_reply_.clear();
    for (auto& e : done)
        e->complete({});
}

error_code multiplexer::on_node(const resp3::node_view& n) {
    if (in_flight_.empty())
        return error::unexpected_reply;
    auto& head = *in_flight_.front();
    using guard = exec_entry::guard_state;
    if (head.guard_ == guard::skip_pong)
        return {};
    const bool refusal = n.depth == 0 && resp3::is_error(n.data_type) && head.at_guard();
    if (refusal) {
        head.guard_ = guard::refusal;
        if (!head.completed_)
            head.on_subscribe_refused(n.value);
    }
    if (head.completed_ || head.overflow_)
        return {};
    const auto limit = head.adapter_.max_nodes != 0 &&
                               (max_reply_nodes_ == 0 || head.adapter_.max_nodes < max_reply_nodes_)
                           ? head.adapter_.max_nodes
                           : max_reply_nodes_;
    if (limit != 0 && head.adapter_.stores_nodes && ++head.reply_nodes_ > limit) {
        // Memory for one reply is bounded before its shape is known; the rest is read and
        // dropped, so later replies still reach their own requests.
        head.overflow_ = true;
        head.adapter_ec_ = error::message_too_large;
        return {};
    }
    const bool had_error = static_cast<bool>(head.adapter_ec_);
    head.adapter_(head.replies_, n, head.adapter_ec_);
    if (refusal && !had_error && head.adapter_ec_)
        head.adapter_ec_ = error::subscribe_refused;
    return {};
}

multiplexer::entry_ptr multiplexer::on_reply_end(std::size_t bytes) {
    if (in_flight_.empty())
        return nullptr;
    auto& head = *in_flight_.front();
    using guard = exec_entry::guard_state;
    head.bytes_read_ += bytes;
    head.reply_nodes_ = 0;
    if (head.guard_ == guard::refusal) {
        // The refusal stands for the command's reply, but the guard's PONG is still to come.
        head.guard_ = guard::skip_pong;
        return nullptr;
    }
    head.guard_ = guard::none;
    if (++head.replies_ < head.expected_)
        return nullptr;
    auto e = std::move(in_flight_.front());
    in_flight_.pop_front();
    e->complete(e->adapter_ec_);
    return e;
}

bool multiplexer::cancel(const entry_ptr& e) {
    if (e->completed_)
        return false;
    if (!e->written_) {
        auto it = std::find(waiting_.begin(), waiting_.end(), e);
        if (it != waiting_.end())
            waiting_.erase(it);
    }
    // A written entry stays in in_flight_ (or no_reply_) to absorb its reply.
    e->complete(boost::asio::error::operation_aborted);
    return true;
}

void multiplexer::on_connection_lost(error_code ec) {
    auto lost = in_flight_.take_all();
    auto unconfirmed = std::move(no_reply_);
    no_reply_.clear();
    for (auto& e : lost)
        e->complete(ec);
    for (auto& e : unconfirmed)
        e->complete(ec);
}

void multiplexer::fail_waiting_before(exec_entry::clock::time_point deadline, error_code ec) {
    std::vector<entry_ptr> expired;
    auto keep = std::stable_partition(waiting_.begin(), waiting_.end(),
                                      [&](const entry_ptr& e) { return e->enqueued() > deadline; });
    std::move(keep, waiting_.end(), std::back_inserter(expired));
    waiting_.erase(keep, waiting_.end());
    for (auto& e : expired)
        e->complete(ec);
}

void multiplexer::fail_all(error_code ec) {
    on_connection_lost(ec);
    auto rest = std::move(waiting_);
    waiting_.clear();
    for (auto& e : rest)
        e->complete(ec);
}

void multiplexer::abandon_all() noexcept {
    // Moved out first: destroying an entry may destroy a coroutine whose locals touch nothing
    // here, but never while the queues are half cleared.
    auto waiting = std::move(waiting_);
    auto in_flight = in_flight_.take_all();
    auto no_reply = std::move(no_reply_);
    waiting_.clear();
    in_flight_.clear();
    no_reply_.clear();
    buffer_.clear();
}

} // namespace corolock::detail
