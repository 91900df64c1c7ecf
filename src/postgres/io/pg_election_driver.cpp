// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL election's driver: the campaign coroutine (the election's pg_mutex, the read
// that decides on a lock-delay, the fenced begin), the leader read, the fenced end, and the
// observers (a LISTEN on the election channel, a read at each leader's lock expiry and every
// retry_max). The statements and decisions are in postgres/core/pg_election_sql.hpp.
#include "postgres/io/pg_election_driver.hpp"

#include "core/access.hpp"
#include "core/decimal.hpp"
#include "io/deliver.hpp"
#include "io/spawn_op.hpp"
#include "postgres/core/pg_election_sql.hpp"
#include "postgres/core/pg_lock_sql.hpp"
#include "postgres/io/pg_connection_impl.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tuple>

namespace corolock::detail {

namespace asio = boost::asio;
namespace sql = pg_election_sql;
using clock = std::chrono::steady_clock;

namespace {

void log(const pg_election_core& c, logger::level l, const std::string& msg) {
    const auto& lg = access::impl(c.conn).log();
    if (lg.enabled(l))
        lg.log(l, "election " + c.name + ": " + msg);
}

// The read's row (none: no record), or false for a result of another shape.
bool row_of(const pg_result& r, std::optional<sql::record_cells>& out) {
    out.reset();
    if (r.rows() == 0)
        return true;
    if (r.rows() != 1 || r.columns() != 5)
        return false;
    out = sql::record_cells{r.get(0, 0), r.get(0, 1), r.get(0, 2), r.get(0, 3), r.get(0, 4)};
    return true;
}

using campaign_result = std::tuple<error_code, pg_leadership>;

asio::awaitable<campaign_result> run_campaign(std::shared_ptr<pg_election_core> c,
                                              clock::duration wait, std::string value) {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (!c->invalid.empty()) {
        log(*c, logger::level::warning, c->invalid);
        co_return campaign_result{error::invalid_argument, pg_leadership{}};
    }
    auto [ec, l] = co_await c->lock.async_acquire_for(wait, asio::as_tuple(asio::use_awaitable));
    if (ec)
        co_return campaign_result{ec, pg_leadership{}};
    const auto term = std::to_string(l.token().value());
    if (c->opts.lock_delay > clock::duration::zero()) {
        pg_result r;
        const pg_param ps[] = {c->name};
        auto [rec] =
            co_await c->conn.async_query(sql::read, ps, r, asio::as_tuple(asio::use_awaitable));
        std::optional<sql::record_cells> row;
        if (!rec && !row_of(r, row))
            rec = error::unexpected_reply;
        if (rec)
            co_return campaign_result{rec, pg_leadership{}};
        if (sql::must_delay(row, l.token().value())) {
            const auto& lg = access::impl(c->conn).log();
            if (lg.enabled(logger::level::info))
                lg.log(logger::level::info, lock_delay_text(c->name, c->opts.lock_delay));
            if (auto dec = co_await wait_lock_delay(c->opts.lock_delay, l))
                co_return campaign_result{dec, pg_leadership{}};
        }
    }
    pg_result r;
    const pg_param ps[] = {c->name, term, value};
    auto [wec] =
        co_await l.async_fenced_query(sql::begin, ps, r, asio::as_tuple(asio::use_awaitable));
    if (wec == error::stale_token)
        co_return campaign_result{error::lease_lost, pg_leadership{}};
    if (wec) {
        if (wec == error::server_error)
            log(*c, logger::level::error, "the begin was refused: " + r.error_message());
        else // unknown outcome: the term may have begun; end it (fenced) before the lease goes
            end_pg_term(c, l, [](error_code) {});
        co_return campaign_result{wec, pg_leadership{}};
    }
    co_return campaign_result{error_code{},
                              access::construct<pg_leadership>(std::move(l), c, std::move(value))};
}

// The follower: a LISTEN on the election channel (payloads of other names ignored), a read
// after it starts, at each leader's lock expiry (pushed on by each read), and every retry_max.
struct pg_observer final : observer_state {
    explicit pg_observer(std::shared_ptr<pg_election_core> c)
        : observer_state(c->strand, c->conn.get_executor(), lock_backend::postgres),
          core(std::move(c)), timer(core->strand) {}

    std::shared_ptr<pg_election_core> core;
    pg_listener listener;
    // Where the listener writes: shared with the pending receive, which may outlive this.
    std::shared_ptr<pg_notification> note = std::make_shared<pg_notification>();
    asio::steady_timer timer;
    std::size_t dropped = 0;
    bool reading = false;
    bool read_again = false;

