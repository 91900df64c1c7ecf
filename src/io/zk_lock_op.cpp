// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The acquisition of a ZooKeeper lock node, one coroutine on the session's strand that only
// sequences requests; the decisions (who holds, whom to watch, which node is ours after a lost
// reply) are core/zk_lock_recipe's.
#include "io/zk_lock_op.hpp"

#include "core/zk_lock_recipe.hpp"
#include "io/deliver.hpp"
#include "io/owner_id.hpp"
#include "io/zk_grant.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <list>
#include <sstream>
#include <zookeeper/zookeeper.h>

namespace corolock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

// zk_grant

void zk_grant::watch_node() {
    auto self = shared_from_this();
    watch_id = session->watch(
        node,
        [w = std::weak_ptr<zk_grant>(self)](bool) {
            if (auto g = w.lock(); g && !g->released)
                g->lose(error::lease_lost);
        },
        [w = std::weak_ptr<zk_grant>(self)](zk_reply r) {
            auto g = w.lock();
            if (!g || g->released)
                return;
            if (r.rc == ZNONODE || zk_session_gone(r.rc))
                g->lose(error::lease_lost);
        });
}

void zk_grant::lose(error_code why) {
    if (lost.load() || released)
        return;
    lost = true;
    loss = why;
    session->log(logger::level::warning, "zookeeper: lease on " + node + " lost");
    session->unwatch(watch_id);
    auto waits = lost_waits.take_all();
    for (auto& [id, h] : waits)
        deliver(std::move(h), session->executor(), why);
    // The node may still exist (a suspension past the validity): never leave it behind.
    session->remove_eventually(node, session_no, [](bool) {});
}

void zk_grant::drop_share(handler_ec h, bool explicit_release) {
    if (explicit_release)
        release_requested = true;
    const bool last = --shares == 0;
    if (!last || released) {
        if (h) {
            // A release while holds are alive, or a hold's: the outcome so far.
            const bool report = last && release_requested && lost.load();
            deliver(std::move(h), session->executor(),
                    (explicit_release || report) && lost.load() ? loss : error_code());
        }
        return;
    }
    released = true;
    session->unwatch(watch_id);
    auto waits = lost_waits.take_all();
    for (auto& [id, w] : waits)
        deliver(std::move(w), session->executor(), error_code(asio::error::operation_aborted));
    if (lost.load()) {
        if (h)
            deliver(std::move(h), session->executor(), loss);
        return;
    }
    auto done = std::make_shared<std::list<handler_ec>>();
    if (h)
        done->push_back(std::move(h));
    session->remove_eventually(
        node, session_no, [self = shared_from_this(), done](bool deleted_by_us) {
            const error_code ec = deleted_by_us ? error_code() : error::lease_lost;
            for (auto& h : *done)
                deliver(std::move(h), self->session->executor(), ec);
        });
}

// The acquisition

namespace {

bool cancels(asio::cancellation_type t) {
    return (t & (asio::cancellation_type::terminal | asio::cancellation_type::partial |
                 asio::cancellation_type::total)) != asio::cancellation_type::none;
}

// Awaits one session request (its reply is posted to the strand, where this coroutine runs).
template <class Start>
auto ask(Start start) {
    return asio::async_initiate<const asio::use_awaitable_t<>&, void(zk_reply)>(
        [start = std::move(start)](auto handler) mutable {
            auto h = std::make_shared<decltype(handler)>(std::move(handler));
            start([h](zk_reply r) { std::move (*h)(std::move(r)); });
        },
        asio::use_awaitable);
}

} // namespace

struct zk_acquire_op : std::enable_shared_from_this<zk_acquire_op> {
    zk_acquire_op(std::shared_ptr<zk_session> s, zk_lock_request req, zk_acquire_handler h)
        : session(std::move(s)), request(std::move(req)), wake(session->strand()) {
        handler.push_back(std::move(h));
    }

    std::shared_ptr<zk_session> session;
    zk_lock_request request;
    std::list<zk_acquire_handler> handler; // one; a list never move-assigns it
    asio::steady_timer wake;
    bool cancelled = false;
    bool fired = false;
    bool done = false;
    owner_id owner{};
    std::string node; // our child's name, once created
    std::int64_t czxid = 0;
    unsigned session_no = 0;

    std::string full(const std::string& child) const { return request.path + "/" + child; }

    void cancel() {
        cancelled = true;
        wake.cancel();
    }

