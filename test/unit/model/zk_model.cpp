// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper backend in the model (acquire_model.hpp): the acquisition's decisions
// (zk_acquire_fsm) for three processes, each with its session and one connection (requests
// executed in order, replies and watch events delivered in order), against a model of a
// ZooKeeper server (sequential ephemeral nodes, exists-watches, sessions that expire). A dropped
// connection runs or not each request in flight and answers it "unknown" after the replies
// already read; a session expires while its process is disconnected (its nodes go, its watches
// fire, its queued requests fail, its grants are lost). The model carries out each action with a
// switch, as zookeeper/io/zk_lock_op.cpp does, with the driver's stop reason (zk_stop_waiting)
// at a cancel or the deadline, and the driver's cleanups: delete our node until it is gone or its
// session is; find a node by owner id after a lost create reply; the late reply of an abandoned
// create (zookeeper/core/zk_lock_recipe's orphan_step). The attempt is the create of our node: a
// create whose reply is unknown is resolved by a listing in its session (or by the session's
// end). The server's holder is the owner of the lowest node, its token the node's czxid. Beyond
// the harness's invariants: once all is quiet (connections up, cleanups done, grants released),
// no node is left.
#include "unit/model/acquire_model.hpp"
#include "zookeeper/core/zk_acquire_fsm.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_model_zk {

using namespace corolock::test::model;
using corolock::error_code;
using corolock::detail::zk_acquire_action;
using corolock::detail::zk_acquire_fsm;
using corolock::detail::zk_rc;
using kind = zk_acquire_action::kind;
using namespace std::chrono_literals;

namespace {

const std::string lock_path = "/m/l";
constexpr int processes = 3;

struct reply {
    zk_rc rc = zk_rc::ok;
    std::string path{};
    std::int64_t czxid = 0;
    std::vector<std::string> children{};
    unsigned session = 0;
    bool fired = false; // a watch event, not a reply
    int watch = 0;
    std::function<void(const reply&)> to; // who gets it
};

struct request {
    enum op_t { create_seq, create, list, exists, remove } op = list;
    std::string path{};
    int watch = 0; // exists: the watch id to set
    unsigned session = 0;
    std::function<void(const reply&)> to;
};

struct node {
    int process = 0;
    std::int64_t czxid = 0;
    std::int64_t sequence = 0;
};

struct acquirer : caller {
    std::unique_ptr<zk_acquire_fsm> fsm;
    std::string id; // the owner id of its nodes
    zk_acquire_action next;
    enum state_t { sending, wait_reply, wait_wake, wait_reconnect, granted, done } state = sending;
    bool abandoned_reply = false; // the reply it waits for goes to cleanup
    bool orphan_create = false;   // ... and is a create's
    bool fired = false;
    int watch = 0;
    bool found_own = false; // the watch is on our node, found after a lost create reply
    std::string held;       // the granted node
    unsigned granted_session = 0;
    unsigned unknown_session = 0; // of the create whose outcome is unknown
    bool waiting() const {
        return state == wait_reply || state == wait_wake || state == wait_reconnect;
    }
};

struct process_state {
    unsigned session = 1; // the driver's session number (r.session)
    bool connected = true;
    std::deque<request> inflight;                 // sent, in execution order
    std::deque<reply> replies;                    // executed, to be delivered in order
    std::deque<request> queued;                   // asked while disconnected
    std::vector<std::function<void()>> reconnect; // when_connected
};

class zk_model final : public acquire_model {
public:
    explicit zk_model(unsigned seed)
        // The events' weights (execute, deliver, arrive, cancel, release, drop, reconnect, fault,
        // time, timer) and time steps of 0 .. 3 ms.
        : acquire_model(seed, {8, 5, 2, 1, 1, 1, 2, 1, 2, 0, 3}, processes, 1, 1) {
        if (pick(2) == 0)
            persistent_ = {"/m", lock_path};
    }

private:
    // ---- the events
    bool execute(int p) override {
        auto& ps = procs_[p];
        if (!ps.connected || ps.inflight.empty())
            return false;
        auto r = std::move(ps.inflight.front());
        ps.inflight.pop_front();
        ps.replies.push_back(serve(p, r));
        return true;
    }