    std::weak_ptr<pg_observer> weak() {
        return std::static_pointer_cast<pg_observer>(shared_from_this());
    }

    // ---- strand only
    void start() {
        listener = core->conn.listen(std::string(sql::channel));
        receive();
        read();
    }

    void receive() {
        listener.async_receive(*note,
                               asio::bind_executor(strand, [w = weak(), n = note](error_code ec) {
                                   auto s = w.lock();
                                   if (!s || s->stopped)
                                       return;
                                   if (ec)
                                       return s->stop(); // the connection stopped for good
                                   if (s->listener.dropped() != s->dropped) {
                                       s->dropped = s->listener.dropped();
                                       s->fsm.on_gap();
                                       s->read();
                                   }
                                   if (auto m = sql::message_for(n->payload, s->core->name))
                                       if (auto v = parse_leader_message(*m))
                                           s->take(*v);
                                   s->receive();
                               }));
    }

    void take(const leader_view& v) {
        take_view(v);
        // Notifications sent while the connection was down are lost: every retry_max too.
        timer.expires_after(next_read_in(v, core->opts.lock.retry_max));
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
        auto r = std::make_shared<pg_result>();
        const pg_param ps[] = {core->name};
        core->conn.async_query(
            sql::read, ps, *r, asio::bind_executor(strand, [w = weak(), r](error_code ec) {
                auto s = w.lock();
                if (!s)
                    return;
                s->reading = false;
                if (s->stopped)
                    return;
                std::optional<sql::record_cells> row;
                leader_view v;
                if (!ec && !(row_of(*r, row) && sql::decode_read(row, v)))
                    ec = error::unexpected_reply;
                if (ec) {
                    // Again at the next timer (every retry_max): a reconnect, or the table.
                    log(*s->core, logger::level::debug, "observer read failed: " + ec.message());
                    s->fsm.on_gap();
                    s->timer.expires_after(s->core->opts.lock.retry_max);
                    s->timer.async_wait([w = s->weak()](error_code tec) {
                        if (auto o = w.lock(); o && !tec)
                            o->read();
                    });
                    return;
                }
                s->take(v);
                if (std::exchange(s->read_again, false))
                    s->read();
            }));
    }

    void halt() override {
        timer.cancel();
        listener = pg_listener{};
    }
};

} // namespace

pg_election_core::pg_election_core(pg_connection& c, std::string n, pg_election_options o)
    : conn(c), strand(asio::make_strand(c.get_executor())), name(std::move(n)), opts(o),
      lock(c, name, o.lock) {
    if (opts.lock_delay < clock::duration::zero() || opts.lock_delay > max_lock_delay)
        invalid = "pg_election_options::lock_delay is out of range (0 to 1 h)";
}

void spawn_pg_campaign(std::shared_ptr<pg_election_core> core, clock::duration wait,
                       std::string value,
                       asio::any_completion_handler<void(error_code, pg_leadership)> h) {
    const auto strand = core->strand;
    const auto ex = core->conn.get_executor();
    spawn_op<pg_leadership>(strand, ex, run_campaign(std::move(core), wait, std::move(value)),
                            std::move(h));
}

void read_pg_leader(std::shared_ptr<pg_election_core> core,
                    asio::any_completion_handler<void(error_code, leader_info)> h) {
    if (auto ec = pg_sql::check_name(core->name))
        return deliver(std::move(h), core->conn.get_executor(), ec, leader_info{});
    auto r = std::make_shared<pg_result>();
    const pg_param ps[] = {core->name};
    core->conn.async_query(sql::read, ps, *r, [core, r, h = std::move(h)](error_code ec) mutable {
        std::optional<sql::record_cells> row;
        leader_view v;
        if (!ec && !(row_of(*r, row) && sql::decode_read(row, v)))
            ec = error::unexpected_reply;
        deliver(std::move(h), core->conn.get_executor(), ec,
                ec ? leader_info{} : info_of(v, lock_backend::postgres));
    });
}

std::shared_ptr<observer_state> start_pg_observer(std::shared_ptr<pg_election_core> core) {
    auto s = std::make_shared<pg_observer>(std::move(core));
    asio::post(s->strand, [s] { s->start(); });
    return s;
}

void end_pg_term(const std::shared_ptr<pg_election_core>& core, pg_lease& l,
                 asio::any_completion_handler<void(error_code)> done) {
    auto r = std::make_shared<pg_result>();
    const auto term = std::to_string(l.token().value());
    const pg_param ps[] = {core->name, term};
    l.async_fenced_query(sql::end, ps, *r, [r, done = std::move(done)](error_code ec) mutable {
        std::move(done)(ec);
    });
}

} // namespace corolock::detail
