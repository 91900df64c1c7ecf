// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper election's driver: the campaign coroutine (the election's zk_mutex, the record
// read that decides on a lock-delay, the fenced write that begins the term), the leader read,
// and the observers (an exists-watch on the record and one on the leader's node, a read after
// each event). The decisions are in zookeeper/core/zk_election_core.hpp.
#include "zookeeper/io/zk_election_driver.hpp"

#include "core/access.hpp"
#include "core/decimal.hpp"
#include "io/deliver.hpp"
#include "io/spawn_op.hpp"
#include "zookeeper/core/zk_lock_recipe.hpp"
#include "zookeeper/io/zk_session.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tuple>
#include <zookeeper/zookeeper.h>

namespace corolock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

// A get on the session's strand as an asynchronous operation (a coroutine on the strand awaits
// it; the reply comes on the strand).
template <class CompletionToken>
auto async_get(const std::shared_ptr<zk_session>& s, const std::string& path,
               CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(zk_reply)>(
        [&s, &path](auto h) {
            auto shared = std::make_shared<decltype(h)>(std::move(h));
            s->get(path, [shared](zk_reply r) { std::move (*shared)(std::move(r)); });
        },
        token);
}

// A record read: none (no record), or the record; an error for a failed read or data that is
// not an election's record.
error_code decode_read(const zk_reply& r, std::optional<zk_record>& out) {
    out.reset();
    if (r.rc == ZNONODE)
        return {};
    if (r.rc != ZOK)
        return zk_error(r.rc);
    out = parse_record(r.data);
    return out ? error_code() : error_code(error::unexpected_reply);
}

using campaign_result = std::tuple<error_code, zk_leadership>;

asio::awaitable<campaign_result> run_campaign(std::shared_ptr<zk_election_core> c,
                                              clock::duration wait, std::string value) {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (!c->invalid.empty()) {
        c->session->log(logger::level::warning, "election " + c->path + ": " + c->invalid);
        co_return campaign_result{error::invalid_argument, zk_leadership{}};
    }
    auto [ec, l] = co_await c->lock.async_acquire_for(wait, asio::as_tuple(asio::use_awaitable));
    if (ec)
        co_return campaign_result{ec, zk_leadership{}};
    const auto term = l.token().value();
    if (c->opts.lock_delay > clock::duration::zero()) {
        const auto r = co_await async_get(c->session, c->record, asio::use_awaitable);
        std::optional<zk_record> last;
        if (auto rec = decode_read(r, last))
            co_return campaign_result{rec, zk_leadership{}};
        if (begin_step(last, term, true) == zk_begin::delay) {
            c->session->log(logger::level::info, lock_delay_text(c->path, c->opts.lock_delay));
            if (auto dec = co_await wait_lock_delay(c->opts.lock_delay, l))
                co_return campaign_result{dec, zk_leadership{}};
        }
    }
    const auto begun = format_record({true, term, 1, l.name(), value});
    auto [wec] =
        co_await l.async_fenced_write(c->record, begun, asio::as_tuple(asio::use_awaitable));
    if (wec == error::stale_token)
        co_return campaign_result{error::lease_lost, zk_leadership{}};
    if (wec) {
        // Unknown outcome: the term may have begun. End it (fenced) before the lease goes.
        l.async_fenced_write(c->record, format_record({false, term, 1, {}, {}}), [](error_code) {});
        co_return campaign_result{wec, zk_leadership{}};
    }
    co_return campaign_result{error_code{},
                              access::construct<zk_leadership>(std::move(l), c, std::move(value))};
}

// The follower: an exists-watch on the record (any write to it fires), one on the node of the
// leader the record names (its deletion is the leader's loss), and a read after each event.
// The session's expiry fires every watch: the read after it says `skipped`.
struct zk_observer final : observer_state {
    explicit zk_observer(std::shared_ptr<zk_election_core> c)
        : observer_state(c->session->strand(), c->session->executor(), lock_backend::zookeeper),
          core(std::move(c)), timer(core->session->strand()) {}

    std::shared_ptr<zk_election_core> core;
    asio::steady_timer timer; // a retry after a failed read
    bool reading = false;
    bool read_again = false;
    std::uint64_t record_watch = 0; // pending watch ids (0: none)
    std::uint64_t node_watch = 0;
    std::string watched_node;
    unsigned session_seen = 0;
    clock::duration retry = clock::duration::zero();

    std::weak_ptr<zk_observer> weak() {
        return std::static_pointer_cast<zk_observer>(shared_from_this());
    }

    // ---- strand only
    void read() {
        if (stopped)
            return;
        if (reading) {
            read_again = true;
            return;
        }
        reading = true;
        if (record_watch != 0)
            return get_record();
        record_watch = core->session->watch(
            core->record,
            [w = weak()](bool) {
                if (auto s = w.lock()) {
                    s->record_watch = 0;
                    s->read();
                }
            },
            [w = weak()](zk_reply r) {
                auto s = w.lock();
                if (!s)
                    return;
                if (r.rc == ZNONODE)
                    return s->finish({});
                if (r.rc != ZOK) { // no watch was set: set it again on the retry
                    s->core->session->unwatch(std::exchange(s->record_watch, 0));
                    return s->failed(r.rc);
                }
                s->get_record();
            });
    }

