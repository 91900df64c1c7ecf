// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/observer_state.hpp"

#include "io/deliver.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

namespace corolock::detail {

namespace asio = boost::asio;

observer_state::observer_state(asio::any_io_executor s, asio::any_io_executor e,
                               lock_backend backend)
    : strand(std::move(s)), ex(std::move(e)), fsm(backend) {}

void observer_state::take_view(const leader_view& v) {
    if (auto e = fsm.on_view(v))
        push(std::move(*e));
}

void observer_state::push(leader_event e) {
    if (events_.size() == max_events) {
        events_.pop_front();
        events_.front().skipped = true;
    }
    events_.push_back(std::move(e));
    serve();
}

void observer_state::serve() {
    if (!waiting_ || (events_.empty() && !stopped))
        return;
    next_handler h(std::move(*waiting_));
    waiting_.reset();
    if (events_.empty())
        return deliver(std::move(h), ex, error_code(asio::error::operation_aborted),
                       leader_event{});
    auto e = std::move(events_.front());
    events_.pop_front();
    deliver(std::move(h), ex, error_code(), std::move(e));
}

void observer_state::next(next_handler h) {
    if (waiting_)
        return deliver(std::move(h), ex, error_code(error::invalid_argument), leader_event{});
    auto slot = asio::get_associated_cancellation_slot(h);
    waiting_.emplace(std::move(h));
    if (slot.is_connected())
        slot.assign([w = weak_from_this()](asio::cancellation_type) {
            if (auto s = w.lock())
                asio::post(s->strand, [s] { s->cancel_wait(); });
        });
    serve();
}

void observer_state::cancel_wait() {
    if (!waiting_)
        return;
    next_handler h(std::move(*waiting_));
    waiting_.reset();
    deliver(std::move(h), ex, error_code(asio::error::operation_aborted), leader_event{});
}

void observer_state::stop() {
    if (stopped)
        return;
    stopped = true;
    halt();
    serve();
}

void observer_next(const std::shared_ptr<observer_state>& s, observer_state::next_handler h) {
    asio::post(s->strand, [s, h = std::move(h)]() mutable { s->next(std::move(h)); });
}

void observer_stop(const std::shared_ptr<observer_state>& s) {
    asio::post(s->strand, [s] { s->stop(); });
}

} // namespace corolock::detail