    bool deliver(int p) override {
        if (procs_[p].replies.empty())
            return false;
        auto r = std::move(procs_[p].replies.front());
        procs_[p].replies.pop_front();
        r.to(r);
        return true;
    }

    // A try (or a zero wait: held then ends with acquire_timeout) waits for the server at most
    // the session timeout, as the driver's start_zk_acquire sets it; a wait, until its deadline
    // or for ever.
    void arrive(int p) override {
        auto& a = *acquirers_.emplace_back(std::make_unique<acquirer>());
        a.once = pick(6) == 0;
        const bool zero_wait = a.once && pick(2) == 0;
        a.deadline = a.once         ? now_ + session_timeout_
                     : pick(2) == 0 ? never
                                    : now_ + 1ms * (1 + pick(60));
        a.armed = a.deadline;
        add_caller(a, p);
        a.id = "o" + std::to_string(a.owner);
        a.fsm = std::make_unique<zk_acquire_fsm>(lock_path, corolock::detail::zk_node_kind::lock,
                                                 a.id, a.once, zero_wait);
        a.next = a.fsm->start();
        perform(a);
    }

    bool drop(int p) override {
        auto& ps = procs_[p];
        if (!ps.connected)
            return false;
        note("drop p" + std::to_string(p));
        ps.connected = false;
        // Each request in flight may have run; every one is answered "unknown", after the
        // replies already read.
        auto inflight = std::move(ps.inflight);
        ps.inflight.clear();
        for (auto& r : inflight) {
            if (pick(2) == 0) {
                serve(p, r);
                counts_["creates run, reply lost"] += r.op == request::create_seq;
            }
            ps.replies.push_back(failed(zk_rc::unknown, r));
        }
        return true;
    }

    bool reconnect(int p) override {
        auto& ps = procs_[p];
        if (ps.connected || !ps.replies.empty())
            return false; // the C client delivers what it had first
        ps.connected = true;
        for (auto& r : ps.queued)
            ps.inflight.push_back(std::move(r));
        ps.queued.clear();
        auto waiting = std::move(ps.reconnect);
        ps.reconnect.clear();
        for (auto& w : waiting)
            w();
        return true;
    }

    // The leader expires a disconnected process's session: its nodes go (watches fire), its
    // queued requests fail, its grants are lost; a new session opens.
    bool fault(int p, bool faults) override {
        auto& ps = procs_[p];
        if (!faults || pick(3) != 0 || ps.connected || !ps.replies.empty())
            return false;
        note("p" + std::to_string(p) + "'s session expires");
        ++counts_["sessions expired"];
        std::vector<std::string> gone;
        for (auto& [name, n] : nodes_)
            if (n.process == p)
                gone.push_back(name);
        for (auto& name : gone)
            delete_node(name);
        // The process's own watches fire (a session event reaches every watch).
        for (auto& [name, list] : watches_)
            std::erase_if(list, [&](const auto& w) {
                if (std::get<0>(w) != p)
                    return false;
                ps.replies.push_back(fired(std::get<1>(w), std::get<2>(w)));
                return true;
            });
        for (auto& r : ps.queued)
            ps.replies.push_back(failed(zk_rc::session_gone, r));
        ps.queued.clear();
        for (auto& a : acquirers_)
            if (a->process == p && a->state == acquirer::granted) {
                a->state = acquirer::done; // lost: the session is gone with the node
                a->lost = true;
                free(0, a->owner);
            }
        ++ps.session;
        return true;
    }

    // A cancel or the deadline ends every wait (the driver's stop reason), never a grant.
    void cancel(caller& c) override { stop(static_cast<acquirer&>(c), true); }
    void on_timer(caller& c) override { stop(static_cast<acquirer&>(c), false); }

