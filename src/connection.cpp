// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/script_request.hpp"
#include "io/connection_impl.hpp"
#include "io/exec.hpp"
#include "io/lock_service.hpp"
#include "io/subscription_state.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/system_executor.hpp>

namespace corolock {

namespace asio = boost::asio;

subscription& subscription::operator=(subscription&& other) noexcept {
    if (this != &other) {
        reset();
        state_ = std::move(other.state_);
    }
    return *this;
}

subscription::~subscription() {
    reset();
}

void subscription::reset() noexcept {
    if (!state_)
        return;
    auto st = std::move(state_);
    auto conn = st->conn;
    asio::post(conn->strand(), [st = std::move(st), conn] {
        conn->remove_listener(st->channel, st.get());
        st->on_stop();
    });
}

std::size_t subscription::dropped() const noexcept {
    return state_ ? state_->dropped.load(std::memory_order_relaxed) : 0;
}

const std::string& subscription::channel() const noexcept {
    static const std::string none;
    return state_ ? state_->channel : none;
}

void subscription::async_receive_impl(message& out,
                                      asio::any_completion_handler<void(error_code)> handler) {
    if (!state_) {
        detail::deliver(std::move(handler), asio::system_executor(),
                        error_code(asio::error::bad_descriptor));
        return;
    }
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto st = state_;
    if (slot.is_connected())
        slot.assign(
            [weak = std::weak_ptr<detail::subscription_state>(st)](asio::cancellation_type) {
                if (auto s = weak.lock())
                    asio::post(s->conn->strand(), [s] {
                        if (s->pending)
                            s->finish(asio::error::operation_aborted);
                    });
            });
    asio::post(st->conn->strand(), [st, &out, h = std::move(handler)]() mutable {
        if (!st->queue.empty()) {
            out = std::move(st->queue.front());
            st->queue.pop_front();
            detail::deliver(std::move(h), st->conn->executor(), error_code{});
            return;
        }
        if (st->pending) {
            detail::deliver(std::move(h), st->conn->executor(),
                            error_code(error::operation_in_progress));
            return;
        }
        if (st->failed) {
            detail::deliver(std::move(h), st->conn->executor(), st->failed);
            return;
        }
        // Not move-assignment: in Boost 1.81 it recurses forever (it copies from an lvalue).
        st->pending.swap(h);
        st->out = &out;
    });
}

// ---------------------------------------------------------------- connection

connection::connection(executor_type ex, connection_config cfg, logger log)
    : impl_(detail::make_abandonable<detail::connection_impl>(ex, ex, nullptr, std::move(cfg),
                                                              std::move(log))) {}

connection::connection(executor_type ex, asio::ssl::context& tls, connection_config cfg, logger log)
    : impl_(detail::make_abandonable<detail::connection_impl>(ex, ex, &tls, std::move(cfg),
                                                              std::move(log))) {}

connection::connection(asio::io_context& ioc, connection_config cfg, logger log)
    : connection(ioc.get_executor(), std::move(cfg), std::move(log)) {}

connection::connection(asio::io_context& ioc, asio::ssl::context& tls, connection_config cfg,
                       logger log)
    : connection(ioc.get_executor(), tls, std::move(cfg), std::move(log)) {}

connection::~connection() {
    impl_->stop();
}

connection::executor_type connection::get_executor() const noexcept {
    return impl_->executor();
}

const connection_config& connection::config() const noexcept {
    return impl_->config();
}

void connection::cancel() {
    impl_->stop();
}

bool connection::is_connected() const noexcept {
    return impl_->is_connected();
}

connection_stats connection::stats() const noexcept {
    return impl_->stats();
}

void connection::async_run_impl(asio::any_completion_handler<void(error_code)> handler) {
    impl_->start_run(std::move(handler));
}

void connection::async_exec_impl(
    const request& req, detail::response_adapter adapter,
    asio::any_completion_handler<void(error_code, std::size_t)> handler) {
    if (req.has_blocking_command() && !impl_->config().allow_blocking_commands &&
        detail::carries_locks(*impl_)) {
        detail::deliver(std::move(handler), impl_->executor(), error_code(error::blocking_command),
                        std::size_t(0));
        return;
    }
    detail::start_exec(impl_, req, adapter, std::move(handler));
}

void connection::async_eval_impl(const script& s, std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args, generic_response& resp,
                                 asio::any_completion_handler<void(error_code)> handler) {
    auto req = std::make_shared<request>(detail::make_evalsha(s, keys, args));
    detail::start_eval(impl_, s, std::move(req), resp, std::move(handler));
}

subscription connection::subscribe(std::string channel) {
    auto st = std::make_shared<detail::subscription_state>(impl_, std::move(channel));
    asio::post(impl_->strand(), [st] { st->conn->add_listener(st->channel, st); });
    return subscription(st);
}

} // namespace corolock
