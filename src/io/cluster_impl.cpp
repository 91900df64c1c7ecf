// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The cluster router: it sequences the pure pieces (slot_table, parse_cluster_shards,
// redirect_policy) over one connection per master. Every decision is in those pieces.
#include "io/cluster_impl.hpp"

#include "io/exec.hpp"
#include "io/nothrow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/assert.hpp>

#include <algorithm>
#include <sstream>

namespace corolock {

namespace detail {

namespace asio = boost::asio;
using asio::awaitable;
using namespace asio::experimental::awaitable_operators;

namespace {

// Refreshes triggered by MOVED come at most this often; the MOVED itself patches the slot at
// once, so a burst of them costs one CLUSTER SHARDS (hiredis-cluster throttles the same way).
constexpr auto refresh_min_gap = std::chrono::seconds(1);

awaitable<std::tuple<error_code, std::size_t>> exec_on(std::shared_ptr<connection_impl> conn,
                                                       const request& req, generic_response& resp) {
    co_return co_await asio::async_initiate<decltype(nothrow), void(error_code, std::size_t)>(
        [&](auto handler) { start_exec(conn, req, make_adapter(resp), std::move(handler)); },
        nothrow);
}

bool cancelled(const asio::cancellation_state& cs) {
    return cs.cancelled() != asio::cancellation_type::none;
}

} // namespace

cluster_impl::cluster_impl(asio::any_io_executor ex, asio::ssl::context* tls, cluster_config cfg,
                           logger log)
    : user_ex_(std::move(ex)), strand_(asio::make_strand(user_ex_)), tls_(tls),
      cfg_(std::move(cfg)), log_(std::move(log)), run_timer_(strand_), refresh_done_(strand_),
      rng_(std::random_device{}()) {}

void cluster_impl::abandon() noexcept {
    // As connection_impl::abandon. The node connections abandon their own queues (they are
    // registered too); here go the subscriptions and the nodes.
    auto subs = std::move(subs_);
    subs_.clear();
    auto nodes = std::move(nodes_);
    nodes_.clear();
}

cluster_stats cluster_impl::stats() const noexcept {
    constexpr auto r = std::memory_order_relaxed;
    return {moved_.load(r),
            asks_.load(r),
            retries_.load(r),
            refreshes_.load(r),
            refresh_failures_.load(r),
            open_nodes_.load(r)};
}

// Callers check stopped_ first, with no suspension in between: stop() closes the connections
// it finds in nodes_, and none may be added after it.
std::shared_ptr<connection_impl> cluster_impl::node(const cluster_node& n) {
    BOOST_ASSERT(!stopped_);
    auto key = n.address();
    if (auto it = nodes_.find(key); it != nodes_.end())
        return it->second.conn;
    auto cfg = cfg_.node;
    cfg.host = n.host;
    cfg.port = n.port;
    cfg.unix_socket.clear();
    auto conn = make_abandonable<connection_impl>(user_ex_, user_ex_, tls_, std::move(cfg), log_);
    conn->use_sharded_pubsub();
    // An unreachable node may have left the cluster or lost its slots: a fresh map soon lets
    // the requests waiting for it go to the new owner (apply, below).
    conn->on_connect_failure([weak = weak_from_this()] {
        if (auto self = weak.lock())
            asio::post(self->strand_,
                       [self] { self->schedule_refresh(self->cfg_.try_again_delay); });
    });
    nodes_.emplace(key, node_entry{conn, 0});
    open_nodes_.store(nodes_.size(), std::memory_order_relaxed);
    log_.log(logger::level::info, "cluster: opening a connection to " + key);
    conn->start_run([](error_code) {});
    return conn;
}

void cluster_impl::start_run(asio::any_completion_handler<void(error_code)> handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected())
        slot.assign([weak = weak_from_this()](asio::cancellation_type) {
            if (auto self = weak.lock())
                self->stop();
        });
    asio::post(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
        if (self->running_ || self->stopped_) {
            deliver(std::move(h), self->user_ex_,
                    error_code(self->running_ ? error_code(error::operation_in_progress)
                                              : error_code(asio::error::operation_aborted)));
            return;
        }
        self->running_ = true;
        asio::co_spawn(self->strand_, self->run(),
                       asio::bind_cancellation_slot(
                           self->run_signal_.slot(),
                           [self, h = std::move(h)](std::exception_ptr ep, error_code ec) mutable {
                               if (ep || self->stopped_)
                                   ec = asio::error::operation_aborted;
                               self->running_ = false;
                               deliver(std::move(h), self->user_ex_, ec);
                           }));
    });
}