    void release(caller& c) override {
        auto& a = static_cast<acquirer&>(c);
        if (a.lost)
            return;
        free(0, a.owner);
        remove_eventually(a.process, a.fsm->full(a.held), a.granted_session);
        a.state = acquirer::done;
    }

    bool room() const override { return acquirers_.size() < 80; }

    bool in_flight() const override {
        for (auto& p : procs_)
            if (!p.connected || !p.inflight.empty() || !p.replies.empty() || !p.queued.empty())
                return true;
        return false;
    }

    // The lowest node's owner holds (the recipe), under the node's czxid.
    const hold* holder_of(const caller& c) const override {
        const auto& a = static_cast<const acquirer&>(c);
        const auto it = nodes_.find(a.held);
        if (it == nodes_.end())
            return nullptr;
        for (const auto& [name, n] : nodes_)
            if (n.sequence < it->second.sequence)
                return nullptr;
        return find(0, a.owner);
    }

    void finish() override {
        for (auto& a : acquirers_)
            BOOST_TEST((a->state == acquirer::done));
        std::ostringstream left;
        for (auto& [name, n] : nodes_)
            left << " " << name << " of p" << n.process;
        BOOST_CHECK_MESSAGE(nodes_.empty(), "nodes left:" << left.str());
    }

    // ---- the server
    static std::string child_name(std::int64_t seq, const std::string& prefix) {
        const auto digits = std::to_string(seq);
        return prefix + std::string(10 - digits.size(), '0') + digits;
    }
    static reply failed(zk_rc rc, const request& r) {
        return reply{.rc = rc, .session = r.session, .to = r.to};
    }
    static reply fired(int watch, std::function<void(const reply&)> to) {
        return reply{.fired = true, .watch = watch, .to = std::move(to)};
    }

    void delete_node(const std::string& name) {
        nodes_.erase(name);
        auto w = watches_.find(name);
        if (w == watches_.end())
            return;
        for (auto& [p, id, to] : w->second)
            procs_[p].replies.push_back(fired(id, to));
        watches_.erase(w);
    }

    bool persistent(const std::string& path) const {
        return std::count(persistent_.begin(), persistent_.end(), path) > 0;
    }

    reply serve(int p, const request& r) {
        reply out;
        out.to = r.to;
        out.session = r.session;
        if (r.session != procs_[p].session) {
            out.rc = zk_rc::session_gone;
            return out;
        }
        switch (r.op) {
        case request::create_seq:
            if (!persistent(lock_path)) {
                out.rc = zk_rc::no_node;
                break;
            }
            {
                const auto name = child_name(++seq_, r.path.substr(lock_path.size() + 1));
                nodes_[name] = node{p, ++zxid_, seq_};
                out.path = lock_path + "/" + name;
                out.czxid = zxid_;
            }
            break;
        case request::create: {
            const auto parent = r.path.substr(0, r.path.rfind('/'));
            if (!parent.empty() && !persistent(parent))
                out.rc = zk_rc::no_node;
            else if (persistent(r.path))
                out.rc = zk_rc::node_exists;
            else
                persistent_.push_back(r.path);
            break;
        }
        case request::list:
            if (!persistent(lock_path))
                out.rc = zk_rc::no_node;
            else
                for (auto& [name, n] : nodes_)
                    out.children.push_back(name);
            break;
        case request::exists: {
            const auto name = r.path.substr(lock_path.size() + 1);
            auto it = nodes_.find(name);
            if (it == nodes_.end()) {
                out.rc = zk_rc::no_node;
            } else {
                out.czxid = it->second.czxid;
                watches_[name].push_back({p, r.watch, r.to});
            }
            break;
        }
        case request::remove: {
            const auto name = r.path.substr(lock_path.size() + 1);
            if (nodes_.count(name) == 0)
                out.rc = zk_rc::no_node;
            else
                delete_node(name);
            break;
        }
        }
        return out;
    }

