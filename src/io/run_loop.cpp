// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// async_run: connect, serve (reader || writer || health check), tear down, back off, again;
// and the reaper that fails requests waiting too long for a connection.
#include "core/slot_table.hpp"
#include "io/connection_impl.hpp"
#include "io/nothrow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <map>
#include <sstream>

namespace corolock::detail {

namespace asio = boost::asio;
using asio::awaitable;
using namespace asio::experimental::awaitable_operators;

void connection_impl::start_run(asio::any_completion_handler<void(error_code)> handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected())
        slot.assign([weak = weak_from_this()](asio::cancellation_type) {
            if (auto self = weak.lock())
                self->stop();
        });
    asio::post(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
        if (self->running_) {
            deliver(std::move(h), self->user_ex_, error_code(error::operation_in_progress));
            return;
        }
        self->running_ = true;
        self->stopping_ = false;
        self->stopped_ = false;
        auto body = [](std::shared_ptr<connection_impl> self) -> awaitable<error_code> {
            if (self->uses_sentinel() && self->cfg_.sentinel.follow_switch_master) {
                auto r = co_await (self->run() || self->reaper() || self->watch_sentinels());
                co_return r.index() == 0 ? std::get<0>(r)
                                         : error_code(asio::error::operation_aborted);
            }
            auto r = co_await (self->run() || self->reaper());
            co_return r.index() == 0 ? std::get<0>(r) : error_code(asio::error::operation_aborted);
        };
        asio::co_spawn(self->strand_, body(self),
                       asio::bind_cancellation_slot(
                           self->run_signal_.slot(),
                           [self, h = std::move(h)](std::exception_ptr ep, error_code ec) mutable {
                               if (ep || self->stopping_)
                                   ec = asio::error::operation_aborted;
                               self->on_disconnected(ec);
                               self->running_ = false;
                               self->stopped_ = true;
                               self->mpx_.fail_all(self->stopping_
                                                       ? error_code(asio::error::operation_aborted)
                                                       : error_code(error::not_connected));
                               // On a copy: a listener's on_stop may remove itself.
                               const auto listeners = self->listeners_;
                               for (const auto& [channel, ls] : listeners)
                                   for (const auto& l : ls)
                                       l->on_stop();
                               self->run_stop_hook();
                               deliver(std::move(h), self->user_ex_, ec);
                           }));
    });
}

void connection_impl::stop() {
    asio::post(strand_, [self = shared_from_this()] {
        self->stopping_ = true;
        if (self->running_) {
            // What is queued but unwritten goes out first, best effort (one non-blocking write
            // on a plain socket): a lease dropped just before the stop sends its release, as
            // its destructor promises, instead of leaving the key to expire. It still fails
            // with operation_aborted below, its outcome unknown, like any request in flight.
            if (self->connected_ && self->can_write_now() && self->mpx_.has_waiting())
                self->write_now();
            self->run_signal_.emit(asio::cancellation_type::terminal);
        } else {
            self->stopped_ = true;
            self->mpx_.fail_all(asio::error::operation_aborted);
        }
    });
}

awaitable<error_code> connection_impl::run() {
    backoff wait(cfg_.reconnect_wait, cfg_.reconnect_wait_max);
    error_code last;
    for (;;) {
        error_code ec = co_await connect_once();
        if (!ec) {
            wait.reset();
            last = {};
            on_connected();
            auto r = co_await (reader() || writer() || health_check());
            ec = std::visit([](error_code e) { return e; }, r);
            on_disconnected(ec);
        } else {
            stream_.close();
            if (ec != last && log_.enabled(logger::level::warning)) {
                std::ostringstream os;
                os << "connect to ";
                if (uses_sentinel())
                    os << "master '" << cfg_.sentinel.master_name << "' (Sentinel)";
                else
                    os << (cfg_.unix_socket.empty() ? cfg_.host + ":" + cfg_.port
                                                    : cfg_.unix_socket);
                os << " failed: " << ec.message();
                log_.log(logger::level::warning, os.str());
            }
            last_connect_error_ = ec;
            down_flag_.store(true, std::memory_order_relaxed);
            if (connect_failure_hook_)
                connect_failure_hook_();
        }
        last = ec;
        if (stopping_)
            co_return asio::error::operation_aborted;
        if (cfg_.reconnect_wait <= std::chrono::steady_clock::duration::zero())
            co_return ec;
        sleep_timer_.expires_after(wait.next(rng_));
        co_await sleep_timer_.async_wait(nothrow);
    }
}

