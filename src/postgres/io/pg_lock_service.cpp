// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/io/pg_lock_service.hpp"

#include "core/backoff.hpp"
#include "io/deliver.hpp"
#include "postgres/core/pg_lock_sql.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <unordered_set>

namespace corolock::detail {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// Submits `qs` as one statement and completes with its results, on the handler's executor.
template <class CompletionToken>
auto async_statement(pg_connection_impl& c, std::vector<pg_query> qs, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, std::vector<pg_result>)>(
        [&c](auto handler, std::vector<pg_query> qs) {
            c.submit(make_statement(
                std::move(qs), [h = std::move(handler)](error_code ec, pg_statement& s) mutable {
                    auto ex = asio::get_associated_executor(h);
                    asio::post(ex, [h = std::move(h), ec, r = std::move(s.results)]() mutable {
                        std::move(h)(ec, std::move(r));
                    });
                }));
        },
        token, std::move(qs));
}

std::vector<pg_query> one_query(std::string_view sql, std::vector<std::optional<std::string>> p) {
    std::vector<pg_query> qs;
    qs.push_back(pg_query{std::string(sql), std::move(p)});
    return qs;
}

// Outside the coroutine: g++ 12 rejects a braced list (an array) inside one.
std::vector<pg_query> acquire_query(const std::string& name, const owner_id& owner,
                                    const std::string& lease_ms) {
    return one_query(pg_sql::acquire, {name, std::string(view(owner)), lease_ms});
}

// A lease's local deadline allows for the two clocks running at different rates.
std::chrono::steady_clock::duration drift_of(std::chrono::steady_clock::duration lease) {
    return lease / 100 + 2ms;
}

template <class Handler, class... Args>
void post_to(Handler h, const asio::any_io_executor& fallback, Args... args) {
    deliver(std::move(h), fallback, std::move(args)...);
}

template <class Op>
using waiters_of = std::multimap<std::string, std::weak_ptr<Op>>;

// One release, one attempt: the oldest live waiter of `name` on this connection tries again
// (waking them all would send one statement each for a single grant). It stays first in line if
// it loses the race to another client's waiter; the others keep their timers.
template <class Op>
void wake_oldest(waiters_of<Op>& waiting, const std::string& name) {
    auto [b, e] = waiting.equal_range(name);
    for (auto it = b; it != e; ++it) {
        auto op = it->second.lock();
        if (!op || !op->handler)
            continue;
        op->woken = true;
        op->timer.cancel();
        return;
    }
}

template <class Op>
void wake_all(waiters_of<Op>& waiting) {
    for (auto& [name, w] : waiting)
        if (auto op = w.lock()) {
            op->woken = true;
            op->timer.cancel();
        }
}

// Takes `op` off its mutex's pending list and the waiters, and returns its handler (it must
// have one).
template <class Op>
typename Op::handler_type unlist(Op& op, waiters_of<Op>& waiting) {
    if (op.listed) {
        op.core->pending.erase(op.pending_at);
        op.listed = false;
    }
    auto [b, e] = waiting.equal_range(op.core->name);
    for (auto it = b; it != e; ++it) {
        auto p = it->second.lock();
        if (!p || p.get() == &op) {
            waiting.erase(it);
            break;
        }
    }
    auto h = std::move(*op.handler);
    op.handler.reset();
    return h;
}

} // namespace

std::shared_ptr<pg_lock_service>
pg_lock_service::of(const std::shared_ptr<pg_connection_impl>& conn) {
    std::lock_guard<std::mutex> guard(conn->lock_service_mutex);
    auto s = conn->lock_service.lock();
    if (!s) {
        s = std::make_shared<pg_lock_service>(conn);
        conn->lock_service = s;
    }
    return s;
}

pg_lock_service::pg_lock_service(std::shared_ptr<pg_connection_impl> conn)
    : conn_(std::move(conn)), watchdog_(conn_->strand()), rng_(std::random_device{}()) {}

pg_lock_service::~pg_lock_service() {
    for (auto& l : {listener_, xact_listener_})
        if (l)
            asio::post(conn_->strand(), [c = conn_, l] { c->remove_listener(l.get()); });
}

std::shared_ptr<pg_listener_state>
pg_lock_service::listen_to(std::string_view channel,
                           void (pg_lock_service::*on)(const std::string&)) {
    auto l = std::make_shared<pg_listener_state>();
    l->channel = std::string(channel);
    l->conn = conn_;
    l->sink = [w = weak_from_this(), on](const pg_notification& n) {
        if (auto s = w.lock())
            ((*s).*on)(n.payload);
    };
    conn_->add_listener(l);
    conn_->on_connected = [w = weak_from_this()] {
        if (auto s = w.lock())
            s->on_connected();
    };
    return l;
}

