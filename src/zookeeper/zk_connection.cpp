// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/handler_list.hpp"
#include "io/deliver.hpp"
#include "zookeeper/core/zk_lock_recipe.hpp"
#include "zookeeper/io/zk_session.hpp"
#include <corolock/zookeeper/connection.hpp>

#include <boost/asio/post.hpp>

#include <zookeeper/zookeeper.h>

namespace corolock {

namespace asio = boost::asio;

zk_connection::zk_connection(executor_type ex, zk_config config)
    : config_(config), impl_(std::make_shared<detail::zk_session>(std::move(ex), config)) {}

zk_connection::~zk_connection() {
    cancel();
}

zk_connection::executor_type zk_connection::get_executor() const noexcept {
    return impl_->executor();
}

const zk_config& zk_connection::config() const noexcept {
    return config_;
}

zk_session_state zk_connection::state() const noexcept {
    return impl_->state();
}

std::chrono::milliseconds zk_connection::session_timeout() const noexcept {
    return impl_->session_timeout();
}

unsigned zk_connection::sessions() const noexcept {
    return impl_->sessions();
}

void zk_connection::cancel() {
    asio::post(impl_->strand(), [s = impl_] { s->stop(); });
}

void zk_connection::run_impl(asio::any_completion_handler<void(error_code)> h) {
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([s = std::weak_ptr<detail::zk_session>(impl_)](asio::cancellation_type t) {
            if ((t & asio::cancellation_type::terminal) == asio::cancellation_type::none)
                return;
            if (auto p = s.lock())
                asio::post(p->strand(), [p] { p->stop(); });
        });
    asio::post(impl_->strand(), [s = impl_, h = std::move(h)]() mutable { s->run(std::move(h)); });
}

void zk_connection::get_impl(std::string path,
                             asio::any_completion_handler<void(error_code, std::string)> h) {
    if (!detail::valid_lock_path(path))
        return detail::deliver(std::move(h), impl_->executor(), error_code(error::invalid_name),
                               std::string());
    // Shared so that the reply callback (a std::function) can be copied; the handler is taken
    // out once.
    auto done = std::make_shared<
        detail::handler_list<asio::any_completion_handler<void(error_code, std::string)>>>();
    done->add(0, std::move(h));
    asio::post(impl_->strand(), [s = impl_, path = std::move(path), done]() mutable {
        s->get(path, [s, done](detail::zk_reply r) {
            if (auto h = done->take(0))
                detail::deliver(std::move(*h), s->executor(), detail::zk_error(r.rc),
                                std::move(r.data));
        });
    });
}

} // namespace corolock
