// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public cluster: each member hands off to cluster_impl (io/cluster_impl.cpp), the router
// that owns the node connections, the refresh timer and the coroutines.
#include "io/cluster_impl.hpp"
#include "io/exec.hpp"
#include "io/lock_service.hpp"
#include <corolock/cluster.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>

namespace corolock {

namespace asio = boost::asio;

cluster::cluster(executor_type ex, cluster_config cfg, logger log)
    : impl_(detail::make_abandonable<detail::cluster_impl>(ex, ex, nullptr, std::move(cfg),
                                                           std::move(log))) {}

cluster::cluster(executor_type ex, asio::ssl::context& tls, cluster_config cfg, logger log)
    : impl_(detail::make_abandonable<detail::cluster_impl>(ex, ex, &tls, std::move(cfg),
                                                           std::move(log))) {}

cluster::cluster(asio::io_context& ioc, cluster_config cfg, logger log)
    : cluster(ioc.get_executor(), std::move(cfg), std::move(log)) {}

cluster::cluster(asio::io_context& ioc, asio::ssl::context& tls, cluster_config cfg, logger log)
    : cluster(ioc.get_executor(), tls, std::move(cfg), std::move(log)) {}

cluster::~cluster() {
    impl_->stop();
}

cluster::executor_type cluster::get_executor() const noexcept {
    return impl_->executor();
}

const cluster_config& cluster::config() const noexcept {
    return impl_->config();
}

void cluster::cancel() {
    impl_->stop();
}

bool cluster::is_connected() const noexcept {
    return impl_->is_connected();
}

cluster_stats cluster::stats() const noexcept {
    return impl_->stats();
}

void cluster::async_run_impl(asio::any_completion_handler<void(error_code)> handler) {
    impl_->start_run(std::move(handler));
}

void cluster::async_exec_impl(std::string_view routing_key, const request& req,
                              detail::response_adapter adapter,
                              asio::any_completion_handler<void(error_code, std::size_t)> h) {
    if (req.has_blocking_command() && !impl_->config().node.allow_blocking_commands &&
        detail::carries_locks(*impl_)) {
        detail::deliver(std::move(h), impl_->executor(), error_code(error::blocking_command),
                        std::size_t(0));
        return;
    }
    // The request is the caller's (alive until completion): an aliasing pointer, no copy.
    impl_->start_route(detail::key_slot(routing_key),
                       std::shared_ptr<const request>(std::shared_ptr<void>(), &req), nullptr,
                       adapter, std::move(h));
}

void cluster::async_eval_impl(const script& s, std::span<const std::string_view> keys,
                              std::span<const std::string_view> args, generic_response& resp,
                              asio::any_completion_handler<void(error_code)> handler) {
    const auto slot = detail::common_slot(keys);
    if (!slot) {
        detail::deliver(std::move(handler), impl_->executor(), error_code(error::cross_slot));
        return;
    }
    auto evalsha = std::make_shared<const request>(detail::make_evalsha(s, keys, args));
    auto eval = std::make_shared<const request>(detail::make_eval(s, keys, args));
    auto cslot = asio::get_associated_cancellation_slot(handler);
    auto ex = asio::get_associated_executor(handler, impl_->executor());
    impl_->start_route(*slot, std::move(evalsha), std::move(eval), detail::make_adapter(resp),
                       asio::bind_cancellation_slot(
                           cslot, asio::bind_executor(ex, [h = std::move(handler)](
                                                              error_code ec, std::size_t) mutable {
                               std::move(h)(ec);
                           })));
}

} // namespace corolock
