// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// A randomized event-sequence test of the lock's decisions: several processes, each with its own
// connection (requests executed in order, replies and release messages delivered in order),
// waiter queues and acquire_fsm per acquisition, against a model of Redis with the lock scripts'
// semantics. The events come in random order: request executed, frame delivered, connection
// dropped (every written request may or may not have run), timers, cancellations, releases,
// new acquisitions. Invariants, checked at every step:
//   - mutual exclusion: every lease a process believes valid (not released, now < valid_until)
//     is the key's owner in the model;
//   - every acquisition completes exactly once, and by its deadline;
//   - every grant nobody holds (cancelled, timed out, unknown outcome) is undone: once all is
//     quiet, no key is left.
// This mirrors what src/io/acquire_op.cpp and src/io/lock_service.cpp do with the same pure
// pieces, the lock service's own policy included (core/lock_policy: hand-offs bounded in a row,
// the messages of this process's own releases, releases that freed nothing).
#include "core/acquire_fsm.hpp"
#include "core/lock_policy.hpp"
#include "core/waiter_queue.hpp"

#include <boost/test/unit_test.hpp>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>

using corolock::error;
using corolock::detail::acquire_action;
using corolock::detail::acquire_fsm;
using corolock::detail::acquire_params;
using corolock::detail::attempt_reply;
using corolock::detail::name_queue;
using corolock::detail::waiter_queue;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr int names = 2;
constexpr int processes = 3;

struct request {
    enum kind { acquire, release, subscribe, unsubscribe } what;
    int op = 0; // acquire: the op waiting for the reply
    std::uint64_t owner = 0;
    int name = 0;
    bool lease_release = false; // a lease's release (answered), not an undo
};

struct frame {
    bool push = false;          // a release message for `name`
    bool release_reply = false; // the answer to a lease's release of `name`
    bool released = false;
    int name = 0;
    int op = 0;
    attempt_reply reply;
};

struct key_state {
    std::uint64_t owner = 0;
    clock_type::time_point expiry{};
};

struct acquisition {
    int id = 0, proc = 0, name = 0;
    std::uint64_t owner = 0;
    clock_type::time_point deadline;
    std::unique_ptr<acquire_fsm> fsm;
    bool completed = false, granted = false, released = false, on_wire = false;
    clock_type::time_point valid_until{};
};

struct process_state {
    std::deque<request> out; // written, not yet executed
    std::deque<frame> in;    // replies and pushes not yet read
    std::map<int, name_queue> queues;
};

class model {
public:
    explicit model(unsigned seed) : rng_(seed), fsm_rng_(seed + 1) {}

    void run(int steps) {
        for (int i = 0; i < steps; ++i) {
            step(true);
            check();
        }
        // Quiet down: release every lease, stop new work, run until nothing is left.
        for (int i = 0; i < 200000 && busy(); ++i) {
            for (auto& a : ops_)
                if (a.granted && !a.released)
                    release(a);
            step(false);
            check();
        }
        BOOST_REQUIRE_MESSAGE(!busy(), "the model did not quiet down; " << trace());
        for (auto& a : ops_)
            BOOST_CHECK_MESSAGE(a.completed, "acquisition " << a.id << " never completed");
        for (int n = 0; n < names; ++n)
            check_orphan(keys_[n].owner);
        BOOST_TEST_MESSAGE("grants " << grants_ << ", timeouts " << timeouts_ << ", drops "
                                     << drops_ << ", undos " << undos_);
        BOOST_CHECK(grants_ > 0);
    }

private:
    // ---- the server model (the lock scripts' semantics)
    bool live(int n) const { return keys_[n].owner != 0 && now_ < keys_[n].expiry; }

    void note(std::string line) {
        std::ostringstream os;
        os << "[" << (now_ - start_).count() / 1000 << "us] " << line;
        log_.push_back(os.str());
        if (log_.size() > 60)
            log_.pop_front();
    }

