// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// A randomized event-sequence test of the locked transactions' decisions (pg_xact_mutex: binding
// acquisitions on the real lock core, one core per process and one connection each, statements
// run in order) against a model of PostgreSQL's transaction-scoped advisory locks on one or two
// names. An attempt takes the lock if it is free and holds it until it commits (the name's
// counter goes up, every connected process hears a NOTIFY) or rolls back; else it answers busy
// having run nothing. Random events: the server starts or ends a statement, a reply or a
// notification is delivered, time passes (timers fire at the core's armed time, on a fake
// clock), a cancel, a new transaction (no deadline, one past, a short one), a dropped connection
// (its statements are answered connection_lost, and its backend may still run them: a session
// the next one could not end), a reconnect, a statement that waited too long for a connection.
// The model performs the core's actions with a switch and maps the replies as
// postgres/io/pg_lock_service.cpp does. Invariants, at each step:
//   - each acquisition completes once, never with its attempt unanswered; success only if its
//     transaction committed, once; aborted or timed out, nothing of it ever commits; nothing is
//     sent or run for a completed acquisition (but a dropped session's backend, whose answer was
//     connection_lost);
//   - a cancel while the attempt is out waits for it, and its busy answer ends with
//     operation_aborted; no timer is armed meanwhile; nothing is ever given back;
//   - no attempt but the first starts at or past the deadline; a concluded one is never re-sent;
//   - once all is quiet, every acquisition completed, no core has waiters or a subscription left
//     and each name's counter equals its transactions' commits.
#include "core/lock_core.hpp"
#include "postgres/core/pg_lock_sql.hpp"
#include <corolock/postgres/config.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using corolock::error;
using corolock::error_code;
using corolock::detail::acquire_fsm;
using corolock::detail::acquire_params;
using corolock::detail::acquisition;
using corolock::detail::attempt_reply;
using corolock::detail::lock_action;
using corolock::detail::lock_actions;
using corolock::detail::lock_core;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr int processes = 3;
constexpr int max_names = 2;
constexpr std::string_view name_of[max_names] = {"a", "b"};
constexpr auto never = clock_type::time_point::max();
const error_code aborted = boost::asio::error::operation_aborted;

struct xact : acquisition {
    xact(const acquire_params& p, int i, int pr, int n)
        : acquisition(p, name_of[n]), id(i), proc(pr), name(n), deadline(p.deadline) {}
    int id, proc, name;
    clock_type::time_point deadline;
    clock_type::time_point armed = never;
    int attempts = 0;
    int commits = 0;
    bool out = false;       // an attempt whose answer the core is still to get
    bool cancelled = false; // by the caller
    bool concluded = false; // a concluded answer came
    int completions = 0;
    error_code ec;
};

// One pipeline entry: a transaction's attempt, or the NOTIFY the driver sends after a rollback.
struct statement {
    xact* op = nullptr; // null: a NOTIFY of `name`
    int name = 0;
    enum state_t { sent, running, busy, committed, failed } st = sent;
};

struct process {
    explicit process(unsigned seed) : core(seed) {}
    lock_core core;
    bool up = true;
    std::deque<statement> live;                // sent on the session, in order
    std::deque<statement> unsent;              // submitted while down
    std::vector<std::deque<statement>> ghosts; // dropped sessions' backends, maybe still running
    std::deque<int> notices;                   // NOTIFYs heard, by name
    bool subscribed[max_names] = {false, false};
};

struct counts {
    int events = 0, commits = 0, busy = 0, kept_cancels = 0, late_commits = 0, timeouts = 0,
        lost = 0;
};

class model {
public:
    model(unsigned seed, counts& c) : rng_(seed), c_(c), names_(1 + pick(2)) {
        for (int p = 0; p < processes; ++p)
            procs_.push_back(std::make_unique<process>(seed * 7 + static_cast<unsigned>(p)));
    }

