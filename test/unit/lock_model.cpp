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
//     quiet, no key is left;
//   - no renewal after release: the lease table (the watchdog's decisions, core/lease_table)
//     never makes a released or lost lease due, and a renewal's reply never revives one.
// Each process runs the real lock core (core/lock_core, the object src/io/lock_service.cpp
// drives): its acquisitions, queues, wake-ups and hand-offs (bounded in a row), the messages of
// its own releases. The model only performs the core's actions, with a switch, as the driver does.
#include "core/lock_core.hpp"

#include <boost/test/unit_test.hpp>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>

using corolock::error;
using corolock::detail::acquire_fsm;
using corolock::detail::acquire_params;
using corolock::detail::attempt_reply;
using corolock::detail::lock_action;
using corolock::detail::lock_actions;
using corolock::detail::lock_core;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr int names = 2;
constexpr int processes = 3;

struct request {
    enum kind { acquire, release, subscribe, unsubscribe, renew } what;
    int op = 0; // acquire: the op waiting for the reply
    std::uint64_t owner = 0;
    int name = 0;
    bool lease_release = false;    // a lease's release (answered), not an undo
    clock_type::time_point sent{}; // renew: when the watchdog sent it
    int k = 1;                     // a semaphore's permits
    bool once = false;             // a try: a semaphore's records no reservation
};

// What the model's names are: the mutex's hash, or a semaphore's sorted set (limit 3).
enum class kind_t { mutex, semaphore };
constexpr std::size_t sem_limit = 3;

struct frame {
    bool push = false;          // a release message for `name`
    std::size_t credits = 1;    // how many it lets retry (a semaphore's "permits <k>")
    bool release_reply = false; // the answer to a lease's release of `name`
    bool released = false;
    bool renew_reply = false; // the answer to op's renewal (`released`: renewed)
    clock_type::time_point sent{};
    int name = 0;
    int op = 0;
    attempt_reply reply;
};

struct key_state {
    std::uint64_t owner = 0;
    clock_type::time_point expiry{};
    // A semaphore's: each holder's permits and deadline, and the one reservation.
    std::map<std::uint64_t, std::pair<int, clock_type::time_point>> holders;
    std::uint64_t reserver = 0;
    int reserved = 0;
    clock_type::time_point reserved_until{};
};

const std::string name_of[names] = {"lock:0", "lock:1"};
int total_handoffs = 0; // over every seed: the model exercises hand-offs
int total_renewals = 0; // and renewals

// The core's acquisition, with what the model checks about it.
struct acquisition : corolock::detail::acquisition {
    acquisition(const acquire_params& p, int n) : corolock::detail::acquisition(p, name_of[n]) {}
    int id = 0, proc = 0, name = 0;
    std::uint64_t owner = 0;
    clock_type::time_point deadline;
    bool completed = false, granted = false, released = false, on_wire = false, lost = false;
    int k = 1;
    bool once = false;
    clock_type::time_point valid_until{};
    corolock::detail::lease_watch watch; // in the core's lease table while held
};

struct process_state {
    explicit process_state(std::uint32_t seed) : core(seed) {}
    std::deque<request> out; // written, not yet executed
    std::deque<frame> in;    // replies and pushes not yet read
    lock_core core;
};

class model {
public:
    explicit model(unsigned seed, kind_t kind = kind_t::mutex) : rng_(seed), kind_(kind) {
        for (int p = 0; p < processes; ++p)
            procs_.emplace_back(seed * 7 + static_cast<unsigned>(p));
    }

