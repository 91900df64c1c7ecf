// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The acquisition of a ZooKeeper lock node: one coroutine on the session's strand that switches
// over the actions of its pure machine (zookeeper/core/zk_acquire_fsm), sends what they ask and
// feeds the replies back.
#include "zookeeper/io/zk_lock_op.hpp"

#include "core/access.hpp"
#include "core/exec_cancel.hpp"
#include "io/deliver.hpp"
#include "io/owner_id.hpp"
#include "zookeeper/core/zk_acquire_fsm.hpp"
#include "zookeeper/core/zk_lock_recipe.hpp"
#include "zookeeper/io/zk_grant.hpp"
#include <corolock/detail/deadline.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <optional>
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
    if (lost.load())
        return;
    if (released) {
        // Released, its delete not answered yet (the server is unreachable): the release ends
        // now with the loss; the delete already queued goes out after a reconnect, or the node
        // goes with the session.
        if (release_waits.empty())
            return;
        lost = true;
        loss = why;
        session->log(logger::level::warning,
                     "zookeeper: lease on " + node + " lost while its release was pending");
        finish_release(why);
        return;
    }
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

void zk_grant::finish_release(error_code ec) {
    auto done = release_waits.take_all();
    for (auto& [key, h] : done)
        deliver(std::move(h), session->executor(), ec);
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
    if (h)
        release_waits.add(0, std::move(h));
    session->remove_eventually(node, session_no, [self = shared_from_this()](bool deleted_by_us) {
        self->finish_release(deleted_by_us ? error_code() : error::lease_lost);
    });
}

// The acquisition

namespace {

// What a reply's code means to the acquisition's machine.
zk_rc classify(int rc) noexcept {
    if (rc == ZOK)
        return zk_rc::ok;
    if (rc == ZNONODE)
        return zk_rc::no_node;
    if (rc == ZNODEEXISTS)
        return zk_rc::node_exists;
    if (zk_outcome_unknown(rc))
        return zk_rc::unknown;
    if (rc == ZCLOSING)
        return zk_rc::closing;
    if (zk_session_gone(rc))
        return zk_rc::session_gone;
    return zk_rc::other;
}

// One request's reply, as the acquisition waits for it. An acquisition that stops waiting
// (cancelled, its deadline) abandons it: the reply, when it comes, goes to `orphan` (a create's
// cleanup) instead.
struct zk_pending_reply {
    std::optional<zk_reply> reply;
    bool abandoned = false;
    std::function<void(zk_reply)> orphan;
};

// The node an ended acquisition may have made (its create's reply was lost): looked for by its
// owner id in the same session, and deleted; gone with the session if that expires first. The
// listing is queued now, so that it goes out at the reconnect before whatever is asked later:
// a later acquisition of the lock then finds the node gone.
void remove_own_later(std::shared_ptr<zk_session> s, std::string lock_path, std::string owner,
                      unsigned session_no) {
    auto& session = *s;
    session.get_children(
        lock_path, [s = std::move(s), lock_path, owner, session_no](zk_reply r) mutable {
            if (zk_outcome_unknown(r.rc))
                return remove_own_later(std::move(s), std::move(lock_path), std::move(owner),
                                        session_no);
            if (r.rc != ZOK || r.session != session_no)
                return; // the session is gone (its nodes with it), or the listing was refused
            if (auto own = find_own(r.children, owner)) {
                const auto path = lock_path + "/" + *own;
                s->log(logger::level::info,
                       "zookeeper: deleting " + path + ", left by an acquisition that ended");
                s->remove_eventually(path, session_no, [](bool) {});
            }
        });
}

} // namespace

struct zk_acquire_op : std::enable_shared_from_this<zk_acquire_op> {
    zk_acquire_op(std::shared_ptr<zk_session> s, zk_lock_request req, zk_acquire_handler h)
        : session(std::move(s)), request(std::move(req)), wake(session->strand()) {
        handler.add(0, std::move(h));
    }

    std::shared_ptr<zk_session> session;
    zk_lock_request request;
    handler_list<zk_acquire_handler> handler; // one, under key 0
    asio::steady_timer wake;
    bool cancelled = false;
    bool fired = false;
    bool done = false;
    owner_id owner{};
    std::optional<zk_acquire_fsm> fsm; // every decision (core/zk_acquire_fsm)
    std::uint64_t watch_id = 0;

    void cancel() {
        cancelled = true;
        wake.cancel();
    }

    // Why to stop waiting now (none: wait on); core/zk_lock_recipe decides.
    error_code stop_reason() const {
        return zk_stop_waiting(cancelled, request.once, request.deadline, clock::now());
    }