    // Sends (or queues while disconnected) a request of process p.
    void send(int p, request r) {
        r.session = procs_[p].session;
        (procs_[p].connected ? procs_[p].inflight : procs_[p].queued).push_back(std::move(r));
    }

    // ---- the driver's cleanups
    void remove_eventually(int p, std::string path, unsigned session) {
        request r;
        r.op = request::remove;
        r.path = path;
        r.to = [this, p, path, session](const reply& rep) {
            if (rep.rc == zk_rc::unknown && procs_[p].session == session)
                remove_eventually(p, path, session);
        };
        if (procs_[p].session == session)
            send(p, std::move(r));
    }

    void remove_own_later(int p, std::string owner, unsigned session) {
        request r;
        r.op = request::list;
        r.path = lock_path;
        r.to = [this, p, owner, session](const reply& rep) {
            if (rep.rc == zk_rc::unknown)
                return remove_own_later(p, owner, session);
            if (rep.rc != zk_rc::ok || rep.session != session)
                return;
            if (auto own = corolock::detail::find_own(rep.children, owner))
                remove_eventually(p, lock_path + "/" + *own, session);
        };
        send(p, std::move(r));
    }

    void drop_node(acquirer& a) {
        if (a.fsm->node().empty())
            return;
        gave_back(a);
        remove_eventually(a.process, a.fsm->full(a.fsm->node()), a.fsm->session());
        a.fsm->node_dropped();
    }

    void complete(acquirer& a, error_code ec) {
        completed(a, ec, false);
        a.state = acquirer::done;
    }

    // ---- the acquisition's switch (zookeeper/io/zk_lock_op.cpp)
    void perform(acquirer& a) {
        for (;;) {
            auto& x = a.next;
            note("caller " + std::to_string(a.owner) + ": " + text(x.what) + " " + x.path);
            switch (x.what) {
            case kind::create_node:
            case kind::create_parent:
            case kind::list:
            case kind::watch: {
                request r;
                r.op = x.what == kind::create_node     ? request::create_seq
                       : x.what == kind::create_parent ? request::create
                       : x.what == kind::list          ? request::list
                                                       : request::exists;
                r.path = x.path;
                const auto what = x.what;
                if (what == kind::watch) {
                    a.fired = false;
                    r.watch = ++watch_ids_;
                    a.watch = r.watch;
                    a.found_own = x.found_own;
                }
                if (what == kind::create_node) { // the attempt
                    if (a.unknown && procs_[a.process].session != a.unknown_session)
                        resolved(a); // the session went, with whatever the create made
                    attempt(a);
                }
                a.state = acquirer::wait_reply;
                a.abandoned_reply = false;
                a.orphan_create = what == kind::create_node;
                acquirer* self = &a;
                r.to = [this, self, what](const reply& rep) { on_reply(*self, what, rep); };
                send(a.process, std::move(r));
                return;
            }
            case kind::wait_wake:
                if (a.fired) {
                    a.next = a.fsm->on_fired();
                    continue;
                }
                a.state = acquirer::wait_wake;
                return;
            case kind::wait_reconnect: {
                if (procs_[a.process].connected) {
                    a.next = a.fsm->on_reconnected(true);
                    continue;
                }
                a.state = acquirer::wait_reconnect;
                acquirer* self = &a;
                procs_[a.process].reconnect.push_back([this, self] {
                    if (self->state != acquirer::wait_reconnect)
                        return;
                    self->next = self->fsm->on_reconnected(true);
                    perform(*self);
                });
                return;
            }
            case kind::grant:
                a.held = a.fsm->node();
                a.granted_session = a.fsm->session();
                a.state = acquirer::granted;
                grant(0, a.owner, 1, never, a.fsm->czxid());
                return completed(a, {}, true, static_cast<std::uint64_t>(a.fsm->czxid()));
            case kind::finish:
                if (x.drop_node)
                    drop_node(a);
                return complete(a, x.ec);
            case kind::refuse:
                drop_node(a);
                return complete(a, x.ec);
            case kind::abandon:
                drop_node(a);
                if (a.fsm->created_unknown()) {
                    a.fsm->lost_create_handled();
                    gave_back(a);
                    remove_own_later(a.process, a.id, a.fsm->unknown_session());
                }
                return complete(a, x.ec);
            }
        }
    }

