// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "detail/backoff.hpp"
#include "detail/connection_impl.hpp"
#include "detail/lock_scripts.hpp"
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <openssl/rand.h>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace corolock {
namespace detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using handler_ec = asio::any_completion_handler<void(error_code)>;

namespace {

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

std::string random_owner_id() {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1)
        throw std::runtime_error("corolock: the CSPRNG (RAND_bytes) failed");
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 0xf]);
    }
    return out;
}

std::int64_t to_ms(clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

} // namespace

class lock_service;

struct lock_state : std::enable_shared_from_this<lock_state> {
    lock_state(connection& c, std::string n, mutex_options o)
        : conn(c.impl().shared_from_this()), name(std::move(n)),
          fence_key(derived_key(name, "fence")), channel(derived_key(name, "released")),
          owner(random_owner_id()), opts(std::move(o)), lease_ms(std::to_string(to_ms(opts.lease))),
          drift(std::min<clock::duration>(opts.lease / 100 + std::chrono::milliseconds(2),
                                          opts.lease / 2)),
          wake(conn->strand()) {}

    const asio::any_io_executor& executor() const { return conn->executor(); }
    bool held() const { return server_count > 0 && !lost_flag; }
    void publish() {
        count_view.store(held() ? server_count + local_count : 0, std::memory_order_relaxed);
        token_view.store(token, std::memory_order_relaxed);
        lost_view.store(lost_flag, std::memory_order_relaxed);
    }
    error_code validate() const {
        if (!lockable_name(name))
            return error::invalid_name;
        // Below 10 ms a lease cannot outlast its own round trip and drift margin.
        if (opts.lease < std::chrono::milliseconds(10) || opts.lease > std::chrono::hours(24 * 365))
            return error::invalid_lease;
        return {};
    }

    std::shared_ptr<connection_impl> conn;
    std::shared_ptr<lock_service> service;
    const std::string name, fence_key, channel, owner;
    const mutex_options opts;
    const std::string lease_ms;
    const clock::duration drift;

    // Strand only.
    std::size_t server_count = 0; // holds recorded in Redis
    std::size_t local_count = 0;  // nested holds served without a round trip
    std::uint64_t token = 0;
    std::uint64_t epoch = 0; // acquisitions from free, to spot stale renewal replies
    bool busy = false;
    bool lost_flag = false;
    bool watched = false;
    std::size_t watch_index = 0; // position in the service's watch list
    bool renew_in_flight = false;
    bool queued = false;
    bool attempt_now = false; // as a queued waiter: try at the next wake-up
    clock::time_point deadline{}, next_renewal{}, acquired_at{};
    std::map<std::uint64_t, handler_ec> lost_waiters;
    std::uint64_t next_waiter_id = 0;
    asio::steady_timer wake;

    // Any thread.
    std::atomic<std::size_t> count_view{0};
    std::atomic<std::uint64_t> token_view{0};
    std::atomic<bool> lost_view{false};
};

// Per-connection lock machinery, on the connection's strand: the local waiter queues (one
// subscription per contended name) and the watchdog that renews every held lease in batches.
class lock_service : public std::enable_shared_from_this<lock_service> {
public:
    explicit lock_service(connection_impl& c)
        : conn_(c), timer_(c.strand()), rng_(std::random_device{}()) {}

    std::minstd_rand& rng() { return rng_; }

