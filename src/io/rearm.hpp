// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What the drivers of every acquisition and lease share: one timer re-armed after each event
// at the time its state machine asks for, and the list of a handle's pending operations.
#ifndef COROLOCK_SRC_IO_REARM_HPP
#define COROLOCK_SRC_IO_REARM_HPP

#include <corolock/error.hpp>

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

namespace corolock::detail {

// Arms `timer` at `t` unless it is armed for `t` already (max: disarms it); at `t` it calls
// `fire(*self, late)`, `late` being how long after `t` it runs (a stalled process runs it late,
// possibly ahead of answers that arrived in time: worth a word in a log). `armed` remembers the
// time armed and must live as long as `self` does.
template <class Self, class F>
void rearm(std::shared_ptr<Self> self, boost::asio::steady_timer& timer,
           std::chrono::steady_clock::time_point& armed, std::chrono::steady_clock::time_point t,
           F fire) {
    using clock = std::chrono::steady_clock;
    if (t == armed)
        return;
    armed = t;
    if (t == clock::time_point::max()) {
        timer.cancel();
        return;
    }
    timer.expires_at(t);
    timer.async_wait([self = std::move(self), &armed, t, fire](error_code ec) {
        if (ec || armed != t)
            return;
        armed = clock::time_point::max();
        fire(*self, clock::now() - t);
    });
}

// Takes `op` out of a handle's list of pending operations (order does not matter).
template <class T>
void unlist(std::vector<std::shared_ptr<T>>& pending, const T* op) noexcept {
    auto it =
        std::find_if(pending.begin(), pending.end(), [op](const auto& p) { return p.get() == op; });
    if (it != pending.end()) {
        std::swap(*it, pending.back());
        pending.pop_back();
    }
}

} // namespace corolock::detail

#endif
