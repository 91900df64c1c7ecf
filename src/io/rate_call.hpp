// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The rate limiter's driver (io/rate_call.cpp): what the calls of one limiter share, and one
// call in progress, which performs rate_call_fsm's actions (core/rate_scripts).
#ifndef COROLOCK_SRC_IO_RATE_CALL_HPP
#define COROLOCK_SRC_IO_RATE_CALL_HPP

#include "core/rate_scripts.hpp"
#include "io/lock_transport.hpp"
#include <corolock/rate_limiter.hpp>

#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace corolock::detail {

struct rate_call;

// What every call of one limiter shares. `pending` is touched on the strand only.
struct rate_core {
    rate_core(lock_transport t, std::string n, rate_limit l)
        : io(std::move(t)), name(std::move(n)), limit(l) {
        invalid = validate_rate_limit(name, limit, params);
    }

    lock_transport io;
    std::string name;
    rate_limit limit;
    rate_params params;
    error_code invalid;
    std::vector<std::weak_ptr<rate_call>> pending;
};

// One try, reserve or acquire. Its decisions are rate_call_fsm's; this only sends, sleeps and
// completes, on the strand.
struct rate_call : std::enable_shared_from_this<rate_call> {
    // The handler is only ever move-constructed (Boost 1.81's move assignment recurses).
    rate_call(rate_limiter::handler_type h, std::shared_ptr<rate_core> c, bool sleep)
        : handler(std::move(h)), core(std::move(c)), fsm(sleep) {}

    rate_limiter::handler_type handler;
    std::shared_ptr<rate_core> core;
    rate_call_fsm fsm;
    std::uint64_t cost = 1;
    std::int64_t max_wait = 0;
    std::shared_ptr<request> req;
    generic_response resp;
    std::optional<boost::asio::steady_timer> timer;

    // Strand only.
    void start();
    void on_reply(error_code ec);
    void cancel() { act(fsm.on_cancel()); }
    void act(rate_call_fsm::action a);
    void complete();
};

} // namespace corolock::detail

#endif