    // ---- local FIFO queues
    void enqueue(lock_state& s) {
        auto& q = queues_[s.name];
        if (!q.subscriber) {
            q.subscriber = std::make_shared<listener>(weak_from_this(), s.name);
            conn_.add_listener(s.channel, q.subscriber);
        }
        s.queued = true;
        s.attempt_now = q.fifo.empty();
        q.fifo.push_back(&s);
    }
    void dequeue(lock_state& s) {
        if (!s.queued)
            return;
        s.queued = false;
        auto it = queues_.find(s.name);
        if (it == queues_.end())
            return;
        auto& fifo = it->second.fifo;
        const bool was_head = !fifo.empty() && fifo.front() == &s;
        fifo.erase(std::remove(fifo.begin(), fifo.end(), &s), fifo.end());
        if (fifo.empty()) {
            conn_.remove_listener(s.channel, it->second.subscriber.get());
            queues_.erase(it);
        } else if (was_head) {
            // The next waiter becomes head; an unconsumed wake-up passes on with it.
            lock_state* next = fifo.front();
            next->attempt_now = s.attempt_now;
            next->wake.cancel();
        }
        s.attempt_now = false;
    }
    // The connection stopped for good: no renewal can happen, so every held lease is lost now,
    // and every waiter wakes up to learn it.
    void on_connection_stopped() {
        for (auto& s : std::vector(watched_))
            lose(*s, error::lease_lost);
        for (auto& [name, q] : queues_)
            for (lock_state* s : q.fifo)
                s->wake.cancel();
    }
    bool has_waiters(std::string_view name) const { return queues_.find(name) != queues_.end(); }
    bool is_head(const lock_state& s) const {
        auto it = queues_.find(s.name);
        return it != queues_.end() && !it->second.fifo.empty() && it->second.fifo.front() == &s;
    }
    void wake_head(const std::string& name) {
        auto it = queues_.find(name);
        if (it == queues_.end() || it->second.fifo.empty())
            return;
        lock_state* head = it->second.fifo.front();
        head->attempt_now = true;
        head->wake.cancel();
        stats.pubsub_wakeups.fetch_add(1, std::memory_order_relaxed);
    }

    // ---- lease watch: renewal (watchdog mode) and deadline (both modes). O(1) to add or remove;
    // the loop is woken only when a lock needs attention before its planned wake-up.
    void watch(std::shared_ptr<lock_state> s) {
        const auto first = next_event(*s);
        if (!s->watched) {
            s->watched = true;
            s->watch_index = watched_.size();
            watched_.push_back(std::move(s));
        }
        if (!loop_running_ || first < planned_)
            kick();
    }
    void unwatch(lock_state& s) {
        if (!s.watched)
            return;
        s.watched = false;
        const auto i = s.watch_index;
        if (i + 1 != watched_.size()) {
            watched_[i] = std::move(watched_.back());
            watched_[i]->watch_index = i;
        }
        watched_.pop_back();
        if (watched_.empty() && loop_running_)
            timer_.cancel(); // let the loop end
    }
    void lose(lock_state& s, error_code why) {
        if (s.lost_flag || s.server_count == 0)
            return;
        s.lost_flag = true;
        unwatch(s);
        stats.leases_lost.fetch_add(1, std::memory_order_relaxed);
        s.publish(); // before any handler runs: they may look at lost()
        auto waiters = std::move(s.lost_waiters);
        s.lost_waiters.clear();
        for (auto& [id, h] : waiters)
            deliver(std::move(h), s.executor(), why);
        if (s.opts.on_lost)
            asio::post(s.executor(), [f = s.opts.on_lost, why] { f(why); });
    }

    struct counters {
        std::atomic<std::uint64_t> attempts{0}, pubsub_wakeups{0}, timer_wakeups{0}, renewals{0},
            renewal_calls{0}, leases_lost{0}, fast_reentries{0};
    } stats;

private:
    class listener final : public push_listener {
    public:
        listener(std::weak_ptr<lock_service> svc, std::string name)
            : svc_(std::move(svc)), name_(std::move(name)) {}
        void on_message(std::string_view, std::string_view) override {
            if (auto s = svc_.lock())
                s->wake_head(name_);
        }
        // Releases published while the connection was down are lost: try again.
        void on_reconnect() override { on_message({}, {}); }

    private:
        std::weak_ptr<lock_service> svc_;
        std::string name_;
    };
    struct waiter_queue {
        std::shared_ptr<class listener> subscriber;
        std::deque<lock_state*> fifo;
    };