    // Waits until `ready()`, a cancel or the deadline; the events that make `ready()` true
    // cancel `wake`.
    template <class Ready>
    asio::awaitable<void> wait_until(Ready ready) {
        while (!ready() && !cancelled && clock::now() < request.deadline) {
            wake.expires_at(request.deadline);
            co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }

    // After a reply whose outcome is unknown: waits for the reconnect. An error to finish with
    // (after the node is dropped), or none to go on (a cancel is seen at the loop's top).
    asio::awaitable<error_code> reconnected() {
        auto state = std::make_shared<std::optional<bool>>();
        session->when_connected([w = weak_from_this(), state](bool connected) {
            *state = connected;
            if (auto op = w.lock())
                op->wake.cancel();
        });
        co_await wait_until([&] { return state->has_value(); });
        if (cancelled)
            co_return error_code();
        if (state->has_value() && !**state)
            co_return error::connection_lost;
        if (!state->has_value())
            co_return error::acquire_timeout;
        co_return error_code();
    }

    // Creates the parents of the lock path (persistent; ZNODEEXISTS is fine).
    asio::awaitable<int> make_parents() {
        const auto& p = request.path;
        for (std::size_t at = p.find('/', 1);; at = p.find('/', at + 1)) {
            const auto part = at == std::string::npos ? p : p.substr(0, at);
            auto r = co_await ask([&](auto cb) { session->create(part, false, std::move(cb)); });
            if (r.rc != ZOK && r.rc != ZNODEEXISTS)
                co_return r.rc;
            if (at == std::string::npos)
                co_return ZOK;
        }
    }

    asio::awaitable<void> drop_node() {
        if (node.empty())
            co_return;
        auto path = full(node);
        node.clear();
        // Issued now (FIFO on the session: whatever this caller sends next sees it gone); when
        // the connection is down it goes out after the reconnect, or with the session.
        session->remove_eventually(std::move(path), session_no, [](bool) {});
    }

    void finish(error_code ec, zk_lease l) {
        if (done)
            return;
        done = true;
        session->forget_op(request.op_id);
        auto h = std::move(handler.front());
        handler.clear();
        deliver(std::move(h), session->executor(), ec, std::move(l));
    }

    // A request the server refused (an ACL without our credentials, a node that cannot be
    // made): said in the log with ZooKeeper's reason, as the error code cannot carry it.
    void refused(const char* request_name, const std::string& path, int rc) {
        session->log(logger::level::error, std::string("zookeeper: ") + request_name + " " + path +
                                               " refused: " + zerror(rc));
        finish(zk_error(rc), {});
    }

    zk_lease make_lease() {
        auto g = std::make_shared<zk_grant>();
        g->session = session;
        g->node = full(node);
        g->czxid = czxid;
        g->session_no = session_no;
        node.clear();
        session->add_grant(g);
        g->watch_node();
        return zk_lease(std::move(g));
    }

    asio::awaitable<void> run() {
        auto self = shared_from_this();
        owner = random_owner_id();
        const auto prefix = request.path + "/" + node_prefix(view(owner), request.kind);
        bool created_unknown = false;
        for (;;) {
            if (cancelled && !created_unknown) {
                co_await drop_node();
                co_return finish(asio::error::operation_aborted, {});
            }
            if (node.empty() && created_unknown) {
                // The create's reply was lost: our node may exist. Find it by our owner id.
                created_unknown = false;
                if (auto ec = co_await reconnected()) {
                    // Our node, if it exists, goes with the session (or after the reconnect).
                    co_return finish(ec, {});
                }
                auto r = co_await ask(
                    [&](auto cb) { session->get_children(request.path, std::move(cb)); });
                if (zk_outcome_unknown(r.rc)) {
                    created_unknown = true;
                    continue;
                }
                if (r.rc == ZOK) {
                    if (auto own = find_own(r.children, view(owner))) {
                        node = *own;
                        session_no = r.session;
                        auto e = co_await ask([&](auto cb) {
                            session->watch(
                                full(node), [](bool) {}, std::move(cb));
                        });
                        czxid = e.czxid;
                        if (e.rc != ZOK)
                            node.clear();
                        session->log(logger::level::info,
                                     "zookeeper: found " + full(*own) + " after a lost reply");
                    }
                }
                continue;
            }
            if (node.empty()) {
                if (clock::now() >= request.deadline && !request.once)
                    co_return finish(error::acquire_timeout, {});
                auto r =
                    co_await ask([&](auto cb) { session->create(prefix, true, std::move(cb)); });
                if (r.rc == ZNONODE) {
                    const int prc = co_await make_parents();
                    if (prc != ZOK && !zk_outcome_unknown(prc) && !zk_session_gone(prc))
                        co_return refused("create (parents of)", request.path, prc);
                    if (zk_outcome_unknown(prc))
                        if (auto ec = co_await reconnected())
                            co_return finish(ec, {});
                    continue;
                }
                if (zk_outcome_unknown(r.rc)) {
                    created_unknown = true;
                    continue;
                }
                if (r.rc == ZCLOSING)
                    co_return finish(error::connection_lost, {});
                if (zk_session_gone(r.rc))
                    continue; // a new session: create again
                if (r.rc != ZOK)
                    co_return refused("create", prefix, r.rc);
                node = r.path.substr(r.path.rfind('/') + 1);
                czxid = r.czxid;
                session_no = r.session;
                continue;
            }
            auto r =
                co_await ask([&](auto cb) { session->get_children(request.path, std::move(cb)); });
            if (zk_outcome_unknown(r.rc)) {
                if (auto ec = co_await reconnected()) {
                    co_await drop_node();
                    co_return finish(ec, {});
                }
                continue;
            }
            if (r.rc == ZCLOSING)
                co_return finish(error::connection_lost, {});
            if (r.session != session_no || zk_session_gone(r.rc)) {
                node.clear(); // its session is gone, and the node with it
                continue;
            }
            if (r.rc != ZOK) {
                co_await drop_node();
                co_return refused("list", request.path, r.rc);
            }
            const auto d = decide(r.children, node);
            if (session->config().log.enabled(logger::level::debug)) {
                std::ostringstream os;
                os << "zookeeper: " << node << " of " << r.children.size()
                   << " children: " << d.what << (d.predecessor.empty() ? "" : " ")
                   << d.predecessor;
                session->log(logger::level::debug, os.str());
            }
            if (d.what == zk_lock_decision::verdict::gone) {
                node.clear();
                continue;
            }
            if (d.what == zk_lock_decision::verdict::holds) {
                if (cancelled)
                    continue; // deleted at the top
                co_return finish({}, make_lease());
            }
            if (request.once) {
                co_await drop_node();
                co_return finish({}, {});
            }
            if (clock::now() >= request.deadline) {
                co_await drop_node();
                co_return finish(error::acquire_timeout, {});
            }
            // Watch only the predecessor; a reply of ZNONODE means it is already gone.
            fired = false;
            auto watch_id = std::make_shared<std::uint64_t>(0);
            auto e = co_await ask([&](auto cb) {
                *watch_id = session->watch(
                    full(d.predecessor),
                    [w = std::weak_ptr<zk_acquire_op>(self)](bool) {
                        if (auto op = w.lock()) {
                            op->fired = true;
                            op->wake.cancel();
                        }
                    },
                    std::move(cb));
            });
            if (e.rc == ZOK)
                co_await wait_until([&] { return fired; });
            session->unwatch(*watch_id);
            if (zk_outcome_unknown(e.rc)) {
                if (auto ec = co_await reconnected()) {
                    co_await drop_node();
                    co_return finish(ec, {});
                }
                continue;
            }
            if (!fired && !cancelled && clock::now() >= request.deadline) {
                co_await drop_node();
                co_return finish(error::acquire_timeout, {});
            }
        }
    }
};

void cancel_zk_acquires(const std::shared_ptr<zk_session>& s, std::uint64_t mutex_id) {
    asio::post(s->strand(), [s, mutex_id] { s->cancel_ops(mutex_id); });
}

clock::time_point zk_deadline_in(clock::duration wait) {
    if (wait < clock::duration::zero())
        return clock::time_point::min();
    const auto now = clock::now();
    return wait >= clock::time_point::max() - now ? clock::time_point::max() : now + wait;
}

void start_zk_acquire(std::shared_ptr<zk_session> s, zk_lock_request req, zk_acquire_handler h) {
    if (!valid_lock_path(req.path))
        return deliver(std::move(h), s->executor(), error_code(error::invalid_name), zk_lease());
    if (req.deadline == clock::time_point::min())
        return deliver(std::move(h), s->executor(), error_code(error::invalid_wait), zk_lease());
    req.op_id = s->next_id();
    auto slot = asio::get_associated_cancellation_slot(h);
    auto op = std::make_shared<zk_acquire_op>(s, std::move(req), std::move(h));
    if (slot.is_connected()) {
        slot.assign([w = std::weak_ptr<zk_acquire_op>(op)](asio::cancellation_type t) {
            auto op = w.lock();
            if (!op || !cancels(t))
                return;
            asio::post(op->session->strand(), [op] {
                if (!op->done)
                    op->cancel();
            });
        });
    }
    asio::post(s->strand(), [op] {
        op->session->remember_op(op->request.op_id, op->request.mutex_id, [w = std::weak_ptr(op)] {
            if (auto op = w.lock())
                op->cancel();
        });
        asio::co_spawn(
            op->session->strand(), [op] { return op->run(); },
            [op](std::exception_ptr e) {
                if (e)
                    op->finish(error::server_error, {});
            });
    });
}

} // namespace corolock::detail
