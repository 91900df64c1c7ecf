// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock layer's counters and their Prometheus text: bucketing at the edges, the snapshot's
// consistency, the outcome and loss classification, and the exact exposition of a snapshot.
#include "core/lock_metrics.hpp"

#include "common/doc_text.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_lock_metrics {

using namespace std::chrono_literals;
using corolock::acquire_outcome;
using corolock::duration_histogram;
using corolock::error;
using corolock::error_code;
using corolock::lease_loss;
using corolock::detail::atomic_histogram;
namespace detail = corolock::detail;
using corolock::detail::outcome_of;
using corolock::detail::renewal_loss;

BOOST_AUTO_TEST_SUITE(lock_metrics)

BOOST_AUTO_TEST_CASE(bounds_are_increasing_from_100us_to_30s) {
    const auto& b = duration_histogram::bounds;
    BOOST_TEST((b.front() == 100us));
    BOOST_TEST((b.back() == 30s));
    for (std::size_t i = 1; i < b.size(); ++i)
        BOOST_TEST((b[i - 1] < b[i]));
}

BOOST_AUTO_TEST_CASE(a_sample_on_a_bound_falls_in_that_bound_s_bucket) {
    BOOST_TEST(duration_histogram::bucket_of(0ns) == 0u);
    BOOST_TEST(duration_histogram::bucket_of(100us) == 0u); // le is inclusive
    BOOST_TEST(duration_histogram::bucket_of(100us + 1ns) == 1u);
    BOOST_TEST(duration_histogram::bucket_of(1ms) == 3u);
    BOOST_TEST(duration_histogram::bucket_of(1001us) == 4u);
    BOOST_TEST(duration_histogram::bucket_of(2500us) == 4u);
    BOOST_TEST(duration_histogram::bucket_of(1s) == 12u);
    BOOST_TEST(duration_histogram::bucket_of(30s) == 16u);
    BOOST_TEST(duration_histogram::bucket_of(30s + 1ns) == 17u); // +Inf
    BOOST_TEST(duration_histogram::bucket_of(std::chrono::hours(24 * 365)) == 17u);
}

BOOST_AUTO_TEST_CASE(snapshot_count_and_sum_match_the_samples) {
    atomic_histogram h;
    h.observe(50us);
    h.observe(100us);
    h.observe(3ms);
    h.observe(-5ms); // a clock that went back counts as zero
    h.observe(1min);
    const auto s = h.snapshot();
    BOOST_TEST(s.count == 5u);
    BOOST_TEST(s.buckets[0] == 3u);
    BOOST_TEST(s.buckets[5] == 1u);
    BOOST_TEST(s.buckets[17] == 1u);
    BOOST_TEST((s.sum == 50us + 100us + 3ms + 1min));
}

