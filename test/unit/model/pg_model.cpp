// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL backend in the model (acquire_model.hpp): locked transactions (pg_xact_mutex:
// binding acquisitions on the real lock core, with the driver's parameters, xact_params_of), one
// core a process and one connection each, statements run in order, against a model of
// PostgreSQL's transaction-scoped advisory locks on one or two names. An attempt takes the lock
// if it is free and holds it until it commits (the name's counter goes up, every connected
// process hears a NOTIFY) or rolls back; else it answers busy having run nothing. Beyond the
// harness's events: a dropped connection's statements are answered connection_lost while its
// backend may still run them (a session the next one could not end); a statement that waited
// too long for a connection is answered not_connected. The model performs the core's actions
// with a switch and maps the replies as postgres/io/pg_lock_service.cpp does. Beyond the
// harness's invariants:
//   - success only if its transaction committed, once; aborted or timed out, nothing of it ever
//     commits; nothing is run for a completed acquisition (but by a dropped session's backend,
//     whose answer was connection_lost);
//   - a cancel kept while the attempt was out ends with operation_aborted when it comes back
//     busy; a busy answer at the deadline ends with acquire_timeout; a concluded one as it is;
//   - once all is quiet, each name's counter equals its transactions' commits.
#include "postgres/core/pg_lock_sql.hpp"
#include "unit/model/acquire_model.hpp"
#include <corolock/postgres/config.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <memory>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_model_pg {

using namespace corolock::test::model;
using corolock::error;
using corolock::error_code;
using corolock::detail::acquire_fsm;
using corolock::detail::attempt_reply;
using corolock::detail::lock_actions;
using corolock::detail::lock_core;
using namespace std::chrono_literals;

namespace {

constexpr int processes = 3;
constexpr int max_names = 2;
constexpr std::string_view name_of[max_names] = {"a", "b"};
const error_code aborted = boost::asio::error::operation_aborted;

struct xact : core_caller {
    using core_caller::core_caller;
    int commits = 0;
    bool concluded = false; // a concluded answer came
};

// One pipeline entry: a transaction's attempt, or the NOTIFY the driver sends after a rollback.
struct statement {
    xact* op = nullptr; // null: a NOTIFY of `name`
    int name = 0;
    enum state_t { sent, running, busy, committed, failed } st = sent;
    bool done() const { return st != sent && st != running; }
};

struct process {
    bool up = true;
    std::deque<statement> live;                // sent on the session, in order
    std::deque<statement> unsent;              // submitted while down
    std::vector<std::deque<statement>> ghosts; // dropped sessions' backends, maybe still running
    std::deque<int> notices;                   // NOTIFYs heard, by name
};

class pg_model final : public core_model {
public:
    explicit pg_model(unsigned seed)
        // The events' weights (execute, deliver, arrive, cancel, release, drop, reconnect, fault,
        // time, timer) and time steps of 0 .. 3 ms; one or two names.
        : core_model(seed, {14, 12, 4, 1, 0, 1, 4, 6, 4, 0, 3}, processes,
                     1 + static_cast<int>(seed % 2), 1) {}

private:
    // ---- the events
    bool execute(int p) override { return procs_[p].up && work(procs_[p].live, false); }

    bool deliver(int p) override {
        auto& pr = procs_[p];
        if (!pr.notices.empty() && (pick(3) == 0 || pr.live.empty() || !pr.live.front().done())) {
            wake(p, pr.notices.front());
            pr.notices.pop_front();
            return true;
        }
        if (pr.live.empty() || !pr.live.front().done())
            return false;
        auto s = pr.live.front();
        pr.live.pop_front();
        if (s.op) // busy is a server error too (lock_timeout's SQLSTATE, which decides)
            reply(p, *s.op, s.st,
                  s.st == statement::committed ? error_code() : error::server_error);
        return true;
    }

    void arrive(int p) override {
        // The driver's own parameters (a zero wait is one attempt, never queued).
        corolock::pg_xact_options opts;
        opts.retry_base = 1ms;
        opts.retry_max = 8ms;
        const int d = pick(3);
        const auto deadline = d == 0   ? never
                              : d == 1 ? now_ - 1ms * pick(2)
                                       : now_ + 1ms * (1 + pick(20));
        const int name = pick(names_);
        auto& a = *ops_.emplace_back(std::make_unique<xact>(
            corolock::detail::pg_sql::xact_params_of(opts, deadline, now_), name_of[name]));
        a.lock = name;
        add_caller(a, p);
        start(a);
    }