    void kick() {
        if (loop_running_) {
            timer_.cancel();
            return;
        }
        loop_running_ = true;
        asio::co_spawn(conn_.strand(), watch_loop(shared_from_this()), asio::detached);
    }

    static clock::time_point next_event(const lock_state& s) {
        auto t = s.deadline;
        if (s.opts.max_hold > clock::duration::zero())
            t = std::min(t, s.acquired_at + s.opts.max_hold);
        if (s.opts.watchdog && !s.renew_in_flight)
            t = std::min(t, s.next_renewal);
        return t;
    }

    // Renewals due within this window join the current round, to share script calls.
    static clock::duration renewal_slack(const lock_state& s) {
        return std::min<clock::duration>(s.opts.lease / 6, std::chrono::milliseconds(100));
    }

    static asio::awaitable<void> watch_loop(std::shared_ptr<lock_service> self) {
        while (!self->watched_.empty()) {
            const auto now = clock::now();
            std::vector<std::pair<std::shared_ptr<lock_state>, error>> losing;
            std::vector<std::shared_ptr<lock_state>> due;
            auto wake_at = clock::time_point::max();
            for (auto& s : self->watched_) {
                if (now >= s->deadline) {
                    losing.emplace_back(s, error::lease_lost);
                    continue;
                }
                if (s->opts.max_hold > clock::duration::zero() &&
                    now >= s->acquired_at + s->opts.max_hold) {
                    losing.emplace_back(s, error::max_hold_reached);
                    continue;
                }
                if (s->opts.watchdog && !s->renew_in_flight &&
                    s->next_renewal <= now + renewal_slack(*s)) {
                    due.push_back(s);
                    wake_at = std::min(wake_at, s->deadline);
                    continue;
                }
                wake_at = std::min(wake_at, next_event(*s));
            }
            for (auto& [s, why] : losing)
                self->lose(*s, why);
            for (std::size_t i = 0; i < due.size(); i += 100)
                self->renew(std::vector(
                    due.begin() + static_cast<std::ptrdiff_t>(i),
                    due.begin() + static_cast<std::ptrdiff_t>(std::min(due.size(), i + 100))));
            if (self->watched_.empty())
                break;
            self->planned_ = wake_at;
            self->timer_.expires_at(wake_at);
            co_await self->timer_.async_wait(nothrow);
        }
        self->planned_ = clock::time_point::max();
        self->loop_running_ = false;
    }

    void renew(std::vector<std::shared_ptr<lock_state>> batch) {
        const auto sent = clock::now();
        std::vector<std::string_view> keys, args;
        std::vector<std::uint64_t> epochs;
        for (auto& s : batch) {
            s->renew_in_flight = true;
            keys.push_back(s->name);
            args.push_back(s->owner);
            args.push_back(s->lease_ms);
            epochs.push_back(s->epoch);
        }
        auto req = std::make_shared<request>(connection::make_evalsha(renew_script(), keys, args));
        auto resp = std::make_shared<generic_response>();
        stats.renewal_calls.fetch_add(1, std::memory_order_relaxed);
        start_eval(conn_.shared_from_this(), renew_script(), req, *resp,
                   asio::bind_executor(
                       conn_.strand(), [self = shared_from_this(), batch = std::move(batch),
                                        epochs = std::move(epochs), resp, sent](error_code ec) {
                           std::vector<bool> renewed;
                           if (!ec)
                               ec = decode_renew(*resp, renewed);
                           if (!ec && renewed.size() != batch.size())
                               ec = error::unexpected_reply;
                           const auto now = clock::now();
                           for (std::size_t i = 0; i < batch.size(); ++i) {
                               auto& s = *batch[i];
                               s.renew_in_flight = false;
                               if (!s.watched || s.epoch != epochs[i])
                                   continue; // released (or re-acquired) meanwhile
                               if (ec) {
                                   // Unknown outcome: try again soon; the deadline decides.
                                   s.next_renewal =
                                       now + std::min<clock::duration>(s.opts.lease / 10,
                                                                       std::chrono::seconds(1));
                               } else if (!renewed[i] || now >= s.deadline) {
                                   // Gone, taken, or answered too late to trust.
                                   self->lose(s, error::lease_lost);
                               } else {
                                   s.deadline = sent + s.opts.lease - s.drift;
                                   s.next_renewal = sent + s.opts.lease / 3;
                                   self->stats.renewals.fetch_add(1, std::memory_order_relaxed);
                               }
                           }
                           self->kick();
                       }));
    }