    void execute(int p, const request& r) {
        auto& k = keys_[r.name];
        note("p" + std::to_string(p) + " exec " + std::to_string(int(r.what)) + " op " +
             std::to_string(r.op) + " owner " + std::to_string(r.owner) + " name " +
             std::to_string(r.name) + " key owner " + std::to_string(k.owner) + " live " +
             std::to_string(live(r.name)));
        switch (r.what) {
        case request::acquire: {
            frame f;
            f.op = r.op;
            if (!live(r.name) || k.owner == r.owner) {
                if (k.owner != r.owner)
                    check_orphan(k.owner);
                k.owner = r.owner;
                k.expiry = now_ + lease_;
                f.reply.what = attempt_reply::kind::granted;
                f.reply.token = ++token_;
            } else {
                f.reply.what = attempt_reply::kind::held;
                f.reply.holder_ttl = k.expiry - now_;
            }
            procs_[p].in.push_back(f);
            break;
        }
        case request::release:
            if (r.lease_release) {
                frame f;
                f.release_reply = true;
                f.name = r.name;
                f.released = k.owner == r.owner && live(r.name);
                procs_[p].in.push_back(f);
            }
            if (k.owner == r.owner) { // an expired key is gone in Redis: deleting it is a no-op
                const bool was_live = live(r.name);
                k = {};
                if (!was_live)
                    break;
                for (int q = 0; q < processes; ++q)
                    if (subscribed_[q][r.name]) {
                        frame f;
                        f.push = true;
                        f.name = r.name;
                        procs_[q].in.push_back(f);
                    }
            }
            break;
        case request::subscribe:
            subscribed_[p][r.name] = true;
            break;
        case request::unsubscribe:
            subscribed_[p][r.name] = false;
            break;
        }
    }

    // A grant that expired instead of being released must belong to a lease its holder
    // received, or to an acquisition that sent its undo (the undo may come too late, or be lost
    // with its connection: it is never re-sent) or has yet to read its reply (then the check
    // after the reply applies). Anything else is a grant the client forgot.
    void check_orphan(std::uint64_t owner) {
        BOOST_REQUIRE_MESSAGE(owner == 0 || ops_[owner - 1].granted || ops_[owner - 1].on_wire ||
                                  undone_.count(owner) != 0,
                              "owner " << owner << " was granted the lock, never received it and "
                                       << "never gave it back; " << trace());
    }

    // ---- the client side (as the driver does it)
    void act(acquisition& a, const acquire_action& x) {
        auto& proc = procs_[a.proc];
        if (x.give_back || x.join || x.attempt || x.complete) {
            std::ostringstream os;
            os << "op " << a.id << " owner " << a.owner << " " << x;
            note(os.str());
        }
        if (x.give_back) {
            ++undos_;
            undone_.insert(a.owner);
            proc.out.push_back({request::release, 0, a.owner, a.name});
        }
        if (x.join) {
            auto [it, fresh] = proc.queues.try_emplace(a.name);
            if (fresh)
                proc.out.push_back({request::subscribe, 0, 0, a.name});
            it->second.q.push(a.id);
        }
        if (x.attempt) {
            BOOST_REQUIRE_MESSAGE(!a.on_wire, "two attempts on the wire for " << a.id);
            if (auto it = proc.queues.find(a.name); it != proc.queues.end())
                it->second.q.on_attempt(a.id);
            a.on_wire = true;
            proc.out.push_back({request::acquire, a.id, a.owner, a.name});
        }
        if (x.complete) {
            BOOST_REQUIRE_MESSAGE(!a.completed, "acquisition " << a.id << " completed twice");
            BOOST_REQUIRE_MESSAGE(now_ <= a.deadline, "acquisition " << a.id << " completed late");
            a.completed = true;
            a.granted = x.granted;
            if (x.granted) {
                ++grants_;
                a.valid_until = a.fsm->valid_until();
            } else if (x.ec == error::acquire_timeout) {
                ++timeouts_;
            }
            if (auto it = proc.queues.find(a.name); it != proc.queues.end()) {
                const auto next = it->second.q.erase(a.id);
                if (it->second.q.empty()) {
                    proc.queues.erase(it);
                    proc.out.push_back({request::unsubscribe, 0, 0, a.name});
                } else if (next) {
                    wake(ops_[next - 1]);
                }
            }
        }
    }

    bool head(const acquisition& a) {
        auto it = procs_[a.proc].queues.find(a.name);
        if (!a.fsm->queued())
            return it == procs_[a.proc].queues.end(); // it would be first
        return it != procs_[a.proc].queues.end() && it->second.q.is_head(a.id);
    }
    bool woken(const acquisition& a) {
        auto it = procs_[a.proc].queues.find(a.name);
        return it != procs_[a.proc].queues.end() && it->second.q.woken(a.id);
    }
    void wake(acquisition& a) {
        if (a.fsm->current() == acquire_fsm::state::waiting)
            act(a, a.fsm->on_wake(now_, head(a), woken(a), fsm_rng_));
    }

