// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The latch's driver: sends the scripts of core/latch_scripts and performs what core/latch_core
// decides for the awaiters (subscribe, read, arm the timer, complete). Decisions live there.
#include "core/handler_list.hpp"
#include "core/latch_core.hpp"
#include "core/latch_scripts.hpp"
#include "core/script_request.hpp"
#include "io/access.hpp"
#include "io/cluster_impl.hpp"
#include "io/deliver.hpp"
#include "io/lock_transport.hpp"
#include "io/push_listener.hpp"
#include <corolock/latch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <random>
#include <utility>

namespace corolock {

namespace asio = boost::asio;

namespace detail {

namespace {

using wait_handler = asio::any_completion_handler<void(error_code)>;

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

struct latch_impl : std::enable_shared_from_this<latch_impl> {
    latch_impl(lock_transport t, std::string n, latch_options o)
        : io(std::move(t)), name(std::move(n)), opts(o), invalid(check(name, opts)),
          core(opts.retry_base, opts.retry_max, std::random_device{}()), timer(io.strand()) {
        if (!invalid) {
            keys = make_latch_keys(name);
            retention_ms = std::to_string(
                std::chrono::ceil<std::chrono::milliseconds>(opts.retention).count());
        }
    }

    class listener;

    const lock_transport io;
    const std::string name;
    const latch_options opts;
    const error_code invalid;
    latch_keys keys;
    std::string retention_ms;
    std::atomic<std::uint64_t> next_id{0};

    // Strand only from here on.
    latch_core core;
    handler_list<wait_handler> waiting;
    asio::steady_timer timer;
    std::shared_ptr<push_listener> sub;

    template <class F>
    void run(F event) {
        latch_actions out;
        event(core, std::chrono::steady_clock::now(), out);
        for (const auto& a : out)
            perform(a);
    }

    void perform(const latch_action& a);
    void send_read(std::uint64_t seq);
    void log(logger::level level, const std::string& what) const {
        if (io.log().enabled(level))
            io.log().log(level, "corolock: latch '" + name + "': " + what);
    }
};

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

latch::latch(connection& conn, std::string name, latch_options opts)
    : impl_(std::make_shared<detail::latch_impl>(
          detail::lock_transport(detail::access::impl(conn).shared_from_this()), std::move(name),
          opts)) {}

latch::latch(cluster& c, std::string name, latch_options opts)
    : impl_(std::make_shared<detail::latch_impl>(
          detail::lock_transport(detail::access::impl(c).shared_from_this()), std::move(name),
          opts)) {}

latch::~latch() {
    cancel();
}

void latch::cancel() {
    asio::post(impl_->io.strand(), [impl = impl_] {
        impl->run([](detail::latch_core& c, auto, detail::latch_actions& out) {
            c.cancel_all(error_code(asio::error::operation_aborted), out);
        });
    });
}

latch::executor_type latch::get_executor() const noexcept {
    return impl_->io.executor();
}
const std::string& latch::name() const noexcept {
    return impl_->name;
}
const latch_options& latch::options() const noexcept {
    return impl_->opts;
}

latch::clock::time_point latch::deadline_in(duration wait) noexcept {
    const auto now = clock::now();
    if (wait < duration::zero())
        return now;
    return wait >= clock::time_point::max() - now ? clock::time_point::max() : now + wait;
}

void latch::create_impl(std::uint64_t target,
                        asio::any_completion_handler<void(error_code, latch_round)> h) {
    const auto& im = *impl_;
    auto ec = im.invalid;
    if (!ec && (target == 0 || target > detail::max_latch_target))
        ec = error::invalid_argument;
    if (ec)
        return detail::deliver(std::move(h), im.io.executor(), ec, latch_round{});
    const std::string t = std::to_string(target);
    const std::string_view keys[] = {im.keys.name, im.keys.done};
    const std::string_view args[] = {t, im.retention_ms};
    const auto& sc = detail::latch_create_script();
    auto req = std::make_shared<request>(detail::make_evalsha(sc, keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, im.io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    im.io.start_eval(
        sc, im.keys.name, req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                detail::latch_created c;
                if (!ec)
                    ec = detail::decode_latch_create(*resp, c);
                if (ec && ec != error::target_mismatch)
                    c = {};
                std::move(h)(ec, latch_round{c.generation, c.target, c.created != 0});
            })));
}

void latch::count_down_impl(std::string id, std::uint64_t generation,
                            asio::any_completion_handler<void(error_code, latch_state)> h) {
    const auto& im = *impl_;
    auto ec = im.invalid;
    if (!ec && (id.empty() || id.size() > detail::max_participant_id || generation == 0))
        ec = error::invalid_argument;
    if (ec)
        return detail::deliver(std::move(h), im.io.executor(), ec, latch_state{});
    const std::string gen = std::to_string(generation);
    const std::string_view keys[] = {im.keys.name, im.keys.done};
    const std::string_view args[] = {id, gen, im.keys.channel, im.io.sharded() ? "S" : "P",
                                     im.retention_ms};
    const auto& sc = detail::latch_count_down_script();
    auto req = std::make_shared<request>(detail::make_evalsha(sc, keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, im.io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    im.io.start_eval(
        sc, im.keys.name, req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                detail::latch_count c;
                if (!ec)
                    ec = detail::decode_latch_count_down(*resp, c);
                latch_state st;
                if (!ec)
                    st = {c.open, c.remaining};
                std::move(h)(ec, st);
            })));
}

void latch::wait_impl(clock::time_point deadline,
                      asio::any_completion_handler<void(error_code)> h) {
    auto& im = *impl_;
    if (im.invalid)
        return detail::deliver(std::move(h), im.io.executor(), im.invalid);
    const auto id = im.next_id.fetch_add(1, std::memory_order_relaxed) + 1;
    auto slot = asio::get_associated_cancellation_slot(h);
    const auto& strand = im.io.strand();
    if (slot.is_connected())
        slot.assign(
            [weak = std::weak_ptr<detail::latch_impl>(impl_), id, strand](asio::cancellation_type) {
                asio::post(strand, [weak, id] {
                    if (auto l = weak.lock())
                        l->run([id](detail::latch_core& c, auto now, detail::latch_actions& out) {
                            c.cancel(id, now, out);
                        });
                });
            });
    detail::enter_strand(strand, [impl = impl_, id, deadline, h = std::move(h)]() mutable {
        impl->waiting.add(id, std::move(h));
        impl->run([id, deadline](detail::latch_core& c, auto now, detail::latch_actions& out) {
            c.add(id, deadline, now, out);
        });
    });
}

} // namespace corolock
