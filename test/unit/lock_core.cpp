// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock core's actions for the sequences that matter most, event by event (no server, no
// sleep): an uncontended acquire is one attempt with no subscription; a contended one subscribes
// ahead of its retry; a release with a local waiter hands over in the same write; the last
// waiter's departure unsubscribes; a stopped connection ends every queued waiter. Then the
// leases': a due lease is one renew batch (one slot a batch on a cluster); a failed renewal is
// retried until the deadline; TRYAGAIN splits a batch; a reply never revives a released lease;
// a refused renewal loses with its reason. The randomized model (model/redis_model.cpp,
// model/pg_model.cpp) drives the same core against models of Redis and PostgreSQL.
#include "core/lock_core.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_lock_core {

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
    const auto t = a.fsm.wake_at(); // the fallback timer (before the deadline)
    core.on_timer(a, t, out);
    out.clear();
    core.on_release_message("s", 1, t + 1ms, out);
    core.on_reply(a, held(), t + 2ms, out);
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
    // On a cluster only replies for the name's slot count: another master's say nothing of a
    // master that died (scale-out K3: a multi-lock's member try said acquire_timeout).
    lock_core sharded(1, true);
    acquisition c(p, "n"), d(p, "n");
    out.clear();
    sharded.start(c, t0, out);
    sharded.on_script_reply(sharded.slot_of("m")); // another slot
    out.clear();
    sharded.on_timer(c, t0 + 1s, out);
    BOOST_TEST(out[0].ec == error::server_timeout);
    out.clear();
    sharded.start(d, t0, out);
    sharded.on_script_reply(sharded.slot_of("{n}:fence")); // the name's own slot
    out.clear();
    sharded.on_timer(d, t0 + 1s, out);
    BOOST_TEST(out[0].ec == error::acquire_timeout);
}

