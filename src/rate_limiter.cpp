// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/rate_scripts.hpp"
#include "io/access.hpp"
#include "io/cluster_impl.hpp"
#include "io/deliver.hpp"
#include "io/lock_transport.hpp"
#include <corolock/rate_limiter.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>
#include <utility>
#include <vector>

namespace corolock {
namespace detail {

namespace asio = boost::asio;

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
    std::optional<asio::steady_timer> timer;

    void start() {
        auto& p = core->pending;
        std::erase_if(p, [](const auto& w) { return w.expired(); });
        p.push_back(weak_from_this());
        // Never cancelled on the wire: a cancelled caller completes at once and the reply, when
        // it comes, says whether a slot has to be refunded.
        core->io.start_eval(
            rate_acquire_script(), core->name, req, resp,
            asio::bind_executor(core->io.strand(), [self = shared_from_this()](error_code ec) {
                self->on_reply(ec);
            }));
    }

    void on_reply(error_code ec) {
        rate_reply r;
        if (!ec)
            ec = decode_rate_acquire(resp, max_wait, r);
        act(fsm.on_reply(ec, r));
    }

    void cancel() { act(fsm.on_cancel()); }

    void act(rate_call_fsm::action a) {
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

    void complete() {
        const auto ec = fsm.result();
        deliver(std::move(handler), core->io.executor(), ec,
                ec ? rate_decision{} : to_decision(fsm.reply()));
    }
};

} // namespace detail

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
