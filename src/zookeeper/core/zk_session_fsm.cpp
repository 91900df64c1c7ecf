// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "zookeeper/core/zk_session_fsm.hpp"

#include <algorithm>
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
    const bool live =
        state_ == zk_session_state::connected || state_ == zk_session_state::suspended;
    if (live && !dropped_ && proven_ != time_point::min())
        return deadline();
    return time_point::min();
}

zk_session_action zk_session_fsm::rearm(time_point now) noexcept {
    if (dropped_)
        return zk_session_action::none;
    if (proven_ == time_point::min() || now >= deadline()) {
        dropped_ = true;
        return zk_session_action::drop_leases;
    }
    return zk_session_action::arm_timer;
}

zk_session_action zk_session_fsm::on_event(zk_session_event e, time_point now,
                                           duration timeout) noexcept {
    using s = zk_session_state;
    if (state_ == s::closed)
        return zk_session_action::none; // terminal
    switch (e) {
    case zk_session_event::connected:
        timeout_ = timeout;
        if (state_ == s::connecting || state_ == s::expired) {
            ++sessions_;
            proven_ = opened_ + timeout_; // the leader created it after the handle was opened
        } else if (state_ == s::suspended) {
            // The leader revalidated the session (touching it) after the old connection was lost.
            proven_ = std::max(proven_, lost_at_ + timeout_);
        }
        state_ = s::connected;
        trips_.clear();
        in_flight_ = false;
        first_sync_ = syncs_ + 1;
        dropped_ = false;
        return rearm(now);
    case zk_session_event::disconnected:
        if (state_ != s::connected)
            return zk_session_action::none; // still looking for a server
        state_ = s::suspended;
        lost_at_ = now;
        trips_.clear();
        in_flight_ = false;
        return rearm(now);
    case zk_session_event::timer:
        if (state_ != s::connected && state_ != s::suspended)
            return zk_session_action::none; // a timer of an earlier session
        return rearm(now);
    case zk_session_event::expired:
        state_ = s::expired;
        dropped_ = false;
        proven_ = time_point::min();
        trips_.clear();
        in_flight_ = false;
        return zk_session_action::expire_and_renew;
    case zk_session_event::auth_failed:
    case zk_session_event::close:
        state_ = s::closed;
        trips_.clear();
        in_flight_ = false;
        return zk_session_action::fail_all;
    }
    return zk_session_action::none;
}

zk_session_fsm::time_point zk_session_fsm::sync_due() const noexcept {
    if (state_ != zk_session_state::connected || in_flight_)
        return time_point::max();
    if (trips_.empty())
        return time_point::min();
    return trips_.back().answered + sync_interval();
}

std::uint64_t zk_session_fsm::on_sync_sent(time_point now) noexcept {
    in_flight_ = true;
    in_flight_sent_ = now;
    return ++syncs_;
}

zk_session_action zk_session_fsm::on_sync_reply(std::uint64_t sync, time_point now,
                                                bool ok) noexcept {
    if (!in_flight_ || sync != syncs_ || sync < first_sync_)
        return zk_session_action::none; // a reply from an earlier connection
    in_flight_ = false;
    if (!ok) {
        trips_.clear();
        return zk_session_action::none;
    }
    const round_trip b{in_flight_sent_, now};
    if (trips_.size() >= 2) {
        // A is the last answered sync; X the latest before it answered a gap before A went out.
        const auto a_sent = trips_.back().sent;
        for (std::size_t i = trips_.size() - 1; i-- > 0;) {
            if (trips_[i].answered <= a_sent - proof_gap()) {
                proven_ = std::max(proven_, trips_[i].sent + timeout_);
                trips_.erase(trips_.begin(), trips_.begin() + static_cast<std::ptrdiff_t>(i));
                break;
            }
        }
    }
    trips_.push_back(b);
    if (dropped_ && state_ == zk_session_state::connected && now < deadline())
        dropped_ = false; // the leases given up stay lost; new ones are valid again
    return rearm(now);
}

} // namespace corolock::detail