// An acquisition destroyed without completing (its execution context shut down) leaves its
// queue with no action: nothing runs any more, and no dangling waiter stays behind.
BOOST_AUTO_TEST_CASE(a_forgotten_acquisition_leaves_its_queue_silently) {
    lock_core core(1);
    acquisition a(params(), "n"), b(params(), "n");
    lock_actions out;
    core.start(a, t0, out);
    core.on_reply(a, held(), t0 + 1ms, out); // a queues as head
    core.start(b, t0 + 2ms, out);            // b behind it
    BOOST_REQUIRE(core.waiters() == 2u);
    out.clear();
    core.forget(a);
    BOOST_TEST(out.empty());
    BOOST_TEST(core.waiters() == 1u);
    std::vector<const acquisition*> left;
    core.for_each_waiter([&](acquisition& x) { left.push_back(&x); });
    BOOST_TEST((left == std::vector<const acquisition*>{&b}));
    core.forget(b);
    BOOST_TEST(!core.has_waiters("n"));
    core.forget(b); // twice, or never queued: nothing
    acquisition c(params(), "n");
    core.forget(c);
    BOOST_TEST(core.waiters() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------------
// Leases: the watchdog's event (on_watchdog) and the renewals' replies (on_renew_reply), as the
// driver feeds them. Every lease is a lease_watch (the driver's lease_state derives from it).

namespace {

using corolock::lease_loss;
using corolock::detail::lease_action;
using corolock::detail::lease_actions;
using corolock::detail::lease_table;
using corolock::detail::lease_watch;
using corolock::detail::renew_reply;
using lkind = lease_action::kind;

lease_watch held_lease(std::uint16_t slot = 0) {
    lease_watch w;
    w.lease = 30s;
    w.drift = 300ms;
    w.cluster_slot = slot;
    return w;
}

// The lease actions as "kind@lease" strings (a renew: "renew@first+size").
std::vector<std::string> shown(const lease_actions& out) {
    std::vector<std::string> v;
    for (const auto& x : out) {
        std::ostringstream os;
        os << x.what;
        if (x.what == lkind::renew)
            os << "@" << static_cast<const void*>(x.batch.front()) << "+" << x.batch.size();
        else if (x.lease)
            os << "@" << static_cast<const void*>(x.lease);
        v.push_back(os.str());
    }
    return v;
}

std::string renew_of(std::initializer_list<const lease_watch*> batch) {
    std::ostringstream os;
    os << lkind::renew << "@" << static_cast<const void*>(*batch.begin()) << "+" << batch.size();
    return os.str();
}

std::string shown(lkind k, const lease_watch* w = nullptr) {
    std::ostringstream os;
    os << k;
    if (w)
        os << "@" << static_cast<const void*>(w);
    return os.str();
}

renew_reply answered(std::vector<bool> renewed, std::int64_t acks = -2) {
    renew_reply r;
    r.renewed = std::move(renewed);
    if (acks != -2)
        r.acks = acks;
    return r;
}

renew_reply failed(corolock::error e) {
    renew_reply r;
    r.ec = e;
    return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(lock_core_renewals)

BOOST_AUTO_TEST_CASE(a_due_lease_is_one_renew_batch) {
    lock_core core(1);
    lease_watch w = held_lease();
    lease_actions out;
    core.watch(w, t0, out);
    // Watched: the watchdog is needed by the lease's first renewal (lease/3).
    BOOST_TEST((shown(out) == std::vector<std::string>{shown(lkind::replan)}));
    BOOST_TEST((out[0].at == t0 + 10s));
    out.clear();
    core.on_watchdog(t0 + 5s, out); // nothing due yet: only the next wake-up
    BOOST_TEST((shown(out) == std::vector<std::string>{shown(lkind::arm)}));
    BOOST_TEST((out[0].at == t0 + 10s));
    out.clear();
    core.on_watchdog(t0 + 10s, out);
    BOOST_TEST((shown(out) == std::vector<std::string>{renew_of({&w}), shown(lkind::arm)}));
    BOOST_TEST(out[0].wait == nullptr); // no lease asks for replicas: no WAIT
    BOOST_TEST(w.renew_in_flight);
    BOOST_TEST((out[1].at == w.valid_until)); // in flight: only its deadline is watched
    out.clear();
    core.on_watchdog(t0 + 10s + 1ms, out); // in flight: not sent twice
    BOOST_TEST((shown(out) == std::vector<std::string>{shown(lkind::arm)}));
    // Off a cluster, leases of every slot share one call.
    lock_core one(1);
    lease_watch a = held_lease(1), b = held_lease(2);
    one.watch(a, t0, out);
    one.watch(b, t0, out);
    out.clear();
    one.on_watchdog(t0 + 10s, out);
    BOOST_TEST((shown(out) == std::vector<std::string>{renew_of({&a, &b}), shown(lkind::arm)}));
}

BOOST_AUTO_TEST_CASE(two_slots_on_a_cluster_are_two_renew_batches) {
    lock_core core(1, true);
    lease_watch a = held_lease(5), b = held_lease(9), c = held_lease(5);
    c.replicas = 2; // c's WAIT is its batch's
    c.wait_timeout = 50ms;
    c.count_connected = true;
    lease_actions out;
    for (auto* w : {&a, &b, &c})
        core.watch(*w, t0, out);
    out.clear();
    core.on_watchdog(t0 + 10s, out);
    BOOST_TEST((shown(out) ==
                std::vector<std::string>{renew_of({&a, &c}), renew_of({&b}), shown(lkind::arm)}));
    BOOST_TEST((out[0].batch == std::vector<lease_watch*>{&a, &c}));
    BOOST_TEST(out[0].wait == &c);
    BOOST_TEST(out[0].count_connected);
    BOOST_TEST(out[1].wait == nullptr);
}

BOOST_AUTO_TEST_CASE(a_failed_renewal_retries_until_the_deadline_then_loses) {
    lock_core core(1);
    lease_watch w = held_lease();
    lease_actions out;
    core.watch(w, t0, out);
    auto now = t0 + 10s;
    int retries = 0;
    for (;;) {
        out.clear();
        core.on_watchdog(now, out);
        if (out.front().what == lkind::lose)
            break;
        BOOST_REQUIRE((shown(out) == std::vector<std::string>{renew_of({&w}), shown(lkind::arm)}));
        const auto batch = out.front().batch;
        out.clear();
        const auto sent = now;
        now += 5ms;
        BOOST_TEST(core.on_renew_reply(batch, sent, failed(error::connection_lost), now, out) ==
                   false); // no answer from the server: no round trip
        BOOST_REQUIRE((shown(out) == std::vector<std::string>{shown(lkind::renew_failed, &w),
                                                              shown(lkind::replan)}));
        BOOST_TEST(out[0].ec == error::connection_lost);
        // Retried soon (1.1 s later), not at lease/3; the deadline, if it comes first.
        BOOST_TEST((w.next_renewal == now + 1100ms));
        BOOST_TEST((out[1].at == std::min(w.next_renewal, w.valid_until)));
        BOOST_TEST((w.valid_until == t0 + 30s - 300ms)); // not extended
        ++retries;
        now = out[1].at;
    }
    BOOST_TEST(retries > 10);
    BOOST_TEST((now >= t0 + 30s - 300ms));
    BOOST_TEST((shown(out) == std::vector<std::string>{shown(lkind::lose, &w), shown(lkind::arm)}));
    BOOST_TEST(out[0].why == error::lease_lost);
    BOOST_TEST(out[0].reason == lease_loss::expired);
    BOOST_TEST((out[1].at == clock_type::time_point::max())); // nothing left: the loop stops
    BOOST_TEST(!lease_table::contains(w));
}

BOOST_AUTO_TEST_CASE(a_tryagain_reply_splits_into_single_lease_renewals) {
    lock_core core(1, true);
    lease_watch a = held_lease(3), b = held_lease(3);
    b.replicas = 1;
    b.wait_timeout = 20ms;
    lease_actions out;
    core.watch(a, t0, out);
    core.watch(b, t0, out);
    out.clear();
    core.on_watchdog(t0 + 10s, out);
    BOOST_REQUIRE((shown(out) == std::vector<std::string>{renew_of({&a, &b}), shown(lkind::arm)}));
    const auto batch = out.front().batch;
    out.clear();
    BOOST_TEST(
        !core.on_renew_reply(batch, t0 + 10s, failed(error::try_again), t0 + 10s + 1ms, out));
    // Each lease alone, with its own WAIT; still in flight, no wake-up needed.
    BOOST_TEST((shown(out) == std::vector<std::string>{renew_of({&a}), renew_of({&b})}));
    BOOST_TEST(out[0].wait == nullptr);
    BOOST_TEST(out[1].wait == &b);
    BOOST_TEST((a.renew_in_flight && b.renew_in_flight));
    // A single lease refused with TRYAGAIN waits it out: a failed renewal, retried later.
    const auto single = out[0].batch;
    out.clear();
    BOOST_TEST(
        core.on_renew_reply(single, t0 + 10s, failed(error::try_again), t0 + 10s + 2ms, out));
    BOOST_TEST((shown(out) ==
                std::vector<std::string>{shown(lkind::renew_failed, &a), shown(lkind::replan)}));
    BOOST_TEST(out[0].ec == error::try_again);
    // The other's answer: renewed.
    const auto other = std::vector<lease_watch*>{&b};
    out.clear();
    BOOST_TEST(core.on_renew_reply(other, t0 + 10s, answered({true}, 1), t0 + 10s + 3ms, out));
    BOOST_TEST(
        (shown(out) == std::vector<std::string>{shown(lkind::renewed, &b), shown(lkind::replan)}));
    BOOST_TEST((b.valid_until == t0 + 40s - 300ms));
}

BOOST_AUTO_TEST_CASE(a_renewal_reply_for_a_lease_released_meanwhile_does_nothing) {
    lock_core core(1);
    lease_watch w = held_lease();
    lease_actions out;
    core.watch(w, t0, out);
    out.clear();
    core.on_watchdog(t0 + 10s, out);
    const auto batch = out.front().batch;
    core.leases().remove(w); // released while its renewal was out (lock_service::forget)
    for (const auto& r : {answered({true}), answered({false}), failed(error::connection_lost)}) {
        out.clear();
        core.on_renew_reply(batch, t0 + 10s, r, t0 + 10s + 1ms, out);
        // Nothing about the lease: not renewed, not lost, not retried.
        BOOST_TEST((shown(out) == std::vector<std::string>{shown(lkind::replan)}));
        BOOST_TEST((out[0].at == clock_type::time_point::max()));
        BOOST_TEST(!lease_table::contains(w));
    }
}

BOOST_AUTO_TEST_CASE(a_lost_renewal_loses_with_its_reason) {
    struct case_t {
        renew_reply reply;
        clock_type::duration answered_after;
        int replicas;
        error why;
        lease_loss reason;
    };
    const case_t cases[] = {
        // Redis said 0: the key is gone or someone else's.
        {answered({false}), 1ms, 0, error::lease_lost, lease_loss::renewal_refused},
        // Renewed, but answered after the local deadline: not trusted.
        {answered({true}), 20s, 0, error::lease_lost, lease_loss::expired},
        // Renewed on the master only.
        {answered({true}, 1), 1ms, 2, error::replicas_not_synced, lease_loss::replicas_not_synced},
    };
    for (const auto& c : cases) {
        lock_core core(1);
        lease_watch w = held_lease();
        w.replicas = c.replicas;
        lease_actions out;
        core.watch(w, t0, out);
        out.clear();
        core.on_watchdog(t0 + 10s, out);
        const auto batch = out.front().batch;
        out.clear();
        BOOST_TEST(core.on_renew_reply(batch, t0 + 10s, c.reply, t0 + 10s + c.answered_after, out));
        BOOST_TEST(
            (shown(out) == std::vector<std::string>{shown(lkind::lose, &w), shown(lkind::replan)}));
        BOOST_TEST(out[0].why == c.why);
        BOOST_TEST(out[0].reason == c.reason);
        if (c.why == error::replicas_not_synced)
            BOOST_TEST(out[0].acks == 1);
        BOOST_TEST(!lease_table::contains(w));
    }
    // A reply of the wrong length is a failure, retried: nothing is lost on a garbled answer.
    lock_core core(1);
    lease_watch w = held_lease();
    lease_actions out;
    core.watch(w, t0, out);
    out.clear();
    core.on_watchdog(t0 + 10s, out);
    const auto batch = out.front().batch;
    out.clear();
    core.on_renew_reply(batch, t0 + 10s, answered({true, true}), t0 + 10s + 1ms, out);
    BOOST_TEST((shown(out) ==
                std::vector<std::string>{shown(lkind::renew_failed, &w), shown(lkind::replan)}));
    BOOST_TEST(out[0].ec == error::unexpected_reply);
}

// A force-unlock message makes one lease's renewal go out now; a reconnect makes every watchdog
// lease due at once.
BOOST_AUTO_TEST_CASE(a_force_unlock_or_a_reconnect_renews_now) {
    lock_core core(1);
    lease_watch w = held_lease(), f = held_lease();
    f.watchdog = false; // a fixed lease: only its deadline is watched
    lease_actions out;
    core.watch(w, t0, out);
    core.watch(f, t0, out);
    out.clear();
    core.renew_now(w, out);
    BOOST_TEST((shown(out) == std::vector<std::string>{renew_of({&w})}));
    out.clear();
    core.on_reconnect(t0 + 1s, out);
    BOOST_TEST((shown(out) == std::vector<std::string>{shown(lkind::replan)}));
    BOOST_TEST((out[0].at == clock_type::time_point::min()));
    out.clear();
    core.on_watchdog(t0 + 1s, out);
    BOOST_TEST((shown(out) == std::vector<std::string>{renew_of({&w}), shown(lkind::arm)}));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_lock_core
