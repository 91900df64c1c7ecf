// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The randomized model test of the acquisitions' decisions, one harness for every backend: the
// seeds, the events, the simulated server's grants and the invariants. A backend plugs in with an
// adaptor (redis_model.cpp, pg_model.cpp, zk_model.cpp beside this file) that turns each event
// into its real core's entry points (lock_core, zk_acquire_fsm), performs the core's actions
// with a switch as its driver does, and models its server on the grants kept here.
//
// The events, in random order (each backend weighs them): a caller arrives (a try or a zero
// wait, a bounded or an unbounded wait); the server runs a request (a grant, or busy); a reply or
// a message is delivered; a connection drops (what was written may or may not run: each reply
// says the outcome is unknown) and comes back; time passes (timers and deadlines fire in time
// order); a caller cancels; a holder releases; a backend's own fault (a session expires, a
// dropped session's backend runs on). Then a quiet phase: no arrival, cancel or fault, every
// grant released, until nothing is left. The invariants, for every backend:
//   - exclusion: the server never grants more of a name than it has (one holder, a semaphore's
//     permits), and every caller that believes it holds is the server's holder;
//   - every caller completes exactly once, a bounded wait by its deadline;
//   - a caller told "granted" is the server's holder, under the server's token, and the tokens
//     told increase in grant order;
//   - a grant nobody received (cancelled, timed out, its reply lost) is given back: no hold
//     lapses or is left once quiet but a holder's or one given back;
//   - an attempt is never sent while one is out, nor while an earlier one's outcome is unknown
//     and not resolved; no attempt but the first starts past the deadline;
//   - a cancel completes the caller at once with operation_aborted;
//   - a binding attempt (a locked transaction: the attempt is the caller's work) is never cut
//     short: no timer while it is out, a cancel waits for it, it is never given back, and only
//     its answer completes the caller past the deadline.
// COROLOCK_MODEL_SEED=n runs seeds n, n + 1, ... instead of 1, 2, ...: a failure names its seed.
#ifndef COROLOCK_TEST_UNIT_MODEL_ACQUIRE_MODEL_HPP
#define COROLOCK_TEST_UNIT_MODEL_ACQUIRE_MODEL_HPP

#include "core/lock_core.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <iosfwd>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

// A check about caller `c`, whose failure names it and shows the last events.
#define COROLOCK_MODEL_REQUIRE(cond, c, what)                                                      \
    BOOST_REQUIRE_MESSAGE(cond, "caller " << (c).owner << " " << what << "; " << trace())

namespace corolock::test::model {

using clock_type = std::chrono::steady_clock;
using time_point = clock_type::time_point;
inline constexpr time_point never = time_point::max();

// What a run exercised, by name ("grants", "hand-offs", ...): a test tells its paths were taken.
struct tally : std::map<std::string, long, std::less<>> {};
std::ostream& operator<<(std::ostream& os, const tally& t);
inline long count(const tally& t, std::string_view what) {
    const auto it = t.find(what);
    return it == t.end() ? 0 : it->second;
}
// What operator<< prints, for the notes.
template <class T>
std::string text(const T& x) {
    std::ostringstream os;
    os << x;
    return os.str();
}

// One caller of a backend's acquire, as the harness sees it; the adaptor's own state derives
// from it.
struct caller {
    std::uint64_t owner = 0; // 1, 2, ...: its id, also what the server knows it by
    int process = 0;
    int lock = 0;         // which of the model's lock names
    int units = 1;        // of the name's capacity: a semaphore's permits, a writer's all
    bool once = false;    // a try or a zero wait: one attempt
    bool binding = false; // the attempt is the caller's work (a locked transaction)
    time_point arrived{}, deadline = never;
    time_point armed = never; // its timer (the deadline, a retry)
    int attempts = 0;
    bool out = false;       // an attempt on the wire, its answer not read
    bool unknown = false;   // an attempt's outcome is unknown and not resolved since
    bool answering = false; // its attempt's answer is being fed to the core
    bool cancelled = false;
    bool gave_back = false; // it sent a give-back (an undo)
    int completions = 0;
    error_code ec;
    bool granted = false, released = false, lost = false;
    std::uint64_t token = 0;        // told with the grant (0: the backend has none)
    time_point valid_until = never; // the local end of its lease
};

// The events of a run, weighed by each backend (0: never), in this order; `time` lets 0 ..
// step_ms pass, `timer` jumps to the next timer.
struct weights {
    int execute = 0, deliver = 0, arrive = 0, cancel = 0, release = 0, drop = 0, reconnect = 0,
        fault = 0, time = 0, timer = 0;
    int step_ms = 0;
};

class acquire_model {
public:
    virtual ~acquire_model() = default;
    acquire_model(const acquire_model&) = delete;
    acquire_model& operator=(const acquire_model&) = delete;