BOOST_AUTO_TEST_CASE(threads_lose_no_sample) {
    detail::lock_metrics m;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&m] {
            for (int i = 0; i < 10'000; ++i)
                m.acquired(acquire_outcome::granted, std::chrono::microseconds(i));
        });
    for (auto& t : threads)
        t.join();
    const auto s = m.snapshot();
    BOOST_TEST(s.acquired(acquire_outcome::granted) == 40'000u);
    BOOST_TEST(s.acquire_wait.count == 40'000u);
}

BOOST_AUTO_TEST_CASE(only_grants_enter_the_wait_histogram) {
    detail::lock_metrics m;
    m.acquired(acquire_outcome::granted, 2ms);
    m.acquired(acquire_outcome::timeout, 5s);
    m.acquired(acquire_outcome::busy, 1ms);
    m.acquired(acquire_outcome::cancelled, 1s);
    m.acquired(acquire_outcome::error, 0ns);
    m.acquired(acquire_outcome::server_timeout, 1s);
    m.lease_lost(lease_loss::max_hold);
    m.lease_lost(lease_loss::max_hold);
    m.lease_lost(lease_loss::expired);
    const auto s = m.snapshot();
    BOOST_TEST(s.acquire_wait.count == 1u);
    BOOST_TEST((s.acquire_wait.sum == 2ms));
    for (auto o :
         {acquire_outcome::granted, acquire_outcome::timeout, acquire_outcome::busy,
          acquire_outcome::cancelled, acquire_outcome::error, acquire_outcome::server_timeout})
        BOOST_TEST(s.acquired(o) == 1u, o);
    BOOST_TEST(s.lost_by(lease_loss::max_hold) == 2u);
    BOOST_TEST(s.lost_by(lease_loss::expired) == 1u);
    BOOST_TEST(s.leases_lost == 3u); // the total
}

BOOST_AUTO_TEST_CASE(outcomes_from_completions) {
    BOOST_TEST(outcome_of({}, true) == acquire_outcome::granted);
    BOOST_TEST(outcome_of({}, false) == acquire_outcome::busy);
    BOOST_TEST(outcome_of(error::server_timeout, false) == acquire_outcome::server_timeout);
    BOOST_TEST(outcome_of(error::acquire_timeout, false) == acquire_outcome::timeout);
    BOOST_TEST(outcome_of(boost::asio::error::operation_aborted, false) ==
               acquire_outcome::cancelled);
    BOOST_TEST(outcome_of(error::not_connected, false) == acquire_outcome::error);
    BOOST_TEST(outcome_of(error::replicas_not_synced, false) == acquire_outcome::error);
}

BOOST_AUTO_TEST_CASE(loss_reasons_from_renewals) {
    BOOST_TEST(renewal_loss(error::lease_lost, false) == lease_loss::renewal_refused);
    BOOST_TEST(renewal_loss(error::lease_lost, true) == lease_loss::expired); // answered late
    BOOST_TEST(renewal_loss(error::replicas_not_synced, true) == lease_loss::replicas_not_synced);
}

BOOST_AUTO_TEST_CASE(names_of_outcomes_and_reasons) {
    BOOST_TEST(to_string(acquire_outcome::busy) == "busy");
    BOOST_TEST(to_string(lease_loss::connection_stopped) == "connection_stopped");
    BOOST_TEST(to_string(static_cast<lease_loss>(99)) == "unknown");
}

BOOST_AUTO_TEST_CASE(prometheus_text_of_a_snapshot) {
    detail::lock_metrics m;
    m.attempts = 9;
    m.pubsub_wakeups = 2;
    m.handoffs = 3;
    m.timer_wakeups = 1;
    m.renewals = 4;
    m.renewal_calls = 3;
    m.renewal_failures = 1;
    m.undos = 1;
    m.leases_held = 2;
    m.waiters = 5;
    m.acquired(acquire_outcome::granted, 120us);
    m.acquired(acquire_outcome::granted, 1500ms);
    m.acquired(acquire_outcome::timeout, 2s);
    m.lease_lost(lease_loss::renewal_refused);
    m.renewal_rtt.observe(250us);
    m.renewal_rtt.observe(40s);
    m.renewal_rtt.observe(std::chrono::nanoseconds(1'000'000'001));
    m.hold.observe(3s);
    const corolock::metric_label labels[] = {{"conn", "a\"b\\c\nd"}};
    std::string out = "# before\n";
    corolock::write_prometheus(out, m.snapshot(), "app_lock", labels);
    const std::string expected = R"(# before
# HELP app_lock_acquires_total Lock acquisitions, by outcome.
# TYPE app_lock_acquires_total counter
app_lock_acquires_total{conn="a\"b\\c\nd",outcome="granted"} 2
app_lock_acquires_total{conn="a\"b\\c\nd",outcome="busy"} 0
app_lock_acquires_total{conn="a\"b\\c\nd",outcome="timeout"} 1
app_lock_acquires_total{conn="a\"b\\c\nd",outcome="cancelled"} 0
app_lock_acquires_total{conn="a\"b\\c\nd",outcome="error"} 0
app_lock_acquires_total{conn="a\"b\\c\nd",outcome="server_timeout"} 0
# HELP app_lock_acquire_wait_seconds Time from the acquire call to the grant.
# TYPE app_lock_acquire_wait_seconds histogram
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.0001"} 0
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.00025"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.0005"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.001"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.0025"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.005"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.01"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.025"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.05"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.1"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.25"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="0.5"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="1"} 1
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="2.5"} 2
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="5"} 2
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="10"} 2
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="30"} 2
app_lock_acquire_wait_seconds_bucket{conn="a\"b\\c\nd",le="+Inf"} 2
app_lock_acquire_wait_seconds_sum{conn="a\"b\\c\nd"} 1.50012
app_lock_acquire_wait_seconds_count{conn="a\"b\\c\nd"} 2
# HELP app_lock_lock_attempts_total Acquire scripts sent.
# TYPE app_lock_lock_attempts_total counter
app_lock_lock_attempts_total{conn="a\"b\\c\nd"} 9
# HELP app_lock_lock_wakeups_total Waiting heads woken, by what woke them.
# TYPE app_lock_lock_wakeups_total counter
app_lock_lock_wakeups_total{conn="a\"b\\c\nd",by="handoff"} 3
app_lock_lock_wakeups_total{conn="a\"b\\c\nd",by="pubsub"} 2
app_lock_lock_wakeups_total{conn="a\"b\\c\nd",by="timer"} 1
# HELP app_lock_lock_undos_total Grants given back (nobody waited for them, or their outcome was unknown).
# TYPE app_lock_lock_undos_total counter
app_lock_lock_undos_total{conn="a\"b\\c\nd"} 1
# HELP app_lock_lock_waiters Acquisitions waiting now.
# TYPE app_lock_lock_waiters gauge
app_lock_lock_waiters{conn="a\"b\\c\nd"} 5
# HELP app_lock_leases_held Leases held now.
# TYPE app_lock_leases_held gauge
app_lock_leases_held{conn="a\"b\\c\nd"} 2
# HELP app_lock_lease_renewals_total Leases renewed by the watchdog.
# TYPE app_lock_lease_renewals_total counter
app_lock_lease_renewals_total{conn="a\"b\\c\nd"} 4
# HELP app_lock_lease_renewal_calls_total Renew scripts sent by the watchdog.
# TYPE app_lock_lease_renewal_calls_total counter
app_lock_lease_renewal_calls_total{conn="a\"b\\c\nd"} 3
# HELP app_lock_lease_renewal_failures_total Lease renewals that failed and were retried.
# TYPE app_lock_lease_renewal_failures_total counter
app_lock_lease_renewal_failures_total{conn="a\"b\\c\nd"} 1
# HELP app_lock_lease_renewal_rtt_seconds Round trip of the watchdog's renew scripts.
# TYPE app_lock_lease_renewal_rtt_seconds histogram
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.0001"} 0
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.00025"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.0005"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.001"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.0025"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.005"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.01"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.025"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.05"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.1"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.25"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="0.5"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="1"} 1
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="2.5"} 2
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="5"} 2
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="10"} 2
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="30"} 2
app_lock_lease_renewal_rtt_seconds_bucket{conn="a\"b\\c\nd",le="+Inf"} 3
app_lock_lease_renewal_rtt_seconds_sum{conn="a\"b\\c\nd"} 41.000250001
app_lock_lease_renewal_rtt_seconds_count{conn="a\"b\\c\nd"} 3
# HELP app_lock_leases_lost_total Held leases lost, by reason.
# TYPE app_lock_leases_lost_total counter
app_lock_leases_lost_total{conn="a\"b\\c\nd",reason="expired"} 0
app_lock_leases_lost_total{conn="a\"b\\c\nd",reason="renewal_refused"} 1
app_lock_leases_lost_total{conn="a\"b\\c\nd",reason="release_refused"} 0
app_lock_leases_lost_total{conn="a\"b\\c\nd",reason="max_hold"} 0
app_lock_leases_lost_total{conn="a\"b\\c\nd",reason="replicas_not_synced"} 0
app_lock_leases_lost_total{conn="a\"b\\c\nd",reason="connection_stopped"} 0
)";
    const auto hold = out.find("# HELP app_lock_lease_hold_seconds");
    BOOST_TEST(out.substr(0, hold) == expected);
    // The hold-time histogram comes last: one 3 s sample.
    BOOST_TEST(
        out.find("app_lock_lease_hold_seconds_bucket{conn=\"a\\\"b\\\\c\\nd\",le=\"2.5\"} 0\n"
                 "app_lock_lease_hold_seconds_bucket{conn=\"a\\\"b\\\\c\\nd\",le=\"5\"} 1\n",
                 hold) != std::string::npos);
    BOOST_TEST(out.ends_with("app_lock_lease_hold_seconds_count{conn=\"a\\\"b\\\\c\\nd\"} 1\n"));
}