void cluster_impl::stop() {
    asio::post(strand_, [self = shared_from_this()] {
        if (self->stopped_)
            return;
        self->stopped_ = true;
        self->covered_flag_.store(false, std::memory_order_relaxed);
        for (auto& [addr, n] : self->nodes_)
            n.conn->stop();
        self->nodes_.clear();
        self->open_nodes_.store(0, std::memory_order_relaxed);
        self->refresh_done_.cancel();
        self->run_signal_.emit(asio::cancellation_type::terminal);
        self->subs_.clear();
        std::function<void()> hook;
        {
            std::lock_guard<std::mutex> g(self->lock_service_mutex_);
            hook = self->stop_hook_;
        }
        if (hook)
            hook(); // every lease is lost, every waiter ends
    });
}

awaitable<error_code> cluster_impl::run() {
    if (cfg_.seeds.empty())
        co_return error::invalid_argument;
    for (;;) {
        co_await refresh();
        if (stopped_)
            co_return asio::error::operation_aborted;
        // Until the map covers every slot, ask again soon; then at the configured pace.
        auto wait = cfg_.refresh_interval;
        if (table_.covered() < slot_count)
            wait = std::max<std::chrono::steady_clock::duration>(cfg_.try_again_delay,
                                                                 std::chrono::milliseconds(10));
        if (wait <= std::chrono::steady_clock::duration::zero())
            run_timer_.expires_at(std::chrono::steady_clock::time_point::max());
        else
            run_timer_.expires_after(wait);
        co_await run_timer_.async_wait(nothrow);
        if (cancelled(co_await asio::this_coro::cancellation_state) || stopped_)
            co_return asio::error::operation_aborted;
    }
}

void cluster_impl::schedule_refresh(std::chrono::steady_clock::duration min_gap) {
    if (refreshing_ || stopped_ || std::chrono::steady_clock::now() - last_refresh_ < min_gap)
        return;
    asio::co_spawn(
        strand_,
        [](std::shared_ptr<cluster_impl> self) -> awaitable<void> {
            co_await self->refresh();
        }(shared_from_this()),
        asio::detached);
}

awaitable<void> cluster_impl::refresh() {
    if (refreshing_) {
        // Coalesced: wait for the one in flight.
        const auto gen = refresh_gen_;
        while (refresh_gen_ == gen && !stopped_) {
            refresh_done_.expires_at(std::chrono::steady_clock::time_point::max());
            co_await refresh_done_.async_wait(nothrow);
            if (cancelled(co_await asio::this_coro::cancellation_state))
                co_return;
        }
        co_return;
    }
    refreshing_ = true;
    auto ec = co_await refresh_once();
    refreshing_ = false;
    last_refresh_ = std::chrono::steady_clock::now();
    ++refresh_gen_;
    refresh_done_.cancel();
    if (ec && !stopped_) {
        refresh_failures_.fetch_add(1, std::memory_order_relaxed);
        log_.log(logger::level::warning, "cluster: topology refresh failed: " + ec.message());
    }
}

awaitable<error_code> cluster_impl::refresh_once() {
    // Known masters first (shuffled, so that clients spread their questions), then the seeds;
    // a node whose connection is down goes last. Asking it first cost refresh_timeout while
    // the requests waiting for the refresh (a renewal among them) waited too: a lease was lost
    // when a deleted node was asked first.
    std::vector<cluster_node> ask = table_.nodes();
    std::shuffle(ask.begin(), ask.end(), rng_);
    for (const auto& s : cfg_.seeds) {
        cluster_node n{"", s.host, s.port};
        if (std::none_of(ask.begin(), ask.end(), [&](const cluster_node& k) {
                return k.host == n.host && k.port == n.port;
            }))
            ask.push_back(std::move(n));
    }
    std::stable_partition(ask.begin(), ask.end(), [&](const cluster_node& n) {
        const auto it = nodes_.find(n.address());
        return it == nodes_.end() || it->second.conn->is_connected();
    });
    request req;
    req.push("CLUSTER", "SHARDS");
    error_code last = error::cluster_down;
    for (const auto& n : ask) {
        if (stopped_)
            co_return asio::error::operation_aborted;
        auto conn = node(n);
        generic_response resp;
        asio::steady_timer timer(strand_, cfg_.refresh_timeout);
        auto r = co_await (exec_on(conn, req, resp) || timer.async_wait(nothrow));
        auto ec = r.index() == 1 ? error_code(error::connect_timeout) : std::get<0>(std::get<0>(r));
        slot_table fresh;
        if (!ec)
            ec = parse_cluster_shards(resp, fresh);
        if (ec) {
            log_.log(logger::level::info,
                     "cluster: no map from " + n.address() + " (" + ec.message() + ")");
            last = ec;
            continue;
        }
        apply(std::move(fresh));
        co_return error_code{};
    }
    co_return last;
}