    void on_reply(acquirer& a, kind what, const reply& rep) {
        if (rep.fired) {
            if (a.watch == rep.watch && a.state != acquirer::done) {
                a.fired = true;
                if (a.state == acquirer::wait_wake) {
                    a.next = a.fsm->on_fired();
                    perform(a);
                }
            }
            return;
        }
        if (what == kind::create_node || (what == kind::watch && a.found_own)) {
            // The create's outcome, or whether the node it made (found again) is still there.
            if (what == kind::create_node || rep.rc == zk_rc::unknown)
                answered(a, rep.rc != zk_rc::unknown);
            if (rep.rc == zk_rc::unknown)
                a.unknown_session = rep.session;
        } else if (what == kind::list && rep.session == a.unknown_session &&
                   (rep.rc == zk_rc::ok || rep.rc == zk_rc::no_node)) {
            resolved(a); // a listing in the create's session shows whether it made our node
        }
        if (a.abandoned_reply || a.state != acquirer::wait_reply) {
            // The reply of a request the acquisition stopped waiting for.
            if (a.orphan_create) {
                switch (
                    corolock::detail::orphan_step(rep.rc == zk_rc::ok, rep.rc == zk_rc::unknown)) {
                case corolock::detail::zk_orphan_step::remove_node:
                    remove_eventually(a.process, rep.path, rep.session);
                    break;
                case corolock::detail::zk_orphan_step::find_by_owner:
                    remove_own_later(a.process, a.id, rep.session);
                    break;
                case corolock::detail::zk_orphan_step::none:
                    break;
                }
            }
            return;
        }
        switch (what) {
        case kind::create_node:
            a.next = a.fsm->on_created(rep.rc, rep.path, rep.czxid, rep.session, -1);
            break;
        case kind::create_parent:
            a.next = a.fsm->on_parent_created(rep.rc, -1);
            break;
        case kind::list:
            a.next = a.fsm->on_listed(rep.rc, rep.children, rep.session, -1);
            break;
        default:
            a.next = a.fsm->on_watched(rep.rc, rep.czxid);
            break;
        }
        a.orphan_create = false;
        perform(a);
    }

    void stop(acquirer& a, bool cancelled) {
        if (!a.waiting())
            return;
        // The reply it waited for goes to the cleanups when it comes (the driver also withdraws
        // a request still queued: here it goes out and is cleaned up, the harder case).
        if (a.state == acquirer::wait_reply)
            a.abandoned_reply = true;
        a.next =
            a.fsm->on_stop(corolock::detail::zk_stop_waiting(cancelled, a.once, a.deadline, now_));
        perform(a);
    }

    const clock_type::duration session_timeout_ = 30ms;
    std::vector<std::string> persistent_;
    std::map<std::string, node> nodes_; // the lock's children by name
    std::map<std::string, std::vector<std::tuple<int, int, std::function<void(const reply&)>>>>
        watches_;
    std::int64_t seq_ = 0;
    std::int64_t zxid_ = 0;
    int watch_ids_ = 0;
    process_state procs_[processes];
    std::vector<std::unique_ptr<acquirer>> acquirers_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(acquire_model)
BOOST_AUTO_TEST_SUITE(zookeeper)

BOOST_AUTO_TEST_CASE(acquisitions_keep_exclusion_and_leave_no_node) {
    const auto t = run_seeds("zookeeper", 200, 3000, [](unsigned seed) { return zk_model(seed); });
    // The seeds exercised what they are for.
    BOOST_TEST(count(t, "grants") > 200);
    BOOST_TEST(count(t, "creates run, reply lost") > 20);
    BOOST_TEST(count(t, "sessions expired") > 20);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_model_zk
