// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/deliver.hpp"
#include "postgres/io/pg_connection_impl.hpp"
#include <corolock/postgres/connection.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

namespace corolock {

namespace asio = boost::asio;
using detail::pg_connection_impl;

namespace {

// A user's statement: completes its handler on the handler's executor, never inline.
class query_op final : public detail::pg_statement {
public:
    query_op(asio::any_completion_handler<void(error_code)> h, pg_result& out,
             asio::any_io_executor fallback)
        : handler_(std::move(h)), out_(out), ex_(std::move(fallback)) {}

    void complete(error_code ec) override {
        // A cancelled statement's result object may be gone already: left untouched.
        if (ec != asio::error::operation_aborted && !results.empty())
            out_ = std::move(results.front());
        auto h = std::move(*handler_);
        handler_.reset();
        detail::deliver(std::move(h), ex_, ec);
    }

private:
    std::optional<asio::any_completion_handler<void(error_code)>> handler_;
    pg_result& out_;
    asio::any_io_executor ex_;
};

} // namespace

pg_connection::pg_connection(executor_type ex, pg_config cfg, logger log)
    : impl_(std::make_shared<pg_connection_impl>(std::move(ex), std::move(cfg), std::move(log))) {}

pg_connection::~pg_connection() {
    auto impl = impl_;
    asio::dispatch(impl->strand(), [impl] { impl->stop(); });
}

pg_connection::executor_type pg_connection::get_executor() const noexcept {
    return impl_->get_executor();
}

const pg_config& pg_connection::config() const noexcept {
    return impl_->config();
}

void pg_connection::run_impl(asio::any_completion_handler<void(error_code)> handler) {
    auto impl = impl_;
    asio::dispatch(impl->strand(),
                   [impl, h = std::move(handler)]() mutable { impl->run(std::move(h)); });
}

void pg_connection::query_impl(std::string_view sql, std::span<const pg_param> params,
                               pg_result& out,
                               asio::any_completion_handler<void(error_code)> handler) {
    bool nul = sql.find('\0') != std::string_view::npos;
    detail::pg_query q{std::string(sql), {}};
    q.params.reserve(params.size());
    for (const auto& p : params) {
        nul = nul || (p && p->find('\0') != std::string_view::npos);
        q.params.push_back(p ? std::optional<std::string>(std::string(*p)) : std::nullopt);
    }
    if (nul) {
        detail::deliver(std::move(handler), impl_->get_executor(),
                        error_code(error::invalid_argument));
        return;
    }
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto st = std::make_shared<query_op>(std::move(handler), out, impl_->get_executor());
    st->queries.push_back(std::move(q));
    auto impl = impl_;
    if (slot.is_connected()) {
        slot.assign([w = std::weak_ptr<pg_connection_impl>(impl),
                     s = std::weak_ptr<detail::pg_statement>(st)](asio::cancellation_type_t t) {
            auto impl = w.lock();
            auto st = s.lock();
            if (impl && st)
                asio::post(impl->strand(), [impl, st, t] { impl->cancel_statement(st, t); });
        });
    }
    asio::dispatch(impl->strand(), [impl, st] { impl->submit(st); });
}

pg_listener pg_connection::listen(std::string channel) {
    auto st = std::make_shared<detail::pg_listener_state>();
    st->channel = std::move(channel);
    st->conn = impl_;
    auto impl = impl_;
    asio::dispatch(impl->strand(), [impl, st] { impl->add_listener(st); });
    return pg_listener(std::move(st));
}

void pg_connection::cancel() {
    auto impl = impl_;
    asio::dispatch(impl->strand(), [impl] { impl->stop(); });
}

bool pg_connection::is_connected() const noexcept {
    return impl_->is_connected();
}

pg_connection_stats pg_connection::stats() const noexcept {
    return impl_->stats();
}

pg_listener& pg_listener::operator=(pg_listener&& other) noexcept {
    if (this != &other) {
        reset();
        state_ = std::move(other.state_);
    }
    return *this;
}

pg_listener::~pg_listener() {
    reset();
}

void pg_listener::reset() noexcept {
    if (!state_)
        return;
    auto st = std::move(state_);
    auto impl = st->conn.lock();
    if (!impl)
        return;
    asio::post(impl->strand(), [impl, st] {
        st->failed = asio::error::operation_aborted;
        if (st->waiting) {
            auto h = std::move(*st->waiting);
            st->waiting.reset();
            detail::deliver(std::move(h), impl->get_executor(),
                            error_code(asio::error::operation_aborted));
        }
        impl->remove_listener(st.get());
    });
}

void pg_listener::receive_impl(pg_notification& out,
                               asio::any_completion_handler<void(error_code)> handler) {
    auto impl = state_ ? state_->conn.lock() : nullptr;
    if (!impl) {
        detail::deliver(std::move(handler), asio::system_executor(),
                        state_ ? error_code(asio::error::operation_aborted)
                               : error_code(error::not_owner));
        return;
    }
    asio::dispatch(impl->strand(), [impl, st = state_, &out, h = std::move(handler)]() mutable {
        impl->receive(st, out, std::move(h));
    });
}

std::size_t pg_listener::dropped() const noexcept {
    return state_ ? state_->dropped.load(std::memory_order_relaxed) : 0;
}

const std::string& pg_listener::channel() const noexcept {
    static const std::string empty;
    return state_ ? state_->channel : empty;
}

} // namespace corolock