    void run(int steps) {
        for (int i = 0; i < steps; ++i)
            step(true);
        for (int p = 0; p < processes; ++p)
            reconnect(p);
        int quiet = 0;
        while (step(false))
            BOOST_REQUIRE_MESSAGE(++quiet < 20000, "no quiescence; " << trace());
        for (auto& a : ops_)
            BOOST_REQUIRE_MESSAGE(a->completions == 1,
                                  "op " << a->id << " never completed; " << trace());
        int commits[max_names] = {0, 0};
        for (auto& a : ops_)
            commits[a->name] += a->commits;
        for (int n = 0; n < names_; ++n) {
            BOOST_TEST(counter_[n] == commits[n]);
            BOOST_TEST(!held_[n]);
        }
        for (auto& p : procs_) {
            BOOST_TEST(p->core.waiters() == 0u);
            for (int n = 0; n < names_; ++n)
                BOOST_TEST(!p->subscribed[n]);
        }
    }

private:
    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

    void note(const std::string& s) {
        std::ostringstream os;
        os << "[" << (now_ - t0_) / 1us << "us] " << s;
        log_.push_back(os.str());
        if (log_.size() > 40)
            log_.pop_front();
    }
    std::string trace() const {
        std::string s = "last events:";
        for (auto& l : log_)
            s += "\n  " + l;
        return s;
    }

    // ---- the driver: the core's actions performed, as pg_lock_service::perform does
    template <class Event>
    void event(int p, Event e) {
        lock_actions out;
        e(procs_[p]->core, out);
        for (const auto& x : out) {
            auto& a = static_cast<xact&>(*x.acq);
            auto& pr = *procs_[p];
            switch (x.what) {
            case lock_action::kind::subscribe:
                BOOST_REQUIRE(!pr.subscribed[a.name]);
                pr.subscribed[a.name] = true;
                break;
            case lock_action::kind::unsubscribe:
                BOOST_REQUIRE(pr.subscribed[a.name]);
                pr.subscribed[a.name] = false;
                break;
            case lock_action::kind::give_back:
                BOOST_FAIL("op " << a.id << ": a transaction was given back; " << trace());
                break;
            case lock_action::kind::attempt:
                note("op " + std::to_string(a.id) + " attempt");
                BOOST_REQUIRE_MESSAGE(a.completions == 0 && !a.concluded && !a.out,
                                      "op " << a.id << " sent again; " << trace());
                // The first may start past the deadline (a zero wait tries once; but one queued
                // behind local waiters may time out there with none).
                BOOST_REQUIRE_MESSAGE(a.attempts == 0 || now_ < a.deadline,
                                      "op " << a.id << " retried past its deadline; " << trace());
                ++a.attempts;
                a.out = true;
                (pr.up ? pr.live : pr.unsent).push_back({&a, a.name});
                break;
            case lock_action::kind::complete:
                note("op " + std::to_string(a.id) + " complete: " + x.ec.message());
                complete(a, x.ec);
                break;
            case lock_action::kind::arm:
                BOOST_REQUIRE(x.at == a.fsm.wake_at());
                // The server bounds a binding attempt's wait: no timer cuts it short.
                BOOST_REQUIRE(!a.out || x.at == never);
                a.armed = x.at;
                break;
            }
        }
    }

    void complete(xact& a, error_code ec) {
        BOOST_REQUIRE_MESSAGE(++a.completions == 1, "op " << a.id << " completed twice");
        BOOST_REQUIRE_MESSAGE(!a.out, "op " << a.id << " completed with its attempt unanswered; "
                                            << trace());
        a.ec = ec;
        bool ok = false; // success: it committed; aborted or timed out: nothing of it did
        if (!ec)
            ok = a.concluded && a.commits == 1;
        else if (ec == aborted)
            ok = a.cancelled && a.commits == 0;
        else if (ec == error::acquire_timeout)
            ok = now_ >= a.deadline && a.commits == 0;
        else if (ec == error::connection_lost) // unknown: it may have committed, or still will
            ok = a.concluded;
        else if (ec == error::server_error || ec == error::not_connected)
            ok = a.concluded && a.commits == 0;
        BOOST_REQUIRE_MESSAGE(ok, "op " << a.id << " completed with " << ec.message() << " ("
                                        << a.commits << " commits); " << trace());
        c_.timeouts += ec == error::acquire_timeout;
        c_.lost += ec == error::connection_lost;
    }

