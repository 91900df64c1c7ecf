// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The latch's driver: sends the scripts of core/latch_scripts and performs what core/latch_core
// decides for the awaiters (subscribe, read, arm the timer, complete). Decisions live there.
#include "io/latch_impl.hpp"

#include "core/script_request.hpp"
#include "io/deliver.hpp"

#include <random>
#include <utility>

namespace corolock {

namespace asio = boost::asio;

namespace detail {

namespace {

error_code check(std::string_view name, const latch_options& o) {
    if (!latch_name(name))
        return error::invalid_name;
    if (o.retention < min_latch_retention || o.retention > max_latch_retention ||
        o.retry_base < std::chrono::milliseconds(1) || o.retry_max < o.retry_base ||
        o.retry_max > std::chrono::hours(1))
        return error::invalid_argument;
    return {};
}

} // namespace

latch_impl::latch_impl(lock_transport t, std::string n, latch_options o)
    : io(std::move(t)), name(std::move(n)), opts(o), invalid(check(name, opts)),
      core(opts.retry_base, opts.retry_max, std::random_device{}()), timer(io.strand()) {
    if (!invalid) {
        keys = make_latch_keys(name);
        retention_ms =
            std::to_string(std::chrono::ceil<std::chrono::milliseconds>(opts.retention).count());
    }
}

// Open messages of the latch's channel, for its awaiters. Holds the latch weakly: the
// connection keeps its listeners, the latch keeps the connection.
class latch_impl::listener final : public push_listener {
public:
    explicit listener(std::weak_ptr<latch_impl> l) : latch_(std::move(l)) {}
    void on_message(std::string_view, std::string_view payload) override {
        if (auto l = latch_.lock())
            l->run([payload](latch_core& c, auto now, latch_actions& out) {
                c.on_message(payload, now, out);
            });
    }
    // An open published while the connection was down is lost: read again.
    void on_reconnect() override {
        if (auto l = latch_.lock())
            l->run([](latch_core& c, auto now, latch_actions& out) { c.on_reconnect(now, out); });
    }
    void on_stop() override {
        if (auto l = latch_.lock())
            l->run([](latch_core& c, auto, latch_actions& out) {
                c.cancel_all(error::not_connected, out);
            });
    }
    void on_subscribe_failed(error_code ec) override {
        if (auto l = latch_.lock())
            l->log(logger::level::error, "awaiters get no open messages (" + ec.message() +
                                             "); they re-read the latch on their timer only");
    }

private:
    std::weak_ptr<latch_impl> latch_;
};

void latch_impl::perform(const latch_action& a) {
    using kind = latch_action::kind;
    switch (a.what) {
    case kind::subscribe:
        if (!sub)
            sub = std::make_shared<listener>(weak_from_this());
        io.add_listener(keys.channel, sub);
        return;
    case kind::unsubscribe:
        io.remove_listener(keys.channel, sub.get());
        return;
    case kind::read:
        return send_read(a.id);
    case kind::arm_timer:
        timer.expires_at(a.at);
        timer.async_wait([weak = weak_from_this()](error_code ec) {
            if (ec)
                return; // re-armed or cancelled
            if (auto l = weak.lock())
                l->run([](latch_core& c, auto now, latch_actions& out) { c.on_timer(now, out); });
        });
        return;
    case kind::cancel_timer:
        timer.cancel();
        return;
    case kind::complete:
        if (auto h = waiting.take(a.id))
            deliver(std::move(*h), io.executor(), a.ec);
        return;
    }
}

void latch_impl::send_read(std::uint64_t seq) {
    const std::string_view k[] = {keys.name, keys.done};
    auto req = std::make_shared<request>(
        make_evalsha(latch_read_script(), k, std::span<const std::string_view>()));
    auto resp = std::make_shared<generic_response>();
    io.eval(latch_read_script(), keys.name, *req, *resp,
            [self = shared_from_this(), req, resp, seq](error_code ec) {
                latch_snapshot s;
                if (!ec)
                    ec = decode_latch_read(*resp, s);
                if (ec && ec != error::no_latch)
                    self->log(logger::level::debug, "state read failed (" + ec.message() + ")");
                self->run([&](latch_core& c, auto now, latch_actions& out) {
                    c.on_read(seq, ec, s, now, out);
                });
            });
}

} // namespace detail

} // namespace corolock
