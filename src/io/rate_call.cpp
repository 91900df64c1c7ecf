// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The rate limiter's driver: one call sends the acquire script, sleeps when rate_call_fsm says so
// and completes; a cancelled call's slot is refunded. Decisions live in core/rate_scripts.
#include "io/rate_call.hpp"

#include "io/deliver.hpp"

#include <boost/asio/bind_executor.hpp>

#include <utility>

namespace corolock {
namespace detail {

namespace asio = boost::asio;

namespace {

// Gives back the slot a cancelled call had taken, if nobody took one after it (the script checks
// that the key still holds this call's TAT). Fire and forget: a lost refund leaves the slot
// spent, which only makes the limiter stricter.
void refund(const std::shared_ptr<rate_core>& core, const std::string& tat, std::uint64_t cost) {
    const auto& sc = rate_refund_script();
    auto req = std::make_shared<request>(make_rate_refund(sc, core->name, core->params, tat, cost));
    auto resp = std::make_shared<generic_response>();
    core->io.start_eval(sc, core->name, req, *resp,
                        asio::bind_executor(core->io.strand(), [core, req, resp](error_code ec) {
                            bool refunded = false;
                            if (!ec)
                                ec = decode_rate_refund(*resp, refunded);
                            const auto& log = core->io.log();
                            const auto level = ec ? logger::level::warning : logger::level::debug;
                            if (log.enabled(level))
                                log.log(level, "rate limiter " + core->name + ": cancelled slot " +
                                                   (ec ? "not refunded (" + ec.message() + ")"
                                                    : refunded ? "refunded"
                                                               : "not refunded (taken after it)"));
                        }));
}

} // namespace

void rate_call::start() {
    auto& p = core->pending;
    std::erase_if(p, [](const auto& w) { return w.expired(); });
    p.push_back(weak_from_this());
    // Never cancelled on the wire: a cancelled caller completes at once and the reply, when
    // it comes, says whether a slot has to be refunded.
    core->io.start_eval(
        rate_acquire_script(), core->name, req, resp,
        asio::bind_executor(core->io.strand(),
                            [self = shared_from_this()](error_code ec) { self->on_reply(ec); }));
}

void rate_call::on_reply(error_code ec) {
    rate_reply r;
    if (!ec)
        ec = decode_rate_acquire(resp, max_wait, r);
    act(fsm.on_reply(ec, r));
}

void rate_call::act(rate_call_fsm::action a) {
    using action = rate_call_fsm::action;
    switch (a) {
    case action::none:
        return;
    case action::sleep:
        timer.emplace(core->io.strand());
        timer->expires_after(std::chrono::microseconds(fsm.sleep_us()));
        timer->async_wait(
            [self = shared_from_this()](error_code) { self->act(self->fsm.on_timer()); });
        return;
    case action::refund:
        refund(core, fsm.reply().tat, cost);
        return;
    case action::complete_and_refund:
        if (timer)
            timer->cancel();
        refund(core, fsm.reply().tat, cost);
        complete();
        return;
    case action::complete:
        complete();
        return;
    }
}

void rate_call::complete() {
    const auto ec = fsm.result();
    deliver(std::move(handler), core->io.executor(), ec,
            ec ? rate_decision{} : to_decision(fsm.reply()));
}

} // namespace detail
} // namespace corolock
