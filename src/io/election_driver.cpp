// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The election's driver: the campaign coroutine (the election's mutex, then the begin script,
// waiting out a lock-delay when the script says so) and the observers (a listener on the
// election channel, reads after each gap and at each leader's expiry). The decisions are in
// core/election_core.hpp.
#include "io/election_driver.hpp"

#include "core/access.hpp"
#include "core/decimal.hpp"
#include "core/election_core.hpp"
#include "core/lock_scripts.hpp"
#include "core/script_request.hpp"
#include "io/deliver.hpp"
#include "io/observer_state.hpp"
#include "io/push_listener.hpp"
#include "io/spawn_op.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tuple>

namespace corolock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

// The same eval as an asynchronous operation that cancellation does not reach (an election
// script's outcome must be known: a begin that ran is undone by a resign, which needs the reply).
template <class CompletionToken>
auto async_eval(const election_core& c, const script& s, std::span<const std::string_view> keys,
                std::span<const std::string_view> args, std::shared_ptr<generic_response> resp,
                CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code)>(
        [&c, &s, keys, args](auto h, std::shared_ptr<generic_response> r) {
            c.eval(s, keys, args, std::move(r),
                   asio::bind_cancellation_slot(asio::cancellation_slot(), std::move(h)));
        },
        token, std::move(resp));
}

using campaign_result = std::tuple<error_code, leadership>;

asio::awaitable<campaign_result> run_campaign(std::shared_ptr<election_core> c,
                                              clock::duration wait, std::string value) {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (!c->invalid.empty()) {
        c->io.log().log(logger::level::warning, "election " + c->name + ": " + c->invalid);
        co_return campaign_result{error::invalid_argument, leadership{}};
    }
    auto [ec, l] = co_await c->lock->async_acquire_for(wait, asio::as_tuple(asio::use_awaitable));
    if (ec)
        co_return campaign_result{ec, leadership{}};
    bool check_delay = c->opts.lock_delay > clock::duration::zero();
    for (;;) {
        const std::string_view keys[] = {c->name, c->record};
        const auto rec = c->record_ms();
        const std::string_view args[] = {l.owner_id(),      value,      rec,
                                         c->publish_flag(), c->channel, check_delay ? "1" : "0"};
        auto resp = std::make_shared<generic_response>();
        std::tie(ec) = co_await async_eval(*c, begin_script(), keys, args, resp,
                                           asio::as_tuple(asio::use_awaitable));
        begin_reply r{};
        if (!ec)
            ec = decode_begin(*resp, r);
        if (ec) {
            // Unknown outcome: the term may have begun. End it (owner-checked), then release.
            const std::string_view rkeys[] = {c->name, c->record};
            // The lease rides in the handler: released once the end is answered (a release
            // that went first would leave the end nothing to end).
            const std::string owner(l.owner_id());
            const std::string_view rargs[] = {owner, rec, c->publish_flag(), c->channel};
            c->eval(resign_script(), rkeys, rargs, std::make_shared<generic_response>(),
                    [kept = std::make_shared<corolock::lease>(std::move(l))](error_code) {});
            co_return campaign_result{ec, leadership{}};
        }
        if (r == begin_reply::lost)
            co_return campaign_result{error::lease_lost, leadership{}};
        if (r == begin_reply::begun)
            co_return campaign_result{
                error_code{}, access::construct<leadership>(std::move(l), c, std::move(value))};
        c->io.log().log(logger::level::info, lock_delay_text(c->name, c->opts.lock_delay));
        if (auto dec = co_await wait_lock_delay(c->opts.lock_delay, l))
            co_return campaign_result{dec, leadership{}};
        check_delay = false;
    }
}

} // namespace

election_core::election_core(lock_transport t, std::string n, election_options o,
                             std::unique_ptr<corolock::mutex> m)
    : io(std::move(t)), name(std::move(n)), record(derived_key(name, "leader")),
      fence(derived_key(name, "fence")), channel(record), opts(o), lock(std::move(m)) {
    if (opts.lock_delay < clock::duration::zero() || opts.lock_delay > max_lock_delay)
        invalid = "election_options::lock_delay is out of range (0 to 1 h)";
}

std::string election_core::record_ms() const {
    return ms_text(opts.lock.lease + opts.lock.fence_retention + opts.lock_delay);
}

void election_core::eval(const script& s, std::span<const std::string_view> keys,
                         std::span<const std::string_view> args,
                         std::shared_ptr<generic_response> resp,
                         asio::any_completion_handler<void(error_code)> done) const {
    io.run_script(s, name, keys, args, std::move(resp), std::move(done));
}