    // An attempt's answer, as on_attempt_reply maps it.
    void answer(int p, xact& a, statement::state_t st, error_code ec) {
        BOOST_REQUIRE(a.out && a.fsm.current() == acquire_fsm::state::attempting);
        a.out = false;
        attempt_reply r;
        r.what = st == statement::busy ? attempt_reply::kind::held : attempt_reply::kind::concluded;
        r.ec = ec;
        a.concluded = r.what == attempt_reply::kind::concluded;
        if (st == statement::failed) // held, then rolled back: no NOTIFY went out with a commit
            (procs_[p]->up ? procs_[p]->live : procs_[p]->unsent).push_back({nullptr, a.name});
        if (ec != error::connection_lost && ec != error::not_connected)
            procs_[p]->core.on_script_reply();
        event(p, [&](lock_core& c, lock_actions& out) { c.on_reply(a, r, now_, out); });
        if (a.concluded)
            BOOST_REQUIRE(a.completions == 1 && a.ec == ec); // as it is, never retried
        else if (a.cancelled)                                // the kept cancel: nothing ran
            BOOST_REQUIRE_MESSAGE(a.completions == 1 && a.ec == aborted, trace());
        else if (now_ >= a.deadline) // busy at the deadline: no attempt starts past it
            BOOST_REQUIRE_MESSAGE(a.completions == 1 && a.ec == error::acquire_timeout, trace());
    }

    // ---- the server
    void notify(int n) {
        for (auto& p : procs_)
            if (p->up)
                p->notices.push_back(n);
    }

    // The server works on the oldest unfinished statement of a session. `ghost`: a dropped one.
    bool execute(std::deque<statement>& q, bool ghost) {
        auto it = q.begin();
        while (it != q.end() && it->st != statement::sent && it->st != statement::running)
            ++it;
        if (it == q.end())
            return false;
        auto& s = *it;
        if (!s.op) {
            s.st = statement::committed;
            notify(s.name);
        } else if (s.st == statement::sent) {
            // Sent before its acquisition completed; a dropped session's, answered connection_lost.
            BOOST_REQUIRE_MESSAGE(s.op->completions == 0 ||
                                      (ghost && s.op->ec == error::connection_lost),
                                  "op " << s.op->id << " ran after it completed; " << trace());
            s.st = held_[s.name] ? statement::busy : statement::running;
            held_[s.name] = true;
            c_.busy += s.st == statement::busy;
        } else if (pick(8) == 0) {
            s.st = statement::failed; // a query failed: rolled back, nothing of it stays
            held_[s.name] = false;
        } else {
            s.st = statement::committed;
            held_[s.name] = false;
            ++counter_[s.name];
            ++c_.commits;
            note("op " + std::to_string(s.op->id) + " commits" + (ghost ? " (ghost)" : ""));
            BOOST_REQUIRE_MESSAGE(++s.op->commits == 1, "op " << s.op->id << " committed twice");
            // Only a dropped session's backend commits for a completed acquisition, whose answer
            // said the outcome is unknown.
            BOOST_REQUIRE_MESSAGE(
                s.op->completions == 0 || (ghost && s.op->ec == error::connection_lost),
                "op " << s.op->id << " committed after " << s.op->ec.message() << "; " << trace());
            c_.late_commits += s.op->completions;
            notify(s.name);
        }
        if (ghost)
            while (!q.empty() && q.front().st != statement::sent &&
                   q.front().st != statement::running)
                q.pop_front(); // nobody reads its answers
        return true;
    }

    bool deliver_reply(int p) {
        auto& pr = *procs_[p];
        if (pr.live.empty() || pr.live.front().st == statement::sent ||
            pr.live.front().st == statement::running)
            return false;
        auto s = pr.live.front();
        pr.live.pop_front();
        if (s.op) // busy is a server error too (lock_timeout's SQLSTATE, which decides)
            answer(p, *s.op, s.st,
                   s.st == statement::committed ? error_code() : error::server_error);
        return true;
    }

