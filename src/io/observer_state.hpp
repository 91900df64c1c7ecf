// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// An election observer's queue, shared by every backend (doc/election.md, "Observing"): the
// views a backend's follower gets (from messages, watches, reads) go through the order of
// core/leader_view.hpp, and the events wait here for `leader_observer::async_next`. The
// backend's follower derives from it and says how it stops following (`halt`).
#ifndef COROLOCK_SRC_IO_OBSERVER_STATE_HPP
#define COROLOCK_SRC_IO_OBSERVER_STATE_HPP

#include "core/leader_view.hpp"
#include <corolock/leadership_base.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>

namespace corolock::detail {

struct observer_state : std::enable_shared_from_this<observer_state> {
    using next_handler = boost::asio::any_completion_handler<void(error_code, leader_event)>;
    static constexpr std::size_t max_events = 64;

    // `strand`: where every member below runs; `ex`: where handlers complete by default.
    observer_state(boost::asio::any_io_executor strand, boost::asio::any_io_executor ex,
                   lock_backend backend);
    virtual ~observer_state() = default;
    observer_state(const observer_state&) = delete;
    observer_state& operator=(const observer_state&) = delete;

    // ---- strand only
    // A view from the backend: delivered (queued) if it changes what was last delivered.
    void take_view(const leader_view& v);
    // One async_next.
    void next(next_handler h);
    // Stops following for good (halt), and fails a waiting async_next with operation_aborted.
    void stop();
    // The backend stops its messages, watches and timers; called once, by stop().
    virtual void halt() = 0;

    boost::asio::any_io_executor strand;
    boost::asio::any_io_executor ex;
    observe_core fsm;
    bool stopped = false;

private:
    void push(leader_event e);
    void serve();
    void cancel_wait();

    std::deque<leader_event> events_;
    std::optional<next_handler> waiting_;
};

// From any thread: one async_next, and the end of an observer.
void observer_next(const std::shared_ptr<observer_state>& s, observer_state::next_handler h);
void observer_stop(const std::shared_ptr<observer_state>& s);

} // namespace corolock::detail

#endif
