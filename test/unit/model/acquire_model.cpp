// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The harness of the randomized model test (see acquire_model.hpp): the run, the events, the
// server's grants and the invariants every backend shares.
#include "unit/model/acquire_model.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <ostream>
#include <sstream>

namespace corolock::test::model {

using namespace std::chrono_literals;

std::ostream& operator<<(std::ostream& os, const tally& t) {
    const char* sep = "";
    for (const auto& [what, n] : t) {
        os << sep << what << " " << n;
        sep = ", ";
    }
    return os;
}

acquire_model::acquire_model(unsigned seed, const weights& w, int processes, int names,
                             int capacity)
    : rng_(seed), processes_(processes), names_(names), capacity_(capacity), weights_(w),
      holds_(names), last_told_(names) {}

void acquire_model::run(int steps) {
    for (int i = 0; i < steps; ++i) {
        step(true);
        check_all();
    }
    // Quiet: connections up, no arrival, cancel or fault, every grant released as it comes.
    for (int p = 0; p < processes_; ++p)
        reconnect(p);
    auto busy = [&] {
        return in_flight() || std::any_of(callers_.begin(), callers_.end(), [](const caller* c) {
                   return c->completions == 0 || c->out || (c->granted && !c->released);
               });
    };
    for (int i = 0; busy(); ++i) {
        BOOST_REQUIRE_MESSAGE(i < 200000, "the model did not quiet down; " << trace());
        for (auto* c : std::vector<caller*>(holders_))
            if (!c->released) {
                c->released = true;
                release(*c);
            }
        if (!step(false) && !in_flight()) { // nothing left but time
            const auto* t = next_timer(never);
            advance_to(t != nullptr ? t->armed : now_ + 10ms);
        }
        check_all();
    }
    for (const auto* c : callers_)
        COROLOCK_MODEL_REQUIRE(c->completions == 1, *c, "completed " << c->completions << " times");
    for (int n = 0; n < names_; ++n) // what is left is a holder's, or was given back
        for (const auto& h : holds_[n])
            lapsed(h);
    finish();
}

bool acquire_model::step(bool faults) {
    auto w = weights_;
    if (!faults)
        w.arrive = w.cancel = w.drop = 0;
    int e = pick(w.execute + w.deliver + w.arrive + w.cancel + w.release + w.drop + w.reconnect +
                 w.fault + w.time + w.timer);
    auto drawn = [&](int weight) { return (e -= weight) < 0; };
    const int p = pick(processes_);
    if (drawn(w.execute))
        return execute(p);
    if (drawn(w.deliver))
        return deliver(p);
    if (drawn(w.arrive)) {
        const bool may = room();
        if (may)
            arrive(p);
        return may;
    }
    if (drawn(w.cancel)) {
        cancel_one();
        return true;
    }
    if (drawn(w.release)) {
        std::erase_if(holders_, [](const caller* c) { return c->released; });
        if (holders_.empty())
            return false;
        auto& c = *holders_[pick(static_cast<int>(holders_.size()))];
        note("caller " + std::to_string(c.owner) + " releases");
        c.released = true;
        release(c);
        return true;
    }
    if (drawn(w.drop)) {
        const bool dropped = drop(p);
        counts_["drops"] += dropped;
        return dropped;
    }
    if (drawn(w.reconnect))
        return reconnect(p);
    if (drawn(w.fault))
        return fault(p, faults);
    if (drawn(w.time)) {
        advance_to(now_ + std::chrono::milliseconds(pick(w.step_ms + 1)));
        return true;
    }
    const auto* t = next_timer(never); // the rest: to the next timer
    if (t != nullptr)
        advance_to(t->armed);
    return t != nullptr;
}

// One of the last few callers, most of them still waiting; a cancel after the completion must
// not complete it again.
void acquire_model::cancel_one() {
    if (callers_.empty())
        return;
    const int last = std::min(static_cast<int>(callers_.size()), 4);
    auto& c = *callers_[callers_.size() - 1 - pick(last)];
    const bool waits = c.completions == 0, kept = c.binding && c.out;
    note("caller " + std::to_string(c.owner) + " cancels");
    c.cancelled = true;
    cancel(c);
    if (!waits)
        return;
    ++counts_["cancels"];
    counts_["cancels kept"] += kept;
    if (kept)
        COROLOCK_MODEL_REQUIRE(c.completions == 0, c, "cut its binding attempt short at a cancel");
    else
        COROLOCK_MODEL_REQUIRE(c.completions == 1 && c.ec == boost::asio::error::operation_aborted,
                               c, "was cancelled, not completed with operation_aborted");
}

caller* acquire_model::next_timer(time_point by) const {
    caller* next = nullptr;
    for (auto* c : callers_)
        if (c->armed != never && c->armed <= by && (next == nullptr || c->armed < next->armed))
            next = c;
    return next;
}

// Timers fire in time order, none skipped: the clock stops at each. One armed again for a time
// already past, with nothing between, would spin.
void acquire_model::advance_to(time_point t) {
    int fired = 0;
    while (auto* c = next_timer(t)) {
        if (c->armed > now_)
            fired = 0;
        BOOST_REQUIRE_MESSAGE(++fired < 1000, "timers spin at one instant; " << trace());
        now_ = std::max(now_, c->armed);
        c->armed = never;
        on_timer(*c);
    }
    now_ = std::max(now_, t);
    on_time();
}

void acquire_model::check_all() {
    std::erase_if(holders_, [](const caller* c) { return c->released; });
    std::vector<int> units(names_);
    for (const auto* c : holders_) {
        if (!believed(*c))
            continue;
        units[c->lock] += c->units;
        COROLOCK_MODEL_REQUIRE(holder_of(*c), *c,
                               "believes it holds what the server did not grant");
    }
    for (int n = 0; n < names_; ++n)
        BOOST_REQUIRE_MESSAGE(units[n] <= capacity_,
                              units[n] << " units of lock " << n << " believed held; " << trace());
}

caller& acquire_model::add_caller(caller& c, int p) {
    c.owner = callers_.size() + 1;
    c.process = p;
    c.arrived = now_;
    callers_.push_back(&c);
    ++counts_["callers"];
    note("caller " + std::to_string(c.owner) + " arrives at p" + std::to_string(p) + " for lock " +
         std::to_string(c.lock) + (c.once ? ", once" : "") +
         (c.deadline == never ? ", no deadline" : ""));
    return c;
}

void acquire_model::attempt(caller& c) {
    COROLOCK_MODEL_REQUIRE(c.completions == 0, c, "attempts after it completed");
    COROLOCK_MODEL_REQUIRE(!c.out, c, "attempts with an attempt on the wire");
    COROLOCK_MODEL_REQUIRE(!c.unknown, c, "attempts again, its last attempt's outcome unknown");
    // At the deadline's own instant, its timer may be still to fire.
    COROLOCK_MODEL_REQUIRE(c.attempts == 0 || now_ < c.deadline || c.armed <= now_, c,
                           "retried past its deadline");
    ++c.attempts;
    c.out = true;
}

void acquire_model::answered(caller& c, bool known) {
    c.out = false;
    if (!known) {
        c.unknown = true;
        ++counts_["unknown outcomes"];
    }
}

void acquire_model::gave_back(caller& c) {
    COROLOCK_MODEL_REQUIRE(!c.binding, c, "gave back its binding attempt");
    c.gave_back = true;
    c.unknown = false; // the give-back goes ahead of anything sent next
    ++counts_["give-backs"];
}

void acquire_model::armed(caller& c, time_point at) {
    // The server bounds a binding attempt's wait: no timer cuts it short.
    COROLOCK_MODEL_REQUIRE(!c.binding || !c.out || at == never, c,
                           "armed a timer while its binding attempt is out");
    c.armed = at;
}

void acquire_model::completed(caller& c, error_code ec, bool granted, std::uint64_t token) {
    COROLOCK_MODEL_REQUIRE(++c.completions == 1, c, "completed twice");
    COROLOCK_MODEL_REQUIRE(!c.binding || !c.out, c, "completed with its binding attempt out");
    COROLOCK_MODEL_REQUIRE(now_ <= std::max(c.deadline, c.arrived) || (c.binding && c.answering), c,
                           "completed past its deadline");
    c.ec = ec;
    c.armed = never;
    counts_["timeouts"] += ec == error::acquire_timeout;
    if (!granted)
        return;
    ++counts_["grants"];
    c.granted = true;
    c.token = token;
    holders_.push_back(&c);
    const hold* h = holder_of(c);
    COROLOCK_MODEL_REQUIRE(h, c,
                           "was told it holds lock " << c.lock << ", not the server's holder");
    if (token == 0)
        return;
    auto& last = last_told_[c.lock];
    COROLOCK_MODEL_REQUIRE(h->token == token && token > last, c,
                           "was told token " << token << " (the server's: " << h->token
                                             << ") after token " << last);
    last = token;
}

// A hold that lapsed, or was left: its caller received it, gave it back (the give-back may come
// too late, or be lost with its connection: it is never re-sent) or has yet to read its reply
// (then check_kept applies). Anything else is a grant the client forgot.
void acquire_model::lapsed(const hold& h) const {
    const auto& c = caller_of(h.owner);
    COROLOCK_MODEL_REQUIRE(c.granted || c.out || c.gave_back, c,
                           "was granted, never received it and never gave it back");
}

std::uint64_t acquire_model::grant(int name, std::uint64_t owner, int units, time_point until,
                                   std::uint64_t token) {
    purge(name);
    auto& hs = holds_[name];
    std::erase_if(hs, [&](const hold& h) { return h.owner == owner; });
    BOOST_REQUIRE_MESSAGE(used(name) + units <= capacity_,
                          "the server granted " << units << " of lock " << name << " to caller "
                                                << owner << " with " << used(name) << " of "
                                                << capacity_ << " held; " << trace());
    hs.push_back({owner, units, until, token != 0 ? token : ++tokens_});
    return hs.back().token;
}

const acquire_model::hold* acquire_model::find(int name, std::uint64_t owner) const {
    for (const auto& h : holds_[name])
        if (h.owner == owner && now_ < h.until)
            return &h;
    return nullptr;
}

bool acquire_model::free(int name, std::uint64_t owner) {
    const bool was_live = find(name, owner) != nullptr;
    std::erase_if(holds_[name], [&](const hold& h) { return h.owner == owner; });
    return was_live;
}

bool acquire_model::renew(int name, std::uint64_t owner, time_point until) {
    for (auto& h : holds_[name])
        if (h.owner == owner && now_ < h.until) {
            h.until = until;
            return true;
        }
    return false;
}

int acquire_model::purge(int name) {
    return static_cast<int>(std::erase_if(holds_[name], [&](const hold& h) {
        if (now_ < h.until)
            return false;
        lapsed(h);
        return true;
    }));
}

int acquire_model::used(int name) const {
    int n = 0;
    for (const auto& h : holds_[name])
        n += now_ < h.until ? h.units : 0;
    return n;
}

void acquire_model::note(const std::string& line) {
    log_.push_back("[" + std::to_string((now_ - start_) / 1us) + "us] " + line);
    if (log_.size() > 60)
        log_.pop_front();
}

std::ostream& acquire_model::print(std::ostream& os) const {
    os << "t=" << (now_ - start_) / 1ms << " ms, " << callers_.size() << " callers, last events:";
    for (const auto& l : log_)
        os << "\n  " << l;
    return os;
}

// ---- the backends on a lock core

core_model::core_model(unsigned seed, const weights& w, int processes, int names, int capacity)
    : acquire_model(seed, w, processes, names, capacity),
      listening_(processes, std::vector<bool>(names)) {
    for (int p = 0; p < processes; ++p)
        cores_.emplace_back(seed * 7 + static_cast<unsigned>(p));
}

void core_model::perform(int p, const detail::lock_actions& out) {
    using kind = detail::lock_action::kind;
    for (const auto& x : out) {
        auto& c = static_cast<core_caller&>(*x.acq);
        if (x.what != kind::arm)
            note("caller " + std::to_string(c.owner) + ": " + text(x.what) +
                 (x.what == kind::complete ? " " + x.ec.message() : "") +
                 (x.granted ? ", granted" : ""));
        switch (x.what) {
        case kind::subscribe:
        case kind::unsubscribe: {
            // The name's first local waiter subscribes, its last one unsubscribes.
            const bool on = x.what == kind::subscribe;
            COROLOCK_MODEL_REQUIRE(listening_[p][c.lock] != on, c,
                                   (on ? "subscribed twice" : "unsubscribed, not subscribed"));
            listening_[p][c.lock] = on;
            listen(p, c.lock, on);
            break;
        }
        case kind::give_back:
            gave_back(c);
            send_give_back(p, c, x.keep_place);
            break;
        case kind::attempt:
            attempt(c);
            send_attempt(p, c);
            break;
        case kind::complete:
            completed(c, x.ec, x.granted, x.granted ? c.fsm.token() : 0);
            on_complete(p, c, x);
            break;
        case kind::arm:
            BOOST_REQUIRE(x.at == c.fsm.wake_at()); // the driver's timer reads wake_at()
            armed(c, x.at);
            break;
        }
    }
}

void core_model::finish() {
    for (int p = 0; p < processes_; ++p) {
        BOOST_TEST(cores_[p].waiters() == 0u);
        for (int n = 0; n < names_; ++n)
            BOOST_TEST(!listening_[p][n]);
    }
}

} // namespace corolock::test::model