void spawn_campaign(std::shared_ptr<election_core> core, clock::duration wait, std::string value,
                    asio::any_completion_handler<void(error_code, leadership)> h) {
    const auto strand = core->io.strand();
    const auto ex = core->io.executor();
    spawn_op<leadership>(strand, ex, run_campaign(std::move(core), wait, std::move(value)),
                         std::move(h));
}

// ---------------------------------------------------------------------------------------------
// Observers

namespace {

// The Redis follower: a listener on the election channel, a read after each gap, at each
// leader's expiry (unless renewed: read again) and, without channel rights, every retry_max.
struct redis_observer final : observer_state, push_listener {
    explicit redis_observer(std::shared_ptr<election_core> c)
        : observer_state(c->io.strand(), c->io.executor(), lock_backend::redis), core(std::move(c)),
          timer(core->io.strand()) {}

    std::shared_ptr<election_core> core;
    asio::steady_timer timer; // the next read: a leader's expiry, or a retry
    bool reading = false;
    bool read_again = false;
    bool subscribed = true;     // false: the channel was refused, reads are the only news
    std::uint64_t messages = 0; // taken so far: a read that raced one may be older than it
    clock::duration retry = clock::duration::zero();

    std::weak_ptr<redis_observer> weak() {
        return std::static_pointer_cast<redis_observer>(shared_from_this());
    }

    // ---- strand only
    void start() {
        core->io.add_listener(core->channel,
                              std::static_pointer_cast<redis_observer>(shared_from_this()));
        read();
    }

    void on_message(std::string_view, std::string_view payload) override {
        if (auto v = parse_leader_message(payload)) {
            ++messages;
            take(*v);
        }
    }
    void on_reconnect() override {
        fsm.on_gap();
        read();
    }
    void on_stop() override { stop(); }
    void on_subscribe_failed(error_code ec) override {
        subscribed = false;
        core->io.log().log(logger::level::warning,
                           "election " + core->name + ": the observer's subscription to " +
                               core->channel + " was refused (" + ec.message() +
                               "); it reads the leader every retry_max instead");
        fsm.on_gap();
        read();
    }

    void take(const leader_view& v) {
        take_view(v);
        // Without a subscription, reads are the only news: every retry_max.
        const auto in =
            next_read_in(v, subscribed ? clock::duration::max() : core->opts.lock.retry_max);
        arm(in == clock::duration::max() ? clock::time_point::max() : clock::now() + in);
    }

    void arm(clock::time_point at) {
        if (stopped)
            return;
        timer.expires_at(at);
        timer.async_wait([w = weak()](error_code ec) {
            if (auto s = w.lock(); s && !ec)
                s->read();
        });
    }

    void read() {
        if (stopped)
            return;
        if (reading) {
            read_again = true;
            return;
        }
        reading = true;
        const std::string_view keys[] = {core->name, core->fence};
        auto resp = std::make_shared<generic_response>();
        core->eval(leader_read_script(), keys, {}, resp,
                   [w = weak(), resp, at = messages](error_code ec) {
                       auto s = w.lock();
                       if (!s)
                           return;
                       s->reading = false;
                       leader_view v;
                       if (!ec)
                           ec = decode_leader_read(*resp, v);
                       if (s->stopped)
                           return;
                       if (ec) {
                           s->failed_read(ec);
                           return;
                       }
                       s->retry = clock::duration::zero();
                       // "Nobody" from a read a message overtook may predate that message's
                       // term (the reply is handled after the push): read again instead.
                       if (!v.present && s->messages != at)
                           s->read_again = true;
                       else
                           s->take(v);
                       if (std::exchange(s->read_again, false))
                           s->read();
                   });
    }

    // A read that failed (the connection is down, or the server refused): again after a
    // back-off, doubling from retry_base to retry_max; a reconnect reads at once anyway.
    void failed_read(error_code ec) {
        const auto& o = core->opts.lock;
        retry = retry == clock::duration::zero() ? o.retry_base : std::min(retry * 2, o.retry_max);
        core->io.log().log(logger::level::debug, "election " + core->name +
                                                     ": observer read failed (" + ec.message() +
                                                     "), again in " + ms_text(retry) + " ms");
        read_again = false;
        arm(clock::now() + retry);
    }

    void halt() override {
        timer.cancel();
        core->io.remove_listener(core->channel, this);
    }
};

} // namespace

std::shared_ptr<observer_state> start_observer(std::shared_ptr<election_core> core) {
    auto s = std::make_shared<redis_observer>(std::move(core));
    asio::post(s->strand, [s] { s->start(); });
    return s;
}

} // namespace corolock::detail