void cluster_impl::apply(slot_table fresh) {
    table_ = std::move(fresh);
    refreshes_.fetch_add(1, std::memory_order_relaxed);
    covered_flag_.store(!stopped_ && table_.covered() == slot_count, std::memory_order_relaxed);
    // A node that owns no slot in two refreshes in a row is closed: by then the requests it had
    // in flight have long been answered (or redirected).
    for (auto it = nodes_.begin(); it != nodes_.end();) {
        const bool master =
            std::any_of(table_.nodes().begin(), table_.nodes().end(),
                        [&](const cluster_node& m) { return m.address() == it->first; });
        if (master) {
            it->second.absent = 0;
            ++it;
            continue;
        }
        // Every slot has a master elsewhere: requests still waiting for this node's connection
        // (never written) go by the new map now, not after max_wait_for_connection.
        if (table_.covered() == slot_count)
            it->second.conn->fail_waiting(error::not_connected);
        if (++it->second.absent >= 2) {
            log_.log(logger::level::info,
                     "cluster: closing the connection to " + it->first + " (no longer a master)");
            it->second.conn->stop();
            it = nodes_.erase(it);
            continue;
        }
        ++it;
    }
    open_nodes_.store(nodes_.size(), std::memory_order_relaxed);
    follow_owners();
}

void cluster_impl::follow_owners() {
    // A failover promoted a replica, or a reshard ended: the subscription goes to the slot's new
    // master with this map, not when the old node's connection is closed two maps later (the
    // waiters heard no release message meanwhile: each process then took the name only on its
    // back-off timers, and lost it to those woken at once). A subscription that had no node (no
    // owner in the map then) gets one. Its waiters retry: a release published at the new master
    // before the move was not heard.
    std::vector<std::string> moved;
    for (const auto& [channel, subs] : subs_) {
        const auto* owner = table_.owner(key_slot(channel));
        if (!owner)
            continue;
        const auto it = nodes_.find(owner->address());
        const auto* conn = it == nodes_.end() ? nullptr : it->second.conn.get();
        if (std::any_of(subs.begin(), subs.end(),
                        [conn](const subscription& x) { return !x.node || x.node.get() != conn; }))
            moved.push_back(channel);
    }
    for (const auto& channel : moved) {
        if (auto it = subs_.find(channel); it != subs_.end()) {
            std::vector<std::shared_ptr<push_listener>> targets;
            for (const auto& x : it->second)
                targets.push_back(x.target);
            for (const auto& t : targets)
                t->on_slot_moved();
        }
        subscribe_now(channel, false);
    }
}