    // Each sent statement's outcome becomes unknown: its backend may still run it; the driver
    // answers connection_lost. Notifications in flight are lost; unsent statements wait.
    void drop(int p) {
        auto& pr = *procs_[p];
        if (!pr.up)
            return;
        note("drop p" + std::to_string(p));
        pr.up = false;
        pr.notices.clear();
        auto q = std::move(pr.live);
        pr.live.clear();
        for (auto& s : q)
            if (s.op)
                answer(p, *s.op, statement::sent, error::connection_lost);
        std::erase_if(q, [](const statement& s) {
            return s.st != statement::sent && s.st != statement::running; // answers lost
        });
        if (!q.empty())
            pr.ghosts.push_back(std::move(q));
    }

    // The listener's re-check after a reconnect (on_connected: wake_all).
    void reconnect(int p) {
        auto& pr = *procs_[p];
        if (pr.up)
            return;
        pr.up = true;
        for (auto& s : pr.unsent)
            pr.live.push_back(s);
        pr.unsent.clear();
        for (int n = 0; n < names_; ++n)
            if (pr.core.has_waiters(name_of[n]))
                event(p, [&](lock_core& c, lock_actions& out) {
                    c.on_release_message(name_of[n], 1, now_, out);
                });
    }

    // Due timers in time order. A timer armed again for a time already past, with no attempt
    // between, would spin: each op fires a few times at one instant at most.
    void fire_timers() {
        for (int fired = 0;; ++fired) {
            BOOST_REQUIRE_MESSAGE(fired < 100, "timers spin at one instant; " << trace());
            xact* next = nullptr;
            for (auto& a : ops_)
                if (a->armed <= now_ && (!next || a->armed < next->armed))
                    next = a.get();
            if (!next)
                return;
            next->armed = never;
            event(next->proc,
                  [&](lock_core& c, lock_actions& out) { c.on_timer(*next, now_, out); });
        }
    }

    void cancel_one() {
        std::vector<xact*> pending;
        for (auto& a : ops_)
            if (a->completions == 0)
                pending.push_back(a.get());
        if (pending.empty())
            return;
        auto& a = *pending[static_cast<std::size_t>(pick(static_cast<int>(pending.size())))];
        note("op " + std::to_string(a.id) + " cancelled");
        const bool out = a.out;
        a.cancelled = true;
        event(a.proc, [&](lock_core& c, lock_actions& o) { c.cancel(a, now_, o); });
        // Kept while the transaction is out; at once between attempts.
        BOOST_REQUIRE_MESSAGE(out ? a.completions == 0 : a.ec == aborted, trace());
        c_.kept_cancels += out;
    }

    void spawn() {
        // The driver's own parameters (a zero wait is one attempt, never queued).
        corolock::pg_xact_options opts;
        opts.retry_base = 1ms;
        opts.retry_max = 8ms;
        const int d = pick(3);
        const auto deadline = d == 0   ? never
                              : d == 1 ? now_ - 1ms * pick(2)
                                       : now_ + 1ms * (1 + pick(20));
        const auto p = corolock::detail::pg_sql::xact_params_of(opts, deadline, now_);
        const int proc = pick(processes);
        ops_.push_back(
            std::make_unique<xact>(p, static_cast<int>(ops_.size()) + 1, proc, pick(names_)));
        auto& a = *ops_.back();
        note("op " + std::to_string(a.id) + " starts on p" + std::to_string(proc));
        event(proc, [&](lock_core& c, lock_actions& out) { c.start(a, now_, out); });
    }