void pg_lock_service::ensure_listening() {
    if (!listener_)
        listener_ = listen_to(pg_sql::release_channel, &pg_lock_service::on_release_notice);
}

void pg_lock_service::on_release_notice(const std::string& name) {
    wake_oldest(waiting_, name);
}

void pg_lock_service::on_connected() {
    // Releases announced while the connection was down were not heard: every waiter tries
    // again, and every lease is renewed now (a server restarted from an old state would not
    // have it: better to hear that within a round trip).
    wake_all(waiting_);
    wake_all(xact_waiting_);
    table_.renew_all_now(clock::now());
    reschedule();
}

void pg_lock_service::start_acquire(std::shared_ptr<pg_acquire_op> op) {
    auto& c = *op->core;
    if (c.invalid)
        return finish(*op, c.invalid, {});
    if (op->deadline == clock::time_point::min())
        return finish(*op, error::invalid_wait, {});
    op->pending_at = c.pending.insert(c.pending.end(), op);
    op->listed = true;
    waiting_.emplace(c.name, op);
    ensure_listening();
    asio::co_spawn(conn_->strand(), acquire_loop(std::move(op)), asio::detached);
}

void pg_lock_service::cancel_acquire(const std::shared_ptr<pg_acquire_op>& op) {
    if (!op->handler)
        return;
    finish(*op, asio::error::operation_aborted, {});
    op->timer.cancel();
}

void pg_lock_service::finish(pg_acquire_op& op, error_code ec, pg_lease l) {
    if (op.handler)
        deliver(unlist(op, waiting_), conn_->get_executor(), ec, std::move(l));
}

asio::awaitable<void> pg_lock_service::acquire_loop(std::shared_ptr<pg_acquire_op> op) {
    auto self = shared_from_this();
    const auto& c = *op->core;
    backoff wait(c.opts.retry_base, c.opts.retry_max);
    op->owner = random_owner_id();
    const auto lease_ms = pg_sql::to_ms(c.opts.lease);
    for (;;) {
        if (!op->handler)
            co_return;
        op->woken = false;
        const auto sent = clock::now();
        op->in_flight = true;
        auto [ec, results] =
            co_await async_statement(*conn_, acquire_query(c.name, op->owner, lease_ms),
                                     asio::as_tuple(asio::use_awaitable));
        op->in_flight = false;
        pg_sql::acquire_reply reply;
        if (!ec) {
            const auto& r = results.front();
            if (r.columns() != 2 && r.rows() != 0)
                ec = error::unexpected_reply;
            else
                ec = pg_sql::decode_acquire(r.rows(), r.rows() ? r.get(0, 0) : std::nullopt,
                                            r.rows() ? r.get(0, 1) : std::nullopt, reply);
        }
        const bool unknown = ec == error::connection_lost;
        if (unknown || (!ec && reply.granted && !op->handler)) {
            // The attempt may have taken the lock (or did, for nobody): undo it before any new
            // attempt, which gets a fresh owner id. Never sent again.
            undo(c.name, op->owner);
            op->owner = random_owner_id();
        }
        if (!op->handler)
            co_return;
        if (unknown && !op->once)
            continue;
        if (ec == error::server_error && !results.empty()) {
            const auto& log = conn_->log();
            if (log.enabled(logger::level::error))
                log.log(logger::level::error,
                        pg_sql::acquire_failure(c.name, results.front().sqlstate(),
                                                results.front().error_message()));
        }
        if (ec)
            co_return finish(*op, ec, {});
        if (reply.granted) {
            const auto now = clock::now();
            const auto drift = drift_of(c.opts.lease);
            if (now >= sent + c.opts.lease - drift) {
                // Answered after its own lease: nothing of it can be trusted.
                undo(c.name, op->owner);
                op->owner = random_owner_id();
                if (op->once)
                    co_return finish(*op, error::lease_lost, {});
                continue;
            }
            auto st = std::make_shared<pg_lease_state>();
            st->service = self;
            st->name = c.name;
            st->owner = op->owner;
            st->token = reply.token;
            st->watch.lease = c.opts.lease;
            st->watch.drift = drift;
            st->watch.watchdog = c.opts.watchdog;
            if (c.opts.max_hold > clock::duration::zero())
                st->watch.max_hold_at = sent + c.opts.max_hold;
            hold(st, sent);
            co_return finish(*op, {}, pg_lease_access::make(std::move(st)));
        }
        if (op->once)
            co_return finish(*op, {}, {});
        const auto now = clock::now();
        if (now >= op->deadline)
            co_return finish(*op, error::acquire_timeout, {});
        if (op->woken)
            continue; // released while the attempt was on its way
        auto pause = wait.next(rng_);
        if (reply.holder_ms >= 0)
            pause =
                std::min<clock::duration>(pause, std::chrono::milliseconds(reply.holder_ms) + 1ms);
        op->timer.expires_at(op->deadline - now > pause ? now + pause : op->deadline);
        co_await op->timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (!op->handler)
            co_return;
        if (!op->woken && clock::now() >= op->deadline)
            co_return finish(*op, error::acquire_timeout, {});
    }
}

