// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The decisions of one acquisition, event by event, with no server and no sleeps. Each race the
// lock has met is a test here: the events are fed in the racy order.
#include "core/acquire_fsm.hpp"

#include <boost/test/unit_test.hpp>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_acquire_fsm {

using corolock::error;
using corolock::error_code;
using corolock::detail::acquire_action;
using corolock::detail::acquire_fsm;
using corolock::detail::acquire_params;
using corolock::detail::attempt_reply;
using clock_type = std::chrono::steady_clock;
using state = acquire_fsm::state;
using namespace std::chrono_literals;

namespace {

const clock_type::time_point t0 = clock_type::time_point(100h);
const clock_type::time_point never = clock_type::time_point::max();

acquire_params params(clock_type::time_point deadline = never, bool once = false) {
    acquire_params p;
    p.deadline = deadline;
    p.once = once;
    p.lease = 30s;
    p.drift = 302ms;
    p.retry_base = 50ms;
    p.retry_max = 2s;
    return p;
}

attempt_reply granted(std::uint64_t token = 7) {
    attempt_reply r;
    r.what = attempt_reply::kind::granted;
    r.token = token;
    return r;
}
attempt_reply held(clock_type::duration ttl = 10s) {
    attempt_reply r;
    r.what = attempt_reply::kind::held;
    r.holder_ttl = ttl;
    return r;
}
attempt_reply unknown() {
    attempt_reply r;
    r.what = attempt_reply::kind::unknown;
    r.ec = error::connection_lost;
    return r;
}
attempt_reply failed(error_code ec) {
    attempt_reply r;
    r.what = attempt_reply::kind::failed;
    r.ec = ec;
    return r;
}

bool only_attempt(const acquire_action& a) {
    return a.attempt && !a.give_back && !a.join && !a.complete;
}
bool nothing(const acquire_action& a) {
    return !a.attempt && !a.give_back && !a.join && !a.complete;
}
bool completes(const acquire_action& a, error_code ec, bool granted = false) {
    return a.complete && a.ec == ec && a.granted == granted && !a.attempt;
}

struct fixture {
    std::minstd_rand rng{42};
};

// A waiting acquisition that has joined the queue and waits as head for its fallback timer.
acquire_fsm waiting_head(std::minstd_rand& rng, clock_type::time_point deadline = never) {
    acquire_fsm f(params(deadline));
    f.start(t0, false);
    f.on_reply(t0 + 1ms, held(), true, false, rng); // join + retry
    f.on_reply(t0 + 2ms, held(), true, false, rng); // now waits
    BOOST_REQUIRE_EQUAL(f.current(), state::waiting);
    return f;
}

} // namespace

BOOST_AUTO_TEST_SUITE(acquire_fsm_tests)

BOOST_FIXTURE_TEST_CASE(uncontended_acquire_is_one_attempt, fixture) {
    acquire_fsm f(params());
    const auto a = f.start(t0, false);
    BOOST_TEST(only_attempt(a), a);
    BOOST_TEST(f.current() == state::attempting);
    BOOST_TEST((f.wake_at() == never)); // no deadline: no timer
    const auto b = f.on_reply(t0 + 1ms, granted(99), false, false, rng);
    BOOST_TEST(completes(b, {}, true), b);
    BOOST_TEST(f.token() == 99u);
    BOOST_TEST((f.valid_until() == t0 + 30s - 302ms)); // from the send time, minus drift
    BOOST_TEST(f.current() == state::done);
    BOOST_TEST(!f.queued());
}

BOOST_FIXTURE_TEST_CASE(try_acquire_of_a_held_lock_is_an_empty_success, fixture) {
    acquire_fsm f(params(never, true));
    f.start(t0, true); // a try never queues, even behind local waiters
    BOOST_TEST(f.current() == state::attempting);
    const auto a = f.on_reply(t0 + 1ms, held(), false, false, rng);
    BOOST_TEST(completes(a, {}), a);
    BOOST_TEST(!a.join);
    BOOST_TEST(!f.queued());
}