awaitable<std::tuple<error_code, std::size_t>>
cluster_impl::route(std::uint16_t slot, const request& req, const request* eval,
                    response_adapter out, bool try_once) {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    redirect_policy policy(cfg_.max_redirects);
    std::optional<cluster_node> ask; // one-shot: the next attempt goes there with ASKING
    const request* current = &req;
    asio::steady_timer delay(strand_);
    for (;;) {
        if (stopped_)
            co_return std::tuple{error_code(error::not_connected), std::size_t{0}};
        cluster_node target;
        if (ask) {
            target = *ask;
        } else if (const auto* owner = table_.owner(slot)) {
            target = *owner;
        } else {
            co_await refresh();
            if (cancelled(co_await asio::this_coro::cancellation_state))
                co_return std::tuple{error_code(asio::error::operation_aborted), std::size_t{0}};
            if (const auto* owner2 = table_.owner(slot)) {
                target = *owner2;
            } else {
                auto d = policy.on_outcome({}, "CLUSTERDOWN no master serves the slot", {});
                if (d.what == redirect_policy::action::fail)
                    co_return std::tuple{error_code(error::cluster_down), std::size_t{0}};
                retries_.fetch_add(1, std::memory_order_relaxed);
                delay.expires_after(cfg_.try_again_delay);
                co_await delay.async_wait(nothrow);
                if (cancelled(co_await asio::this_coro::cancellation_state))
                    co_return std::tuple{error_code(asio::error::operation_aborted),
                                         std::size_t{0}};
                continue;
            }
        }
        // The refresh or the delay above may have outlived a stop: a node connection opened now
        // would never be closed.
        if (stopped_)
            co_return std::tuple{error_code(error::not_connected), std::size_t{0}};
        const bool asking = ask.has_value();
        ask.reset();
        auto conn = node(target);
        std::optional<request> with_ask;
        if (asking)
            with_ask.emplace(with_asking(*current));
        generic_response resp;
        auto [ec, bytes] = co_await exec_on(conn, asking ? *with_ask : *current, resp);
        // Aborted but not cancelled by the caller: the cluster closed that node's connection (it
        // left the map). The request may have been written: its outcome is unknown.
        if (ec == asio::error::operation_aborted && !stopped_ &&
            !cancelled(co_await asio::this_coro::cancellation_state))
            ec = error::connection_lost;
        const std::size_t skip = asking ? 1 : 0; // ASKING's own +OK
        const auto text = redirect_text(resp, skip);
        // Each node has its own script cache: NOSCRIPT sends the EVAL form to the same node.
        // Only the script's own reply counts: what the library sends after it in the same
        // request (WAIT, for replica acknowledgement) changes no data, so it may run twice.
        if (!ec && eval && current != eval && first_is_noscript(resp, skip)) {
            current = eval;
            if (asking)
                ask = target;
            continue;
        }
        auto d = policy.on_outcome(ec, text, target);
        switch (d.what) {
        case redirect_policy::action::complete: {
            auto replayed = replay(resp, skip, out);
            co_return std::tuple{ec ? ec : replayed, bytes};
        }
        case redirect_policy::action::fail:
            log_.log(logger::level::warning, "cluster: giving up on a request: " + d.ec.message());
            co_return std::tuple{d.ec, bytes};
        case redirect_policy::action::moved:
            moved_.fetch_add(1, std::memory_order_relaxed);
            if (log_.enabled(logger::level::debug)) {
                std::ostringstream os;
                os << "cluster: slot " << d.target.slot << " moved to " << d.target.node;
                log_.log(logger::level::debug, os.str());
            }
            table_.assign(d.target.slot, d.target.slot, d.target.node);
            schedule_refresh(refresh_min_gap);
            break;
        case redirect_policy::action::ask:
            asks_.fetch_add(1, std::memory_order_relaxed);
            ask = d.target.node;
            break;
        case redirect_policy::action::retry_later:
            if (try_once && text.starts_with("TRYAGAIN"))
                co_return std::tuple{error_code(error::try_again), bytes};
            retries_.fetch_add(1, std::memory_order_relaxed);
            delay.expires_after(cfg_.try_again_delay);
            co_await delay.async_wait(nothrow);
            // CLUSTERDOWN or an unreachable node: a failover may be under way, so the next
            // attempt goes by a fresh map (coalesced with any refresh in flight).
            if (d.refresh && !cancelled(co_await asio::this_coro::cancellation_state))
                co_await refresh();
            if (cancelled(co_await asio::this_coro::cancellation_state))
                co_return std::tuple{error_code(asio::error::operation_aborted), std::size_t{0}};
            break;
        }
    }
}

bool cluster_impl::first_is_noscript(const generic_response& resp, std::size_t skip) {
    std::size_t reply = 0;
    for (const auto& n : resp) {
        if (n.depth != 0)
            continue;
        if (reply++ == skip)
            return resp3::is_error(n.data_type) && n.value.starts_with("NOSCRIPT");
    }
    return false;
}

