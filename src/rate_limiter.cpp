// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public rate limiter: each call is checked here and handed to a rate_call (io/rate_call.cpp),
// the driver that sends, sleeps and completes.
#include "core/access.hpp"
#include "core/rate_scripts.hpp"
#include "io/cluster_impl.hpp"
#include "io/deliver.hpp"
#include "io/lock_transport.hpp"
#include "io/rate_call.hpp"
#include <corolock/rate_limiter.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>

#include <utility>
#include <vector>

namespace corolock {

namespace asio = boost::asio;

rate_limiter::rate_limiter(connection& conn, std::string name, rate_limit limit)
    : core_(std::make_shared<detail::rate_core>(
          detail::lock_transport(detail::access::impl(conn).shared_from_this()), std::move(name),
          limit)) {}

rate_limiter::rate_limiter(cluster& c, std::string name, rate_limit limit)
    : core_(std::make_shared<detail::rate_core>(
          detail::lock_transport(detail::access::impl(c).shared_from_this()), std::move(name),
          limit)) {}

rate_limiter::~rate_limiter() {
    cancel();
}

void rate_limiter::cancel() {
    asio::post(core_->io.strand(), [core = core_] {
        for (auto& w : std::vector(core->pending))
            if (auto c = w.lock())
                c->cancel();
    });
}

rate_limiter::executor_type rate_limiter::get_executor() const noexcept {
    return core_->io.executor();
}
const std::string& rate_limiter::name() const noexcept {
    return core_->name;
}
const rate_limit& rate_limiter::limit() const noexcept {
    return core_->limit;
}

void rate_limiter::call_impl(std::uint64_t cost, duration max_wait, bool sleep, handler_type h) {
    const auto& core = *core_;
    auto ec = core.invalid;
    if (!ec)
        ec = detail::validate_rate_call(core.params, cost, max_wait);
    if (ec) // before anything is sent, and never inline
        return detail::deliver(std::move(h), core.io.executor(), ec, rate_decision{});
    auto slot = asio::get_associated_cancellation_slot(h);
    auto call = std::make_shared<detail::rate_call>(std::move(h), core_, sleep);
    call->cost = cost;
    call->max_wait = detail::max_wait_us(max_wait);
    call->req = std::make_shared<request>(detail::make_rate_acquire(
        detail::rate_acquire_script(), core.name, core.params, cost, call->max_wait));
    const auto& strand = core.io.strand();
    if (slot.is_connected())
        slot.assign(
            [weak = std::weak_ptr<detail::rate_call>(call), strand](asio::cancellation_type) {
                asio::post(strand, [weak] {
                    if (auto c = weak.lock())
                        c->cancel();
                });
            });
    detail::enter_strand(strand, [call = std::move(call)] { call->start(); });
}

} // namespace corolock
