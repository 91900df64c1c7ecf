// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/zk_session_fsm.hpp"

#include <ostream>

namespace corolock::detail {

std::ostream& operator<<(std::ostream& os, zk_session_event e) {
    switch (e) {
    case zk_session_event::connected:
        return os << "connected";
    case zk_session_event::disconnected:
        return os << "disconnected";
    case zk_session_event::expired:
        return os << "expired";
    case zk_session_event::auth_failed:
        return os << "auth_failed";
    case zk_session_event::timer:
        return os << "timer";
    case zk_session_event::close:
        return os << "close";
    }
    return os << "zk_session_event(" << static_cast<int>(e) << ")";
}

std::ostream& operator<<(std::ostream& os, zk_session_action a) {
    switch (a) {
    case zk_session_action::none:
        return os << "none";
    case zk_session_action::arm_timer:
        return os << "arm_timer";
    case zk_session_action::drop_leases:
        return os << "drop_leases";
    case zk_session_action::expire_and_renew:
        return os << "expire_and_renew";
    case zk_session_action::fail_all:
        return os << "fail_all";
    }
    return os << "zk_session_action(" << static_cast<int>(a) << ")";
}

zk_session_fsm::time_point zk_session_fsm::valid_until() const noexcept {
    if (state_ == zk_session_state::connected ||
        (state_ == zk_session_state::suspended && !dropped_))
        return deadline();
    return time_point::min();
}

zk_session_action zk_session_fsm::on_event(zk_session_event e, time_point now,
                                           duration timeout) noexcept {
    using s = zk_session_state;
    if (state_ == s::closed)
        return zk_session_action::none; // terminal
    switch (e) {
    case zk_session_event::connected:
        if (state_ == s::connecting || state_ == s::expired)
            ++sessions_;
        state_ = s::connected;
        timeout_ = timeout;
        last_contact_ = now;
        dropped_ = false;
        return zk_session_action::none;
    case zk_session_event::disconnected:
        if (state_ != s::connected)
            return zk_session_action::none; // still looking for a server
        state_ = s::suspended;
        if (now >= deadline()) {
            dropped_ = true;
            return zk_session_action::drop_leases;
        }
        return zk_session_action::arm_timer;
    case zk_session_event::timer:
        if (state_ != s::suspended || dropped_)
            return zk_session_action::none; // a timer of an earlier suspension
        if (now < deadline())
            return zk_session_action::arm_timer;
        dropped_ = true;
        return zk_session_action::drop_leases;
    case zk_session_event::expired:
        state_ = s::expired;
        dropped_ = false;
        return zk_session_action::expire_and_renew;
    case zk_session_event::auth_failed:
    case zk_session_event::close:
        state_ = s::closed;
        return zk_session_action::fail_all;
    }
    return zk_session_action::none;
}

} // namespace corolock::detail