// ---- locked transactions (pg_xact_mutex)

namespace {

// The attempt's pipeline entry: lock_timeout bounded, the lock, the session's lock_timeout back,
// the caller's queries, the release announcement (delivered at commit only).
std::vector<pg_query> xact_queries(const pg_xact_core& c, const std::string& lock_ms,
                                   const std::vector<pg_query>& user) {
    std::vector<pg_query> qs;
    qs.reserve(user.size() + pg_sql::xact_prefix + 1);
    qs.push_back(pg_query{std::string(pg_sql::xact_begin), {lock_ms}});
    qs.push_back(pg_query{std::string(pg_sql::xact_lock), {std::to_string(c.key)}});
    qs.push_back(pg_query{std::string(pg_sql::xact_locked), {}});
    qs.insert(qs.end(), user.begin(), user.end());
    qs.push_back(pg_query{std::string(pg_sql::xact_notify), {c.name}});
    return qs;
}

} // namespace

void pg_lock_service::start_xact(std::shared_ptr<pg_xact_op> op) {
    auto& c = *op->core;
    if (c.invalid)
        return finish_xact(*op, c.invalid);
    if (op->deadline == clock::time_point::min())
        return finish_xact(*op, error::invalid_wait);
    op->pending_at = c.pending.insert(c.pending.end(), op);
    op->listed = true;
    xact_waiting_.emplace(c.name, op);
    if (!xact_listener_)
        xact_listener_ = listen_to(pg_sql::xact_channel, &pg_lock_service::on_xact_notice);
    asio::co_spawn(conn_->strand(), xact_loop(std::move(op)), asio::detached);
}

void pg_lock_service::cancel_xact(const std::shared_ptr<pg_xact_op>& op) {
    if (!op->handler)
        return;
    if (op->in_flight) {
        op->cancelled = true; // its answer says whether it committed: reported as it is
        return;
    }
    finish_xact(*op, asio::error::operation_aborted);
    op->timer.cancel();
}

void pg_lock_service::finish_xact(pg_xact_op& op, error_code ec) {
    if (op.handler)
        deliver(unlist(op, xact_waiting_), conn_->get_executor(), ec);
}

void pg_lock_service::on_xact_notice(const std::string& name) {
    wake_oldest(xact_waiting_, name);
}

asio::awaitable<void> pg_lock_service::xact_loop(std::shared_ptr<pg_xact_op> op) {
    auto self = shared_from_this();
    const auto& c = *op->core;
    backoff wait(c.opts.retry_base, c.opts.retry_max);
    for (;;) {
        if (!op->handler)
            co_return;
        op->woken = false;
        // The server-side wait: attempt_wait, cut to what is left of the caller's (at least
        // 1 ms: lock_timeout 0 would mean no limit at all).
        auto server_wait = c.opts.attempt_wait;
        if (op->deadline != clock::time_point::max())
            server_wait =
                std::clamp<clock::duration>(op->deadline - clock::now(), 1ms, server_wait);
        op->in_flight = true;
        auto [ec, results] = co_await async_statement(
            *conn_, xact_queries(c, pg_sql::to_ms(server_wait), op->queries),
            asio::as_tuple(asio::use_awaitable));
        op->in_flight = false;
        const bool answered = results.size() == op->queries.size() + pg_sql::xact_prefix + 1;
        const auto outcome = pg_sql::decide_xact(
            ec, answered ? std::string_view(results[pg_sql::xact_lock_index].sqlstate()) : "");
        if (outcome != pg_sql::xact_outcome::busy) {
            if (answered) {
                const auto& lock = results[pg_sql::xact_lock_index];
                if (ec && !lock.command_status().empty() && lock.error_message().empty())
                    // Held, then rolled back: no NOTIFY went out with a commit.
                    conn_->submit(make_statement(one_query(pg_sql::xact_notify, {c.name}),
                                                 [](error_code, pg_statement&) {}));
                op->results->assign(std::make_move_iterator(results.begin() + pg_sql::xact_prefix),
                                    std::make_move_iterator(results.end() - 1));
            }
            co_return finish_xact(*op, ec);
        }
        if (op->cancelled)
            co_return finish_xact(*op, asio::error::operation_aborted);
        const auto now = clock::now();
        if (now >= op->deadline)
            co_return finish_xact(*op, error::acquire_timeout);
        if (op->woken)
            continue; // released while the attempt was on its way
        const auto pause = wait.next(rng_);
        op->timer.expires_at(op->deadline - now > pause ? now + pause : op->deadline);
        co_await op->timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (!op->handler)
            co_return;
        if (!op->woken && clock::now() >= op->deadline)
            co_return finish_xact(*op, error::acquire_timeout);
    }
}