BOOST_FIXTURE_TEST_CASE(held_lock_subscribes_before_the_retry, fixture) {
    acquire_fsm f(params());
    f.start(t0, false);
    const auto a = f.on_reply(t0 + 1ms, held(), true, false, rng);
    // Join (SUBSCRIBE) and retry in that order: the subscription is ahead of the retry on the
    // socket, so a release between the first attempt and the subscription is not missed.
    BOOST_TEST(a.join);
    BOOST_TEST(a.attempt);
    BOOST_TEST(!a.complete);
    BOOST_TEST(f.queued());
}

BOOST_FIXTURE_TEST_CASE(held_behind_local_waiters_joins_without_a_retry, fixture) {
    // A burst of acquisitions that all tried first: only the one that becomes head retries.
    acquire_fsm f(params(t0 + 5s));
    f.start(t0, false);
    const auto a = f.on_reply(t0 + 1ms, held(), /*head=*/false, false, rng);
    BOOST_TEST(a.join);
    BOOST_TEST(!a.attempt);
    BOOST_TEST(f.current() == state::waiting);
    BOOST_TEST((f.wake_at() == t0 + 5s));
}

BOOST_FIXTURE_TEST_CASE(behind_local_waiters_joins_without_an_attempt, fixture) {
    acquire_fsm f(params(t0 + 5s));
    const auto a = f.start(t0, true);
    BOOST_TEST(a.join);
    BOOST_TEST(!a.attempt);
    BOOST_TEST(f.current() == state::waiting);
    BOOST_TEST((f.wake_at() == t0 + 5s)); // not head: only the deadline
}

BOOST_FIXTURE_TEST_CASE(release_message_during_an_attempt_is_not_lost, fixture) {
    // The race of 7deb4ee: the head's attempt is on the wire when the release message arrives.
    // The queue keeps the wake-up; when the attempt comes back "held", the head tries again at
    // once instead of sleeping through its back-off.
    acquire_fsm f(params());
    f.start(t0, false);
    f.on_reply(t0 + 1ms, held(), true, false, rng); // join + retry on the wire
    const auto a = f.on_reply(t0 + 2ms, held(), true, /*woken=*/true, rng);
    BOOST_TEST(only_attempt(a), a);
    BOOST_TEST(f.current() == state::attempting);
}

BOOST_FIXTURE_TEST_CASE(without_a_message_the_head_backs_off, fixture) {
    auto f = waiting_head(rng);
    BOOST_TEST((f.wake_at() > t0 + 2ms));
    BOOST_TEST((f.wake_at() <= t0 + 2ms + 50ms)); // retry_base, the first ceiling
    const auto at = f.wake_at();
    BOOST_TEST(nothing(f.on_timer(at - 1ms, true))); // early: nothing
    const auto a = f.on_timer(at, true);
    BOOST_TEST(only_attempt(a), a);
}

BOOST_FIXTURE_TEST_CASE(back_off_is_capped_by_the_holder_ttl, fixture) {
    acquire_fsm f(params());
    f.start(t0, false);
    f.on_reply(t0, held(), true, false, rng);
    for (int i = 0; i < 20; ++i) { // the ceiling grows to retry_max (2 s)
        f.on_reply(t0, held(3ms), true, false, rng);
        BOOST_TEST((f.wake_at() <= t0 + 3ms));
        f.on_timer(f.wake_at(), true);
    }
}

BOOST_FIXTURE_TEST_CASE(a_message_wakes_a_waiting_head, fixture) {
    auto f = waiting_head(rng);
    BOOST_TEST(nothing(f.on_wake(t0 + 3ms, true, false, rng)));
    BOOST_TEST(only_attempt(f.on_wake(t0 + 3ms, true, true, rng)));
}