awaitable<void> connection_impl::reaper() {
    for (;;) {
        auto oldest = connected_ ? std::nullopt : mpx_.oldest_waiting();
        const bool limited =
            cfg_.max_wait_for_connection > std::chrono::steady_clock::duration::zero();
        if (oldest && limited)
            reaper_timer_.expires_at(*oldest + cfg_.max_wait_for_connection);
        else
            reaper_timer_.expires_at(clock::time_point::max());
        co_await reaper_timer_.async_wait(nothrow);
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none)
            co_return;
        if (!connected_ && limited)
            mpx_.fail_waiting_before(clock::now() - cfg_.max_wait_for_connection,
                                     last_connect_error_ == error::auth_failed
                                         ? error_code(error::auth_failed)
                                         : error_code(error::not_connected));
    }
}

void connection_impl::on_connected() {
    connected_ = true;
    connected_flag_.store(true, std::memory_order_relaxed);
    down_flag_.store(false, std::memory_order_relaxed);
    const bool reconnect = connects_.fetch_add(1, std::memory_order_relaxed) > 0;
    last_connect_error_ = {};
    log_.log(logger::level::info, reconnect ? "reconnected" : "connected");
    // One SUBSCRIBE for every channel; on a cluster node one SSUBSCRIBE per slot, since a node
    // refuses channels of different slots in one SSUBSCRIBE with CROSSSLOT.
    std::map<std::uint16_t, std::vector<std::string>> by_slot;
    for (auto& [channel, ls] : listeners_)
        if (!refused_.contains(channel)) // refused: not retried (see push_listener)
            by_slot[sharded_pubsub_ ? key_slot(channel) : 0].push_back(channel);
    for (auto& [slot, channels] : by_slot)
        queue_subscribe(subscribe_command(), channels, true);
    if (reconnect) {
        for (auto& [channel, ls] : listeners_)
            for (auto& l : std::vector(ls))
                l->on_reconnect();
        std::function<void()> hook;
        {
            std::lock_guard<std::mutex> g(lock_service_mutex_);
            hook = reconnect_hook_;
        }
        if (hook)
            hook();
    }
    notify_writer();
    reaper_timer_.cancel();
}

void connection_impl::on_disconnected(error_code ec) {
    const bool was_connected = connected_;
    connected_ = false;
    // Not "known down" yet: only a failed connect attempt says so. A reachable server whose
    // connection dropped (a health check under load) is back after one reconnect, and requests
    // queued meanwhile should wait for it, not be refused.
    connected_flag_.store(false, std::memory_order_relaxed);
    stream_.close();
    writing_ = false;
    unwritten_ = {};
    unwritten_commands_ = unwritten_done_ = 0;
    rbuf_.clear();
    parser_.reset();
    route_ = route::none;
    in_attribute_ = false;
    push_nodes_.clear();
    own_unsubscribes_.clear();
    demoted_ = false;
    // In-flight requests learn why: a protocol error names the bad reply, the owner's stop is a
    // cancellation, anything else is a lost connection (their outcome on the server is unknown
    // in both last cases). A stop is not a fault: nothing warns of it.
    mpx_.on_connection_lost(ec == condition::protocol_violation ? ec
                            : stopping_ ? error_code(asio::error::operation_aborted)
                                        : error_code(error::connection_lost));
    if (was_connected && !stopping_ && log_.enabled(logger::level::warning))
        log_.log(logger::level::warning, "connection lost: " + ec.message());
    reaper_timer_.cancel();
}

} // namespace corolock::detail