std::string cluster_impl::redirect_text(const generic_response& resp, std::size_t skip) {
    // Re-sending is safe only if no command of the request ran: every reply after `skip` must
    // be an error of condition::not_executed. Then the first one decides.
    std::string first;
    std::size_t reply = 0;
    for (const auto& n : resp) {
        if (n.depth != 0)
            continue;
        if (reply++ < skip)
            continue;
        if (!resp3::is_error(n.data_type))
            return {};
        if (!n.value.starts_with("NOSCRIPT") &&
            classify_server_error(n.value) != condition::not_executed)
            return {};
        if (first.empty())
            first = n.value;
    }
    return first;
}

error_code cluster_impl::replay(const generic_response& resp, std::size_t skip,
                                response_adapter out) {
    error_code ec;
    std::size_t reply = 0;
    for (const auto& n : resp) {
        if (n.depth == 0)
            ++reply;
        if (reply <= skip)
            continue;
        out(reply - 1 - skip, resp3::node_view{n.data_type, n.aggregate_size, n.depth, n.value},
            ec);
    }
    return ec;
}

void cluster_impl::start_route(std::uint16_t slot, std::shared_ptr<const request> req,
                               std::shared_ptr<const request> eval, response_adapter out,
                               asio::any_completion_handler<void(error_code, std::size_t)> handler,
                               bool try_once) {
    auto cslot = asio::get_associated_cancellation_slot(handler);
    auto body = [](std::shared_ptr<cluster_impl> self, std::uint16_t slot,
                   std::shared_ptr<const request> req, std::shared_ptr<const request> eval,
                   response_adapter out,
                   bool try_once) -> awaitable<std::tuple<error_code, std::size_t>> {
        co_return co_await self->route(slot, *req, eval.get(), out, try_once);
    };
    asio::co_spawn(
        strand_, body(shared_from_this(), slot, std::move(req), std::move(eval), out, try_once),
        asio::bind_cancellation_slot(
            cslot, [ex = user_ex_, h = std::move(handler)](
                       std::exception_ptr ep, std::tuple<error_code, std::size_t> r) mutable {
                auto [ec, n] = r;
                if (ep)
                    ec = asio::error::operation_aborted;
                deliver(std::move(h), ex, ec, n);
            }));
}

// ---------------------------------------------------------------------------------------------
// The lock layer's subscriptions.

namespace {

// Registered at a node connection for one lock listener: runs on the node's strand, so it posts
// every event to the cluster's strand, where the lock layer lives.
class relay_listener final : public push_listener {
public:
    relay_listener(std::weak_ptr<cluster_impl> c, std::weak_ptr<push_listener> target,
                   std::string channel)
        : cluster_(std::move(c)), target_(std::move(target)), channel_(std::move(channel)) {}

    // The payload travels on (it says how many waiters may retry: "permits 3").
    void on_message(std::string_view channel, std::string_view payload) override {
        post([ch = std::string(channel), p = std::string(payload)](
                 push_listener& l, cluster_impl&, const std::string&) { l.on_message(ch, p); });
    }
    void on_reconnect() override {
        post([](push_listener& l, cluster_impl&, const std::string&) { l.on_reconnect(); });
    }
    // The slot moved, or the node is gone: the waiters retry (their acquires follow MOVED), and
    // the subscription moves to the slot's new master once the map says which.
    void on_slot_moved() override { moved(); }
    void on_stop() override { moved(); }
    void on_subscribe_failed(error_code ec) override {
        post([ec](push_listener& l, cluster_impl&, const std::string&) {
            l.on_subscribe_failed(ec);
        });
    }
    // The node does not serve the channel's slot (a stale map, or the slot moved before the
    // subscription arrived): the waiters retry (a release published at the new owner meanwhile
    // was lost) and the subscription follows the redirect.
    void on_subscribe_redirected(std::string_view text) override {
        post([this, text = std::string(text)](push_listener& l, cluster_impl& c,
                                              const std::string& channel) {
            l.on_slot_moved();
            c.follow_subscribe_redirect(channel, this, text);
        });
    }

private:
    void moved() {
        post([](push_listener& l, cluster_impl& c, const std::string& channel) {
            l.on_slot_moved();
            c.resubscribe(channel, true);
        });
    }
    template <class F>
    void post(F f) {
        auto c = cluster_.lock();
        if (!c)
            return;
        asio::post(c->strand(), [c, t = target_, ch = channel_, f = std::move(f)] {
            if (auto l = t.lock(); l && !c->stopped())
                f(*l, *c, ch);
        });
    }