BOOST_FIXTURE_TEST_CASE(non_head_waits_to_be_promoted, fixture) {
    acquire_fsm f(params(t0 + 10s));
    f.start(t0, true);
    BOOST_TEST(nothing(f.on_wake(t0 + 1ms, false, false, rng))); // not head: nothing
    BOOST_TEST(nothing(f.on_timer(t0 + 1ms, false)));
    // Promoted with a wake-up pending (the old head left without consuming it): try now.
    BOOST_TEST(only_attempt(f.on_wake(t0 + 2ms, true, true, rng)));
}

BOOST_FIXTURE_TEST_CASE(promoted_without_a_message_uses_the_fallback_timer, fixture) {
    acquire_fsm f(params(t0 + 10s));
    f.start(t0, true);
    BOOST_TEST(nothing(f.on_wake(t0 + 2ms, true, false, rng)));
    BOOST_TEST((f.wake_at() <= t0 + 2ms + 50ms));
    BOOST_TEST(only_attempt(f.on_timer(f.wake_at(), true)));
}

BOOST_FIXTURE_TEST_CASE(late_grant_of_a_try_is_given_back_as_lease_lost, fixture) {
    acquire_fsm f(params(never, true));
    f.start(t0, false);
    const auto a = f.on_reply(t0 + 30s - 302ms, granted(), false, false, rng);
    BOOST_TEST(a.give_back);
    BOOST_TEST(!a.keep_place); // it ends: a fair lock's place goes with it
    BOOST_TEST(completes(a, error::lease_lost), a);
}

BOOST_FIXTURE_TEST_CASE(late_grant_of_a_wait_is_given_back_and_retried, fixture) {
    acquire_fsm f(params());
    f.start(t0, false);
    f.on_reply(t0, held(), true, false, rng); // queued, retry on the wire (sent at t0)
    const auto a = f.on_reply(t0 + 40s, granted(), true, false, rng);
    BOOST_TEST(a.give_back);
    BOOST_TEST(a.keep_place); // it goes on waiting: a fair lock's place stays
    BOOST_TEST(!a.complete);
    BOOST_TEST(f.current() == state::waiting);
    // With a wake-up pending it tries again at once, behind the give-back.
    acquire_fsm g(params());
    g.start(t0, false);
    g.on_reply(t0, held(), true, false, rng);
    const auto b = g.on_reply(t0 + 40s, granted(), true, true, rng);
    BOOST_TEST(b.give_back);
    BOOST_TEST(b.attempt);
}

BOOST_FIXTURE_TEST_CASE(cancel_while_the_script_is_on_the_wire, fixture) {
    acquire_fsm f(params());
    f.start(t0, false);
    const auto a = f.on_cancel();
    BOOST_TEST(completes(a, boost::asio::error::operation_aborted), a);
    BOOST_TEST(f.current() == state::abandoned);
    // The grant that arrives afterwards is undone, and nothing completes twice.
    const auto b = f.on_reply(t0 + 1ms, granted(), false, false, rng);
    BOOST_TEST(b.give_back);
    BOOST_TEST(!b.keep_place);
    BOOST_TEST(!b.complete);
    BOOST_TEST(f.current() == state::done);
    BOOST_TEST(nothing(f.on_cancel()));
    BOOST_TEST(nothing(f.on_stop()));
}

BOOST_FIXTURE_TEST_CASE(abandoned_attempt_that_found_the_lock_held_needs_no_undo, fixture) {
    acquire_fsm f(params());
    f.start(t0, false);
    f.on_cancel();
    BOOST_TEST(nothing(f.on_reply(t0 + 1ms, held(), false, false, rng)));
    acquire_fsm g(params());
    g.start(t0, false);
    g.on_cancel();
    BOOST_TEST(nothing(g.on_reply(t0 + 1ms, failed(error::wrong_type), false, false, rng)));
}