    connection_impl& conn_;
    std::map<std::string, waiter_queue, std::less<>> queues_;
    std::vector<std::shared_ptr<lock_state>> watched_;
    asio::steady_timer timer_;
    bool loop_running_ = false;
    clock::time_point planned_ = clock::time_point::max(); // the loop's next wake-up
    std::minstd_rand rng_;
};

namespace {

std::shared_ptr<lock_service> service_of(connection_impl& c) {
    return std::static_pointer_cast<lock_service>(
        c.lock_service([&c](std::function<void()>& on_stop) {
            auto svc = std::make_shared<lock_service>(c);
            on_stop = [weak = std::weak_ptr<lock_service>(svc)] {
                if (auto s = weak.lock())
                    s->on_connection_stopped();
            };
            return svc;
        }));
}

// Runs a script through the connection and waits for it from a coroutine on the strand. With
// `on_abandoned`, the wait can be cancelled: the script still completes on the server, and its
// reply is handed to `on_abandoned` instead.
struct script_call {
    script_call(const asio::strand<asio::any_io_executor>& strand, clock::time_point deadline)
        : ready(strand, deadline) {}
    asio::steady_timer ready;
    bool done = false;
    bool abandoned = false;
    error_code ec;
    generic_response resp;
    std::function<void(script_call&)> on_abandoned;
};

// `deadline` (with `on_abandoned`) bounds the wait too: a stalled server cannot hold the caller
// past it.
asio::awaitable<std::shared_ptr<script_call>>
call_script(lock_state& s, const script& sc, std::span<const std::string_view> keys,
            std::span<const std::string_view> args,
            std::function<void(script_call&)> on_abandoned = {},
            clock::time_point deadline = clock::time_point::max()) {
    auto call = std::make_shared<script_call>(s.conn->strand(), deadline);
    call->on_abandoned = std::move(on_abandoned);
    auto req = std::make_shared<request>(connection::make_evalsha(sc, keys, args));
    start_eval(s.conn, sc, req, call->resp,
               asio::bind_executor(s.conn->strand(), [call](error_code ec) {
                   call->ec = ec;
                   call->done = true;
                   if (call->abandoned) {
                       if (call->on_abandoned)
                           call->on_abandoned(*call);
                   } else {
                       call->ready.cancel();
                   }
               }));
    while (!call->done) {
        auto [ec] = co_await call->ready.async_wait(nothrow);
        auto cs = co_await asio::this_coro::cancellation_state;
        if (!call->done && (!ec || cs.cancelled() != asio::cancellation_type::none)) {
            call->abandoned = true; // cancelled, or the deadline passed
            break;
        }
    }
    co_return call;
}

// Fire and forget: the release of one hold (or all) that nobody waits for.
void release_in_background(lock_state& s, std::string_view mode) {
    const std::string_view keys[] = {s.name};
    const std::string_view args[] = {s.owner, s.channel, mode};
    // EVAL, not EVALSHA: an undo must reach Redis before anything queued after it (a NOSCRIPT
    // retry would put it behind the next acquire, and it would delete that new hold).
    auto req = std::make_shared<request>(make_eval(release_script(), keys, args));
    auto resp = std::make_shared<generic_response>();
    start_exec(s.conn, *req, make_adapter(*resp),
               asio::bind_executor(s.conn->strand(), [req, resp](error_code, std::size_t) {}));
}

void drop_hold(lock_state& s, lock_service& svc) {
    svc.unwatch(s);
    s.server_count = 0;
    s.local_count = 0;
    s.publish();
    auto waiters = std::move(s.lost_waiters);
    s.lost_waiters.clear();
    for (auto& [id, h] : waiters)
        deliver(std::move(h), s.executor(), error_code(asio::error::operation_aborted));
}

struct busy_guard {
    lock_state& s;
    ~busy_guard() { s.busy = false; }
};

asio::awaitable<std::tuple<error_code, bool>>
acquire_op(std::shared_ptr<lock_state> s, std::optional<clock::time_point> deadline, bool once) {
    if (s->busy)
        co_return std::tuple{error_code(error::operation_in_progress), false};
    s->busy = true;
    busy_guard guard{*s};
    auto& svc = *s->service;

    // Nested acquire while the watchdog keeps the lease well inside its deadline.
    if (s->held() && s->opts.watchdog && clock::now() + s->opts.lease / 3 < s->deadline) {
        ++s->local_count;
        svc.stats.fast_reentries.fetch_add(1, std::memory_order_relaxed);
        s->publish();
        co_return std::tuple{error_code{}, true};
    }

    struct leave_queue {
        lock_state& s;
        lock_service& svc;
        ~leave_queue() { svc.dequeue(s); }
    } leave{*s, svc};
    // Behind local waiters of the same name, queue at once (FIFO). Otherwise try first: the
    // subscription is only needed if the lock turns out to be held, and it is taken before the
    // retry, so no release can slip between the two.
    if (!once && svc.has_waiters(s->name))
        svc.enqueue(*s);
    backoff fallback(s->opts.retry_base, s->opts.retry_max);

    for (;;) {
        auto wait = clock::duration::max();
        if (once || !s->queued || (svc.is_head(*s) && s->attempt_now)) {
            s->attempt_now = false;
            const auto sent = clock::now();
            svc.stats.attempts.fetch_add(1, std::memory_order_relaxed);
            const std::string_view keys[] = {s->name, s->fence_key};
            const std::string_view args[] = {s->owner, s->lease_ms};
            // If we stop waiting, undo whatever the script did once its reply arrives. (A named
            // variable: g++ 12 destroys a capturing lambda temporary inside a co_await
            // expression twice.)
            std::function<void(script_call&)> undo = [state = s](script_call& c) {
                acquire_reply r;
                if (!c.ec && !decode_acquire(c.resp, r) && r.acquired)
                    release_in_background(*state, "one");
            };
            auto call = co_await call_script(*s, acquire_script(), keys, args, std::move(undo),
                                             deadline.value_or(clock::time_point::max()));
            if (!call->done) {
                auto cs = co_await asio::this_coro::cancellation_state;
                co_return std::tuple{cs.cancelled() != asio::cancellation_type::none
                                         ? error_code(asio::error::operation_aborted)
                                         : error_code(error::acquire_timeout),
                                     false};
            }
            if (call->ec) {
                // Only a lost connection is worth riding out; anything else is final.
                if (once || s->server_count > 0 || call->ec != error::connection_lost)
                    co_return std::tuple{call->ec, false};
                // Unknown outcome while waiting: undo it (owner-checked, queued ahead of the
                // next attempt) and keep waiting until the deadline.
                release_in_background(*s, "one");
                s->attempt_now = true;
                wait = fallback.next(svc.rng());
            } else {
                acquire_reply r;
                if (auto ec = decode_acquire(call->resp, r))
                    co_return std::tuple{ec, false};
                const bool late = r.acquired && clock::now() >= sent + s->opts.lease - s->drift;
                if (late) {
                    // Granted, but the reply came too late to trust the lease: give it back.
                    // A waiting acquire backs off and tries again within its deadline.
                    release_in_background(*s, "one");
                    if (once || s->server_count > 0)
                        co_return std::tuple{error_code(error::lease_lost), false};
                    wait = fallback.next(svc.rng());
                } else if (r.acquired) {
                    if (r.count == 1) {
                        ++s->epoch;
                        s->token = r.token;
                        s->lost_flag = false;
                        s->local_count = 0;
                        s->acquired_at = clock::now();
                    }
                    s->server_count = r.count;
                    s->deadline = sent + s->opts.lease - s->drift;
                    s->next_renewal = sent + s->opts.lease / 3;
                    svc.watch(s);
                    s->publish();
                    co_return std::tuple{error_code{}, true};
                } else {
                    if (once)
                        co_return std::tuple{error_code{}, false};
                    if (!s->queued) {
                        svc.enqueue(*s); // subscribe, then retry at once if first in line
                        continue;
                    }
                    wait = fallback.next(svc.rng());
                    if (r.holder_ttl > 0)
                        wait = std::min<clock::duration>(wait,
                                                         std::chrono::milliseconds(r.holder_ttl));
                    else
                        wait = std::min(wait, s->opts.retry_base);
                }
            }
        } else if (svc.is_head(*s)) {
            wait = fallback.next(svc.rng()); // promoted: a release message will wake us
        }
        // A release message that came while our attempt was on the wire must not be lost.
        if (svc.is_head(*s) && s->attempt_now)
            continue;
        auto until =
            wait == clock::duration::max() ? clock::time_point::max() : clock::now() + wait;
        if (deadline)
            until = std::min(until, *deadline);
        s->wake.expires_at(until);
        auto [ec] = co_await s->wake.async_wait(nothrow);
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none)
            co_return std::tuple{error_code(asio::error::operation_aborted), false};
        if (s->conn->stopped())
            co_return std::tuple{error_code(error::not_connected), false};
        if (deadline && clock::now() >= *deadline)
            co_return std::tuple{error_code(error::acquire_timeout), false};
        if (!ec && svc.is_head(*s)) {
            s->attempt_now = true; // no message came: the fallback timer
            svc.stats.timer_wakeups.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

asio::awaitable<error_code> release_op(std::shared_ptr<lock_state> s) {
    // A release already sent is never abandoned: its outcome must be known.
    co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
    if (s->busy)
        co_return error::operation_in_progress;
    s->busy = true;
    busy_guard guard{*s};
    auto& svc = *s->service;
    if (s->server_count == 0)
        co_return error::not_owner;
    if (s->lost_flag) {
        drop_hold(*s, svc);
        co_return error::not_owner; // never touch what may be a new holder's key
    }
    if (s->local_count > 0) {
        --s->local_count;
        s->publish();
        co_return error_code{};
    }
    if (s->server_count == 1)
        svc.unwatch(*s); // the watchdog stops before the release goes out
    const std::string_view keys[] = {s->name};
    const std::string_view args[] = {s->owner, s->channel, "one"};
    auto call = co_await call_script(*s, release_script(), keys, args);
    if (call->ec) {
        drop_hold(*s, svc); // unknown outcome: the lease expires by itself
        co_return call->ec;
    }
    std::int64_t left = 0;
    if (auto ec = decode_release(call->resp, left)) {
        if (s->server_count == 1)
            svc.watch(s); // still ours (e.g. a WRONGTYPE surprise): keep renewing
        co_return ec;
    }
    if (left < 0) {
        svc.lose(*s, error::lease_lost);
        drop_hold(*s, svc);
        co_return error::not_owner;
    }
    if (left == 0) {
        drop_hold(*s, svc);
        co_return error_code{};
    }
    s->server_count = static_cast<std::size_t>(left);
    s->publish();
    co_return error_code{};
}

// Fails an operation before anything is sent (an invalid argument), never inline.
template <class Handler, class... Args>
void fail_soon(const lock_state& s, Handler h, Args... args) {
    asio::post(s.conn->strand(), [h = std::move(h), ex = s.executor(), args...]() mutable {
        deliver(std::move(h), ex, args...);
    });
}

template <class Result>
auto spawn(lock_state& s, asio::awaitable<Result> op,
           asio::any_completion_handler<void(error_code, bool)> h) {
    auto slot = asio::get_associated_cancellation_slot(h);
    asio::co_spawn(s.conn->strand(), std::move(op),
                   asio::bind_cancellation_slot(slot, [ex = s.executor(), h = std::move(h)](
                                                          std::exception_ptr ep, Result r) mutable {
                       auto [ec, ok] = r;
                       if (ep)
                           ec = asio::error::operation_aborted;
                       deliver(std::move(h), ex, ec, ok);
                   }));
}

} // namespace
} // namespace detail

namespace asio = boost::asio;
using detail::clock;

lock_stats get_lock_stats(connection& conn) {
    auto p = std::static_pointer_cast<detail::lock_service>(conn.impl().existing_lock_service());
    if (!p)
        return {};
    constexpr auto r = std::memory_order_relaxed;
    const auto& c = p->stats;
    return {c.attempts.load(r),      c.pubsub_wakeups.load(r), c.timer_wakeups.load(r),
            c.renewals.load(r),      c.renewal_calls.load(r),  c.leases_lost.load(r),
            c.fast_reentries.load(r)};
}

fenced_script::fenced_script(std::string_view body) : script_(detail::make_fenced_source(body)) {}

mutex::mutex(connection& conn, std::string name, mutex_options opts)
    : state_(std::make_shared<detail::lock_state>(conn, std::move(name), std::move(opts))) {
    state_->service = detail::service_of(*state_->conn);
}

mutex::~mutex() {
    asio::post(state_->conn->strand(), [s = state_] {
        if (s->held()) {
            detail::release_in_background(*s, "all");
            detail::drop_hold(*s, *s->service);
        }
    });
}

mutex::executor_type mutex::get_executor() const noexcept {
    return state_->executor();
}
const std::string& mutex::name() const noexcept {
    return state_->name;
}
const std::string& mutex::owner_id() const noexcept {
    return state_->owner;
}
bool mutex::held() const noexcept {
    return hold_count() > 0;
}
std::size_t mutex::hold_count() const noexcept {
    return state_->count_view.load(std::memory_order_relaxed);
}
std::uint64_t mutex::token() const noexcept {
    return state_->token_view.load(std::memory_order_relaxed);
}
bool mutex::lost() const noexcept {
    return state_->lost_view.load(std::memory_order_relaxed);
}

void mutex::acquire_impl(duration wait, handler_ec h) {
    auto ec = state_->validate();
    if (!ec && wait < duration::zero())
        ec = error::invalid_wait;
    if (ec) {
        detail::fail_soon(*state_, std::move(h), ec);
        return;
    }
    std::optional<clock::time_point> deadline;
    if (wait != duration::max())
        deadline = clock::now() + wait;
    // Read the slot and executor before `h` is moved into the adapter.
    auto slot = asio::get_associated_cancellation_slot(h);
    auto ex = asio::get_associated_executor(h, state_->executor());
    detail::spawn(
        *state_, detail::acquire_op(state_, deadline, false),
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(
                      ex, [h = std::move(h)](error_code ec, bool) mutable { std::move(h)(ec); })));
}