    // Waits until `ready()`, a cancel or the deadline; the events that make `ready()` true
    // cancel `wake`.
    template <class Ready>
    asio::awaitable<void> wait_until(Ready ready) {
        while (!ready() && !stop_reason()) {
            wake.expires_at(request.deadline);
            co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }

    // Sends one request (`start` gets the callback and gives the request's queue id, 0 when it
    // went out at once) and waits for its reply, a cancel or the deadline; nothing when it
    // stopped waiting (`stop_reason()` says why). Then a request still queued for a connection
    // is withdrawn (never sent: nothing to undo), and the reply of one already sent, if it ever
    // comes, goes to `orphan`.
    template <class Start>
    asio::awaitable<std::optional<zk_reply>> ask(Start start,
                                                 std::function<void(zk_reply)> orphan = {}) {
        auto p = std::make_shared<zk_pending_reply>();
        p->orphan = std::move(orphan);
        const std::uint64_t queued = start([p, w = weak_from_this()](zk_reply r) {
            if (p->abandoned) {
                if (p->orphan)
                    p->orphan(std::move(r));
                return;
            }
            p->reply = std::move(r);
            if (auto op = w.lock())
                op->wake.cancel();
        });
        co_await wait_until([&] { return p->reply.has_value(); });
        if (!p->reply) {
            p->abandoned = true;
            session->withdraw(queued);
        }
        co_return std::move(p->reply);
    }

    // What the late reply of an abandoned create does (core/zk_lock_recipe decides).
    std::function<void(zk_reply)> create_orphan() const {
        return [s = session, path = request.path, who = std::string(view(owner))](zk_reply r) {
            switch (orphan_step(r.rc == ZOK, zk_outcome_unknown(r.rc))) {
            case zk_orphan_step::remove_node:
                s->log(logger::level::info,
                       "zookeeper: deleting " + r.path + ", created for an acquisition that ended");
                s->remove_eventually(r.path, r.session, [](bool) {});
                break;
            case zk_orphan_step::find_by_owner:
                remove_own_later(s, path, who, r.session);
                break;
            case zk_orphan_step::none:
                break;
            }
        };
    }

    // Issued now (FIFO on the session: whatever this caller sends next sees it gone); when the
    // connection is down it goes out after the reconnect, or with the session.
    void drop_node() {
        if (!fsm || fsm->node().empty())
            return;
        auto path = fsm->full(fsm->node());
        fsm->node_dropped();
        session->remove_eventually(std::move(path), fsm->session(), [](bool) {});
    }

    void finish(error_code ec, zk_lease l) {
        if (done)
            return;
        done = true;
        session->forget_op(request.op_id);
        auto h = handler.take(0);
        deliver(std::move(*h), session->executor(), ec, std::move(l));
    }

    // Ends without the lock and without waiting for the server, leaving nothing behind: our
    // node is deleted (after the reconnect if need be); one a lost create may have made is
    // looked for by owner id after the reconnect; a create still unanswered deletes what it
    // made when its reply comes (create_orphan).
    void abandon(error_code ec) {
        if (!ec)
            ec = asio::error::operation_aborted;
        drop_node();
        if (fsm && fsm->created_unknown()) {
            fsm->lost_create_handled();
            remove_own_later(session, request.path, std::string(view(owner)),
                             fsm->unknown_session());
        }
        if (ec != asio::error::operation_aborted &&
            session->config().log.enabled(logger::level::debug))
            session->log(logger::level::debug,
                         "zookeeper: acquire of " + request.path + " ended: " + ec.message());
        finish(ec, {});
    }

    // A request the server refused (an ACL without our credentials, a node that cannot be
    // made): said in the log with ZooKeeper's reason, as the error code cannot carry it.
    void refused(const char* request_name, const std::string& path, int rc, bool root_missing) {
        std::string why =
            std::string("zookeeper: ") + request_name + " " + path + " refused: " + zerror(rc);
        if (root_missing && !session->config().chroot.empty())
            why += ": the chroot '" + session->config().chroot +
                   "' does not exist (create it, or fix zk_config::chroot)";
        session->log(logger::level::error, why);
        finish(zk_error(rc), {});
    }

    zk_lease make_lease() {
        auto g = std::make_shared<zk_grant>();
        g->session = session;
        g->node = fsm->full(fsm->node());
        g->czxid = fsm->czxid();
        g->session_no = fsm->session();
        fsm->node_dropped();
        session->add_grant(g);
        g->watch_node();
        return access::construct<zk_lease>(std::move(g));
    }

    asio::awaitable<void> run() {
        using kind = zk_acquire_action::kind;
        auto self = shared_from_this();
        owner = random_owner_id();
        fsm.emplace(request.path, request.kind, std::string(view(owner)), request.once,
                    request.zero_wait);
        auto a = fsm->start();
        for (;;) {
            // A cancel or the deadline ends every wait; only a cancel ends a grant.
            if (a.what == kind::grant ? cancelled : !a.ends() && stop_reason())
                a = fsm->on_stop(stop_reason());
            switch (a.what) {
            case kind::create_node:
            case kind::create_parent: {
                const bool ours = a.what == kind::create_node;
                // A named local: g++ 12 destroyed a conditional expression's temporary twice in
                // this co_await's operand (a double free in the zookeeper suites).
                std::function<void(zk_reply)> orphan;
                if (ours)
                    orphan = create_orphan();
                auto r = co_await ask(
                    [&](auto cb) { return session->create(a.path, ours, std::move(cb)); },
                    std::move(orphan));
                if (!r) // a create sent: its reply deletes what it made (create_orphan)
                    a = fsm->on_stop(stop_reason());
                else if (ours)
                    a = fsm->on_created(classify(r->rc), r->path, r->czxid, r->session, r->rc);
                else
                    a = fsm->on_parent_created(classify(r->rc), r->rc);
                break;
            }
            case kind::list: {
                auto r = co_await ask(
                    [&](auto cb) { return session->get_children(request.path, std::move(cb)); });
                if (!r) {
                    a = fsm->on_stop(stop_reason());
                    break;
                }
                const auto mine = fsm->node();
                a = fsm->on_listed(classify(r->rc), r->children, r->session, r->rc);
                if (!mine.empty() && session->config().log.enabled(logger::level::debug)) {
                    std::ostringstream os;
                    os << "zookeeper: " << mine << " of " << r->children.size()
                       << " children: " << a.what << (a.path.empty() ? "" : " ") << a.path;
                    session->log(logger::level::debug, os.str());
                }
                break;
            }
            case kind::watch: {
                fired = false;
                if (a.found_own)
                    session->log(logger::level::info,
                                 "zookeeper: found " + a.path + " after a lost reply");
                auto e = co_await ask([&](auto cb) {
                    watch_id = session->watch(
                        a.path,
                        [w = std::weak_ptr<zk_acquire_op>(self)](bool) {
                            if (auto op = w.lock()) {
                                op->fired = true;
                                op->wake.cancel();
                            }
                        },
                        std::move(cb));
                    return session->last_queued();
                });
                a = e ? fsm->on_watched(classify(e->rc), e->czxid) : fsm->on_stop(stop_reason());
                if (a.what != kind::wait_wake)
                    session->unwatch(watch_id);
                break;
            }
            case kind::wait_wake:
                co_await wait_until([&] { return fired; });
                session->unwatch(watch_id);
                a = fired ? fsm->on_fired() : fsm->on_stop(stop_reason());
                break;
            case kind::wait_reconnect: {
                auto state = std::make_shared<std::optional<bool>>();
                session->when_connected([w = weak_from_this(), state](bool connected) {
                    *state = connected;
                    if (auto op = w.lock())
                        op->wake.cancel();
                });
                co_await wait_until([&] { return state->has_value(); });
                a = state->has_value() ? fsm->on_reconnected(**state) : fsm->on_stop(stop_reason());
                break;
            }
            case kind::grant:
                co_return finish({}, make_lease());
            case kind::finish:
                if (a.drop_node)
                    drop_node();
                co_return finish(a.ec, {});
            case kind::refuse:
                drop_node();
                co_return refused(a.request, a.path, a.raw_rc, a.root_missing);
            case kind::abandon:
                co_return abandon(a.ec);
            }
        }
    }
};

void cancel_zk_acquires(const std::shared_ptr<zk_session>& s, std::uint64_t mutex_id) {
    asio::post(s->strand(), [s, mutex_id] { s->cancel_ops(mutex_id); });
}

void start_zk_acquire(std::shared_ptr<zk_session> s, zk_lock_request req, zk_acquire_handler h) {
    if (const auto problem = zk_path_problem(req.path); !problem.empty()) {
        // The error's text names no backend: the warning says what is wrong with this path.
        const error_code ec = error::invalid_name;
        s->log(logger::level::warning, "zookeeper: acquire of \"" + req.path +
                                           "\": " + ec.message() + ": this path " +
                                           std::string(problem) + " (nothing was sent)");
        return deliver(std::move(h), s->executor(), ec, zk_lease());
    }
    if (req.deadline == clock::time_point::min())
        return deliver(std::move(h), s->executor(), error_code(error::invalid_wait), zk_lease());
    // A wait already over (zero) is one attempt, as a try: a free lock is granted. One attempt
    // waits for the server at most the session timeout (then connection_lost).
    const auto now = clock::now();
    if (!req.once && req.deadline <= now) {
        req.once = true;
        req.zero_wait = true;
    }
    if (req.once)
        req.deadline = deadline_of(s->config().session_timeout);
    req.op_id = s->next_id();
    auto slot = asio::get_associated_cancellation_slot(h);
    auto op = std::make_shared<zk_acquire_op>(s, std::move(req), std::move(h));
    if (slot.is_connected()) {
        slot.assign([w = std::weak_ptr<zk_acquire_op>(op)](asio::cancellation_type t) {
            auto op = w.lock();
            if (!op || !cancels_wait(t))
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