BOOST_FIXTURE_TEST_CASE(abandoned_attempt_with_unknown_outcome_is_undone, fixture) {
    acquire_fsm f(params());
    f.start(t0, false);
    f.on_stop();
    const auto a = f.on_reply(t0 + 1ms, unknown(), false, false, rng);
    BOOST_TEST(a.give_back);
    BOOST_TEST(!a.keep_place);
}

BOOST_FIXTURE_TEST_CASE(cancel_while_waiting, fixture) {
    auto f = waiting_head(rng);
    const auto a = f.on_cancel();
    BOOST_TEST(completes(a, boost::asio::error::operation_aborted), a);
    BOOST_TEST(!a.give_back); // nothing on the wire
    BOOST_TEST(f.current() == state::done);
    BOOST_TEST((f.wake_at() == never));
}

BOOST_FIXTURE_TEST_CASE(unknown_outcome_of_a_try_is_undone_and_reported, fixture) {
    // Review L3: a try_acquire whose reply was lost with the connection was never undone.
    acquire_fsm f(params(never, true));
    f.start(t0, false);
    const auto a = f.on_reply(t0 + 1ms, unknown(), false, false, rng);
    BOOST_TEST(a.give_back);
    BOOST_TEST(!a.keep_place);
    BOOST_TEST(completes(a, error::connection_lost), a);
}

BOOST_FIXTURE_TEST_CASE(unknown_outcome_while_waiting_is_undone_then_retried, fixture) {
    acquire_fsm f(params(t0 + 10s));
    f.start(t0, false);
    const auto a = f.on_reply(t0 + 1ms, unknown(), false, false, rng);
    BOOST_TEST(a.give_back);  // the undo goes first on the socket ...
    BOOST_TEST(a.keep_place); // ... keeping a fair lock's place in line ...
    BOOST_TEST(a.attempt);    // ... then the retry
    BOOST_TEST(!a.complete);
}

BOOST_FIXTURE_TEST_CASE(other_errors_end_the_acquire, fixture) {
    for (error e :
         {error::wrong_type, error::server_error, error::not_connected, error::unexpected_reply}) {
        acquire_fsm f(params());
        f.start(t0, false);
        const auto a = f.on_reply(t0 + 1ms, failed(e), false, false, rng);
        BOOST_TEST(completes(a, e), a);
        BOOST_TEST(!a.give_back);
    }
}

BOOST_FIXTURE_TEST_CASE(deadline_while_the_script_is_on_the_wire, fixture) {
    // A stalled server cannot hold the caller past its deadline; its late grant is undone.
    acquire_fsm f(params(t0 + 30ms));
    f.start(t0, false);
    BOOST_TEST((f.wake_at() == t0 + 30ms));
    BOOST_TEST(nothing(f.on_timer(t0 + 29ms, false)));
    const auto a = f.on_timer(t0 + 30ms, false);
    // No reply ever said "held": the caller learns that the server, not the lock, kept it.
    BOOST_TEST(completes(a, error::server_timeout), a);
    BOOST_TEST(f.on_reply(t0 + 150ms, granted(), false, false, rng).give_back);
}

BOOST_FIXTURE_TEST_CASE(deadline_on_the_wire_after_the_lock_was_seen_held, fixture) {
    // Held once, then the fallback attempt is unanswered at the deadline: contention.
    auto f = waiting_head(rng, t0 + 40ms);
    auto a = f.on_timer(f.wake_at(), true);
    BOOST_REQUIRE(a.attempt);
    a = f.on_timer(t0 + 40ms, true);
    BOOST_TEST(completes(a, error::acquire_timeout), a);
}

// A live server that answered other scripts meanwhile is not a stalled one: a deadline shorter
// than the attempt's round trip under load is a timeout, not the server's failure.
BOOST_FIXTURE_TEST_CASE(deadline_on_the_wire_with_a_live_server_is_a_timeout, fixture) {
    acquire_fsm f(params(t0 + 5ms));
    f.start(t0, false);
    const auto a = f.on_timer(t0 + 5ms, false, true);
    BOOST_TEST(completes(a, error::acquire_timeout), a);
}