    // Each sent statement's outcome becomes unknown: its backend may still run it; the driver
    // answers connection_lost. Notifications in flight are lost; unsent statements wait.
    bool drop(int p) override {
        auto& pr = procs_[p];
        if (!pr.up)
            return false;
        note("drop p" + std::to_string(p));
        pr.up = false;
        pr.notices.clear();
        auto q = std::move(pr.live);
        pr.live.clear();
        for (auto& s : q)
            if (s.op)
                reply(p, *s.op, statement::sent, error::connection_lost);
        std::erase_if(q, [](const statement& s) { return s.done(); }); // answers lost
        if (!q.empty())
            pr.ghosts.push_back(std::move(q));
        return true;
    }

    // The listener's re-check after a reconnect (on_connected: wake_all).
    bool reconnect(int p) override {
        auto& pr = procs_[p];
        if (pr.up)
            return false;
        pr.up = true;
        for (auto& s : pr.unsent)
            pr.live.push_back(s);
        pr.unsent.clear();
        for (int n = 0; n < names_; ++n)
            if (cores_[p].has_waiters(name_of[n]))
                wake(p, n);
        return true;
    }
    void wake(int p, int n) {
        event(p, [&](auto& c, auto& out) { c.on_release_message(name_of[n], 1, now_, out); });
    }

    // A dropped session's backend runs on, or the next session ends it (what ran is rolled
    // back); with faults, a statement waits too long for a connection.
    bool fault(int p, bool faults) override {
        auto& pr = procs_[p];
        if (faults && pick(3) == 0) {
            if (pr.up || pr.unsent.empty())
                return false;
            auto s = pr.unsent.front();
            pr.unsent.pop_front();
            if (s.op)
                reply(p, *s.op, statement::sent, error::not_connected);
            return true;
        }
        if (pr.ghosts.empty())
            return false;
        auto& g = pr.ghosts[pick(static_cast<int>(pr.ghosts.size()))];
        if (pick(4) == 0) {
            for (auto& s : g)
                if (s.st == statement::running)
                    free(s.name, s.op->owner);
            g.clear();
        } else {
            work(g, true);
        }
        std::erase_if(pr.ghosts, [](const auto& q) { return q.empty(); });
        return true;
    }

    void release(caller&) override {} // a transaction's lock goes with its commit or rollback
    bool room() const override { return ops_.size() < 16; }

    bool in_flight() const override {
        for (auto& pr : procs_)
            if (!pr.live.empty() || !pr.notices.empty() || !pr.ghosts.empty())
                return true;
        return false;
    }

    const hold* holder_of(const caller& c) const override { return find(c.lock, c.owner); }

    void finish() override {
        core_model::finish();
        int commits[max_names] = {0, 0};
        for (auto& a : ops_)
            commits[a->lock] += a->commits;
        for (int n = 0; n < names_; ++n)
            BOOST_TEST(counter_[n] == commits[n]);
    }

    // ---- the driver: the core's actions, as pg_lock_service::perform does
    void send_attempt(int p, core_caller& c) override {
        auto& pr = procs_[p];
        (pr.up ? pr.live : pr.unsent).push_back({&static_cast<xact&>(c), c.lock});
    }
    void send_give_back(int, core_caller&, bool) override {} // never: gave_back fails first

    void on_complete(int, core_caller& c, const corolock::detail::lock_action& x) override {
        auto& a = static_cast<xact&>(c);
        bool ok = false; // success: it committed; aborted or timed out: nothing of it did
        if (!x.ec)
            ok = a.concluded && a.commits == 1;
        else if (x.ec == aborted)
            ok = a.cancelled && a.commits == 0;
        else if (x.ec == error::acquire_timeout)
            ok = now_ >= a.deadline && a.commits == 0;
        else if (x.ec == error::connection_lost) // unknown: it may have committed, or still will
            ok = a.concluded;
        else if (x.ec == error::server_error || x.ec == error::not_connected)
            ok = a.concluded && a.commits == 0;
        BOOST_REQUIRE_MESSAGE(ok, "caller " << a.owner << " completed with " << x.ec.message()
                                            << " (" << a.commits << " commits); " << trace());
        counts_["lost"] += x.ec == error::connection_lost;
    }