void pg_lock_service::undo(const std::string& name, const owner_id& owner) {
    conn_->submit(make_statement(
        one_query(pg_sql::release, {name, std::string(view(owner))}),
        [self = shared_from_this(), name](error_code ec, pg_statement&) {
            const auto& log = self->conn_->log();
            if (ec && log.enabled(logger::level::warning))
                log.log(logger::level::warning, "postgres lock: undo of an attempt on " + name +
                                                    " failed (" + ec.message() +
                                                    "); its row expires with its lease");
            else if (!ec && log.enabled(logger::level::info))
                log.log(logger::level::info,
                        "postgres lock: undid an attempt whose outcome was unknown on " + name);
        }));
}

void pg_lock_service::hold(std::shared_ptr<pg_lease_state> s, clock::time_point sent) {
    table_.add(s->watch, sent);
    s->valid_until.store(s->watch.valid_until.time_since_epoch().count());
    held_[&s->watch] = std::move(s);
    reschedule();
}

void pg_lock_service::unhold(pg_lease_state& s) {
    table_.remove(s.watch);
    held_.erase(&s.watch);
}

void pg_lock_service::reschedule() {
    table_.make_plan(clock::now(), plan_);
    for (auto& [w, why] : plan_.losing) {
        auto it = held_.find(w);
        if (it == held_.end())
            continue;
        auto st = std::move(it->second);
        held_.erase(it);
        report_lost(*st, why);
    }
    if (!plan_.due.empty())
        renew(plan_.due);
    if (plan_.wake_at == clock::time_point::max()) {
        watchdog_.cancel();
        return;
    }
    watchdog_.expires_at(plan_.wake_at);
    watchdog_.async_wait([w = weak_from_this()](error_code ec) {
        if (auto s = w.lock(); s && !ec)
            s->reschedule();
    });
}

void pg_lock_service::report_lost(pg_lease_state& s, error_code why) {
    s.lost_ec = why;
    s.lost.store(true);
    const auto& log = conn_->log();
    if (log.enabled(logger::level::warning))
        log.log(logger::level::warning,
                "postgres lock: lease on " + s.name + " lost (" + why.message() + ")");
    for (auto& [key, h] : s.lost_waiters.take_all())
        post_to(std::move(h), conn_->get_executor(), why);
}

void pg_lock_service::renew(std::vector<lease_watch*> due) {
    std::vector<std::shared_ptr<pg_lease_state>> states;
    std::vector<std::string_view> names, owners;
    std::string ms(1, '{');
    for (auto* w : due) {
        auto it = held_.find(w);
        if (it == held_.end())
            continue;
        auto& st = it->second;
        names.push_back(st->name);
        owners.push_back(view(st->owner));
        if (ms.size() > 1)
            ms += ',';
        ms += pg_sql::to_ms(w->lease);
        states.push_back(st);
    }
    ms += '}';
    if (states.empty())
        return;
    const auto sent = clock::now();
    conn_->submit(make_statement(
        one_query(pg_sql::renew, {pg_sql::text_array(names), pg_sql::text_array(owners), ms}),
        [self = shared_from_this(), states = std::move(states), sent](error_code ec,
                                                                      pg_statement& s) {
            const auto now = clock::now();
            std::unordered_set<std::string_view> renewed;
            if (!ec)
                for (std::size_t r = 0; r < s.results.front().rows(); ++r)
                    renewed.insert(s.results.front().value(r, 0));
            for (const auto& st : states) {
                if (!lease_table::contains(st->watch))
                    continue; // released or lost meanwhile
                if (ec) {
                    self->table_.on_renew_failed(st->watch, now);
                    continue;
                }
                const auto loss = self->table_.on_renewed(st->watch, sent, now,
                                                          renewed.count(view(st->owner)) > 0);
                if (loss) {
                    self->held_.erase(&st->watch);
                    self->report_lost(*st, loss);
                } else {
                    st->valid_until.store(st->watch.valid_until.time_since_epoch().count());
                }
            }
            if (ec) {
                const auto& log = self->conn_->log();
                if (log.enabled(logger::level::warning))
                    log.log(logger::level::warning,
                            "postgres lock: renewal failed (" + ec.message() + "); retrying");
            }
            self->reschedule();
        }));
}