    void spawn() {
        acquisition a;
        a.id = static_cast<int>(ops_.size()) + 1;
        a.proc = static_cast<int>(rng_() % processes);
        a.name = static_cast<int>(rng_() % names);
        a.owner = ++owners_;
        acquire_params p;
        const auto kind = rng_() % 4;
        p.once = kind == 0;
        p.deadline = kind == 1 ? clock_type::time_point::max()
                               : now_ + std::chrono::milliseconds(rng_() % 200);
        p.lease = lease_;
        p.drift = drift_;
        p.retry_base = 5ms;
        p.retry_max = 100ms;
        a.deadline = p.deadline;
        a.fsm = std::make_unique<acquire_fsm>(p);
        ops_.push_back(std::move(a));
        auto& ref = ops_.back();
        act(ref, ref.fsm->start(now_, procs_[ref.proc].queues.count(ref.name) != 0));
    }

    void release(acquisition& a) {
        note("release op " + std::to_string(a.id));
        a.released = true;
        procs_[a.proc].out.push_back({request::release, 0, a.owner, a.name, true});
        // The hand-off, as the policy decides: the local head's attempt goes right behind the
        // release, at most name_queue::max_handoff_streak times in a row.
        auto it = procs_[a.proc].queues.find(a.name);
        if (it != procs_[a.proc].queues.end() && it->second.release_hands_over())
            if (const auto h = it->second.hand_off())
                wake(ops_[h - 1]);
    }

    void deliver(int p) {
        auto f = procs_[p].in.front();
        procs_[p].in.pop_front();
        if (f.release_reply) {
            if (auto it = procs_[p].queues.find(f.name); it != procs_[p].queues.end())
                it->second.on_release_reply(f.released);
            return;
        }
        if (f.push) {
            auto it = procs_[p].queues.find(f.name);
            if (it != procs_[p].queues.end())
                if (const auto h = it->second.on_message())
                    wake(ops_[h - 1]);
            return;
        }
        auto& a = ops_[f.op - 1];
        a.on_wire = false;
        act(a, a.fsm->on_reply(now_, f.reply, head(a), woken(a), fsm_rng_));
        check_taken(a, f.reply);
    }

    // A reply that says (or may say) the lock was taken leaves the acquisition holding a lease
    // or having sent its undo.
    void check_taken(const acquisition& a, const attempt_reply& r) {
        if (r.what == attempt_reply::kind::granted || r.what == attempt_reply::kind::unknown)
            BOOST_REQUIRE_MESSAGE(a.granted || undone_.count(a.owner) != 0,
                                  "acquisition " << a.id << " was granted (or may have been) "
                                                 << "and neither kept nor gave back the grant; "
                                                 << trace());
    }

    // The connection drops: each written request ran or not; no reply is read; messages
    // published meanwhile are lost; subscriptions are re-made, then every head is woken.
    void drop(int p) {
        note("drop p" + std::to_string(p));
        ++drops_;
        auto& proc = procs_[p];
        std::vector<int> unknown;
        std::vector<int> failed_releases; // their completions say connection_lost
        for (auto& f : proc.in) {
            if (f.release_reply)
                failed_releases.push_back(f.name);
            else if (!f.push)
                unknown.push_back(f.op);
        }
        for (auto& r : proc.out) {
            if (rng_() % 2)
                execute(p, r); // its reply is lost with the connection
            if (r.what == request::acquire)
                unknown.push_back(r.op);
            if (r.lease_release)
                failed_releases.push_back(r.name);
        }
        proc.out.clear();
        proc.in.clear();
        for (int n : failed_releases)
            if (auto it = proc.queues.find(n); it != proc.queues.end())
                it->second.on_release_reply(false);
        for (int n = 0; n < names; ++n)
            subscribed_[p][n] = false;
        for (auto& [n, q] : proc.queues)
            proc.out.push_back({request::subscribe, 0, 0, n});
        for (int id : unknown) {
            auto& a = ops_[id - 1];
            a.on_wire = false;
            attempt_reply r;
            r.what = attempt_reply::kind::unknown;
            r.ec = error::connection_lost;
            act(a, a.fsm->on_reply(now_, r, head(a), woken(a), fsm_rng_));
            check_taken(a, r);
        }
        for (auto& [n, q] : proc.queues) // the driver's listeners: a re-check after a reconnect
            if (const auto h = q.on_message())
                wake(ops_[h - 1]);
    }