BOOST_FIXTURE_TEST_CASE(a_try_bounded_by_its_deadline_says_server_timeout, fixture) {
    // A try has a deadline (mutex_options::try_timeout): a stalled server ends it there.
    acquire_fsm f(params(t0 + 1s, true));
    BOOST_TEST(only_attempt(f.start(t0, false)));
    BOOST_TEST((f.wake_at() == t0 + 1s));
    const auto a = f.on_timer(t0 + 1s, false);
    BOOST_TEST(completes(a, error::server_timeout), a);
    BOOST_TEST(f.on_reply(t0 + 3s, unknown(), false, false, rng).give_back);
}

BOOST_FIXTURE_TEST_CASE(deadline_while_waiting, fixture) {
    auto f = waiting_head(rng, t0 + 20ms);
    BOOST_TEST((f.wake_at() <= t0 + 20ms));
    auto now = f.wake_at();
    acquire_action a = f.on_timer(now, true);
    while (a.attempt) { // fallback attempts until the deadline
        a = f.on_reply(now, held(), true, false, rng);
        now = f.wake_at();
        a = f.on_timer(now, true);
    }
    BOOST_TEST(completes(a, error::acquire_timeout), a);
    BOOST_TEST((now <= t0 + 20ms));
}

BOOST_FIXTURE_TEST_CASE(zero_wait_is_one_attempt_then_timeout, fixture) {
    acquire_fsm f(params(t0));
    f.start(t0, false);
    const auto a = f.on_timer(t0, false);
    // A deadline already past at the send (acquire_for(0)) gave the server no time: a timeout.
    BOOST_TEST(completes(a, error::acquire_timeout), a);
}

BOOST_FIXTURE_TEST_CASE(stop_in_every_state_completes_once, fixture) {
    acquire_fsm attempting(params());
    attempting.start(t0, false);
    BOOST_TEST(completes(attempting.on_stop(), error::not_connected));
    BOOST_TEST(attempting.current() == state::abandoned);

    auto waiting = waiting_head(rng);
    BOOST_TEST(completes(waiting.on_stop(), error::not_connected));
    BOOST_TEST(waiting.current() == state::done);

    acquire_fsm done(params());
    done.start(t0, false);
    done.on_reply(t0, granted(), false, false, rng);
    BOOST_TEST(nothing(done.on_stop()));
    BOOST_TEST(nothing(done.on_cancel()));
    BOOST_TEST(nothing(done.on_timer(t0 + 1h, true)));
    BOOST_TEST(nothing(done.on_wake(t0 + 1h, true, true, rng)));
    BOOST_TEST(nothing(done.on_reply(t0, granted(), false, false, rng))); // no second grant
}

BOOST_FIXTURE_TEST_CASE(far_deadlines_do_not_overflow, fixture) {
    // acquire_for(huge) saturates to time_point::max(): it waits, it does not time out at once.
    auto f = waiting_head(rng, never - 1ns);
    BOOST_TEST((f.wake_at() < t0 + 1s));
    BOOST_TEST(!f.on_timer(f.wake_at(), true).complete);
}

BOOST_FIXTURE_TEST_CASE(grant_without_enough_replicas_is_given_back, fixture) {
    auto p = params();
    p.replicas = 2;
    acquire_fsm f(p);
    f.start(t0, false);
    auto r = granted(5);
    r.acks = 1;
    const auto a = f.on_reply(t0 + 1ms, r, true, false, rng);
    BOOST_TEST(a.give_back, a);
    BOOST_TEST(completes(a, corolock::error::replicas_not_synced), a);
    BOOST_TEST(f.current() == state::done);
    // WAIT failed (-1): refused as well; enough acks: granted.
    acquire_fsm g(p);
    g.start(t0, false);
    r.acks = -1;
    BOOST_TEST(
        completes(g.on_reply(t0 + 1ms, r, true, false, rng), corolock::error::replicas_not_synced));
    acquire_fsm h(p);
    h.start(t0, false);
    r.acks = 2;
    BOOST_TEST(completes(h.on_reply(t0 + 1ms, r, true, false, rng), {}, true));
}