    std::weak_ptr<cluster_impl> cluster_;
    std::weak_ptr<push_listener> target_;
    std::string channel_;
};

void unregister_at(const std::shared_ptr<connection_impl>& node, const std::string& channel,
                   std::shared_ptr<push_listener> relay) {
    asio::post(node->strand(), [node, channel, relay = std::move(relay)] {
        node->remove_listener(channel, relay.get());
    });
}

} // namespace

void cluster_impl::add_listener(const std::string& channel, std::shared_ptr<push_listener> l) {
    auto relay = std::make_shared<relay_listener>(weak_from_this(), l, channel);
    subs_[channel].push_back({std::move(l), std::move(relay), nullptr});
    resubscribe(channel, false);
}

void cluster_impl::remove_listener(const std::string& channel, const push_listener* l) {
    auto it = subs_.find(channel);
    if (it == subs_.end())
        return;
    auto& v = it->second;
    for (auto s = v.begin(); s != v.end(); ++s)
        if (s->target.get() == l) {
            if (s->node)
                unregister_at(s->node, channel, s->relay);
            v.erase(s);
            break;
        }
    if (v.empty())
        subs_.erase(it);
}

void cluster_impl::resubscribe(const std::string& channel, bool moved,
                               std::chrono::steady_clock::duration delay) {
    if (stopped_)
        return;
    if (!moved && table_.owner(key_slot(channel)))
        return subscribe_now(channel, false);
    asio::co_spawn(
        strand_,
        [](std::shared_ptr<cluster_impl> self, std::string channel, bool moved,
           std::chrono::steady_clock::duration delay) -> awaitable<void> {
            if (delay > std::chrono::steady_clock::duration::zero()) {
                asio::steady_timer timer(self->strand_, delay);
                co_await timer.async_wait(nothrow);
                if (self->stopped_)
                    co_return;
            }
            co_await self->refresh();
            self->subscribe_now(channel, moved);
        }(shared_from_this(), channel, moved, delay),
        asio::detached);
}

void cluster_impl::follow_subscribe_redirect(const std::string& channel, const push_listener* relay,
                                             std::string_view text) {
    auto it = subs_.find(channel);
    if (it == subs_.end() || stopped_)
        return;
    auto s = std::find_if(it->second.begin(), it->second.end(),
                          [relay](const subscription& x) { return x.relay.get() == relay; });
    if (s == it->second.end() || !s->node)
        return; // gone, or unregistered since: its next registration decides
    const auto now = std::chrono::steady_clock::now();
    const bool soon_again = now - s->redirected < cfg_.try_again_delay;
    s->redirected = now;
    auto target = parse_redirect(text);
    if (target && target->node.host.empty())
        target->node.host = s->node->config().host;
    // MOVED names the slot's owner: go there at once, as a request would. Two nodes that each
    // name the other (views in flux), ASK (a migration: the source still serves the channel)
    // or a text we cannot read: ask for the map again after try_again_delay.
    if (target && text.starts_with("MOVED") && !soon_again &&
        target->node.address() != s->node->config().host + ":" + s->node->config().port) {
        moved_.fetch_add(1, std::memory_order_relaxed);
        log_.log(logger::level::info,
                 "cluster: subscription to " + channel + " moved to " + target->node.address());
        table_.assign(target->slot, target->slot, target->node);
        schedule_refresh(refresh_min_gap);
        return subscribe_now(channel, false);
    }
    resubscribe(channel, true, cfg_.try_again_delay);
}

void cluster_impl::subscribe_now(const std::string& channel, bool again) {
    auto it = subs_.find(channel);
    if (it == subs_.end() || stopped_)
        return;
    const auto* owner = table_.owner(key_slot(channel));
    auto conn = owner ? node(*owner) : nullptr; // none: the waiters' timers carry on alone
    for (auto& s : it->second) {
        if (s.node == conn && !again)
            continue;
        if (s.node)
            unregister_at(s.node, channel, s.relay);
        s.node = conn;
        if (conn)
            asio::post(conn->strand(),
                       [conn, channel, relay = s.relay] { conn->add_listener(channel, relay); });
    }
}

} // namespace detail

} // namespace corolock
