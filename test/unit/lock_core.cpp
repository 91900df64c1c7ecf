// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock core's actions for the sequences that matter most, event by event (no server, no
// sleep): an uncontended acquire is one attempt with no subscription; a contended one subscribes
// ahead of its retry; a release with a local waiter hands over in the same write; the last
// waiter's departure unsubscribes; a stopped connection ends every queued waiter. The randomized
// model (lock_model.cpp) drives the same core against a model of Redis.
#include "core/lock_core.hpp"

#include <boost/test/unit_test.hpp>

#include <sstream>
#include <string>
#include <vector>

using corolock::error;
using corolock::detail::acquire_params;
using corolock::detail::acquisition;
using corolock::detail::attempt_reply;
using corolock::detail::lock_action;
using corolock::detail::lock_actions;
using corolock::detail::lock_core;
using clock_type = std::chrono::steady_clock;
using kind = lock_action::kind;
using namespace std::chrono_literals;

namespace {

const clock_type::time_point t0 = clock_type::time_point(1h);

acquire_params params(bool once = false) {
    acquire_params p;
    p.once = once;
    p.deadline = t0 + 10s;
    p.lease = 30s;
    p.drift = 300ms;
    p.retry_base = 10ms;
    p.retry_max = 1s;
    return p;
}

// The actions but the timer's, as "kind@acquisition's address" strings.
std::vector<std::string> shown(const lock_actions& out) {
    std::vector<std::string> v;
    for (const auto& x : out)
        if (x.what != kind::arm) {
            std::ostringstream os;
            os << x.what << "@" << static_cast<const void*>(x.acq);
            v.push_back(os.str());
        }
    return v;
}

std::vector<std::string> seq(std::initializer_list<std::pair<kind, const acquisition*>> l) {
    std::vector<std::string> v;
    for (const auto& [k, a] : l) {
        std::ostringstream os;
        os << k << "@" << static_cast<const void*>(a);
        v.push_back(os.str());
    }
    return v;
}

attempt_reply held() {
    attempt_reply r;
    r.what = attempt_reply::kind::held;
    r.holder_ttl = 5s;
    return r;
}

attempt_reply granted(std::uint64_t token) {
    attempt_reply r;
    r.what = attempt_reply::kind::granted;
    r.token = token;
    return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(lock_core_actions)

BOOST_AUTO_TEST_CASE(uncontended_acquire_is_one_attempt_and_no_subscription) {
    lock_core core(1);
    acquisition a(params(), "n");
    lock_actions out;
    core.start(a, t0, out);
    BOOST_TEST((shown(out) == seq({{kind::attempt, &a}})));
    BOOST_TEST(out.back().what == kind::arm); // every event ends with the timer's time
    out.clear();
    core.on_reply(a, granted(7), t0 + 1ms, out);
    BOOST_TEST((shown(out) == seq({{kind::complete, &a}})));
    BOOST_TEST(out.front().granted);
    BOOST_TEST(a.fsm.token() == 7u);
    BOOST_TEST(!core.has_waiters("n"));
}

BOOST_AUTO_TEST_CASE(contended_acquire_subscribes_ahead_of_its_retry) {
    lock_core core(1);
    acquisition a(params(), "n");
    lock_actions out;
    core.start(a, t0, out);
    out.clear();
    core.on_reply(a, held(), t0 + 1ms, out);
    // The SUBSCRIBE goes out before the retry: a release between the two cannot be missed.
    BOOST_TEST((shown(out) == seq({{kind::subscribe, &a}, {kind::attempt, &a}})));
    BOOST_TEST(core.waiters() == 1u);
    out.clear();
    core.on_reply(a, granted(3), t0 + 2ms, out);
    // The last waiter leaves: unsubscribe, then complete.
    BOOST_TEST((shown(out) == seq({{kind::unsubscribe, &a}, {kind::complete, &a}})));
    BOOST_TEST(core.waiters() == 0u);
}

BOOST_AUTO_TEST_CASE(a_release_with_a_local_waiter_hands_over_at_most_four_times_in_a_row) {
    lock_core core(1);
    acquisition a(params(), "n");
    lock_actions out;
    core.start(a, t0, out);
    core.on_reply(a, held(), t0, out);
    core.on_reply(a, held(), t0, out); // waiting now, as the queue's head
    out.clear();
    for (int i = 0; i < 4; ++i) {
        BOOST_TEST(core.release_hands_over("n"));
        BOOST_TEST(core.hand_off("n", 1, t0 + 1ms, out));
        BOOST_TEST((shown(out) == seq({{kind::attempt, &a}}))); // right behind the release
        out.clear();
        core.on_reply(a, held(), t0 + 2ms, out); // someone else was faster
        out.clear();
        // The hand-off's own release message wakes nobody.
        BOOST_TEST(!core.on_release_message("n", 1, t0 + 3ms, out));
        BOOST_TEST(out.empty());
    }
    BOOST_TEST(!core.release_hands_over("n"));                  // the fifth goes out plain
    BOOST_TEST(core.on_release_message("n", 1, t0 + 4ms, out)); // a message now wakes the head
    BOOST_TEST((shown(out) == seq({{kind::attempt, &a}})));
}

// A semaphore's release of k permits lets its k first local waiters retry, one after another:
// each grant passes the wake-ups left to the next head (no fallback timer in between).
BOOST_AUTO_TEST_CASE(a_release_of_k_permits_wakes_k_local_waiters_in_turn) {
    lock_core core(1);
    acquisition a(params(), "s"), b(params(), "s"), c(params(), "s"), d(params(), "s");
    for (auto* x : {&a, &b, &c, &d})
        x->capacity = 3; // a semaphore of 3
    lock_actions out;
    core.start(a, t0, out);
    core.on_reply(a, held(), t0, out); // joins and subscribes; retries
    core.on_reply(a, held(), t0, out); // waiting, head
    for (auto* x : {&b, &c, &d})
        core.start(*x, t0, out); // queued behind a
    out.clear();
    BOOST_TEST(core.on_release_message("s", 2, t0 + 1ms, out)); // "permits 2"
    BOOST_TEST((shown(out) == seq({{kind::attempt, &a}})));
    out.clear();
    core.on_reply(a, granted(0), t0 + 2ms, out);
    // a leaves with its grant; b, the new head, has the second wake-up: it tries at once.
    BOOST_TEST((shown(out) == seq({{kind::attempt, &b}, {kind::complete, &a}})));
    out.clear();
    core.on_reply(b, granted(0), t0 + 3ms, out);
    // Two permits, two retries: c waits for the next message or its timer.
    BOOST_TEST((shown(out) == seq({{kind::complete, &b}})));
    BOOST_TEST(c.fsm.current() == corolock::detail::acquire_fsm::state::waiting);
}

// A head refused with no message since its attempt went out drops the wake-ups still pending:
// they were for permits someone else took, and would make it retry once per waiter (review:
// 1,000 queued readers, 1,000 scripts per release).
BOOST_AUTO_TEST_CASE(a_refused_head_drops_stale_wake_ups) {
    lock_core core(1);
    acquisition a(params(), "s"), b(params(), "s"), c(params(), "s");
    for (auto* x : {&a, &b, &c})
        x->capacity = 3;
    lock_actions out;
    core.start(a, t0, out);
    core.on_reply(a, held(), t0, out);
    core.on_reply(a, held(), t0, out); // waiting, head
    core.start(b, t0, out);
    core.start(c, t0, out);
    out.clear();
    BOOST_TEST(core.on_release_message("s", 3, t0 + 1ms, out)); // "permits 3"
    BOOST_TEST((shown(out) == seq({{kind::attempt, &a}})));
    out.clear();
    core.on_reply(a, held(), t0 + 2ms, out); // taken by another process meanwhile
    BOOST_TEST(shown(out).empty());          // no retry for the two stale wake-ups
    // A message that comes while the attempt is out is not stale: it makes the head retry.
    core.on_timer(a, a.fsm.wake_at(), out);
    out.clear();
    core.on_release_message("s", 1, a.fsm.wake_at() + 1ms, out);
    core.on_reply(a, held(), a.fsm.wake_at() + 2ms, out);
    BOOST_TEST((shown(out) == seq({{kind::attempt, &a}})));
}

// A shared_mutex's waiters are independent too: a reader's release ("released") wakes the local
// writers only; a writer's ("all") every waiter.
BOOST_AUTO_TEST_CASE(a_readers_release_wakes_writers_only) {
    lock_core core(1);
    acquisition r(params(), "rw"), w(params(), "rw");
    r.independent = w.independent = true;
    w.writer = true;
    lock_actions out;
    for (auto* x : {&r, &w}) {
        core.start(*x, t0, out);
        core.on_reply(*x, held(), t0 + 1ms, out);
        core.on_reply(*x, held(), t0 + 2ms, out);
    }
    out.clear();
    BOOST_TEST(core.on_independent_message("rw", {}, true, t0 + 3ms, out));
    BOOST_TEST((shown(out) == seq({{kind::attempt, &w}})));
    out.clear();
    core.on_reply(w, held(), t0 + 4ms, out);
    out.clear();
    BOOST_TEST(core.on_independent_message("rw", {}, false, t0 + 5ms, out));
    BOOST_TEST((shown(out) == seq({{kind::attempt, &r}, {kind::attempt, &w}})));
}

// A fair lock's waiters attempt on their own (no local queue order), and a release message wakes
// only the waiter it names; nobody named (a reconnect, an empty line) wakes every one. A fair
// queue never hands over locally: the server's line says who is next.
BOOST_AUTO_TEST_CASE(a_fair_release_message_wakes_only_the_named_waiter) {
    lock_core core(1);
    acquisition a(params(), "f"), b(params(), "f");
    a.independent = b.independent = true;
    a.record_member = "owner-a";
    b.record_member = "owner-b";
    lock_actions out;
    core.start(a, t0, out);
    core.start(b, t0, out);
    out.clear();
    // Both attempt at once: neither waits behind the other locally.
    BOOST_TEST(a.fsm.current() == corolock::detail::acquire_fsm::state::attempting);
    BOOST_TEST(b.fsm.current() == corolock::detail::acquire_fsm::state::attempting);
    for (auto* x : {&a, &b}) {
        core.on_reply(*x, held(), t0 + 1ms, out); // joins (subscribes) and retries
        core.on_reply(*x, held(), t0 + 2ms, out); // waits for a message or its timer
    }
    out.clear();
    BOOST_TEST(core.on_independent_message("f", "owner-b", false, t0 + 3ms, out));
    BOOST_TEST((shown(out) == seq({{kind::attempt, &b}})));
    out.clear();
    BOOST_TEST(!core.on_independent_message("f", "someone-elsewhere", false, t0 + 4ms, out));
    BOOST_TEST(shown(out).empty());
    BOOST_TEST(
        core.on_independent_message("f", "", false, t0 + 5ms, out)); // a reconnect: everyone checks
    BOOST_TEST((shown(out) == seq({{kind::attempt, &a}})));          // b's attempt is still out
    BOOST_TEST(!core.release_hands_over("f"));
}

BOOST_AUTO_TEST_CASE(a_try_never_queues_and_a_second_acquire_queues_behind_the_first) {
    lock_core core(1);
    acquisition a(params(), "n"), b(params(), "n"), t(params(true), "n");
    lock_actions out;
    core.start(a, t0, out);
    core.on_reply(a, held(), t0, out); // a queues (head)
    out.clear();
    core.start(b, t0, out); // behind a: joins, no attempt of its own
    BOOST_TEST((shown(out) == std::vector<std::string>{}));
    BOOST_TEST(core.waiters() == 2u);
    core.start(t, t0, out); // a try makes its one attempt, never queued
    BOOST_TEST((shown(out) == seq({{kind::attempt, &t}})));
    out.clear();
    core.on_reply(t, held(), t0, out);
    BOOST_TEST((shown(out) == seq({{kind::complete, &t}})));
    BOOST_TEST(!out.front().granted);
    BOOST_TEST(!out.front().ec);
    out.clear();
    // a is cancelled with its attempt on the wire: b becomes the head.
    core.cancel(a, t0 + 1ms, out);
    BOOST_TEST(core.waiters() == 1u);
    // b, promoted first, arms its fallback timer (no message came); then a completes.
    BOOST_TEST((shown(out) == seq({{kind::complete, &a}})));
    BOOST_TEST(out[0].what == kind::arm);
    BOOST_TEST(out[0].acq == &b);
    BOOST_TEST((out[0].at > t0 && out[0].at < t0 + 2s));
    BOOST_TEST(out[1].ec == boost::asio::error::operation_aborted);
    out.clear();
    // a's attempt comes back granted after it stopped waiting: given back.
    core.on_reply(a, granted(9), t0 + 2ms, out);
    BOOST_TEST((shown(out) == seq({{kind::give_back, &a}})));
}

BOOST_AUTO_TEST_CASE(a_stopped_connection_ends_every_queued_waiter) {
    lock_core core(1);
    acquisition a(params(), "n"), b(params(), "n");
    lock_actions out;
    core.start(a, t0, out);
    core.on_reply(a, held(), t0, out);
    core.on_reply(a, held(), t0, out);
    core.start(b, t0, out);
    out.clear();
    core.stop(t0 + 1ms, out);
    int completed = 0;
    for (const auto& x : out)
        if (x.what == kind::complete) {
            ++completed;
            BOOST_TEST(x.ec == error::not_connected);
        }
    BOOST_TEST(completed == 2);
    BOOST_TEST(core.waiters() == 0u);
    BOOST_TEST(!core.has_waiters("n"));
}

BOOST_AUTO_TEST_CASE(a_deadline_with_no_reply_since_the_attempt_is_the_servers_timeout) {
    lock_core core(1);
    acquire_params p = params();
    p.deadline = t0 + 1s;
    acquisition a(p, "n"), other(params(), "m");
    lock_actions out;
    core.start(a, t0, out);
    out.clear();
    core.on_timer(a, t0 + 1s, out); // nothing answered since the attempt
    BOOST_TEST(out[0].ec == error::server_timeout);
    // The same, with a reply of this connection meanwhile: the lock's timeout.
    acquisition b(p, "n");
    out.clear();
    core.start(b, t0, out);
    core.on_script_reply();
    out.clear();
    core.on_timer(b, t0 + 1s, out);
    BOOST_TEST(out[0].ec == error::acquire_timeout);
}

BOOST_AUTO_TEST_SUITE_END()
