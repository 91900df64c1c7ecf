// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The I/O of Sentinel support: asking the Sentinels for the master before each connect, and the
// side subscriptions to +switch-master and the failover announcements. Every decision is in
// core/sentinel_resolve.
#include "io/connection_impl.hpp"
#include "io/nothrow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sstream>

namespace corolock::detail {

namespace asio = boost::asio;
using asio::awaitable;
using namespace asio::experimental::awaitable_operators;

namespace {

// Most nodes kept from one Sentinel reply: a SENTINEL SENTINELS reply has ~30 per Sentinel.
constexpr std::size_t max_sentinel_nodes = 64 * 1024;

std::string describe(const address& a) {
    return a.host + ":" + a.port;
}

// Reads `replies` whole top-level messages (replies or pushes) into `out`, attributes skipped.
awaitable<error_code> read_messages(stream& s, read_buffer& buf, resp3::parser& p,
                                    std::size_t replies, std::size_t max_read,
                                    generic_response& out) {
    for (std::size_t i = 0; i < replies;) {
        error_code ec;
        auto n = p.consume(buf.unread(), ec);
        if (ec)
            co_return ec;
        if (!n) {
            if (buf.unread().size() > max_read)
                co_return error::message_too_large;
            auto [rec, rn] = co_await s.read_some(buf.prepare(4096));
            if (rec)
                co_return rec;
            buf.commit(rn);
            continue;
        }
        if (n->data_type != resp3::type::attribute) {
            if (out.size() >= max_sentinel_nodes)
                co_return error::message_too_large;
            out.push_back({n->data_type, n->aggregate_size, n->depth, std::string(n->value)});
        }
        if (p.done()) {
            buf.consume(p.consumed());
            p.reset();
            ++i;
        }
    }
    co_return error_code{};
}

// Runs `op` against a timer (0: no limit); the timer's expiry is `on_timeout`.
awaitable<error_code> within(const asio::any_io_executor& ex, std::chrono::steady_clock::duration d,
                             awaitable<error_code> op, error_code on_timeout) {
    if (d <= std::chrono::steady_clock::duration::zero())
        co_return co_await std::move(op);
    asio::steady_timer timer(ex, d);
    auto r = co_await (std::move(op) || timer.async_wait(nothrow));
    if (r.index() == 1)
        co_return on_timeout;
    co_return std::get<0>(r);
}

awaitable<error_code> exchange(stream& s, read_buffer& buf, resp3::parser& p, const request& req,
                               std::size_t max_read, generic_response& resp) {
    auto [wec, wn] = co_await s.write(asio::buffer(req.payload()));
    if (wec)
        co_return wec;
    co_return co_await read_messages(s, buf, p, req.expected_responses(), max_read, resp);
}

// Reads the +switch-master subscription's messages until the stream fails, stamping `heard` at
// each one (a message or a PONG) and passing each message to `on_message`.
template <class OnMessage>
awaitable<error_code> read_watch(stream& s, read_buffer& buf, resp3::parser& p,
                                 std::size_t max_read, std::chrono::steady_clock::time_point& heard,
                                 OnMessage on_message) {
    for (;;) {
        generic_response msg;
        if (auto ec = co_await read_messages(s, buf, p, 1, max_read, msg))
            co_return ec;
        heard = std::chrono::steady_clock::now();
        on_message(msg);
    }
}

// The watch's health check: a PING every `every`; a Sentinel that has said nothing for one and a
// half intervals (paused, or a dead link that TCP has not noticed) is left for the next one.
awaitable<error_code> keep_watch_alive(stream& s, const asio::any_io_executor& ex,
                                       std::chrono::steady_clock::duration every,
                                       const std::chrono::steady_clock::time_point& heard) {
    asio::steady_timer timer(ex);
    if (every <= std::chrono::steady_clock::duration::zero()) {
        timer.expires_at(std::chrono::steady_clock::time_point::max());
        auto [ec] = co_await timer.async_wait(nothrow);
        co_return ec ? ec : error_code(asio::error::operation_aborted);
    }
    request ping;
    ping.push("PING");
    for (;;) {
        timer.expires_after(every);
        if (auto [ec] = co_await timer.async_wait(nothrow); ec)
            co_return ec;
        if (std::chrono::steady_clock::now() - heard > every + every / 2)
            co_return error::pong_timeout;
        if (auto [ec, n] = co_await s.write(asio::buffer(ping.payload())); ec)
            co_return ec;
    }
}

} // namespace

bool connection_impl::demoted_reply(std::string_view text) noexcept {
    const auto word = text.substr(0, text.find(' '));
    return word == "READONLY" || word == "MASTERDOWN";
}

awaitable<sentinel_answer> connection_impl::ask_sentinel(const address& where) {
    sentinel_answer out;
    const auto& sc = cfg_.sentinel;
    connection_config c = cfg_;
    c.host = where.host;
    c.port = where.port;
    c.unix_socket.clear();
    c.use_tls = sc.use_tls;
    stream s;
    out.ec = co_await within(strand_, sc.connect_timeout, s.connect(c, tls_, strand_),
                             error::connect_timeout);
    if (out.ec)
        co_return out;
    const request req = make_sentinel_request(sc);
    read_buffer buf;
    resp3::parser p(cfg_.limits);
    generic_response resp;
    out.ec =
        co_await within(strand_, sc.request_timeout,
                        exchange(s, buf, p, req, cfg_.max_read_size, resp), error::connect_timeout);
    s.close();
    if (!out.ec)
        out = parse_sentinel_answer(resp);
    co_return out;
}

awaitable<connection_impl::resolved> connection_impl::resolve_master() {
    auto& list = *sentinels_;
    list.start_round();
    while (const address* s = list.next()) {
        const address sentinel = *s; // on_answer reorders the list
        const auto a = co_await ask_sentinel(sentinel);
        if (co_await cancelled())
            co_return resolved{asio::error::operation_aborted, {}};
        if (a.ec && log_.enabled(logger::level::debug))
            log_.log(logger::level::debug,
                     "sentinel " + describe(sentinel) + ": " + a.ec.message());
        const bool usable = a.ec || failover_->usable(a.master, clock::now());
        if (!usable && log_.enabled(logger::level::info))
            log_.log(logger::level::info, "sentinel " + describe(sentinel) + " names " +
                                              describe(a.master) +
                                              ", which is being failed over; asking the next");
        if (list.on_answer(a, usable)) {
            resolves_.fetch_add(1, std::memory_order_relaxed);
            if (log_.enabled(logger::level::info))
                log_.log(logger::level::info, "sentinel " + describe(sentinel) + ": master '" +
                                                  cfg_.sentinel.master_name + "' is at " +
                                                  describe(a.master));
            co_return resolved{{}, a.master};
        }
    }
    co_return resolved{list.failure(), {}};
}

void connection_impl::on_sentinel_message(const address& from, std::string_view channel,
                                          std::string_view payload) {
    const auto act =
        failover_->on_message(describe(from), channel, payload, master_, connected_, clock::now());
    if (channel == "+switch-master") {
        // A connect attempt may be backing off after failover_in_progress: try the new master
        // now.
        sleep_timer_.cancel();
        if (act != failover_watch::action::drop)
            return; // already there (a late or repeated message), or not our master
        master_switches_.fetch_add(1, std::memory_order_relaxed);
        if (log_.enabled(logger::level::warning))
            log_.log(logger::level::warning,
                     "sentinel: +switch-master '" + cfg_.sentinel.master_name + "' to " +
                         describe(*failover_->switched_to()) + "; dropping the connection to " +
                         describe(master_));
    } else {
        if (act != failover_watch::action::drop)
            return;
        if (log_.enabled(logger::level::warning))
            log_.log(logger::level::warning,
                     "sentinel " + describe(from) + ": " + std::string(channel) + " of '" +
                         cfg_.sentinel.master_name + "'; dropping the connection to " +
                         describe(master_) + " until the failover ends");
    }
    // The reader and writer fail on the closed socket: written requests fail with
    // connection_lost, waiting ones stay queued, and the next connect resolves again.
    stream_.close();
}

awaitable<void> connection_impl::watch_sentinels(std::size_t first) {
    if (first == 0)
        watching_.assign(std::max<std::size_t>(cfg_.sentinel.addresses.size(), 1), std::nullopt);
    // One watch per entry, all at once: `||` ends only when every branch is cancelled.
    if (first + 1 >= watching_.size())
        co_return co_await watch_sentinel(first);
    co_await (watch_sentinel(first) || watch_sentinels(first + 1));
}

awaitable<void> connection_impl::watch_sentinel(std::size_t self) {
    const auto& sc = cfg_.sentinel;
    backoff wait(std::chrono::milliseconds(100), std::chrono::seconds(2));
    std::size_t next = self;
    asio::steady_timer sleep(strand_);
    for (;;) {
        const auto target = pick_watch_target(sentinels_->current(), watching_, self, next++);
        if (!target)
            co_return;
        const address where = *target;
        watching_[self] = where;
        connection_config c = cfg_;
        c.host = where.host;
        c.port = where.port;
        c.unix_socket.clear();
        c.use_tls = sc.use_tls;
        stream s;
        error_code ec = co_await within(strand_, sc.connect_timeout, s.connect(c, tls_, strand_),
                                        error::connect_timeout);
        if (co_await cancelled())
            co_return;
        read_buffer buf;
        resp3::parser p(cfg_.limits);
        if (!ec) {
            request req;
            if (sc.password.empty())
                req.push("HELLO", 3);
            else
                req.push("HELLO", 3, "AUTH", sc.username.empty() ? "default" : sc.username,
                         sc.password);
            req.push_range("SUBSCRIBE", failover_watch::channels());
            auto [wec, wn] = co_await s.write(asio::buffer(req.payload()));
            ec = wec;
            generic_response hello;
            if (!ec)
                ec = co_await read_messages(s, buf, p, 1, cfg_.max_read_size, hello);
            if (!ec && (hello.empty() || resp3::is_error(hello.front().data_type)))
                ec = error::server_error;
        }
        if (!ec) {
            wait.reset();
            auto heard = std::chrono::steady_clock::now();
            auto on_message = [this, &where](const generic_response& msg) {
                // [push 3] message channel payload
                if (msg.size() == 4 && msg[0].data_type == resp3::type::push &&
                    msg[1].value == "message")
                    on_sentinel_message(where, msg[2].value, msg[3].value);
            };
            auto r = co_await (read_watch(s, buf, p, cfg_.max_read_size, heard, on_message) ||
                               keep_watch_alive(s, strand_, cfg_.health_check_interval, heard));
            ec = r.index() == 0 ? std::get<0>(r) : std::get<1>(r);
        }
        s.close();
        watching_[self].reset();
        if (co_await cancelled())
            co_return;
        if (log_.enabled(logger::level::debug))
            log_.log(logger::level::debug,
                     "sentinel " + describe(where) + ": failover watch: " + ec.message());
        sleep.expires_after(wait.next(rng_));
        co_await sleep.async_wait(nothrow);
        if (co_await cancelled())
            co_return;
    }
}

} // namespace corolock::detail