void mutex::try_acquire_impl(asio::any_completion_handler<void(error_code, bool)> h) {
    if (auto ec = state_->validate()) {
        detail::fail_soon(*state_, std::move(h), ec, false);
        return;
    }
    detail::spawn(*state_, detail::acquire_op(state_, std::nullopt, true), std::move(h));
}

void mutex::release_impl(handler_ec h) {
    auto ex = state_->executor();
    asio::co_spawn(state_->conn->strand(), detail::release_op(state_),
                   [ex, h = std::move(h)](std::exception_ptr ep, error_code ec) mutable {
                       if (ep)
                           ec = asio::error::operation_aborted;
                       detail::deliver(std::move(h), ex, ec);
                   });
}

void mutex::wait_lost_impl(handler_ec h) {
    // The slot is wired here, not on the strand: a cancellation emitted before the posted
    // registration runs must not be missed (it is posted after it, so it finds the waiter).
    auto s = state_;
    auto id = std::make_shared<std::uint64_t>(0);
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<detail::lock_state>(s), id](asio::cancellation_type) {
            if (auto st = weak.lock())
                asio::post(st->conn->strand(), [st, id] {
                    auto it = st->lost_waiters.find(*id);
                    if (it == st->lost_waiters.end())
                        return;
                    auto handler = std::move(it->second);
                    st->lost_waiters.erase(it);
                    detail::deliver(std::move(handler), st->executor(),
                                    error_code(asio::error::operation_aborted));
                });
        });
    asio::post(s->conn->strand(), [s, id, h = std::move(h)]() mutable {
        if (s->server_count == 0) {
            detail::deliver(std::move(h), s->executor(), error_code(error::not_owner));
            return;
        }
        if (s->lost_flag) {
            detail::deliver(std::move(h), s->executor(), error_code(error::lease_lost));
            return;
        }
        *id = ++s->next_waiter_id; // ids start at 1: 0 never matches
        s->lost_waiters.emplace(*id, std::move(h));
    });
}

