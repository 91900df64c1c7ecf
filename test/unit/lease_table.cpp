// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The watchdog's decisions with the time passed in: renewal times, batching, losses.
#include "core/lease_table.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <deque>
#include <random>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_lease_table {

using corolock::error;
using corolock::detail::lease_table;
using corolock::detail::lease_watch;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

const clock_type::time_point t0 = clock_type::time_point(100h);

lease_watch watch(clock_type::duration lease, bool watchdog = true) {
    lease_watch w;
    w.lease = lease;
    w.drift = lease / 100 + 2ms;
    w.watchdog = watchdog;
    return w;
}

bool due_contains(const lease_table::plan& p, const lease_watch& w) {
    return std::find(p.due.begin(), p.due.end(), &w) != p.due.end();
}

} // namespace

BOOST_AUTO_TEST_SUITE(lease_table_tests)

BOOST_AUTO_TEST_CASE(renews_every_third_of_the_lease) {
    lease_table t;
    auto w = watch(3s);
    t.add(w, t0);
    BOOST_TEST((w.valid_until == t0 + 3s - 32ms));
    lease_table::plan p;
    t.make_plan(t0 + 100ms, p);
    BOOST_TEST(p.due.empty());
    BOOST_TEST((p.wake_at == t0 + 1s));
    t.make_plan(t0 + 1s, p);
    BOOST_TEST(due_contains(p, w));
    BOOST_TEST(w.renew_in_flight);
    // While the renewal is on the wire the deadline is still watched.
    BOOST_TEST((p.wake_at == w.valid_until));
    // Renewed: the new lease runs from the renewal's send time.
    BOOST_TEST(!t.on_renewed(w, t0 + 1s, t0 + 1s + 5ms, true));
    BOOST_TEST((w.valid_until == t0 + 4s - 32ms));
    BOOST_TEST((w.next_renewal == t0 + 2s));
}

BOOST_AUTO_TEST_CASE(renewals_due_soon_share_one_call) {
    lease_table t;
    auto a = watch(3s), b = watch(3s), c = watch(3s);
    t.add(a, t0);
    t.add(b, t0 + 50ms);  // due within the 100 ms window: joins a's round
    t.add(c, t0 + 500ms); // not yet
    lease_table::plan p;
    t.make_plan(t0 + 1s, p);
    BOOST_TEST(p.due.size() == 2u);
    BOOST_TEST(due_contains(p, a));
    BOOST_TEST(due_contains(p, b));
    BOOST_TEST(!due_contains(p, c));
}

BOOST_AUTO_TEST_CASE(a_refused_or_late_renewal_loses_the_lease) {
    lease_table t;
    auto w = watch(3s);
    t.add(w, t0);
    lease_table::plan p;
    t.make_plan(t0 + 1s, p);
    BOOST_TEST(t.on_renewed(w, t0 + 1s, t0 + 1s + 1ms, false) == error::lease_lost);
    BOOST_TEST(!lease_table::contains(w));

    auto v = watch(3s);
    t.add(v, t0);
    t.make_plan(t0 + 1s, p);
    // Renewed by Redis, but read after the local deadline: too late to trust.
    BOOST_TEST(t.on_renewed(v, t0 + 1s, v.valid_until, true) == error::lease_lost);
    BOOST_TEST(t.empty());
}

BOOST_AUTO_TEST_CASE(failed_renewals_retry_until_the_deadline) {
    lease_table t;
    auto w = watch(3s);
    t.add(w, t0);
    lease_table::plan p;
    t.make_plan(t0 + 1s, p);
    t.on_renew_failed(w, t0 + 1s + 10ms);
    BOOST_TEST((w.next_renewal == t0 + 1s + 10ms + 100ms + 300ms)); // slack + lease/10
    BOOST_TEST(!w.renew_in_flight);
    t.make_plan(w.valid_until, p);
    BOOST_TEST(p.losing.size() == 1u);
    BOOST_TEST(p.losing[0].second == error::lease_lost);
    BOOST_TEST(t.empty());
}

// A renewal refused at once (an ACL, an out-of-memory server) is retried after a pause, not in a
// loop: with a short lease, a retry inside the slack window would be due again at once (the
// review's 4,581 renewals in 400 ms).
BOOST_AUTO_TEST_CASE(a_failed_renewal_of_a_short_lease_is_not_due_at_once) {
    lease_table t;
    auto w = watch(300ms);
    t.add(w, t0);
    lease_table::plan p;
    t.make_plan(t0 + 100ms, p);
    BOOST_TEST(p.due.size() == 1u);
    t.on_renew_failed(w, t0 + 101ms);
    t.make_plan(t0 + 101ms, p);
    BOOST_TEST(p.due.empty());
    int rounds = 0;
    for (auto now = t0 + 101ms; now < w.valid_until; now += 1ms) {
        t.make_plan(now, p);
        for (auto* d : p.due) {
            ++rounds;
            t.on_renew_failed(*d, now);
        }
    }
    BOOST_TEST(rounds <= 10); // one every lease/10 until the deadline, not one a millisecond
    BOOST_TEST(rounds >= 1);
}