    std::optional<clock_type::time_point> next_timer() const {
        std::optional<clock_type::time_point> t;
        for (auto& a : ops_)
            if (a.fsm->wake_at() != clock_type::time_point::max() && (!t || a.fsm->wake_at() < *t))
                t = a.fsm->wake_at();
        return t;
    }

    void advance_to(clock_type::time_point t) {
        // Timers fire in time order: none is skipped.
        while (auto next = next_timer()) {
            if (*next > t)
                break;
            now_ = std::max(now_, *next);
            for (auto& a : ops_)
                if (a.fsm->wake_at() <= now_)
                    act(a, a.fsm->on_timer(now_, head(a)));
        }
        now_ = std::max(now_, t);
    }

    bool busy() const {
        for (auto& p : procs_)
            if (!p.out.empty() || !p.in.empty())
                return true;
        for (auto& a : ops_)
            if (!a.completed || a.on_wire)
                return true;
        return false;
    }

    void step(bool spawning) {
        const auto choice = rng_() % 100;
        const int p = static_cast<int>(rng_() % processes);
        auto& proc = procs_[p];
        if (choice < 30) {
            if (!proc.out.empty()) {
                auto r = proc.out.front();
                proc.out.pop_front();
                execute(p, r);
            }
        } else if (choice < 60) {
            if (!proc.in.empty())
                deliver(p);
        } else if (choice < 62) {
            if (spawning)
                drop(p);
        } else if (choice < 72) {
            if (spawning)
                spawn();
        } else if (choice < 76) {
            // Cancel one of the last few acquisitions: most of them are still running.
            if (spawning && !ops_.empty()) {
                auto& a = ops_[ops_.size() - 1 - rng_() % std::min<std::size_t>(ops_.size(), 4)];
                act(a, a.fsm->on_cancel());
            }
        } else if (choice < 86) {
            for (auto& a : ops_)
                if (a.granted && !a.released && rng_() % 3 == 0) {
                    release(a);
                    break;
                }
        } else if (choice < 94) {
            advance_to(now_ + std::chrono::milliseconds(rng_() % 20));
        } else if (auto t = next_timer(); t && (!spawning || rng_() % 2)) {
            advance_to(*t);
        } else if (!spawning) {
            advance_to(now_ + 10ms);
        }
    }

    void check() {
        for (auto& a : ops_) {
            if (!a.granted || a.released || now_ >= a.valid_until)
                continue;
            BOOST_REQUIRE_MESSAGE(live(a.name) && keys_[a.name].owner == a.owner,
                                  "acquisition " << a.id << " believes it holds lock " << a.name
                                                 << " but the owner is " << keys_[a.name].owner
                                                 << "; " << trace());
        }
    }

    std::string trace() const {
        std::ostringstream os;
        os << "t=" << (now_ - start_).count() / 1000000 << " ms, " << ops_.size()
           << " acquisitions\n";
        for (auto& l : log_)
            os << l << "\n";
        return os.str();
    }

    std::mt19937 rng_;
    std::minstd_rand fsm_rng_;
    const clock_type::time_point start_ = clock_type::time_point(100h);
    clock_type::time_point now_ = start_;
    const clock_type::duration lease_ = 60ms;
    const clock_type::duration drift_ = 5ms;
    key_state keys_[names];
    bool subscribed_[processes][names] = {};
    process_state procs_[processes];
    std::deque<acquisition> ops_; // ops_[id - 1]
    std::uint64_t owners_ = 0, token_ = 0;
    std::deque<std::string> log_;
    std::set<std::uint64_t> undone_;
    int grants_ = 0, timeouts_ = 0, drops_ = 0, undos_ = 0;
};

} // namespace

BOOST_AUTO_TEST_SUITE(lock_model)

BOOST_AUTO_TEST_CASE(random_event_orders_keep_every_invariant) {
    for (unsigned seed = 1; seed <= 40; ++seed) {
        BOOST_TEST_CONTEXT("seed " << seed) {
            model m(seed);
            m.run(4000);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
