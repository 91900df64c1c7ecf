// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// RedLock's decisions with no server and no sleeps: the tally and the acquisition for every
// vote and every arrival order of N = 3 and 5, late replies, validity, the retry schedule,
// cancellation, and the held lease's quorum extensions and release.
#include "core/redlock_fsm.hpp"

#include "core/redlock_scripts.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_redlock_fsm {

using corolock::error;
using corolock::error_code;
using corolock::detail::decode_vote;
using corolock::detail::redlock_acquire_fsm;
using corolock::detail::redlock_action;
using corolock::detail::redlock_hold_params;
using corolock::detail::redlock_lease_action;
using corolock::detail::redlock_lease_fsm;
using corolock::detail::redlock_params;
using corolock::detail::redlock_tally;
using corolock::detail::vote;
using clock_type = std::chrono::steady_clock;
using outcome = redlock_tally::outcome;
using state = redlock_acquire_fsm::state;
using namespace std::chrono_literals;

namespace {

const clock_type::time_point t0 = clock_type::time_point(100h);
const clock_type::time_point never = clock_type::time_point::max();
constexpr clock_type::duration lease = 10s;
constexpr auto drift = 102ms; // lease × 0.01 + 2 ms
constexpr auto node_timeout = 500ms;

redlock_params params(std::size_t n, clock_type::time_point deadline = never, bool once = false) {
    redlock_params p;
    p.nodes = n;
    p.deadline = deadline;
    p.once = once;
    p.lease = lease;
    p.drift = drift;
    p.node_timeout = node_timeout;
    p.retry_base = 50ms;
    p.retry_max = 2s;
    return p;
}

// The expected outcome of a set of votes, from the definition (not from the code under test).
outcome oracle(std::size_t n, std::size_t granted, std::size_t decided) {
    const std::size_t q = n / 2 + 1;
    if (granted >= q)
        return outcome::reached;
    if (granted + (n - decided) < q)
        return outcome::impossible;
    return outcome::pending;
}

// Calls f(votes, order) for every vote per node and every arrival order of N nodes.
template <class F>
void for_every_vote_and_order(std::size_t n, F f) {
    std::size_t combos = 1;
    for (std::size_t i = 0; i < n; ++i)
        combos *= 3;
    for (std::size_t c = 0; c < combos; ++c) {
        std::vector<vote> votes(n);
        for (std::size_t i = 0, x = c; i < n; ++i, x /= 3)
            votes[i] = static_cast<vote>(x % 3);
        std::vector<std::size_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        do
            f(votes, order);
        while (std::next_permutation(order.begin(), order.end()));
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(redlock_fsm)

BOOST_AUTO_TEST_CASE(tally_decides_as_soon_as_certain_for_every_order_n3_n5) {
    for (std::size_t n : {3u, 5u}) {
        std::size_t sequences = 0;
        for_every_vote_and_order(
            n, [&](const std::vector<vote>& votes, const std::vector<std::size_t>& order) {
                redlock_tally t(n);
                BOOST_TEST(t.quorum() == n / 2 + 1);
                std::size_t granted = 0, decided = 0;
                for (auto node : order) {
                    const auto o = t.add(node, votes[node]);
                    granted += votes[node] == vote::granted;
                    ++decided;
                    BOOST_TEST_REQUIRE(o == oracle(n, granted, decided));
                }
                BOOST_TEST_REQUIRE(t.current() != outcome::pending);
                // A repeated or unknown node changes nothing.
                const auto before = t.count(vote::granted);
                t.add(order[0], vote::granted);
                t.add(n + 3, vote::granted);
                BOOST_TEST_REQUIRE(t.count(vote::granted) == before);
                ++sequences;
            });
        BOOST_TEST(sequences == (n == 3 ? 27u * 6u : 243u * 120u));
    }
}

BOOST_AUTO_TEST_CASE(close_counts_missing_votes_as_failed) {
    redlock_tally t(5);
    BOOST_TEST(t.add(0, vote::granted) == outcome::pending);
    BOOST_TEST(t.add(1, vote::granted) == outcome::pending);
    BOOST_TEST(t.close() == outcome::impossible);
    BOOST_TEST(t.count(vote::failed) == 3u);
    BOOST_TEST(!t.contended());
    redlock_tally u(5);
    u.add(0, vote::refused);
    u.add(1, vote::refused);
    BOOST_TEST(!u.contended()); // 3 may still grant
    BOOST_TEST(u.add(2, vote::refused) == outcome::impossible);
    BOOST_TEST(u.contended());
    BOOST_TEST((redlock_tally(0).current() == outcome::impossible));
}

// The acquisition decides at the first vote that makes the outcome certain, for every vote and
// arrival order; the votes after it (stragglers) produce nothing.
BOOST_AUTO_TEST_CASE(acquire_decides_early_for_every_order_n3_n5) {
    for (bool once : {true, false}) {
        for (std::size_t n : {3u, 5u}) {
            for_every_vote_and_order(
                n, [&](const std::vector<vote>& votes, const std::vector<std::size_t>& order) {
                    std::minstd_rand rng(1);
                    redlock_acquire_fsm f(params(n, never, once));
                    const auto s = f.start(t0);
                    BOOST_TEST_REQUIRE(s.send_round);
                    BOOST_TEST_REQUIRE(f.round() == 1u);
                    std::size_t granted = 0, refused = 0, decided = 0;
                    bool done = false;
                    for (auto node : order) {
                        const auto now = t0 + 1ms * static_cast<int>(decided + 1);
                        const auto a = f.on_vote(now, 1, node, votes[node], rng);
                        granted += votes[node] == vote::granted;
                        refused += votes[node] == vote::refused;
                        ++decided;
                        const auto expect = oracle(n, granted, decided);
                        if (done) {
                            // A straggler of a decided round: nothing to do.
                            BOOST_TEST_REQUIRE(!a.send_round);
                            BOOST_TEST_REQUIRE(!a.complete);
                            BOOST_TEST_REQUIRE(!a.release_all);
                            continue;
                        }
                        if (expect == outcome::pending) {
                            BOOST_TEST_REQUIRE(!a.complete);
                            BOOST_TEST_REQUIRE(!a.release_all);
                            BOOST_TEST_REQUIRE(f.current() == state::attempting);
                            continue;
                        }
                        done = true;
                        if (expect == outcome::reached) {
                            BOOST_TEST_REQUIRE(a.complete);
                            BOOST_TEST_REQUIRE(a.granted);
                            BOOST_TEST_REQUIRE(!a.ec);
                            BOOST_TEST_REQUIRE(!a.release_all);
                            BOOST_TEST_REQUIRE((f.valid_until() == t0 + lease - drift));
                            continue;
                        }
                        // Impossible: released everywhere, and either completed (try) or retried.
                        BOOST_TEST_REQUIRE(a.release_all);
                        BOOST_TEST_REQUIRE(!a.granted);
                        const bool contended = refused > n - (n / 2 + 1);
                        if (once) {
                            BOOST_TEST_REQUIRE(a.complete);
                            BOOST_TEST_REQUIRE(
                                (a.ec == (contended ? error_code() : error::quorum_not_reached)));
                        } else {
                            BOOST_TEST_REQUIRE(!a.complete);
                            // Held: subscribe; won outright by another: go again at once; a split
                            // vote or unreachable nodes: back off.
                            const bool at_once = contended && granted == 0;
                            BOOST_TEST_REQUIRE(a.subscribe == contended);
                            BOOST_TEST_REQUIRE(a.send_round == at_once);
                            BOOST_TEST_REQUIRE(
                                (f.current() == (at_once ? state::attempting : state::waiting)));
                        }
                    }
                    BOOST_TEST_REQUIRE(done);
                });
        }
    }
}

BOOST_AUTO_TEST_CASE(late_votes_of_an_earlier_round_are_ignored) {
    std::minstd_rand rng(1);
    redlock_acquire_fsm f(params(3));
    f.start(t0);
    f.on_vote(t0 + 1ms, 1, 0, vote::refused, rng);
    auto a = f.on_vote(t0 + 2ms, 1, 1, vote::refused, rng); // held: subscribe, round 2
    BOOST_TEST(a.send_round);
    BOOST_TEST(f.round() == 2u);
    // Round 1's third vote arrives during round 2: it must not count for round 2.
    a = f.on_vote(t0 + 3ms, 1, 2, vote::granted, rng);
    BOOST_TEST(!a.complete);
    BOOST_TEST(f.tally().count(vote::granted) == 0u);
    f.on_vote(t0 + 4ms, 2, 2, vote::granted, rng);
    a = f.on_vote(t0 + 5ms, 2, 0, vote::granted, rng);
    BOOST_TEST(a.complete);
    BOOST_TEST(a.granted);
    BOOST_TEST((f.sent() == t0 + 2ms));
    BOOST_TEST((f.valid_until() == t0 + 2ms + lease - drift));
}

BOOST_AUTO_TEST_CASE(a_quorum_after_the_validity_is_given_back) {
    std::minstd_rand rng(1);
    {
        redlock_acquire_fsm f(params(5, never, true));
        f.start(t0);
        f.on_vote(t0 + 1ms, 1, 0, vote::granted, rng);
        f.on_vote(t0 + 2ms, 1, 1, vote::granted, rng);
        // The third grant arrives exactly at lease - drift: no validity left.
        const auto a = f.on_vote(t0 + lease - drift, 1, 3, vote::granted, rng);
        BOOST_TEST(a.complete);
        BOOST_TEST(!a.granted);
        BOOST_TEST(a.release_all);
        BOOST_TEST(a.ec == error::validity_expired);
        BOOST_TEST(a.ec == corolock::condition::lock_lost);
    }
    {
        // The same just before: granted, with almost no validity.
        redlock_acquire_fsm f(params(5, never, true));
        f.start(t0);
        f.on_vote(t0 + 1ms, 1, 0, vote::granted, rng);
        f.on_vote(t0 + 2ms, 1, 1, vote::granted, rng);
        const auto a = f.on_vote(t0 + lease - drift - 1ns, 1, 3, vote::granted, rng);
        BOOST_TEST(a.granted);
        BOOST_TEST(!a.release_all);
    }
    {
        // A waiting acquire retries after a validity failure and reports it at the deadline.
        redlock_acquire_fsm f(params(3, t0 + 30s));
        f.start(t0);
        f.on_vote(t0 + 1ms, 1, 0, vote::granted, rng);
        auto a = f.on_vote(t0 + 11s, 1, 1, vote::granted, rng);
        BOOST_TEST(a.release_all);
        BOOST_TEST(!a.complete);
        BOOST_TEST(f.current() == state::waiting);
        BOOST_TEST((f.wake_at() <= t0 + 11s + 50ms));
        a = f.on_timer(t0 + 30s, rng);
        BOOST_TEST(a.complete);
        BOOST_TEST(a.ec == error::validity_expired);
    }
}

BOOST_AUTO_TEST_CASE(node_timeout_counts_the_silent_nodes_as_failed) {
    std::minstd_rand rng(1);
    // 1 of 5 silent: decided at the quorum, before the node timeout.
    {
        redlock_acquire_fsm f(params(5, never, true));
        f.start(t0);
        BOOST_TEST((f.wake_at() == t0 + node_timeout));
        for (std::size_t i = 1; i < 3; ++i)
            BOOST_TEST(!f.on_vote(t0 + 1ms, 1, i, vote::granted, rng).complete);
        const auto a = f.on_vote(t0 + 1ms, 1, 3, vote::granted, rng);
        BOOST_TEST(a.granted);
        BOOST_TEST(!a.round_timed_out);
    }
    // 3 of 5 silent: only the node timeout decides; everything is released.
    {
        redlock_acquire_fsm f(params(5, never, true));
        f.start(t0);
        f.on_vote(t0 + 1ms, 1, 3, vote::granted, rng);
        f.on_vote(t0 + 1ms, 1, 4, vote::granted, rng);
        BOOST_TEST(f.on_timer(t0 + node_timeout - 1ns, rng).complete == false);
        const auto a = f.on_timer(t0 + node_timeout, rng);
        BOOST_TEST(a.complete);
        BOOST_TEST(a.release_all);
        BOOST_TEST(a.ec == error::quorum_not_reached);
        BOOST_TEST(a.round_timed_out);
        // The paused nodes answer later: nothing more to do (their release is queued behind).
        const auto late = f.on_vote(t0 + 5s, 1, 0, vote::granted, rng);
        BOOST_TEST(!late.complete);
        BOOST_TEST(!late.release_all);
    }
}

BOOST_AUTO_TEST_CASE(contention_subscribes_once_then_backs_off_within_the_deadline) {
    std::minstd_rand rng(7);
    const auto deadline = t0 + 3s;
    redlock_acquire_fsm f(params(3, deadline));
    f.start(t0);
    f.on_vote(t0 + 1ms, 1, 0, vote::refused, rng);
    auto a = f.on_vote(t0 + 1ms, 1, 1, vote::refused, rng);
    BOOST_TEST(a.release_all);
    BOOST_TEST(a.subscribe);
    BOOST_TEST(a.send_round);
    BOOST_TEST(f.round() == 2u);
    // Held again: back off, no second subscription.
    f.on_vote(t0 + 2ms, 2, 0, vote::refused, rng);
    a = f.on_vote(t0 + 2ms, 2, 2, vote::refused, rng);
    BOOST_TEST(!a.subscribe);
    BOOST_TEST(!a.send_round);
    BOOST_TEST(f.current() == state::waiting);
    const auto wake = f.wake_at();
    BOOST_TEST((wake >= t0 + 2ms));
    BOOST_TEST((wake <= t0 + 2ms + 50ms)); // first back-off: at most retry_base
    // A release message ends the wait at once.
    a = f.on_wake(t0 + 10ms);
    BOOST_TEST(a.send_round);
    BOOST_TEST(f.round() == 3u);
    // A message during the round: retry at once when it fails held.
    BOOST_TEST(!f.on_wake(t0 + 11ms).send_round);
    f.on_vote(t0 + 12ms, 3, 1, vote::refused, rng);
    a = f.on_vote(t0 + 12ms, 3, 2, vote::refused, rng);
    BOOST_TEST(a.send_round);
    BOOST_TEST(f.round() == 4u);
    // Every later wait ends by the deadline, and the deadline reports the contention.
    auto now = t0 + 13ms;
    for (int i = 0; i < 100 && f.current() != state::done; ++i) {
        if (f.current() == state::attempting) {
            f.on_vote(now, f.round(), 0, vote::refused, rng);
            a = f.on_vote(now, f.round(), 1, vote::refused, rng);
        } else {
            BOOST_TEST_REQUIRE((f.wake_at() <= deadline));
            now = f.wake_at();
            a = f.on_timer(now, rng);
        }
    }
    BOOST_TEST(f.current() == state::done);
    BOOST_TEST(a.complete);
    BOOST_TEST(a.ec == error::acquire_timeout);
    BOOST_TEST((now <= deadline));
}

BOOST_AUTO_TEST_CASE(a_split_vote_backs_off_and_ignores_wake_ups) {
    // Two contenders collided: each holds some nodes, nobody a majority. Retrying on every
    // release message (their own cleanups publish one) would make them collide again.
    std::minstd_rand rng(5);
    redlock_acquire_fsm f(params(3, t0 + 30s));
    f.start(t0);
    f.on_vote(t0 + 1ms, 1, 0, vote::granted, rng);
    f.on_vote(t0 + 1ms, 1, 1, vote::refused, rng);
    auto a = f.on_vote(t0 + 1ms, 1, 2, vote::refused, rng);
    BOOST_TEST(a.release_all);
    BOOST_TEST(a.subscribe);
    BOOST_TEST(!a.send_round);
    BOOST_TEST(f.current() == state::waiting);
    BOOST_TEST(!f.on_wake(t0 + 2ms).send_round);
    const auto at = f.wake_at();
    BOOST_TEST((at <= t0 + 1ms + 50ms));
    a = f.on_timer(at, rng);
    BOOST_TEST(a.send_round);
    BOOST_TEST(!a.subscribe); // once
    // A late quorum backs off the same way.
    f.on_vote(at + 1ms, 2, 0, vote::granted, rng);
    a = f.on_vote(at + lease, 2, 1, vote::granted, rng);
    BOOST_TEST(a.release_all);
    BOOST_TEST(f.current() == state::waiting);
    BOOST_TEST(!f.on_wake(at + lease + 1ms).send_round);
}

BOOST_AUTO_TEST_CASE(unreachable_nodes_back_off_and_report_quorum_not_reached) {
    std::minstd_rand rng(3);
    const auto deadline = t0 + 2s;
    redlock_acquire_fsm f(params(5, deadline));
    f.start(t0);
    auto a = f.on_timer(t0 + node_timeout, rng);
    BOOST_TEST(a.release_all);
    BOOST_TEST(!a.subscribe); // nobody holds it: no release message to wait for
    BOOST_TEST(f.current() == state::waiting);
    auto now = t0 + node_timeout;
    while (f.current() != state::done) {
        now = f.wake_at();
        BOOST_TEST_REQUIRE((now <= deadline));
        a = f.on_timer(now, rng);
    }
    BOOST_TEST(a.ec == error::quorum_not_reached);
    BOOST_TEST(a.ec == corolock::condition::connection_failure);
    // The deadline in the middle of a round abandons it and cleans up behind it.
    redlock_acquire_fsm g(params(5, t0 + 100ms));
    g.start(t0);
    BOOST_TEST((g.wake_at() == t0 + 100ms));
    a = g.on_timer(t0 + 100ms, rng);
    BOOST_TEST(a.complete);
    BOOST_TEST(a.release_all);
    BOOST_TEST(a.ec == error::acquire_timeout);
}

BOOST_AUTO_TEST_CASE(cancellation_releases_a_round_on_the_wire) {
    std::minstd_rand rng(1);
    redlock_acquire_fsm f(params(3));
    f.start(t0);
    f.on_vote(t0 + 1ms, 1, 0, vote::granted, rng);
    auto a = f.on_cancel();
    BOOST_TEST(a.complete);
    BOOST_TEST(a.release_all);
    BOOST_TEST(a.ec == boost::asio::error::operation_aborted);
    BOOST_TEST(f.current() == state::done);
    BOOST_TEST(!f.on_cancel().complete); // once
    BOOST_TEST(!f.on_vote(t0 + 2ms, 1, 1, vote::granted, rng).complete);
    BOOST_TEST((f.wake_at() == never));
    // Cancelled while waiting: the failed round was released already.
    redlock_acquire_fsm g(params(3));
    g.start(t0);
    g.on_timer(t0 + node_timeout, rng);
    BOOST_TEST(g.current() == state::waiting);
    a = g.on_cancel();
    BOOST_TEST(a.complete);
    BOOST_TEST(!a.release_all);
}

// ---------------------------------------------------------------------------------------------
// The held lease

namespace {

redlock_hold_params hold(std::size_t n, bool watchdog = true,
                         clock_type::time_point max_hold_at = never) {
    redlock_hold_params p;
    p.nodes = n;
    p.lease = lease;
    p.drift = drift;
    p.node_timeout = node_timeout;
    p.watchdog = watchdog;
    p.max_hold_at = max_hold_at;
    return p;
}

} // namespace

BOOST_AUTO_TEST_CASE(extension_with_a_quorum_moves_the_deadline) {
    redlock_lease_fsm f(hold(5), t0);
    BOOST_TEST((f.valid_until() == t0 + lease - drift));
    BOOST_TEST((f.wake_at() == t0 + lease / 3));
    BOOST_TEST(!f.on_timer(t0 + 1s).send_extend);
    const auto at = t0 + lease / 3;
    auto a = f.on_timer(at);
    BOOST_TEST(a.send_extend);
    BOOST_TEST(f.round() == 1u);
    BOOST_TEST((f.wake_at() == at + node_timeout));
    f.on_vote(at + 1ms, 1, 4, vote::granted);
    f.on_vote(at + 1ms, 1, 0, vote::refused);
    f.on_vote(at + 1ms, 1, 2, vote::granted);
    a = f.on_vote(at + 2ms, 1, 1, vote::granted);
    BOOST_TEST(!a.lost);
    BOOST_TEST(f.current() == redlock_lease_fsm::state::held);
    BOOST_TEST((f.valid_until() == at + lease - drift));
    BOOST_TEST((f.wake_at() == at + lease / 3));
    // The straggler changes nothing.
    a = f.on_vote(at + 3ms, 1, 3, vote::failed);
    BOOST_TEST(!a.lost);
}

BOOST_AUTO_TEST_CASE(extension_below_quorum_or_late_is_lost_at_once) {
    // Below quorum, decided early (3 refusals of 5).
    {
        redlock_lease_fsm f(hold(5), t0);
        const auto at = t0 + lease / 3;
        f.on_timer(at);
        f.on_vote(at + 1ms, 1, 0, vote::refused);
        f.on_vote(at + 1ms, 1, 1, vote::refused);
        const auto a = f.on_vote(at + 1ms, 1, 2, vote::failed);
        BOOST_TEST(a.lost);
        BOOST_TEST(a.release_all);
        BOOST_TEST(a.ec == error::lease_lost);
        BOOST_TEST(f.current() == redlock_lease_fsm::state::lost);
        BOOST_TEST((f.wake_at() == never));
        // Releasing a lost lease sends nothing more and reports the loss.
        const auto r = f.on_release(at + 2s);
        BOOST_TEST(r.released);
        BOOST_TEST(!r.release_all);
        BOOST_TEST(r.ec == error::lease_lost);
    }
    // Silent nodes: lost at the node timeout.
    {
        redlock_lease_fsm f(hold(3), t0);
        const auto at = t0 + lease / 3;
        f.on_timer(at);
        f.on_vote(at + 1ms, 1, 0, vote::granted);
        BOOST_TEST(!f.on_timer(at + node_timeout - 1ns).lost);
        const auto a = f.on_timer(at + node_timeout);
        BOOST_TEST(a.lost);
    }
    // A quorum that arrives after the local deadline does not count.
    {
        redlock_hold_params p = hold(3);
        p.node_timeout = 20s;
        redlock_lease_fsm f(p, t0);
        const auto at = t0 + lease / 3;
        f.on_timer(at);
        f.on_vote(at + 1ms, 1, 0, vote::granted);
        const auto a = f.on_vote(t0 + lease - drift, 1, 1, vote::granted);
        BOOST_TEST(a.lost);
    }
}

BOOST_AUTO_TEST_CASE(fixed_lease_expires_and_max_hold_bounds_extensions) {
    {
        redlock_lease_fsm f(hold(3, false), t0);
        BOOST_TEST((f.wake_at() == t0 + lease - drift));
        BOOST_TEST(!f.on_timer(t0 + lease / 3).send_extend);
        const auto a = f.on_timer(t0 + lease - drift);
        BOOST_TEST(a.lost);
        BOOST_TEST(a.ec == error::lease_lost);
    }
    {
        redlock_lease_fsm f(hold(3, true, t0 + 5s), t0);
        auto a = f.on_timer(t0 + lease / 3);
        BOOST_TEST(a.send_extend);
        f.on_vote(t0 + lease / 3, 1, 0, vote::granted);
        f.on_vote(t0 + lease / 3, 1, 1, vote::granted);
        BOOST_TEST((f.wake_at() == t0 + 5s));
        a = f.on_timer(t0 + 5s);
        BOOST_TEST(a.lost);
        BOOST_TEST(a.ec == error::max_hold_reached);
    }
}

BOOST_AUTO_TEST_CASE(release_round_is_decided_by_its_own_votes) {
    {
        redlock_lease_fsm f(hold(5), t0);
        auto a = f.on_release(t0 + 1s);
        BOOST_TEST(a.release_all);
        BOOST_TEST(!a.released);
        f.on_vote(t0 + 1s, 1, 0, vote::granted);
        f.on_vote(t0 + 1s, 1, 1, vote::granted);
        a = f.on_vote(t0 + 1s, 1, 2, vote::granted);
        BOOST_TEST(a.released);
        BOOST_TEST(!a.ec);
        BOOST_TEST(!f.on_release(t0 + 2s).released); // once
    }
    {
        // Our keys were gone on a majority: the section may have overlapped.
        redlock_lease_fsm f(hold(3), t0);
        f.on_release(t0 + 1s);
        f.on_vote(t0 + 1s, 1, 0, vote::refused);
        const auto a = f.on_vote(t0 + 1s, 1, 1, vote::refused);
        BOOST_TEST(a.released);
        BOOST_TEST(a.ec == error::lease_lost);
    }
    {
        // An extension on the wire when the release starts: its votes no longer count, and
        // silent nodes end the release at the node timeout.
        redlock_lease_fsm f(hold(3), t0);
        f.on_timer(t0 + lease / 3);
        f.on_release(t0 + lease / 3 + 1ms);
        BOOST_TEST(f.round() == 2u);
        BOOST_TEST(!f.on_vote(t0 + 4s, 1, 0, vote::refused).lost);
        const auto a = f.on_timer(t0 + lease / 3 + 1ms + node_timeout);
        BOOST_TEST(a.released);
        BOOST_TEST(a.ec == error::quorum_not_reached);
    }
}

BOOST_AUTO_TEST_CASE(replies_decode_into_votes) {
    using corolock::generic_response;
    using corolock::resp3::node;
    using corolock::resp3::type;
    error_code why;
    auto number = [](const char* v) { return generic_response{node{type::number, 1, 0, v}}; };
    BOOST_TEST(decode_vote({}, number("1"), why) == vote::granted);
    BOOST_TEST(!why);
    BOOST_TEST(decode_vote({}, number("0"), why) == vote::refused);
    BOOST_TEST(decode_vote({}, number("2"), why) == vote::failed);
    BOOST_TEST(why == error::unexpected_reply);
    BOOST_TEST(decode_vote(error::connection_lost, number("1"), why) == vote::failed);
    BOOST_TEST(why == error::connection_lost);
    const generic_response wrong{node{type::simple_error, 1, 0, "WRONGTYPE not a redlock"}};
    BOOST_TEST(decode_vote({}, wrong, why) == vote::failed);
    BOOST_TEST(why == error::wrong_type);
    const generic_response array{node{type::array, 1, 0, ""}, node{type::number, 1, 1, "1"}};
    BOOST_TEST(decode_vote({}, array, why) == vote::failed);
    BOOST_TEST(why == error::unexpected_reply);
    // The scripts themselves: distinct, and the acquire never touches a fence key.
    using namespace corolock::detail;
    BOOST_TEST(redlock_acquire_script().sha1() != redlock_extend_script().sha1());
    BOOST_TEST(redlock_acquire_script().source().find("fence") == std::string::npos);
    BOOST_TEST(redlock_release_script().source().find("pcall('PUBLISH'") != std::string::npos);
}

// A wait already over when it began (the driver turns it into one round, `held_is_timeout`):
// a free lock is granted, a held one is acquire_timeout, not an empty lease; nodes that do not
// answer are quorum_not_reached, as a try's.
BOOST_AUTO_TEST_CASE(a_wait_already_over_is_one_round_and_held_is_a_timeout) {
    std::minstd_rand rng(1);
    for (const vote other : {vote::refused, vote::granted, vote::failed}) {
        auto p = params(3, never, true);
        p.held_is_timeout = true;
        redlock_acquire_fsm f(p);
        f.start(t0);
        f.on_vote(t0 + 1ms, 1, 0, other, rng);
        const auto a = f.on_vote(t0 + 2ms, 1, 1, other, rng);
        BOOST_TEST(a.complete);
        BOOST_TEST(a.granted == (other == vote::granted));
        if (other == vote::refused)
            BOOST_TEST(a.ec == error::acquire_timeout);
        if (other == vote::failed)
            BOOST_TEST(a.ec == error::quorum_not_reached);
    }
    // A try (held_is_timeout off) that finds the lock held: an empty lease, no error.
    redlock_acquire_fsm f(params(3, never, true));
    f.start(t0);
    f.on_vote(t0 + 1ms, 1, 0, vote::refused, rng);
    const auto a = f.on_vote(t0 + 2ms, 1, 1, vote::refused, rng);
    BOOST_TEST(a.complete);
    BOOST_TEST(!a.granted);
    BOOST_TEST(!a.ec);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_redlock_fsm