    // An attempt's answer, as on_attempt_reply maps it.
    void reply(int p, xact& a, statement::state_t st, error_code ec) {
        BOOST_REQUIRE(a.out && a.fsm.current() == acquire_fsm::state::attempting);
        attempt_reply r;
        r.what = st == statement::busy ? attempt_reply::kind::held : attempt_reply::kind::concluded;
        r.ec = ec;
        a.concluded = r.what == attempt_reply::kind::concluded;
        auto& pr = procs_[p];
        if (st == statement::failed) // held, then rolled back: no NOTIFY went out with a commit
            (pr.up ? pr.live : pr.unsent).push_back({nullptr, a.lock});
        if (ec != error::connection_lost && ec != error::not_connected)
            cores_[p].on_script_reply();
        answer(a, ec != error::connection_lost, [&] {
            event(p, [&](lock_core& c, lock_actions& out) { c.on_reply(a, r, now_, out); });
        });
        // Concluded: as it is, never retried; busy after a kept cancel: nothing ran; busy at the
        // deadline: no attempt starts past it.
        const auto expected = a.concluded   ? ec
                              : a.cancelled ? aborted
                                            : error_code(error::acquire_timeout);
        if (a.concluded || a.cancelled || now_ >= a.deadline)
            BOOST_REQUIRE_MESSAGE(a.completions == 1 && a.ec == expected,
                                  "caller " << a.owner << "'s answer (" << ec.message()
                                            << ") did not complete it with " << expected.message()
                                            << "; " << trace());
    }

    // ---- the server: the lock is the harness's grant, held by the transaction that runs
    void notify(int n) {
        for (auto& pr : procs_)
            if (pr.up)
                pr.notices.push_back(n);
    }

    // The server works on the oldest unfinished statement of a session. `ghost`: a dropped one.
    bool work(std::deque<statement>& q, bool ghost) {
        auto it = std::find_if(q.begin(), q.end(), [](const statement& s) { return !s.done(); });
        if (it == q.end())
            return false;
        auto& s = *it;
        if (!s.op) {
            s.st = statement::committed;
            notify(s.name);
        } else if (s.st == statement::sent) {
            // Sent before its acquisition completed; a dropped session's, answered connection_lost.
            BOOST_REQUIRE_MESSAGE(
                s.op->completions == 0 || (ghost && s.op->ec == error::connection_lost),
                "caller " << s.op->owner << " ran after it completed; " << trace());
            if (used(s.name) > 0) {
                s.st = statement::busy;
                ++counts_["busy"];
            } else {
                s.st = statement::running;
                grant(s.name, s.op->owner, 1, never);
            }
        } else if (pick(8) == 0) {
            s.st = statement::failed; // a query failed: rolled back, nothing of it stays
            free(s.name, s.op->owner);
        } else {
            s.st = statement::committed;
            free(s.name, s.op->owner);
            ++counter_[s.name];
            ++counts_["commits"];
            note("caller " + std::to_string(s.op->owner) + " commits" + (ghost ? " (ghost)" : ""));
            BOOST_REQUIRE_MESSAGE(++s.op->commits == 1,
                                  "caller " << s.op->owner << " committed twice");
            // Only a dropped session's backend commits for a completed acquisition, whose answer
            // said the outcome is unknown.
            BOOST_REQUIRE_MESSAGE(s.op->completions == 0 ||
                                      (ghost && s.op->ec == error::connection_lost),
                                  "caller " << s.op->owner << " committed after "
                                            << s.op->ec.message() << "; " << trace());
            counts_["late commits"] += s.op->completions;
            notify(s.name);
        }
        if (ghost)
            while (!q.empty() && q.front().done())
                q.pop_front(); // nobody reads its answers
        return true;
    }

    std::vector<std::unique_ptr<xact>> ops_;
    process procs_[processes];
    int counter_[max_names] = {0, 0};
};

} // namespace

BOOST_AUTO_TEST_SUITE(acquire_model)
BOOST_AUTO_TEST_SUITE(postgres)

BOOST_AUTO_TEST_CASE(locked_transactions_complete_once_as_they_ran) {
    const auto t =
        run_seeds("postgres xact", 400, 400, [](unsigned seed) { return pg_model(seed); });
    // The seeds exercised what they are for.
    BOOST_TEST(count(t, "commits") > 1000);
    BOOST_TEST(count(t, "busy") > 200);
    BOOST_TEST(count(t, "cancels kept") > 40);
    BOOST_TEST(count(t, "late commits") > 10);
    BOOST_TEST(count(t, "timeouts") > 100);
    BOOST_TEST(count(t, "lost") > 40);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_model_pg