// A kind whose refused attempts leave a record on the server (a writer's intent, a semaphore
// waiter's reservation, a fair lock waiter's place): every way of ending without a grant after a
// refusal gives the record back; ending without ever being refused sends nothing.
BOOST_FIXTURE_TEST_CASE(a_record_left_by_a_refusal_is_given_back_on_every_exit, fixture) {
    auto with_record = [](clock_type::time_point deadline = never) {
        auto p = params(deadline);
        p.leaves_record = true;
        return acquire_fsm(p);
    };
    {
        auto f = with_record();
        f.start(t0, false);
        f.on_reply(t0 + 1ms, held(), true, false, rng);
        f.on_reply(t0 + 2ms, held(), true, false, rng); // waiting
        const auto a = f.on_cancel();
        BOOST_TEST(a.complete);
        BOOST_TEST(a.give_back); // cancelled while waiting
    }
    {
        auto f = with_record(t0 + 1s);
        f.start(t0, false);
        f.on_reply(t0 + 1ms, held(), true, false, rng);
        f.on_reply(t0 + 2ms, held(), true, false, rng);
        const auto a = f.on_timer(t0 + 1s, true);
        BOOST_TEST(a.complete);
        BOOST_TEST(a.ec == error::acquire_timeout);
        BOOST_TEST(a.give_back); // timed out
    }
    {
        auto f = with_record();
        f.start(t0, false);
        f.on_reply(t0 + 1ms, held(), true, false, rng); // join + retry: on the wire
        const auto a = f.on_cancel();                   // abandoned with an attempt out
        BOOST_TEST(!a.give_back);                       // its reply decides
        const auto b = f.on_reply(t0 + 2ms, held(), true, false, rng);
        BOOST_TEST(b.give_back); // refused again: its record is there
    }
    {
        auto f = with_record();
        f.start(t0, false);
        f.on_reply(t0 + 1ms, held(), true, false, rng);
        f.on_reply(t0 + 2ms, held(), true, false, rng);
        BOOST_TEST(f.on_stop().give_back); // the connection stopped
    }
    {
        auto f = with_record();
        f.start(t0, false); // never refused
        f.on_cancel();
        const auto a = f.on_reply(t0 + 1ms, held(), true, false, rng);
        BOOST_TEST(a.give_back); // a refused attempt of a record kind may have recorded
    }
    {
        acquire_fsm f(params()); // a plain mutex leaves nothing
        f.start(t0, false);
        f.on_reply(t0 + 1ms, held(), true, false, rng);
        f.on_reply(t0 + 2ms, held(), true, false, rng);
        BOOST_TEST(!f.on_cancel().give_back);
    }
}

// A binding attempt (a locked transaction: it commits if it gets the lock) is the caller's work:
// its outcome, success or not, is the caller's; no deadline or cancel cuts it short.
acquire_params binding(clock_type::time_point deadline = never) {
    auto p = params(deadline);
    p.binding = true;
    return p;
}

attempt_reply concluded(error_code ec) {
    auto r = failed(ec);
    r.what = attempt_reply::kind::concluded;
    return r;
}

BOOST_FIXTURE_TEST_CASE(a_binding_attempt_is_not_cut_short_by_its_deadline, fixture) {
    acquire_fsm f(binding(t0 + 10ms));
    BOOST_TEST(only_attempt(f.start(t0, false)));
    BOOST_TEST((f.wake_at() == never)); // the server bounds the attempt's wait
    BOOST_TEST(nothing(f.on_timer(t0 + 20ms, true, false)));
    BOOST_TEST(f.current() == state::attempting);
    // It committed after the deadline: that is the caller's outcome, not a timeout.
    const auto a = f.on_reply(t0 + 30ms, concluded({}), true, false, rng);
    BOOST_TEST(completes(a, {}), a);
    BOOST_TEST(!a.give_back);
}

