// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/io/pg_lock_service.hpp"

#include "io/deliver.hpp"
#include "postgres/core/pg_lock_sql.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <set>
#include <unordered_set>

namespace corolock::detail {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::vector<pg_query> one_query(std::string_view sql, std::vector<std::optional<std::string>> p) {
    std::vector<pg_query> qs;
    qs.push_back(pg_query{std::string(sql), std::move(p)});
    return qs;
}

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

template <class Handler, class... Args>
void post_to(Handler h, const asio::any_io_executor& fallback, Args... args) {
    deliver(std::move(h), fallback, std::move(args)...);
}

// Takes `op` off its handle's pending list and returns its handler (it must have one).
template <class Op>
typename Op::handler_type unlist(Op& op) {
    if (op.listed) {
        op.core->pending.erase(op.pending_at);
        op.listed = false;
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
    : conn_(std::move(conn)), watchdog_(conn_->strand()), acquires_(std::random_device{}()),
      xacts_(std::random_device{}()) {}

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

// ---- the lock cores' events, and their actions performed

template <class Op, class Event>
void pg_lock_service::run(lock_core& core, Event event) {
    lock_actions out;
    event(core, clock::now(), out);
    perform<Op>(out);
}

template <class Op>
void pg_lock_service::perform(const lock_actions& actions) {
    for (const auto& x : actions) {
        auto& op = static_cast<Op&>(*x.acq);
        const auto keep = op.shared_from_this(); // completing may drop the last other reference
        switch (x.what) {
        case lock_action::kind::subscribe:
        case lock_action::kind::unsubscribe:
            break; // one channel carries every name's releases: listened to while this lives
        case lock_action::kind::give_back:
            if constexpr (std::is_same_v<Op, pg_acquire_op>) {
                // Owner-checked, and ahead of any later attempt, which gets a new owner id.
                undo(op.core->name, op.owner);
                op.owner = random_owner_id();
            }
            break; // a transaction is never given back: its outcome is the caller's
        case lock_action::kind::attempt:
            send_attempt(op);
            break;
        case lock_action::kind::complete:
            complete(op, x.ec, x.granted);
            break;
        case lock_action::kind::arm:
            arm(op, x.at);
            break;
        }
    }
}

template <class Op>
void pg_lock_service::arm(Op& op, clock::time_point at) {
    const auto s = op.fsm.current();
    if (s == acquire_fsm::state::done || s == acquire_fsm::state::abandoned) {
        ++op.armed;
        op.timer.cancel();
        return;
    }
    const auto gen = ++op.armed;
    op.timer.expires_at(at);
    op.timer.async_wait([self = op.shared_from_this(), gen](error_code ec) {
        if (!ec && self->armed == gen)
            self->core->service->on_timer(*self);
    });
}

void pg_lock_service::on_timer(pg_acquire_op& op) {
    run<pg_acquire_op>(acquires_, [&](lock_core& c, clock::time_point now, lock_actions& out) {
        c.on_timer(op, now, out);
    });
}

void pg_lock_service::on_timer(pg_xact_op& op) {
    run<pg_xact_op>(xacts_, [&](lock_core& c, clock::time_point now, lock_actions& out) {
        c.on_timer(op, now, out);
    });
}

void pg_lock_service::wake(lock_core& core, const std::string& name) {
    // One release, one attempt: the head of the name's local queue tries again.
    if (&core == &acquires_)
        run<pg_acquire_op>(core, [&](lock_core& c, clock::time_point now, lock_actions& out) {
            c.on_release_message(name, 1, now, out);
        });
    else
        run<pg_xact_op>(core, [&](lock_core& c, clock::time_point now, lock_actions& out) {
            c.on_release_message(name, 1, now, out);
        });
}

void pg_lock_service::wake_all(lock_core& core) {
    std::set<std::string> names;
    core.for_each_waiter([&](acquisition& a) { names.emplace(a.name); });
    for (const auto& n : names)
        wake(core, n);
}

void pg_lock_service::on_release_notice(const std::string& name) {
    wake(acquires_, name);
}

void pg_lock_service::on_xact_notice(const std::string& name) {
    wake(xacts_, name);
}

void pg_lock_service::on_connected() {
    // Releases announced while the connection was down were not heard: the head of every name
    // tries again, and every lease is renewed now (a server restarted from an old state would
    // not have it: better to hear that within a round trip).
    wake_all(acquires_);
    wake_all(xacts_);
    table_.renew_all_now(clock::now());
    reschedule();
}

// ---- acquisitions (pg_mutex)

void pg_lock_service::start_acquire(std::shared_ptr<pg_acquire_op> op) {
    auto& c = *op->core;
    op->pending_at = c.pending.insert(c.pending.end(), op);
    op->listed = true;
    ensure_listening();
    op->owner = random_owner_id();
    run<pg_acquire_op>(acquires_, [&](lock_core& core, clock::time_point now, lock_actions& out) {
        core.start(*op, now, out);
    });
}

void pg_lock_service::cancel_acquire(const std::shared_ptr<pg_acquire_op>& op) {
    run<pg_acquire_op>(acquires_, [&](lock_core& c, clock::time_point now, lock_actions& out) {
        c.cancel(*op, now, out);
    });
}

void pg_lock_service::send_attempt(pg_acquire_op& op) {
    const auto& c = *op.core;
    conn_->submit(make_statement(one_query(pg_sql::acquire, {c.name, std::string(view(op.owner)),
                                                             pg_sql::to_ms(c.opts.lease)}),
                                 [op = op.shared_from_this()](error_code ec, pg_statement& s) {
                                     op->core->service->on_attempt_reply(*op, ec, s.results);
                                 }));
}

void pg_lock_service::on_attempt_reply(pg_acquire_op& op, error_code ec,
                                       std::vector<pg_result>& results) {
    attempt_reply r;
    pg_sql::acquire_reply reply;
    if (!ec) {
        const auto& res = results.front();
        if (res.columns() != 2 && res.rows() != 0)
            ec = error::unexpected_reply;
        else
            ec = pg_sql::decode_acquire(res.rows(), res.rows() ? res.get(0, 0) : std::nullopt,
                                        res.rows() ? res.get(0, 1) : std::nullopt, reply);
    }
    if (ec == error::connection_lost) {
        r.what = attempt_reply::kind::unknown; // it may have run: given back, never sent again
        r.ec = ec;
    } else if (ec) {
        r.what = attempt_reply::kind::failed;
        r.ec = ec;
        const auto& log = conn_->log();
        if (ec == error::server_error && !results.empty() && log.enabled(logger::level::error))
            log.log(logger::level::error,
                    pg_sql::acquire_failure(op.core->name, results.front().sqlstate(),
                                            results.front().error_message()));
    } else if (reply.granted) {
        r.what = attempt_reply::kind::granted;
        r.token = reply.token;
    } else {
        r.what = attempt_reply::kind::held;
        if (reply.holder_ms >= 0)
            r.holder_ttl = std::chrono::milliseconds(reply.holder_ms) + 1ms;
    }
    if (ec != condition::connection_failure && ec != asio::error::operation_aborted)
        acquires_.on_script_reply(); // the server is alive
    run<pg_acquire_op>(acquires_, [&](lock_core& c, clock::time_point now, lock_actions& out) {
        c.on_reply(op, r, now, out);
    });
}

void pg_lock_service::complete(pg_acquire_op& op, error_code ec, bool granted) {
    if (!op.handler)
        return;
    pg_lease l;
    if (granted) {
        const auto& c = *op.core;
        auto st = std::make_shared<pg_lease_state>();
        st->service = shared_from_this();
        st->name = c.name;
        st->owner = op.owner;
        st->token = op.fsm.token();
        st->watch.lease = c.opts.lease;
        st->watch.drift = drift_for(c.opts.lease);
        st->watch.watchdog = c.opts.watchdog;
        if (c.opts.max_hold > clock::duration::zero())
            st->watch.max_hold_at = op.fsm.sent() + c.opts.max_hold;
        hold(st, op.fsm.sent());
        l = access::construct<pg_lease>(std::move(st));
    }
    deliver(unlist(op), conn_->get_executor(), ec, std::move(l));
}

// ---- locked transactions (pg_xact_mutex)

void pg_lock_service::start_xact(std::shared_ptr<pg_xact_op> op) {
    auto& c = *op->core;
    op->pending_at = c.pending.insert(c.pending.end(), op);
    op->listed = true;
    if (!xact_listener_)
        xact_listener_ = listen_to(pg_sql::xact_channel, &pg_lock_service::on_xact_notice);
    run<pg_xact_op>(xacts_, [&](lock_core& core, clock::time_point now, lock_actions& out) {
        core.start(*op, now, out);
    });
}

void pg_lock_service::cancel_xact(const std::shared_ptr<pg_xact_op>& op) {
    run<pg_xact_op>(xacts_, [&](lock_core& c, clock::time_point now, lock_actions& out) {
        c.cancel(*op, now, out);
    });
}

void pg_lock_service::send_attempt(pg_xact_op& op) {
    const auto& c = *op.core;
    // The server-side wait: attempt_wait, cut to what is left of the caller's (at least 1 ms:
    // lock_timeout 0 would mean no limit at all).
    auto server_wait = c.opts.attempt_wait;
    if (op.deadline != clock::time_point::max())
        server_wait = std::clamp<clock::duration>(op.deadline - clock::now(), 1ms, server_wait);
    conn_->submit(make_statement(xact_queries(c, pg_sql::to_ms(server_wait), op.queries),
                                 [op = op.shared_from_this()](error_code ec, pg_statement& s) {
                                     op->core->service->on_attempt_reply(*op, ec, s.results);
                                 }));
}

void pg_lock_service::on_attempt_reply(pg_xact_op& op, error_code ec,
                                       std::vector<pg_result>& results) {
    const auto& c = *op.core;
    const bool answered = results.size() == op.queries.size() + pg_sql::xact_prefix + 1;
    const auto outcome = pg_sql::decide_xact(
        ec, answered ? std::string_view(results[pg_sql::xact_lock_index].sqlstate()) : "");
    attempt_reply r;
    if (outcome == pg_sql::xact_outcome::busy) {
        r.what = attempt_reply::kind::held;
    } else {
        // Committed, failed, or its connection lost (an unknown outcome): the caller's, as it is.
        r.what = attempt_reply::kind::concluded;
        r.ec = ec;
        if (answered) {
            const auto& lock = results[pg_sql::xact_lock_index];
            if (ec && !lock.command_status().empty() && lock.error_message().empty())
                // Held, then rolled back: no NOTIFY went out with a commit.
                conn_->submit(make_statement(one_query(pg_sql::xact_notify, {c.name}),
                                             [](error_code, pg_statement&) {}));
            op.answer.assign(std::make_move_iterator(results.begin() + pg_sql::xact_prefix),
                             std::make_move_iterator(results.end() - 1));
        }
    }
    if (ec != condition::connection_failure && ec != asio::error::operation_aborted)
        xacts_.on_script_reply();
    run<pg_xact_op>(xacts_, [&](lock_core& core, clock::time_point now, lock_actions& out) {
        core.on_reply(op, r, now, out);
    });
}

void pg_lock_service::complete(pg_xact_op& op, error_code ec, bool) {
    if (!op.handler)
        return;
    // The caller's vector is written only here, while it waits for this completion.
    *op.results = std::move(op.answer);
    deliver(unlist(op), conn_->get_executor(), ec);
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