    // One random event; `faults` off: only progress (no drop, cancel or new acquisition), and
    // time jumps to the next timer when nothing else can happen. False: nothing left to do.
    bool step(bool faults) {
        ++c_.events;
        const int p = pick(processes);
        auto& pr = *procs_[p];
        const int e = pick(faults ? 26 : 7);
        switch (e < 16 ? e : e % 7) { // 16 .. 25: the server and the network again
        case 0:
        case 1:
        case 2:
            if (pr.up && execute(pr.live, false))
                return true;
            break;
        case 3:
        case 4:
            if (deliver_reply(p))
                return true;
            break;
        case 5:
            if (!pr.notices.empty()) {
                const int n = pr.notices.front();
                pr.notices.pop_front();
                event(p, [&](lock_core& c, lock_actions& out) {
                    c.on_release_message(name_of[n], 1, now_, out);
                });
                return true;
            }
            break;
        case 6:
            if (!pr.ghosts.empty()) {
                auto& g =
                    pr.ghosts[static_cast<std::size_t>(pick(static_cast<int>(pr.ghosts.size())))];
                if (pick(4) == 0) { // the next session ended it: what ran is rolled back
                    for (auto& s : g)
                        if (s.st == statement::running)
                            held_[s.name] = false;
                    g.clear();
                } else {
                    execute(g, true);
                }
                std::erase_if(pr.ghosts, [](const auto& q) { return q.empty(); });
                return true;
            }
            break;
        case 7:
        case 8:
            now_ += 1ms * pick(4);
            fire_timers();
            return true;
        case 9:
        case 10:
            if (ops_.size() < 16)
                spawn();
            return true;
        case 11:
            if (pick(2) == 0)
                cancel_one();
            return true;
        case 12:
            if (pick(2) == 0)
                drop(p);
            return true;
        case 13:
        case 14:
            reconnect(p);
            return true;
        case 15:
            if (!pr.up && !pr.unsent.empty()) { // waited too long for a connection
                auto s = pr.unsent.front();
                pr.unsent.pop_front();
                if (s.op)
                    answer(p, *s.op, statement::sent, error::not_connected);
            }
            return true;
        }
        if (faults)
            return true;
        // Quiet: is anything left but time?
        for (auto& x : procs_)
            if (!x->live.empty() || !x->notices.empty() || !x->ghosts.empty())
                return true;
        auto next = never;
        for (auto& a : ops_)
            next = std::min(next, a->armed);
        if (next == never)
            return false;
        now_ = std::max(now_, next);
        fire_timers();
        return true;
    }

    std::mt19937 rng_;
    counts& c_;
    int names_;
    clock_type::time_point t0_ = clock_type::time_point{} + 1h;
    clock_type::time_point now_ = t0_;
    std::vector<std::unique_ptr<process>> procs_;
    std::vector<std::unique_ptr<xact>> ops_;
    bool held_[max_names] = {false, false};
    int counter_[max_names] = {0, 0};
    std::deque<std::string> log_;
};

// PG_XACT_MODEL_SEED=n runs seeds n .. n+199 instead of 1 .. 200 (a longer search by hand).
unsigned first_seed() {
    const char* s = std::getenv("PG_XACT_MODEL_SEED");
    return s != nullptr ? static_cast<unsigned>(std::strtoul(s, nullptr, 10)) : 1u;
}

} // namespace

BOOST_AUTO_TEST_SUITE(pg_xact_model)

BOOST_AUTO_TEST_CASE(random_event_orders_complete_each_transaction_once_as_it_ran) {
    counts c;
    for (unsigned seed = first_seed(); seed < first_seed() + 200; ++seed) {
        BOOST_TEST_CONTEXT("seed " << seed) {
            model m(seed, c);
            m.run(400);
        }
    }
    BOOST_TEST_MESSAGE("pg xact model, 200 seeds, "
                       << c.events << " events: " << c.commits << " commits (" << c.late_commits
                       << " after a lost connection), " << c.busy << " busy, " << c.kept_cancels
                       << " cancels kept, " << c.timeouts << " timeouts, " << c.lost << " lost");
    // The seeds exercised what they are for.
    BOOST_TEST(c.commits > 500);
    BOOST_TEST(c.busy > 100);
    BOOST_TEST(c.kept_cancels > 20);
    BOOST_TEST(c.late_commits > 5);
    BOOST_TEST(c.timeouts > 50);
    BOOST_TEST(c.lost > 20);
}

BOOST_AUTO_TEST_SUITE_END()