    void get_record() {
        core->session->get(core->record, [w = weak()](zk_reply r) {
            auto s = w.lock();
            if (!s)
                return;
            std::optional<zk_record> rec;
            if (auto ec = decode_read(r, rec))
                return ec == error::unexpected_reply ? s->foreign() : s->failed(r.rc);
            if (!rec || !rec->live)
                return s->finish(view_of(rec, false));
            s->check_leader(std::move(*rec));
        });
    }

    // Whether the record's leader still holds: its node watched (a watch still pending says it
    // existed when set and has not been deleted since).
    void check_leader(zk_record rec) {
        if (node_watch != 0 && watched_node == rec.node)
            return finish(view_of(rec, true));
        if (node_watch != 0)
            core->session->unwatch(std::exchange(node_watch, 0));
        watched_node = rec.node;
        const auto id = core->session->watch(
            rec.node,
            [w = weak()](bool) {
                if (auto s = w.lock()) {
                    s->node_watch = 0;
                    s->read();
                }
            },
            [w = weak(), rec](zk_reply r) {
                auto s = w.lock();
                if (!s)
                    return;
                if (r.rc != ZOK && r.rc != ZNONODE) { // no watch was set
                    s->core->session->unwatch(std::exchange(s->node_watch, 0));
                    return s->failed(r.rc);
                }
                if (r.rc == ZNONODE) // the watch waits for a creation that never comes
                    s->core->session->unwatch(std::exchange(s->node_watch, 0));
                s->finish(view_of(rec, r.rc == ZOK));
            });
        node_watch = id;
    }

    void finish(const leader_view& v) {
        reading = false;
        if (stopped)
            return;
        retry = clock::duration::zero();
        const auto session = core->session->current_session();
        if (session_seen != 0 && session != session_seen)
            fsm.on_gap(); // a new session: every watch had fired, changes may be missed
        session_seen = session;
        take_view(v);
        if (std::exchange(read_again, false))
            read();
    }

    void foreign() {
        core->session->log(logger::level::warning,
                           "election " + core->path + ": " + core->record +
                               " holds data that is not an election's record; read again in "
                               "retry");
        failed(ZOK);
    }

    // A read that failed: again after a back-off (50 ms doubling to 2 s); a stopped session
    // ends the observer.
    void failed(int rc) {
        reading = false;
        if (rc == ZCLOSING)
            return stop();
        retry = retry == clock::duration::zero()
                    ? std::chrono::milliseconds(50)
                    : std::min<clock::duration>(retry * 2, std::chrono::seconds(2));
        read_again = false;
        fsm.on_gap();
        timer.expires_after(retry);
        timer.async_wait([w = weak()](error_code ec) {
            if (auto s = w.lock(); s && !ec)
                s->read();
        });
    }

    void halt() override {
        timer.cancel();
        if (record_watch != 0)
            core->session->unwatch(std::exchange(record_watch, 0));
        if (node_watch != 0)
            core->session->unwatch(std::exchange(node_watch, 0));
    }
};

} // namespace

zk_election_core::zk_election_core(zk_connection& conn, std::shared_ptr<zk_session> s,
                                   std::string p, zk_election_options o)
    : session(std::move(s)), path(std::move(p)), record(zk_record_path(path)), opts(o),
      lock(conn, path) {
    if (opts.lock_delay < clock::duration::zero() || opts.lock_delay > max_lock_delay)
        invalid = "zk_election_options::lock_delay is out of range (0 to 1 h)";
}

void spawn_zk_campaign(std::shared_ptr<zk_election_core> core, clock::duration wait,
                       std::string value,
                       asio::any_completion_handler<void(error_code, zk_leadership)> h) {
    const auto strand = core->session->strand();
    const auto ex = core->session->executor();
    spawn_op<zk_leadership>(strand, ex, run_campaign(std::move(core), wait, std::move(value)),
                            std::move(h));
}

void read_zk_leader(std::shared_ptr<zk_election_core> core,
                    asio::any_completion_handler<void(error_code, leader_info)> h) {
    if (!valid_lock_path(core->path))
        return deliver(std::move(h), core->session->executor(), error_code(error::invalid_name),
                       leader_info{});
    auto done = std::make_shared<decltype(h)>(std::move(h));
    auto finish = [core, done](error_code ec, const leader_view& v) {
        deliver(std::move(*done), core->session->executor(), ec,
                ec ? leader_info{} : info_of(v, lock_backend::zookeeper));
    };
    asio::post(core->session->strand(), [core, finish] {
        core->session->get(core->record, [core, finish](zk_reply r) {
            std::optional<zk_record> rec;
            if (auto ec = decode_read(r, rec))
                return finish(ec, {});
            if (!rec || !rec->live)
                return finish({}, view_of(rec, false));
            // The leader's node: a get as the existence check.
            core->session->get(rec->node, [finish, rec](zk_reply n) {
                if (n.rc != ZOK && n.rc != ZNONODE)
                    return finish(zk_error(n.rc), {});
                finish({}, view_of(rec, n.rc == ZOK));
            });
        });
    });
}

std::shared_ptr<observer_state> start_zk_observer(std::shared_ptr<zk_election_core> core) {
    auto s = std::make_shared<zk_observer>(std::move(core));
    asio::post(s->strand, [s] { s->read(); });
    return s;
}

} // namespace corolock::detail