void pg_lock_service::end_share(std::shared_ptr<pg_lease_state> s,
                                std::optional<pg_lease_state::handler_type> h) {
    if (s->shares.fetch_sub(1) > 1) {
        // Others still hold it: nothing is sent; a loss is still news to an explicit release.
        if (h)
            post_to(std::move(*h), conn_->get_executor(),
                    s->lost.load() ? s->lost_ec : error_code());
        return;
    }
    if (h)
        release(std::move(s), std::move(*h));
    else
        abandon(std::move(s));
}

void pg_lock_service::release(std::shared_ptr<pg_lease_state> s, pg_lease_state::handler_type h) {
    s->released = true;
    const error_code lost = s->lost.load() ? s->lost_ec : error_code();
    unhold(*s);
    for (auto& [key, w] : s->lost_waiters.take_all())
        post_to(std::move(w), conn_->get_executor(), error_code(asio::error::operation_aborted));
    conn_->submit(make_statement(one_query(pg_sql::release, {s->name, std::string(view(s->owner))}),
                                 [self = shared_from_this(), s, lost,
                                  h = std::move(h)](error_code ec, pg_statement& st) mutable {
                                     if (!ec)
                                         ec = lost ? lost
                                                   : (st.results.front().rows() == 1
                                                          ? error_code()
                                                          : error_code(error::lease_lost));
                                     post_to(std::move(h), self->conn_->get_executor(), ec);
                                 }));
}

void pg_lock_service::abandon(std::shared_ptr<pg_lease_state> s) {
    if (s->released)
        return;
    s->released = true;
    unhold(*s);
    for (auto& [key, w] : s->lost_waiters.take_all())
        post_to(std::move(w), conn_->get_executor(), error_code(asio::error::operation_aborted));
    undo(s->name, s->owner);
}

void pg_lock_service::wait_lost(std::shared_ptr<pg_lease_state> s, pg_lease_state::handler_type h) {
    if (s->lost.load())
        return post_to(std::move(h), conn_->get_executor(), s->lost_ec);
    if (s->released)
        return post_to(std::move(h), conn_->get_executor(),
                       error_code(asio::error::operation_aborted));
    const auto key = ++s->next_key;
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected()) {
        slot.assign(
            [w = std::weak_ptr<pg_lease_state>(s), c = conn_, key](asio::cancellation_type_t) {
                asio::post(c->strand(), [w, c, key] {
                    auto s = w.lock();
                    if (!s)
                        return;
                    if (auto h = s->lost_waiters.take(key)) {
                        auto slot = asio::get_associated_cancellation_slot(*h);
                        slot.clear();
                        post_to(std::move(*h), c->get_executor(),
                                error_code(asio::error::operation_aborted));
                    }
                });
            });
    }
    s->lost_waiters.add(key, std::move(h));
}

void pg_lock_service::fenced(std::shared_ptr<pg_lease_state> s, std::vector<pg_query> qs,
                             pg_result& out, pg_lease_state::handler_type h) {
    if (s->lost.load() || clock::now() >= s->watch.valid_until)
        return post_to(std::move(h), conn_->get_executor(), error_code(error::lease_lost));
    // The check and the statement up to one sync point: one implicit transaction, which the
    // sync commits, or rolls back when either failed. (An explicit BEGIN would outlive a
    // failure: its COMMIT is skipped in an aborted pipeline and the session stays in the
    // aborted transaction.) The check's share lock on the row lasts until then.
    std::vector<pg_query> all;
    all.push_back(pg_query{std::string(pg_sql::fence),
                           {s->name, std::string(view(s->owner)), std::to_string(s->token)}});
    for (auto& q : qs)
        all.push_back(std::move(q));
    conn_->submit(
        make_statement(std::move(all), [self = shared_from_this(), &out,
                                        h = std::move(h)](error_code ec, pg_statement& st) mutable {
            if (ec != asio::error::operation_aborted && st.results.size() > 1)
                out = std::move(st.results[ec == error::stale_token ? 0 : 1]);
            post_to(std::move(h), self->conn_->get_executor(), ec);
        }));
}

} // namespace corolock::detail