    // `steps` random events with the invariants checked after each, then the quiet phase and
    // the checks of the end.
    void run(int steps);
    const tally& counts() const noexcept { return counts_; }
    std::ostream& print(std::ostream& os) const; // the time and the last events

protected:
    // A hold of the simulated server: `units` of a name's capacity for `owner` until `until`
    // (never: until freed), under the token drawn at its grant.
    struct hold {
        std::uint64_t owner = 0;
        int units = 1;
        time_point until = never;
        std::uint64_t token = 0;
    };

    acquire_model(unsigned seed, const weights& w, int processes, int names, int capacity);

    // ---- what an adaptor does for each event; false: it could not happen now
    virtual bool execute(int p) = 0;                // the server runs p's next request
    virtual bool deliver(int p) = 0;                // p reads a reply or a message
    virtual void arrive(int p) = 0;                 // a caller arrives at p (add_caller)
    virtual bool drop(int p) = 0;                   // p's connection drops
    virtual bool reconnect(int) { return false; }   // ... and comes back
    virtual bool fault(int, bool) { return false; } // its own (the flag off: progress only)
    virtual void cancel(caller& c) = 0;             // its caller cancels
    virtual void release(caller& c) = 0;            // its holder releases (c.released is set)
    virtual void on_timer(caller& c) = 0;           // its timer, armed at `c.armed`, fired
    virtual void on_time() {}                       // time passed (the watchdogs)
    virtual bool room() const = 0;                  // whether a caller may arrive
    virtual bool in_flight() const = 0;             // requests, replies or messages left
    virtual const hold* holder_of(const caller& c) const = 0; // the server's hold of `c`
    virtual void finish() {} // the backend's checks once all is quiet

    // ---- the callers, and what the adaptors report of them (each checks its invariants)
    caller& add_caller(caller& c, int p); // its owner id, process and arrival are set here
    caller& caller_of(std::uint64_t owner) const { return *callers_.at(owner - 1); }
    bool believed(const caller& c) const {
        return c.granted && !c.released && !c.lost && now_ < c.valid_until;
    }
    void attempt(caller& c);              // an attempt goes out
    void answered(caller& c, bool known); // its answer is read (known: its outcome)
    void resolved(caller& c) { c.unknown = false; }
    void gave_back(caller& c);            // a give-back goes out
    void armed(caller& c, time_point at); // its timer is armed (never: disarmed)
    void completed(caller& c, error_code ec, bool granted, std::uint64_t token = 0);
    // A reply that said (or may have said) the lock was taken: the caller keeps the grant or
    // gave it back.
    void check_kept(const caller& c) const {
        COROLOCK_MODEL_REQUIRE(c.granted || c.gave_back, c, "neither kept nor gave back a grant");
    }
    // Feeds `c`'s answer to its core (`f`): only then may a binding attempt complete late.
    template <class F>
    void answer(caller& c, bool known, F f) {
        answered(c, known);
        c.answering = true;
        f();
        c.answering = false;
    }

    // ---- the simulated server's grants, by name: one holder, or up to the capacity's units
    // Grants `units` of `name` to `owner` (replacing its own hold), under `token` (0: the next
    // one drawn). The holds that lapsed go first, each checked as received or given back.
    std::uint64_t grant(int name, std::uint64_t owner, int units, time_point until,
                        std::uint64_t token = 0);
    const hold* find(int name, std::uint64_t owner) const; // live, or nullptr
    bool free(int name, std::uint64_t owner);              // true: it was live
    bool renew(int name, std::uint64_t owner, time_point until);
    int purge(int name); // drops the lapsed holds, checked; how many
    int used(int name) const;
    const std::vector<hold>& holds(int name) const { return holds_[name]; }