BOOST_AUTO_TEST_CASE(no_labels_no_braces) {
    corolock::lock_stats s;
    s.leases_held = 7;
    std::string out;
    corolock::write_prometheus(out, s);
    BOOST_TEST(out.find("\ncorolock_leases_held 7\n") != std::string::npos);
    BOOST_TEST(out.find("\ncorolock_lock_attempts_total 0\n") != std::string::npos);
    BOOST_TEST(out.find("corolock_acquires_total{outcome=\"granted\"} 0\n") != std::string::npos);
    BOOST_TEST(out.find("{}") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE(named)

BOOST_AUTO_TEST_CASE(off_by_default_and_bounded_with_an_overflow_entry) {
    detail::named_metrics n;
    BOOST_TEST(!n.on());
    BOOST_TEST(n.snapshot().empty());
    n.configure(2, "_other");
    BOOST_TEST(n.on());
    n.acquired("a", acquire_outcome::granted);
    n.acquired("b", acquire_outcome::timeout);
    n.held("a", 2ms);
    // Past the bound: every new name lands in one entry, however many there are.
    for (int i = 0; i < 1000; ++i)
        n.acquired("order:" + std::to_string(i), acquire_outcome::granted);
    n.held("order:7", 1s);
    n.lost("order:8");
    n.lost("a");
    // A known name keeps its own entry after the overflow started.
    n.acquired("b", acquire_outcome::granted);
    const auto s = n.snapshot();
    BOOST_REQUIRE(s.size() == 3u); // a, b, then the overflow entry last
    BOOST_TEST(s[0].name == "a");
    BOOST_TEST(s[0].acquires[0] == 1u);
    BOOST_TEST(s[0].hold.count == 1u);
    BOOST_TEST(s[0].leases_lost == 1u);
    BOOST_TEST(s[1].name == "b");
    BOOST_TEST(s[1].acquires[static_cast<std::size_t>(acquire_outcome::timeout)] == 1u);
    BOOST_TEST(s[1].acquires[0] == 1u);
    BOOST_TEST(s[2].name == "_other");
    BOOST_TEST(s[2].acquires[0] == 1000u);
    BOOST_TEST(s[2].hold.count == 1u);
    BOOST_TEST((s[2].hold.sum == 1s));
    BOOST_TEST(s[2].leases_lost == 1u);
}

BOOST_AUTO_TEST_CASE(a_lock_named_as_the_overflow_shares_its_entry) {
    detail::named_metrics n;
    n.configure(5, "(rest)");
    n.acquired("(rest)", acquire_outcome::granted);
    n.acquired("x", acquire_outcome::granted);
    const auto s = n.snapshot();
    BOOST_REQUIRE(s.size() == 2u);
    BOOST_TEST(s[0].name == "x");
    BOOST_TEST(s[1].name == "(rest)");
}

// Reconfigured so that the overflow takes the name of a lock already counted on its own: one
// entry of that name, holding both counts (two would be two series with one label set).
BOOST_AUTO_TEST_CASE(an_overflow_renamed_onto_a_counted_name_merges_with_it) {
    detail::named_metrics n;
    n.configure(1, "_other");
    n.acquired("plain", acquire_outcome::granted);
    n.acquired("plain", acquire_outcome::granted);
    n.acquired("past-the-bound", acquire_outcome::granted);
    n.configure(1, "plain");
    const auto s = n.snapshot();
    BOOST_REQUIRE(s.size() == 1u);
    BOOST_TEST(s[0].name == "plain");
    BOOST_TEST(s[0].acquires[0] == 3u);
    n.acquired("another", acquire_outcome::granted);
    BOOST_TEST(n.snapshot().size() == 2u); // the freed place goes to a new name
}

// Lock names may be any bytes, but Prometheus refuses a scrape with a label value that is not
// UTF-8: a byte that starts no well-formed sequence is written as the text \xNN.
BOOST_AUTO_TEST_CASE(label_values_stay_utf8) {
    corolock::lock_stats s;
    corolock::named_lock_stats a;
    a.name = std::string("bad\xff\xfe|ok\xc3\xa9|cut\xe2\x82|over\xc0\xaf|sur\xed\xa0\x80|") +
             "\xf0\x9f\x94\x92";
    a.acquires[0] = 1;
    s.by_name.push_back(a);
    std::string out;
    corolock::write_prometheus(out, s);
    const std::string want =
        "lock=\"bad\\\\xff\\\\xfe|ok\xc3\xa9|cut\\\\xe2\\\\x82|over\\\\xc0\\\\xaf|"
        "sur\\\\xed\\\\xa0\\\\x80|\xf0\x9f\x94\x92\"";
    BOOST_TEST(out.find(want) != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(threads_lose_no_count) {
    detail::named_metrics n;
    n.configure(3, "_other");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&n, t] {
            for (int i = 0; i < 1000; ++i)
                n.acquired("n" + std::to_string((i + t) % 10), acquire_outcome::granted);
        });
    for (auto& t : threads)
        t.join();
    std::uint64_t total = 0;
    for (const auto& e : n.snapshot())
        total += e.acquires[0];
    BOOST_TEST(total == 4000u);
    BOOST_TEST(n.snapshot().size() == 4u);
}

BOOST_AUTO_TEST_CASE(exposition_with_a_lock_label) {
    corolock::lock_stats s;
    corolock::named_lock_stats a;
    a.name = "sku:\"1\"";
    a.acquires[0] = 4;
    a.leases_lost = 1;
    a.hold.buckets[0] = 2;
    a.hold.count = 2;
    a.hold.sum = 100us;
    s.by_name.push_back(a);
    std::string out;
    corolock::write_prometheus(out, s);
    BOOST_TEST(out.find("# TYPE corolock_named_acquires_total counter\n") != std::string::npos);
    BOOST_TEST(out.find("corolock_named_acquires_total{lock=\"sku:\\\"1\\\"\",outcome=\"granted\"} "
                        "4\n") != std::string::npos);
    BOOST_TEST(out.find("corolock_named_leases_lost_total{lock=\"sku:\\\"1\\\"\"} 1\n") !=
               std::string::npos);
    BOOST_TEST(
        out.find("corolock_named_lease_hold_seconds_bucket{lock=\"sku:\\\"1\\\"\",le=\"+Inf\"} "
                 "2\n") != std::string::npos);
    BOOST_TEST(out.find("corolock_named_lease_hold_seconds_sum{lock=\"sku:\\\"1\\\"\"} 0.0001\n") !=
               std::string::npos);
    // Without per-name entries the named families are not written at all.
    std::string plain;
    corolock::write_prometheus(plain, corolock::lock_stats{});
    BOOST_TEST(plain.find("named_") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(connection_series) {
    corolock::connection_stats c;
    c.connects = 2;
    c.commands = 10;
    c.bytes_read = 99;
    c.master_switches = 1;
    std::string out;
    const corolock::metric_label labels[] = {{"redis", "eu"}};
    corolock::write_prometheus(out, c, true, "svc", labels);
    BOOST_TEST(out.find("# TYPE svc_connection_up gauge\nsvc_connection_up{redis=\"eu\"} 1\n") !=
               std::string::npos);
    BOOST_TEST(out.find("svc_connection_connects_total{redis=\"eu\"} 2\n") != std::string::npos);
    BOOST_TEST(out.find("svc_connection_commands_total{redis=\"eu\"} 10\n") != std::string::npos);
    BOOST_TEST(out.find("svc_connection_read_bytes_total{redis=\"eu\"} 99\n") != std::string::npos);
    BOOST_TEST(out.find("svc_connection_master_switches_total{redis=\"eu\"} 1\n") !=
               std::string::npos);
    std::string down;
    corolock::write_prometheus(down, c, false);
    BOOST_TEST(down.find("corolock_connection_up 0\n") != std::string::npos);
}

// A lock_meter: only grants enter the wait histogram, a loss counts apart from its hold, and its
// text uses the connection's family names and format (leases_lost_total without a reason).
BOOST_AUTO_TEST_CASE(lock_meter_counts_and_its_prometheus_text) {
    corolock::lock_meter meter;
    meter.record_acquire({}, true, 120us);
    meter.record_acquire({}, true, 1500ms);
    meter.record_acquire({}, false, 5s); // busy: no wait sample
    meter.record_acquire(error::acquire_timeout, false, 2s);
    meter.record_acquire(boost::asio::error::operation_aborted, false, 1s);
    meter.record_acquire(error::invalid_name, false, 0ns);
    meter.record_hold(3s, false);
    meter.record_hold(40s, true);
    const corolock::lock_meter_stats s = meter.snapshot();
    BOOST_TEST(s.acquired(acquire_outcome::granted) == 2u);
    BOOST_TEST(s.acquired(acquire_outcome::busy) == 1u);
    BOOST_TEST(s.acquired(acquire_outcome::cancelled) == 1u);
    BOOST_TEST(s.acquired(acquire_outcome::error) == 1u);
    BOOST_TEST(s.acquire_wait.count == 2u);
    BOOST_TEST(s.hold.count == 2u);
    BOOST_TEST(s.leases_lost == 1u);
    const corolock::metric_label labels[] = {{"lock", "orders"}};
    std::string out;
    corolock::write_prometheus(out, s, "app_meter", labels);
    // The same acquisition families as a connection's, sample for sample.
    corolock::lock_stats same;
    same.acquires = s.acquires;
    same.acquire_wait = s.acquire_wait;
    same.hold = s.hold;
    std::string conn_text;
    corolock::write_prometheus(conn_text, same, "app_meter", labels);
    const auto lost_at = out.find("# HELP app_meter_leases_lost_total");
    BOOST_TEST(out.substr(0, lost_at) ==
               conn_text.substr(0, conn_text.find("# HELP app_meter_lock_attempts_total")));
    const std::string hold = "# HELP app_meter_lease_hold_seconds";
    BOOST_TEST(out.substr(lost_at, out.find(hold) - lost_at) ==
               "# HELP app_meter_leases_lost_total Held leases lost.\n"
               "# TYPE app_meter_leases_lost_total counter\n"
               "app_meter_leases_lost_total{lock=\"orders\"} 1\n");
    BOOST_TEST(out.substr(out.find(hold)) == conn_text.substr(conn_text.find(hold)));
    BOOST_TEST(out.find("app_meter_lease_hold_seconds_bucket{lock=\"orders\",le=\"5\"} 1\n") !=
               std::string::npos);
    BOOST_TEST(out.ends_with("app_meter_lease_hold_seconds_count{lock=\"orders\"} 2\n"));
    BOOST_TEST(out.find("app_meter_acquire_wait_seconds_sum{lock=\"orders\"} 1.50012\n") !=
               std::string::npos);
}

// doc/metrics.md names every family write_prometheus writes, and states the options' defaults.
BOOST_AUTO_TEST_CASE(doc_names_every_family_and_the_defaults) {
    const std::string doc = corolock::test::doc_text("metrics.md");
    corolock::lock_stats s;
    s.by_name.emplace_back();
    std::string out;
    corolock::write_prometheus(out, s);
    corolock::write_prometheus(out, corolock::connection_stats{}, true);
    std::istringstream lines(out);
    std::size_t families = 0;
    for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with("# TYPE "))
            continue;
        const auto name = line.substr(7, line.find(' ', 7) - 7);
        ++families;
        BOOST_TEST(doc.find("`" + name) != std::string::npos, name << " is not in doc/metrics.md");
    }
    BOOST_TEST(families == 27u);
    // The options' defaults are stated with doc_claims markers (test/unit/doc_claims.cpp).
    BOOST_TEST(doc.find("<!-- = lock_metrics_options.max_named_locks -->") != std::string::npos);
    BOOST_TEST(doc.find("<!-- = lock_metrics_options.overflow_name -->") != std::string::npos);
    BOOST_TEST(doc.find("<!-- = lock_metrics_options.on_event -->") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_lock_metrics