// After a reconnection (perhaps to a new master) every watchdog lease is renewed at once; one
// whose renewal is on the wire, and a fixed lease, are left alone.
BOOST_AUTO_TEST_CASE(renew_all_now_makes_every_lease_due) {
    lease_table t;
    auto a = watch(30s), b = watch(30s), in_flight = watch(3s), fixed = watch(30s, false);
    t.add(a, t0);
    t.add(b, t0 + 5s);
    t.add(in_flight, t0);
    t.add(fixed, t0);
    lease_table::plan p;
    t.make_plan(t0 + 1s, p); // in_flight's renewal goes out
    BOOST_TEST(p.due.size() == 1u);
    BOOST_TEST(due_contains(p, in_flight));
    t.make_plan(t0 + 6s, p);
    BOOST_TEST(p.due.empty()); // a: due at t0 + 10 s, b: t0 + 15 s
    t.renew_all_now(t0 + 6s);
    t.make_plan(t0 + 6s, p);
    BOOST_TEST(p.due.size() == 2u);
    BOOST_TEST(due_contains(p, a));
    BOOST_TEST(due_contains(p, b));
    BOOST_TEST((in_flight.next_renewal == t0 + 1s)); // still one renewal on the wire
    BOOST_TEST(!due_contains(p, fixed));
    BOOST_TEST((fixed.next_renewal == clock_type::time_point::max()));
}

BOOST_AUTO_TEST_CASE(fixed_leases_are_never_renewed) {
    lease_table t;
    auto w = watch(1s, false);
    t.add(w, t0);
    lease_table::plan p;
    t.make_plan(t0 + 900ms, p);
    BOOST_TEST(p.due.empty());
    BOOST_TEST((p.wake_at == w.valid_until));
    t.make_plan(w.valid_until, p);
    BOOST_TEST(p.losing.size() == 1u);
}

BOOST_AUTO_TEST_CASE(max_hold_ends_the_lease) {
    lease_table t;
    auto w = watch(3s);
    w.max_hold_at = t0 + 2500ms;
    t.add(w, t0);
    lease_table::plan p;
    t.make_plan(t0 + 1s, p);
    t.on_renewed(w, t0 + 1s, t0 + 1s, true);
    t.make_plan(t0 + 2s, p);
    t.on_renewed(w, t0 + 2s, t0 + 2s, true);
    t.make_plan(t0 + 2500ms, p);
    BOOST_TEST(p.losing.size() == 1u);
    BOOST_TEST(p.losing[0].second == error::max_hold_reached);
}

BOOST_AUTO_TEST_CASE(removed_leases_are_never_renewed_again) {
    // Property: random adds, removes, plans and replies; a removed lease never appears in a plan
    // and a lease in the table is renewed before its deadline whenever replies come in time.
    std::mt19937 rng(7);
    std::deque<lease_watch> leases; // stable addresses
    lease_table t;
    auto now = t0;
    lease_table::plan p;
    std::vector<std::pair<lease_watch*, clock_type::time_point>> in_flight;
    for (int step = 0; step < 20000; ++step) {
        switch (rng() % 5) {
        case 0:
            leases.push_back(watch(std::chrono::milliseconds(10 + rng() % 3000), rng() % 4 != 0));
            t.add(leases.back(), now);
            break;
        case 1:
            if (!leases.empty())
                t.remove(leases[rng() % leases.size()]);
            break;
        case 2: {
            t.make_plan(now, p);
            for (auto* w : p.due) {
                BOOST_REQUIRE(lease_table::contains(*w));
                BOOST_REQUIRE(w->watchdog);
                in_flight.emplace_back(w, now);
            }
            for (auto& [w, why] : p.losing)
                BOOST_REQUIRE(!lease_table::contains(*w));
            break;
        }
        case 3:
            if (!in_flight.empty()) {
                auto [w, sent] = in_flight.front();
                in_flight.erase(in_flight.begin());
                if (lease_table::contains(*w)) // the driver's check
                    t.on_renewed(*w, sent, now, true);
            }
            break;
        case 4:
            now += std::chrono::milliseconds(rng() % 50);
            break;
        }
        std::size_t counted = 0;
        t.for_each([&](lease_watch&) { ++counted; });
        BOOST_REQUIRE_EQUAL(counted, t.size());
    }
}

BOOST_AUTO_TEST_CASE(renewal_without_enough_replicas_is_a_loss) {
    lease_table t;
    auto w = watch(3s);
    w.replicas = 1;
    t.add(w, t0);
    lease_table::plan p;
    t.make_plan(t0 + 1s, p);
    BOOST_TEST(!t.on_renewed(w, t0 + 1s, t0 + 1s + 5ms, true, 1));
    t.make_plan(t0 + 2s, p);
    BOOST_TEST(t.on_renewed(w, t0 + 2s, t0 + 2s + 5ms, true, 0) == error::replicas_not_synced);
    BOOST_TEST(!lease_table::contains(w));
    BOOST_TEST(t.empty());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_lease_table