    void run(int steps) {
        for (int i = 0; i < steps; ++i) {
            step(true);
            check();
        }
        // Quiet down: release every lease, stop new work, run until nothing is left.
        for (int i = 0; i < 200000 && busy(); ++i) {
            for (auto& a : ops_)
                if (a->granted && !a->released)
                    release(*a);
            step(false);
            check();
        }
        BOOST_REQUIRE_MESSAGE(!busy(), "the model did not quiet down; " << trace());
        for (auto& a : ops_)
            BOOST_CHECK_MESSAGE(a->completed, "acquisition " << a->id << " never completed");
        for (int n = 0; n < names; ++n) {
            check_orphan(keys_[n].owner);
            for (const auto& [owner, h] : keys_[n].holders)
                if (now_ < h.second)
                    check_orphan(owner);
            // A live reservation at the end belongs to a waiter that gave up and sent its
            // release (lost with a dropped connection, it is left to expire).
            if (keys_[n].reserver && now_ < keys_[n].reserved_until)
                BOOST_CHECK_MESSAGE(undone_.count(keys_[n].reserver) != 0,
                                    "reservation of " << keys_[n].reserver << " left behind");
        }
        BOOST_TEST_MESSAGE("grants " << grants_ << ", timeouts " << timeouts_ << ", drops "
                                     << drops_ << ", undos " << undos_ << ", hand-offs "
                                     << handoffs_ << ", renewals " << renewals_ << ", losses "
                                     << losses_);
        BOOST_CHECK(grants_ > 0);
        total_handoffs += handoffs_;
        total_renewals += renewals_;
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
        if (kind_ == kind_t::semaphore && r.what != request::subscribe &&
            r.what != request::unsubscribe) {
            execute_semaphore(p, r);
            return;
        }
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
        case request::renew: {
            frame f;
            f.renew_reply = true;
            f.op = r.op;
            f.sent = r.sent;
            f.released = k.owner == r.owner && live(r.name); // never brings an expired key back
            if (f.released)
                k.expiry = now_ + lease_;
            procs_[p].in.push_back(f);
            break;
        }
        case request::subscribe:
            subscribed_[p][r.name] = true;
            break;
        case request::unsubscribe:
            subscribed_[p][r.name] = false;
            break;
        }
    }

    // The semaphore's scripts (core/lock_scripts: semaphore_acquire, semaphore_release, renew
    // kind 'z'), as the model of Redis runs them.
    void execute_semaphore(int p, const request& r) {
        auto& k = keys_[r.name];
        std::erase_if(k.holders, [&](const auto& h) { return h.second.second < now_; });
        if (k.reserver && k.reserved_until < now_)
            k.reserver = 0;
        auto publish = [&](int credits) {
            for (int q = 0; q < processes; ++q)
                if (subscribed_[q][r.name]) {
                    frame f;
                    f.push = true;
                    f.name = r.name;
                    f.credits = static_cast<std::size_t>(credits);
                    procs_[q].in.push_back(f);
                }
        };
        switch (r.what) {
        case request::acquire: {
            frame f;
            f.op = r.op;
            int used = 0;
            for (const auto& [o, h] : k.holders)
                used += h.first;
            const int reserved = k.reserver && k.reserver != r.owner ? k.reserved : 0;
            if (k.holders.count(r.owner) || used + r.k + reserved <= static_cast<int>(sem_limit)) {
                if (!k.holders.count(r.owner))
                    check_orphan_reuse(r.owner);
                k.holders[r.owner] = {r.k, now_ + lease_};
                if (k.reserver == r.owner)
                    k.reserver = 0;
                f.reply.what = attempt_reply::kind::granted;
                f.reply.token = 0;
            } else {
                if (!r.once && (!k.reserver || k.reserver == r.owner)) {
                    k.reserver = r.owner;
                    k.reserved = r.k;
                    k.reserved_until = now_ + intent_;
                }
                auto first = clock_type::time_point::max();
                for (const auto& [o, h] : k.holders)
                    first = std::min(first, h.second);
                f.reply.what = attempt_reply::kind::held;
                f.reply.holder_ttl = first == clock_type::time_point::max()
                                         ? clock_type::duration::zero()
                                         : first - now_;
            }
            procs_[p].in.push_back(f);
            break;
        }
        case request::release: {
            bool freed = false, unreserved = false;
            if (k.reserver == r.owner) {
                k.reserver = 0;
                unreserved = true;
            }
            int permits = r.k;
            if (auto it = k.holders.find(r.owner); it != k.holders.end()) {
                permits = it->second.first;
                freed = true; // purged above if expired
                k.holders.erase(it);
            }
            if (r.lease_release) {
                frame f;
                f.release_reply = true;
                f.name = r.name;
                f.released = freed;
                procs_[p].in.push_back(f);
            }
            if (freed || unreserved)
                publish(permits);
            break;
        }
        case request::renew: {
            frame f;
            f.renew_reply = true;
            f.op = r.op;
            f.sent = r.sent;
            auto it = k.holders.find(r.owner);
            f.released = it != k.holders.end(); // never brings an expired member back
            if (f.released)
                it->second.second = now_ + lease_;
            procs_[p].in.push_back(f);
            break;
        }
        default:
            break;
        }
    }

    // A semaphore grant to an owner: nothing to check beyond the limit (below); kept as the
    // hook where a mutex's grant checks the key it overwrites.
    void check_orphan_reuse(std::uint64_t) {}

    // A grant that expired instead of being released must belong to a lease its holder
    // received, or to an acquisition that sent its undo (the undo may come too late, or be lost
    // with its connection: it is never re-sent) or has yet to read its reply (then the check
    // after the reply applies). Anything else is a grant the client forgot.
    void check_orphan(std::uint64_t owner) {
        BOOST_REQUIRE_MESSAGE(owner == 0 || ops_[owner - 1]->granted || ops_[owner - 1]->on_wire ||
                                  undone_.count(owner) != 0,
                              "owner " << owner << " was granted the lock, never received it and "
                                       << "never gave it back; " << trace());
    }

    // ---- the client side: the lock core's actions performed, as lock_service::perform does
    void perform(int p, const lock_actions& actions) {
        auto& proc = procs_[p];
        for (const auto& x : actions) {
            auto& a = static_cast<acquisition&>(*x.acq);
            if (x.what != lock_action::kind::arm) {
                std::ostringstream os;
                os << "op " << a.id << " owner " << a.owner << " action " << int(x.what);
                note(os.str());
            }
            switch (x.what) {
            case lock_action::kind::subscribe:
                proc.out.push_back({request::subscribe, 0, 0, a.name});
                break;
            case lock_action::kind::unsubscribe:
                proc.out.push_back({request::unsubscribe, 0, 0, a.name});
                break;
            case lock_action::kind::give_back:
                ++undos_;
                undone_.insert(a.owner);
                proc.out.push_back({request::release, 0, a.owner, a.name, false, {}, a.k});
                break;
            case lock_action::kind::attempt: {
                BOOST_REQUIRE_MESSAGE(!a.on_wire, "two attempts on the wire for " << a.id);
                a.on_wire = true;
                request r{request::acquire, a.id, a.owner, a.name};
                r.k = a.k;
                r.once = a.once;
                proc.out.push_back(r);
                break;
            }
            case lock_action::kind::complete:
                BOOST_REQUIRE_MESSAGE(!a.completed, "acquisition " << a.id << " completed twice");
                BOOST_REQUIRE_MESSAGE(now_ <= a.deadline,
                                      "acquisition " << a.id << " completed late");
                a.completed = true;
                a.granted = x.granted;
                if (x.granted) {
                    ++grants_;
                    // Held: the watchdog's table has it (2 leases in 3 renewed by it).
                    a.watch.lease = lease_;
                    a.watch.drift = drift_;
                    a.watch.watchdog = rng_() % 3 != 0;
                    proc.core.leases().add(a.watch, a.fsm.sent());
                    BOOST_REQUIRE(a.watch.valid_until == a.fsm.valid_until());
                    a.valid_until = a.fsm.valid_until();
                } else if (x.ec == error::acquire_timeout) {
                    ++timeouts_;
                }
                break;
            case lock_action::kind::arm:
                BOOST_REQUIRE(x.at == a.fsm.wake_at()); // the model's timers read wake_at()
                break;
            }
        }
    }

    // Runs one event of process `p`'s core and performs its actions.
    template <class F>
    void event(int p, F f) {
        lock_actions out;
        f(procs_[p].core, out);
        perform(p, out);
    }

    void spawn() {
        acquire_params params;
        const auto kind = rng_() % 4;
        params.once = kind == 0;
        params.deadline = kind == 1 ? clock_type::time_point::max()
                                    : now_ + std::chrono::milliseconds(rng_() % 200);
        params.lease = lease_;
        params.drift = drift_;
        params.retry_base = 5ms;
        params.retry_max = 100ms;
        const bool sem = kind_ == kind_t::semaphore;
        params.leaves_record = sem && !params.once; // a waiter's reservation
        const int proc = static_cast<int>(rng_() % processes);
        const int name = static_cast<int>(rng_() % names);
        auto a = std::make_unique<acquisition>(params, name);
        if (sem) {
            a->capacity = sem_limit;
            a->k = 1 + static_cast<int>(rng_() % 2);
        }
        a->once = params.once;
        a->id = static_cast<int>(ops_.size()) + 1;
        a->proc = proc;
        a->name = name;
        a->owner = ++owners_;
        a->deadline = params.deadline;
        ops_.push_back(std::move(a));
        auto& ref = *ops_.back();
        event(proc, [&](lock_core& c, lock_actions& out) { c.start(ref, now_, out); });
    }

    void release(acquisition& a) {
        note("release op " + std::to_string(a.id));
        a.released = true;
        if (corolock::detail::lease_table::contains(a.watch))
            procs_[a.proc].core.leases().remove(a.watch); // as lock_service::forget
        procs_[a.proc].out.push_back({request::release, 0, a.owner, a.name, true, {}, a.k});
        // The hand-off, as the core decides: the local head's attempt goes right behind the
        // release, at most name_queue::max_handoff_streak times in a row.
        event(a.proc, [&](lock_core& c, lock_actions& out) {
            if (c.release_hands_over(name_of[a.name]) &&
                c.hand_off(name_of[a.name], static_cast<std::size_t>(a.k), now_, out))
                ++handoffs_;
        });
    }

    void deliver(int p) {
        auto f = procs_[p].in.front();
        procs_[p].in.pop_front();
        auto& core = procs_[p].core;
        if (f.release_reply) {
            core.on_script_reply();
            core.on_release_reply(name_of[f.name], f.released);
            return;
        }
        if (f.push) {
            event(p, [&](lock_core& c, lock_actions& out) {
                c.on_release_message(name_of[f.name], f.credits, now_, out);
            });
            return;
        }
        if (f.renew_reply) {
            auto& a = *ops_[f.op - 1];
            core.on_script_reply();
            if (!corolock::detail::lease_table::contains(a.watch)) {
                BOOST_REQUIRE(a.released || a.lost); // why it left the table
                return;                              // the reply revives nothing
            }
            if (core.leases().on_renewed(a.watch, f.sent, now_, f.released)) {
                a.lost = true;
                ++losses_;
            } else {
                a.valid_until = a.watch.valid_until;
            }
            return;
        }
        auto& a = *ops_[f.op - 1];
        a.on_wire = false;
        core.on_script_reply();
        event(p, [&](lock_core& c, lock_actions& out) { c.on_reply(a, f.reply, now_, out); });
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
        std::vector<int> failed_renewals;
        for (auto& f : proc.in) {
            if (f.release_reply)
                failed_releases.push_back(f.name);
            else if (f.renew_reply)
                failed_renewals.push_back(f.op);
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
            if (r.what == request::renew)
                failed_renewals.push_back(r.op);
        }
        proc.out.clear();
        proc.in.clear();
        for (int id : failed_renewals) // the deadline decides
            if (corolock::detail::lease_table::contains(ops_[id - 1]->watch))
                proc.core.leases().on_renew_failed(ops_[id - 1]->watch, now_);
        for (int n : failed_releases)
            proc.core.on_release_reply(name_of[n], false);
        for (int n = 0; n < names; ++n) {
            subscribed_[p][n] = false;
            if (proc.core.has_waiters(name_of[n]))
                proc.out.push_back({request::subscribe, 0, 0, n});
        }
        for (int id : unknown) {
            auto& a = *ops_[id - 1];
            a.on_wire = false;
            attempt_reply r;
            r.what = attempt_reply::kind::unknown;
            r.ec = error::connection_lost;
            event(p, [&](lock_core& c, lock_actions& out) { c.on_reply(a, r, now_, out); });
            check_taken(a, r);
        }
        for (int n = 0; n < names; ++n) // the driver's listeners: a re-check after a reconnect
            event(p, [&](lock_core& c, lock_actions& out) {
                c.on_release_message(name_of[n], 1, now_, out);
            });
    }

    std::optional<clock_type::time_point> next_timer() const {
        std::optional<clock_type::time_point> t;
        for (auto& a : ops_)
            if (a->fsm.wake_at() != clock_type::time_point::max() && (!t || a->fsm.wake_at() < *t))
                t = a->fsm.wake_at();
        return t;
    }

    void advance_to(clock_type::time_point t) {
        // Timers fire in time order: none is skipped.
        while (auto next = next_timer()) {
            if (*next > t)
                break;
            now_ = std::max(now_, *next);
            for (auto& a : ops_)
                if (a->fsm.wake_at() <= now_)
                    event(a->proc,
                          [&](lock_core& c, lock_actions& out) { c.on_timer(*a, now_, out); });
        }
        now_ = std::max(now_, t);
        run_watchdogs();
    }

    // Each process's watchdog at `now_`: what its lease table says is lost or due. A released
    // or lost lease is never due (no renewal after release).
    void run_watchdogs() {
        for (int p = 0; p < processes; ++p) {
            auto& proc = procs_[p];
            corolock::detail::lease_table::plan plan;
            proc.core.leases().make_plan(now_, plan);
            for (auto& [w, why] : plan.losing) {
                auto& a = owner_of(*w);
                BOOST_REQUIRE_MESSAGE(!a.released && !a.lost, "lost twice: " << a.id);
                a.lost = true;
                ++losses_;
            }
            for (auto* w : plan.due) {
                auto& a = owner_of(*w);
                BOOST_REQUIRE_MESSAGE(!a.released && !a.lost,
                                      "a renewal of released or lost lease " << a.id);
                request r{request::renew, a.id, a.owner, a.name};
                r.sent = now_;
                proc.out.push_back(r);
                ++renewals_;
            }
        }
    }

    acquisition& owner_of(const corolock::detail::lease_watch& w) {
        for (auto& a : ops_)
            if (&a->watch == &w)
                return *a;
        BOOST_FAIL("a watch of no acquisition");
        throw;
    }

    bool busy() const {
        for (auto& p : procs_)
            if (!p.out.empty() || !p.in.empty())
                return true;
        for (auto& a : ops_)
            if (!a->completed || a->on_wire)
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
                auto& a = *ops_[ops_.size() - 1 - rng_() % std::min<std::size_t>(ops_.size(), 4)];
                event(a.proc, [&](lock_core& c, lock_actions& out) { c.cancel(a, now_, out); });
            }
        } else if (choice < 86) {
            for (auto& a : ops_)
                if (a->granted && !a->released && rng_() % 3 == 0) {
                    release(*a);
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
        if (kind_ == kind_t::semaphore) {
            int held[names] = {};
            for (auto& ap : ops_) {
                auto& a = *ap;
                if (!a.granted || a.released || a.lost || now_ >= a.valid_until)
                    continue;
                held[a.name] += a.k;
                const auto& hs = keys_[a.name].holders;
                auto it = hs.find(a.owner);
                BOOST_REQUIRE_MESSAGE(it != hs.end() && now_ <= it->second.second,
                                      "acquisition " << a.id << " believes it holds permits of "
                                                     << a.name << " the server does not count; "
                                                     << trace());
            }
            for (int n = 0; n < names; ++n)
                BOOST_REQUIRE_MESSAGE(held[n] <= static_cast<int>(sem_limit),
                                      held[n] << " permits of " << n << " believed held; "
                                              << trace());
            return;
        }
        for (auto& ap : ops_) {
            auto& a = *ap;
            if (!a.granted || a.released || a.lost || now_ >= a.valid_until)
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
    const kind_t kind_;
    const clock_type::duration intent_ = 2 * 100ms + 1s; // 2 x retry_max + 1 s
    const clock_type::time_point start_ = clock_type::time_point(100h);
    clock_type::time_point now_ = start_;
    const clock_type::duration lease_ = 60ms;
    const clock_type::duration drift_ = 5ms;
    key_state keys_[names];
    bool subscribed_[processes][names] = {};
    std::deque<process_state> procs_;
    std::deque<std::unique_ptr<acquisition>> ops_; // ops_[id - 1]
    std::uint64_t owners_ = 0, token_ = 0;
    std::deque<std::string> log_;
    std::set<std::uint64_t> undone_;
    int grants_ = 0, timeouts_ = 0, drops_ = 0, undos_ = 0, handoffs_ = 0, renewals_ = 0,
        losses_ = 0;
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
    BOOST_TEST(total_handoffs > 0);
    BOOST_TEST(total_renewals > 0);
}

// The same core serving a semaphore of 3 permits (acquisitions of 1 or 2): permits believed
// held never exceed the limit, each is counted by the server, every waiter is done by its
// deadline, and nothing is left once all is quiet (reservations of waiters that gave up are
// given back with their permits).
BOOST_AUTO_TEST_CASE(a_semaphore_keeps_its_limit_in_random_event_orders) {
    const int handoffs = total_handoffs;
    for (unsigned seed = 1; seed <= 40; ++seed) {
        BOOST_TEST_CONTEXT("seed " << seed) {
            model m(seed, kind_t::semaphore);
            m.run(4000);
        }
    }
    BOOST_TEST(total_handoffs > handoffs); // k-permit hand-offs happened
}

BOOST_AUTO_TEST_SUITE_END()
