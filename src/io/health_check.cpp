// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The health check: a PING every interval; an interval with no byte and no reply is a stall.
#include "io/connection_impl.hpp"
#include "io/exec.hpp"
#include "io/nothrow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tuple>

namespace corolock::detail {

namespace asio = boost::asio;
using asio::awaitable;
using namespace asio::experimental::awaitable_operators;

awaitable<error_code> connection_impl::health_check() {
    asio::steady_timer timer(strand_);
    if (cfg_.health_check_interval <= std::chrono::steady_clock::duration::zero()) {
        timer.expires_at(clock::time_point::max());
        auto [ec] = co_await timer.async_wait(nothrow);
        co_return ec ? ec : error_code(asio::error::operation_aborted);
    }
    request ping;
    ping.push("PING", "corolock-health");
    for (;;) {
        timer.expires_after(cfg_.health_check_interval);
        if (auto [ec] = co_await timer.async_wait(nothrow); ec)
            co_return ec;
        timer.expires_after(cfg_.health_check_interval);
        auto exec = [](connection_impl* self,
                       const request* req) -> awaitable<std::tuple<error_code, std::size_t>> {
            co_return co_await asio::async_initiate<decltype(nothrow),
                                                    void(error_code, std::size_t)>(
                [self, req](auto handler) {
                    start_exec(self->shared_from_this(), *req, make_adapter(ignore),
                               std::move(handler));
                },
                nothrow);
        };
        // A PING queued behind a deep pipeline is late while replies keep coming: the
        // server is busy, not dead. Only an interval with no byte read and no reply parsed
        // (this strand may have spent it on a large read) is a stall.
        const auto progress = [this] {
            return bytes_read_.load(std::memory_order_relaxed) +
                   replies_.load(std::memory_order_relaxed);
        };
        const auto before = progress();
        auto r = co_await (exec(this, &ping) || timer.async_wait(nothrow));
        if (r.index() == 1) {
            if (progress() != before)
                continue;
            log_.log(logger::level::warning, "health check: no PONG in time; reconnecting");
            co_return error::pong_timeout;
        }
        if (auto [ec, n] = std::get<0>(r); ec)
            co_return ec;
    }
}

} // namespace corolock::detail