BOOST_FIXTURE_TEST_CASE(a_binding_attempt_back_busy_after_the_deadline_times_out, fixture) {
    acquire_fsm f(binding(t0 + 10ms));
    f.start(t0, false);
    const auto a = f.on_reply(t0 + 20ms, held(), true, true, rng); // woken, but too late
    BOOST_TEST(completes(a, error::acquire_timeout), a);
    BOOST_TEST(!a.attempt); // no attempt starts past the deadline
}

BOOST_FIXTURE_TEST_CASE(a_cancel_waits_for_the_binding_attempt_on_the_wire, fixture) {
    {
        acquire_fsm f(binding());
        f.start(t0, false);
        BOOST_TEST(nothing(f.on_cancel())); // the transaction may commit: wait for it
        BOOST_TEST(f.current() == state::attempting);
        const auto a = f.on_reply(t0 + 1ms, concluded({}), true, false, rng);
        BOOST_TEST(completes(a, {}), a); // it did: reported as it is
    }
    {
        acquire_fsm f(binding());
        f.start(t0, false);
        f.on_cancel();
        const auto a = f.on_reply(t0 + 1ms, held(), true, true, rng); // busy: nothing ran
        BOOST_TEST(completes(a, boost::asio::error::operation_aborted), a);
        BOOST_TEST(!a.join);
    }
    {
        acquire_fsm f(binding());
        f.start(t0, false);
        f.on_reply(t0 + 1ms, held(), true, false, rng); // join + retry
        f.on_reply(t0 + 2ms, held(), true, false, rng); // waits for a wake-up
        BOOST_REQUIRE(f.current() == state::waiting);
        BOOST_TEST(completes(f.on_cancel(), boost::asio::error::operation_aborted)); // at once
    }
}

BOOST_FIXTURE_TEST_CASE(a_stopped_connection_waits_for_the_binding_attempt_on_the_wire, fixture) {
    acquire_fsm f(binding());
    f.start(t0, false);
    BOOST_TEST(nothing(f.on_stop())); // its failed reply will say what is known
    const auto a = f.on_reply(t0 + 1ms, concluded(error::connection_lost), true, false, rng);
    BOOST_TEST(completes(a, error::connection_lost), a);
    acquire_fsm g(binding());
    g.start(t0, false);
    g.on_reply(t0 + 1ms, held(), true, false, rng);
    g.on_reply(t0 + 2ms, held(), true, false, rng); // waiting: nothing on the wire
    BOOST_TEST(completes(g.on_stop(), error::not_connected));
}

BOOST_FIXTURE_TEST_CASE(a_concluded_attempt_is_never_sent_again, fixture) {
    acquire_fsm f(binding());
    f.start(t0, false);
    // Its connection dropped mid-transaction: the outcome is unknown, and the caller's.
    const auto a = f.on_reply(t0 + 1ms, concluded(error::connection_lost), true, false, rng);
    BOOST_TEST(completes(a, error::connection_lost), a);
    BOOST_TEST(!a.give_back);
}

BOOST_FIXTURE_TEST_CASE(a_held_reply_past_the_deadline_completes_at_once, fixture) {
    acquire_fsm f(params(t0 + 10ms));
    f.start(t0, false);
    f.on_reply(t0 + 1ms, held(), true, false, rng); // join + retry
    const auto a = f.on_reply(t0 + 11ms, held(), true, true, rng);
    BOOST_TEST(completes(a, error::acquire_timeout), a);
    BOOST_TEST(f.current() == state::done);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_acquire_fsm
