// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The observer of any backend's election: a handle on the follower's queue
// (io/observer_state.hpp), which the backend's election made and started.
#include "io/deliver.hpp"
#include "io/observer_state.hpp"
#include <corolock/leadership_base.hpp>

#include <boost/asio/system_executor.hpp>

namespace corolock {

namespace asio = boost::asio;

leader_observer& leader_observer::operator=(leader_observer&& other) noexcept {
    if (this != &other) {
        if (state_)
            detail::observer_stop(state_);
        state_ = std::move(other.state_);
    }
    return *this;
}

leader_observer::~leader_observer() {
    if (state_)
        detail::observer_stop(state_);
}

void leader_observer::next_impl(asio::any_completion_handler<void(error_code, leader_event)> h) {
    if (!state_)
        return detail::deliver(std::move(h), asio::system_executor(), error_code(error::not_owner),
                               leader_event{});
    detail::observer_next(state_, std::move(h));
}

} // namespace corolock