    // ---- what all adaptors share
    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
    // The last events noted, for a failure's message: streamed only when one is reported.
    void note(const std::string& line);
    struct trace_t {
        const acquire_model* m;
        friend std::ostream& operator<<(std::ostream& os, trace_t t) { return t.m->print(os); }
    };
    trace_t trace() const { return {this}; }

    std::mt19937 rng_;
    const time_point start_ = time_point(std::chrono::hours(100));
    time_point now_ = start_;
    const int processes_, names_, capacity_;
    std::deque<caller*> callers_; // by owner id - 1; the adaptor owns them
    tally counts_;

private:
    bool step(bool faults);
    void cancel_one();
    void advance_to(time_point t);
    caller* next_timer(time_point by) const;
    void check_all();
    void lapsed(const hold& h) const;

    const weights weights_;
    std::vector<std::vector<hold>> holds_;
    std::uint64_t tokens_ = 0;
    std::vector<std::uint64_t> last_told_; // by name: the last token told with a grant
    std::vector<caller*> holders_;         // granted, not yet released
    std::deque<std::string> log_;
};

// Runs `count` seeds (from COROLOCK_MODEL_SEED, else 1) of `make(seed)`'s model, `steps` steps
// each; returns what they exercised, added up.
template <class Make>
tally run_seeds(std::string_view what, unsigned count, int steps, Make make) {
    tally total;
    const char* from = std::getenv("COROLOCK_MODEL_SEED");
    const auto first =
        from != nullptr ? static_cast<unsigned>(std::strtoul(from, nullptr, 10)) : 1u;
    for (unsigned seed = first; seed < first + count; ++seed) {
        BOOST_TEST_CONTEXT(what << ", seed " << seed << " (replay: COROLOCK_MODEL_SEED=" << seed
                                << ")") {
            auto m = make(seed);
            m.run(steps);
            for (const auto& [k, v] : m.counts())
                total[k] += v;
        }
    }
    BOOST_TEST_MESSAGE(what << ", " << count << " seeds from " << first << ": " << total);
    return total;
}

// ---- the backends on a lock core (Redis, PostgreSQL)

// A caller on a lock core: the core's acquisition and the harness's caller in one.
struct core_caller : detail::acquisition, caller {
    core_caller(const detail::acquire_params& p, std::string_view lock_name)
        : acquisition(p, lock_name) {
        once = p.once;
        binding = p.binding;
        deadline = p.deadline;
    }
};

// The part of an adaptor that drives one lock core a process, as io/lock_service.cpp and
// postgres/io/pg_lock_service.cpp do: the core's events and the switch over its actions, with
// the checks the two share (a subscription per name with local waiters, none left at the end).
class core_model : public acquire_model {
protected:
    core_model(unsigned seed, const weights& w, int processes, int names, int capacity);

    template <class F>
    void event(int p, F f) {
        detail::lock_actions out;
        f(cores_[p], out);
        perform(p, out);
    }
    void perform(int p, const detail::lock_actions& out);
    // What the driver sends or does for each action.
    virtual void send_attempt(int p, core_caller& c) = 0;
    // keep_place: the acquisition goes on (a fair lock's place in line stays, lock_action).
    virtual void send_give_back(int p, core_caller& c, bool keep_place) = 0;
    virtual void listen(int /*p*/, int /*name*/, bool /*on*/) {}
    virtual void on_complete(int /*p*/, core_caller& /*c*/, const detail::lock_action& /*x*/) {}

    void start(core_caller& c) {
        event(c.process, [&](auto& core, auto& out) { core.start(c, now_, out); });
    }
    void cancel(caller& c) override {
        event(c.process, [&](auto& core, auto& out) { core.cancel(as_core(c), now_, out); });
    }
    void on_timer(caller& c) override {
        event(c.process, [&](auto& core, auto& out) { core.on_timer(as_core(c), now_, out); });
    }
    static core_caller& as_core(caller& c) { return static_cast<core_caller&>(c); }
    void finish() override;

    std::deque<detail::lock_core> cores_;
    std::vector<std::vector<bool>> listening_; // by process and name: the core subscribed
};

} // namespace corolock::test::model

#endif