void mutex::ttl_impl(asio::any_completion_handler<void(error_code, std::int64_t)> h) {
    if (!detail::lockable_name(state_->name)) {
        detail::fail_soon(*state_, std::move(h), error_code(error::invalid_name), std::int64_t{0});
        return;
    }
    auto req = std::make_shared<request>();
    req->push("PTTL", state_->name);
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, state_->executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    auto done = [req, resp, h = std::move(h)](error_code ec, std::size_t) mutable {
        std::int64_t v = 0;
        if (!ec)
            ec = detail::decode_integer(*resp, v);
        std::move(h)(ec, v);
    };
    detail::start_exec(
        state_->conn, *req, detail::make_adapter(*resp),
        asio::bind_cancellation_slot(slot, asio::bind_executor(ex, std::move(done))));
}

void mutex::force_unlock_impl(asio::any_completion_handler<void(error_code, bool)> h) {
    if (auto ec =
            detail::lockable_name(state_->name) ? error_code{} : error_code(error::invalid_name)) {
        detail::fail_soon(*state_, std::move(h), ec, false);
        return;
    }
    const std::string_view keys[] = {state_->name};
    const std::string_view args[] = {state_->channel};
    auto req = std::make_shared<request>(
        connection::make_evalsha(detail::force_unlock_script(), keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, state_->executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    detail::start_eval(
        state_->conn, detail::force_unlock_script(), req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                std::int64_t v = 0;
                if (!ec)
                    ec = detail::decode_integer(*resp, v);
                std::move(h)(ec, v == 1);
            })));
}

request mutex::fenced_request(const fenced_script& s, std::span<const std::string_view> keys,
                              std::span<const std::string_view> args) const {
    std::vector<std::string_view> k{state_->fence_key};
    k.insert(k.end(), keys.begin(), keys.end());
    const std::string token_text = std::to_string(this->token());
    std::vector<std::string_view> a{token_text};
    a.insert(a.end(), args.begin(), args.end());
    return connection::make_evalsha(s.wrapped(), k, a);
}

void mutex::fenced_impl(const fenced_script& s, std::shared_ptr<request> req,
                        generic_response& resp, handler_ec h) {
    if (!held()) {
        detail::fail_soon(*state_, std::move(h), error_code(error::not_owner));
        return;
    }
    auto ex = asio::get_associated_executor(h, state_->executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    detail::start_eval(
        state_->conn, s.wrapped(), std::move(req), resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [r = &resp, h = std::move(h)](error_code ec) mutable {
                if (!ec)
                    if (const auto* e = find_error(*r))
                        ec = e->value.starts_with("STALE") ? error_code(error::stale_token)
                                                           : error_code(error::server_error);
                std::move(h)(ec);
            })));
}

} // namespace corolock
