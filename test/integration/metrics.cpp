// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock layer's metrics and log lines against a real redis-server: after a known sequence of
// grants, timeouts, a busy try, a cancellation, refused arguments and lost leases, every counter
// and histogram count is exactly what happened, and the log says so without the owner id.
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/test_config.hpp"
#include <corolock/metrics.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_metrics {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::acquire_outcome;
using corolock::error;
using corolock::error_code;
using corolock::lease;
using corolock::lease_loss;
using corolock::mutex_options;
using corolock::test::config_for;
using corolock::test::eventually;
using corolock::test::log_capture;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;

namespace {

using corolock::test::tuple_deferred;

// The owner id Redis keeps for `key` (the secret no log line may show).
std::string owner_of(redis_process& srv, const std::string& key) {
    const auto reply = srv.command({"HGET", key, "owner"}); // "$<n>\r\n<owner>\r\n"
    const auto start = reply.find("\r\n") + 2;
    return reply.substr(start, reply.size() - start - 2);
}

} // namespace

BOOST_AUTO_TEST_SUITE(metrics)

BOOST_AUTO_TEST_CASE(every_acquisition_and_loss_is_counted_once) {
    redis_process srv;
    asio::io_context ioc;
    log_capture logs;
    corolock::connection conn(ioc.get_executor(), config_for(srv), logs.make());
    corolock::connection peer(ioc.get_executor(), config_for(srv), quiet());
    std::string owners; // every owner id seen in Redis, '|'-separated
    std::uint64_t first = 0, renewed_token = 0, fixed_token = 0, bounded_token = 0;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            peer.async_run(asio::detached);
            const auto before = corolock::get_lock_stats(conn);
            BOOST_TEST(before.acquire_wait.count == 0u);

            // 3 grants.
            corolock::mutex free(conn, "metrics:free");
            for (int i = 0; i < 3; ++i) {
                lease l = co_await free.async_acquire();
                owners += owner_of(srv, "metrics:free") + "|";
                first = first ? first : l.token().value();
                co_await l.async_release();
            }
            BOOST_TEST(logs.count("'metrics:free': granted after") == 3u);
            BOOST_TEST(logs.contains(" ms, token " + std::to_string(first)));

            // Held by another process: 2 timeouts, 1 busy try, 1 cancellation.
            corolock::mutex theirs(peer, "metrics:busy");
            lease held = co_await theirs.async_acquire();
            corolock::mutex busy(conn, "metrics:busy");
            for (int i = 0; i < 2; ++i) {
                auto [ec, l] = co_await busy.async_acquire_for(30ms, tuple_deferred);
                BOOST_TEST(ec == error::acquire_timeout);
            }
            lease none = co_await busy.async_try_acquire();
            BOOST_TEST(!none);
            asio::cancellation_signal sig;
            bool done = false;
            busy.async_acquire(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lease) {
                BOOST_TEST(ec == asio::error::operation_aborted);
                done = true;
            }));
            BOOST_TEST(co_await eventually(
                [&] { return corolock::get_lock_stats(conn).waiters == 1u; }, 2s));
            sig.emit(asio::cancellation_type::terminal);
            BOOST_TEST(co_await eventually([&] { return done; }, 2s));
            co_await held.async_release();

            // Refused before anything is sent: an error.
            corolock::mutex unnamed(conn, "");
            auto [invalid, nothing] = co_await unnamed.async_acquire(tuple_deferred);
            BOOST_TEST(invalid == error::invalid_name);

            // Lost: the key deleted from outside, found at the watchdog's renewal.
            mutex_options o;
            o.lease = 300ms; // renewed every 100 ms
            corolock::mutex renewed(conn, "metrics:renewed", o);
            lease l = co_await renewed.async_acquire();
            owners += owner_of(srv, "metrics:renewed") + "|";
            renewed_token = l.token().value();
            BOOST_TEST(co_await eventually(
                [&] { return corolock::get_lock_stats(conn).renewals >= 2u; }, 3s));
            srv.command({"DEL", "metrics:renewed"});
            auto [lost] = co_await l.async_wait_lost(tuple_deferred);
            BOOST_TEST(lost == error::lease_lost);
            co_await l.async_release(tuple_deferred);

            // Lost at release: no watchdog, the key deleted meanwhile.
            o.watchdog = false;
            o.lease = 5s;
            corolock::mutex fixed(conn, "metrics:fixed", o);
            lease f = co_await fixed.async_acquire();
            owners += owner_of(srv, "metrics:fixed") + "|";
            fixed_token = f.token().value();
            srv.command({"DEL", "metrics:fixed"});
            auto [released] = co_await f.async_release(tuple_deferred);
            BOOST_TEST(released == error::lease_lost);

            // Lost at max_hold.
            o.watchdog = true;
            o.lease = 1s;
            o.max_hold = 100ms;
            corolock::mutex bounded(conn, "metrics:bounded", o);
            lease b = co_await bounded.async_acquire();
            bounded_token = b.token().value();
            auto [held_too_long] = co_await b.async_wait_lost(tuple_deferred);
            BOOST_TEST(held_too_long == error::max_hold_reached);
            co_await b.async_release(tuple_deferred);

            const auto s = corolock::get_lock_stats(conn);
            BOOST_TEST(s.acquired(acquire_outcome::granted) == 6u);
            BOOST_TEST(s.acquired(acquire_outcome::timeout) == 2u);
            BOOST_TEST(s.acquired(acquire_outcome::busy) == 1u);
            BOOST_TEST(s.acquired(acquire_outcome::cancelled) == 1u);
            BOOST_TEST(s.acquired(acquire_outcome::error) == 1u);
            // Only grants are in the wait histogram; no grant here waited anywhere near 30 s.
            BOOST_TEST(s.acquire_wait.count == 6u);
            BOOST_TEST(s.acquire_wait.buckets.back() == 0u);
            BOOST_TEST((s.acquire_wait.sum > 0ns));
            BOOST_TEST(s.lost_by(lease_loss::renewal_refused) == 1u);
            BOOST_TEST(s.lost_by(lease_loss::release_refused) == 1u);
            BOOST_TEST(s.lost_by(lease_loss::max_hold) == 1u);
            BOOST_TEST(s.lost_by(lease_loss::expired) == 0u);
            BOOST_TEST(s.lost_by(lease_loss::connection_stopped) == 0u);
            BOOST_TEST(s.leases_lost == 3u);
            // Every renew script was answered: each one renewed its single lease, or found it
            // gone (once). (The max_hold lease, 1 s, was lost before its first renewal.)
            BOOST_TEST(s.renewals >= 2u);
            BOOST_TEST(s.renewal_calls == s.renewals + 1);
            BOOST_TEST(s.renewal_rtt.count == s.renewal_calls);
            BOOST_TEST(s.renewal_failures == 0u);
            BOOST_TEST(s.leases_held == 0u);
            BOOST_TEST(s.waiters == 0u);

            std::string text;
            corolock::write_prometheus(text, s);
            BOOST_TEST(text.find("corolock_acquires_total{outcome=\"timeout\"} 2\n") !=
                       std::string::npos);
            BOOST_TEST(text.find("corolock_leases_lost_total{reason=\"max_hold\"} 1\n") !=
                       std::string::npos);
            BOOST_TEST(text.find("corolock_acquire_wait_seconds_count 6\n") != std::string::npos);
            conn.cancel();
            peer.cancel();
        }(),
        30s);

    BOOST_TEST(logs.count("'metrics:busy': timeout after") == 2u);
    BOOST_TEST(logs.count("'metrics:busy': busy after") == 1u);
    BOOST_TEST(logs.count("'metrics:busy': cancelled after") == 1u);
    BOOST_TEST(logs.count("'': invalid lock name (the log names the rule it breaks): the name is "
                          "empty (nothing was sent)") == 1u);
    const auto lost_line = [](std::string_view name, std::uint64_t token, std::string_view why) {
        return "'" + std::string(name) + "': lease lost, token " + std::to_string(token) + " (" +
               std::string(why) + ": ";
    };
    BOOST_TEST(logs.count(lost_line("metrics:renewed", renewed_token, "renewal_refused")) == 1u);
    BOOST_TEST(logs.count(lost_line("metrics:fixed", fixed_token, "release_refused")) == 1u);
    BOOST_TEST(logs.count(lost_line("metrics:bounded", bounded_token, "max_hold")) == 1u);
    // The owner id is the secret that releases the lock: never in a log line.
    std::size_t checked = 0;
    for (std::size_t at = 0, bar; (bar = owners.find('|', at)) != std::string::npos;
         at = bar + 1, ++checked) {
        const auto owner = owners.substr(at, bar - at);
        BOOST_TEST_REQUIRE(owner.size() >= 16u);
        BOOST_TEST(logs.count(owner) == 0u);
    }
    BOOST_TEST(checked == 5u);
}

BOOST_AUTO_TEST_CASE(leases_held_at_stop_are_lost_by_connection_stopped) {
    redis_process srv;
    asio::io_context ioc;
    log_capture logs;
    corolock::connection conn(ioc.get_executor(), config_for(srv), logs.make());
    std::uint64_t token = 0;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            corolock::mutex m(conn, "metrics:stopped");
            lease l = co_await m.async_acquire();
            token = l.token().value();
            BOOST_TEST(corolock::get_lock_stats(conn).leases_held == 1u);
            conn.cancel();
            auto [ec] = co_await l.async_wait_lost(tuple_deferred);
            BOOST_TEST(ec == error::lease_lost);
            const auto s = corolock::get_lock_stats(conn);
            BOOST_TEST(s.lost_by(lease_loss::connection_stopped) == 1u);
            BOOST_TEST(s.leases_lost == 1u);
            BOOST_TEST(s.leases_held == 0u);
        }(),
        30s);
    BOOST_TEST(logs.count("lease lost, token " + std::to_string(token) + " (connection_stopped") ==
               1u);
}

BOOST_AUTO_TEST_CASE(debug_lines_only_at_debug_level) {
    redis_process srv;
    asio::io_context ioc;
    log_capture logs;
    corolock::connection conn(ioc.get_executor(), config_for(srv),
                              logs.make(corolock::logger::level::info));
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            corolock::mutex m(conn, "metrics:quiet");
            lease l = co_await m.async_acquire();
            co_await l.async_release();
            BOOST_TEST(corolock::get_lock_stats(conn).acquired(acquire_outcome::granted) == 1u);
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(!logs.contains("granted"));
}

// issue 21: the event hook sees every step of each acquisition and lease, in order, with
// durations that match what happened; it costs nothing to the lock when it throws.
BOOST_AUTO_TEST_CASE(event_hook_in_order_with_durations) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc, config_for(srv), quiet());
    corolock::connection peer(ioc, config_for(srv), quiet());
    std::vector<corolock::lock_event> events;
    std::vector<std::string> names; // events[i].name, kept (the view dies with the call)
    corolock::lock_metrics_options o;
    o.on_event = [&](const corolock::lock_event& e) {
        events.push_back(e);
        names.emplace_back(e.name);
    };
    corolock::set_lock_metrics(conn, std::move(o));
    using kind = corolock::lock_event_kind;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            peer.async_run(asio::detached);
            corolock::mutex mine(conn, "hook:a"), theirs(peer, "hook:a");
            lease held = co_await theirs.async_acquire();
            // Waits for the peer's ~150 ms hold, holds 100 ms, releases.
            auto release_later = [&]() -> awaitable<void> {
                co_await sleep_for(150ms);
                co_await held.async_release();
            };
            asio::co_spawn(ioc, release_later(), asio::detached);
            lease l = co_await mine.async_acquire();
            const auto token = l.token().value();
            co_await sleep_for(100ms);
            co_await l.async_release();
            BOOST_REQUIRE(events.size() == 3u);
            BOOST_TEST(events[0].kind == kind::acquire_start);
            BOOST_TEST((events[0].elapsed == std::chrono::nanoseconds::zero()));
            BOOST_TEST(events[1].kind == kind::granted);
            BOOST_TEST(events[1].token == token);
            BOOST_TEST((events[1].elapsed >= 100ms && events[1].elapsed < 5s));
            BOOST_TEST(events[2].kind == kind::released);
            BOOST_TEST(events[2].token == token);
            BOOST_TEST((events[2].elapsed >= 100ms && events[2].elapsed < 5s));
            BOOST_TEST((names == std::vector<std::string>(3, "hook:a")));
            // Busy, then a timeout: one start and one not_granted each, with outcome and error.
            lease again = co_await theirs.async_acquire();
            lease none = co_await mine.async_try_acquire();
            BOOST_TEST(!none.owns());
            auto [tec, t] = co_await mine.async_acquire_for(80ms, tuple_deferred);
            BOOST_TEST(tec == error::acquire_timeout);
            BOOST_REQUIRE(events.size() == 7u);
            BOOST_TEST(events[3].kind == kind::acquire_start);
            BOOST_TEST(events[4].kind == kind::not_granted);
            BOOST_TEST(events[4].outcome == acquire_outcome::busy);
            BOOST_TEST(!events[4].ec);
            BOOST_TEST(events[5].kind == kind::acquire_start);
            BOOST_TEST(events[6].kind == kind::not_granted);
            BOOST_TEST(events[6].outcome == acquire_outcome::timeout);
            BOOST_TEST(events[6].ec == error::acquire_timeout);
            // The wait's clock starts when the acquisition is set up, a moment after the deadline
            // was taken from the 80 ms (79.9 ms was seen once on a loaded machine).
            BOOST_TEST((events[6].elapsed >= 75ms && events[6].elapsed < 5s));
            co_await again.async_release();
            // A fixed 200 ms lease runs out: lost (not released), elapsed about the lease.
            mutex_options fixed_lease;
            fixed_lease.lease = 200ms;
            fixed_lease.watchdog = false;
            corolock::mutex fixed(conn, "hook:fixed", fixed_lease);
            lease f = co_await fixed.async_acquire();
            auto [lec] = co_await f.async_wait_lost(tuple_deferred);
            BOOST_TEST(lec == error::lease_lost);
            auto [rec] = co_await f.async_release(tuple_deferred);
            BOOST_TEST(rec == corolock::condition::lock_lost);
            BOOST_REQUIRE(events.size() == 10u);
            BOOST_TEST(events[8].kind == kind::granted);
            BOOST_TEST(events[9].kind == kind::lost);
            BOOST_TEST(events[9].ec == error::lease_lost);
            BOOST_TEST((events[9].elapsed >= 150ms && events[9].elapsed < 1s));
            // Hold times: one released lease and one lost.
            const auto s = corolock::get_lock_stats(conn);
            BOOST_TEST(s.hold.count == 2u);
            BOOST_TEST(s.hold.sum >= 250ms);
            // A hook that throws is dropped; the lock works on.
            corolock::lock_metrics_options bad;
            bad.on_event = [](const corolock::lock_event&) { throw std::runtime_error("hook"); };
            corolock::set_lock_metrics(conn, std::move(bad));
            lease b = co_await mine.async_acquire();
            BOOST_TEST(b.owns());
            co_await b.async_release();
            conn.cancel();
            peer.cancel();
        }(),
        30s);
}

// issue 21: a label per name up to the bound, the rest added up under one label value, and the
// connection's own series in the same exposition.
BOOST_AUTO_TEST_CASE(per_name_series_are_bounded) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc, config_for(srv), quiet());
    corolock::set_lock_metrics(conn,
                               {.max_named_locks = 2, .overflow_name = "_rest", .on_event = {}});
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            for (int i = 0; i < 50; ++i) {
                corolock::mutex m(conn, "order:" + std::to_string(i % 10));
                lease l = co_await m.async_acquire();
                co_await l.async_release();
            }
            const auto s = corolock::get_lock_stats(conn);
            BOOST_REQUIRE(s.by_name.size() == 3u);
            BOOST_TEST(s.by_name[0].name == "order:0");
            BOOST_TEST(s.by_name[0].acquires[0] == 5u);
            BOOST_TEST(s.by_name[1].name == "order:1");
            BOOST_TEST(s.by_name[2].name == "_rest");
            BOOST_TEST(s.by_name[2].acquires[0] == 40u);
            BOOST_TEST(s.by_name[2].hold.count == 40u);
            BOOST_TEST(s.hold.count == 50u);
            std::string out;
            corolock::write_prometheus(out, conn);
            BOOST_TEST(out.find("corolock_connection_up 1\n") != std::string::npos);
            BOOST_TEST(out.find("corolock_connection_connects_total 1\n") != std::string::npos);
            BOOST_TEST(out.find("corolock_named_acquires_total{lock=\"_rest\",outcome=\"granted\"} "
                                "40\n") != std::string::npos);
            BOOST_TEST(out.find("corolock_lease_hold_seconds_count 50\n") != std::string::npos);
            BOOST_TEST(out.find("lock=\"order:9\"") == std::string::npos); // no series per id
            conn.cancel();
        }(),
        30s);
}

// issue 21: a lease per call, on the wire and under the watchdog; refused arguments say which
// part is wrong.
BOOST_AUTO_TEST_CASE(a_lease_per_call_and_refusals_that_name_the_cause) {
    redis_process srv;
    asio::io_context ioc;
    log_capture logs;
    corolock::connection conn(ioc, config_for(srv), logs.make());
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            corolock::mutex m(conn, "percall"); // the default lease: 30 s
            lease short_one = co_await m.async_acquire_with({.lease = 300ms, .wait = 10s});
            auto ttl = co_await m.async_remaining_ttl();
            BOOST_TEST((ttl > 0 && ttl <= 300));
            co_await sleep_for(700ms); // renewed by the watchdog at its own lease/3
            BOOST_TEST(short_one.valid());
            ttl = co_await m.async_remaining_ttl();
            BOOST_TEST((ttl > 0 && ttl <= 300));
            co_await short_one.async_release();
            lease normal = co_await m.async_acquire_with({}); // 0: the mutex's
            ttl = co_await m.async_remaining_ttl();
            BOOST_TEST(ttl > 20000);
            co_await normal.async_release();
            auto [lec, bad] =
                co_await m.async_acquire_with({.lease = 5ms, .wait = 1s}, tuple_deferred);
            BOOST_TEST(lec == error::invalid_lease);
            auto [wec, w] =
                co_await m.async_acquire_with({.lease = 1s, .wait = -1ms}, tuple_deferred);
            BOOST_TEST(wec == error::invalid_wait);
            corolock::mutex odd(conn, "a}b"), derived(conn, "{t}:fence");
            auto [nec, n] = co_await odd.async_acquire(tuple_deferred);
            BOOST_TEST(nec == error::invalid_name);
            auto [dec, d] = co_await derived.async_acquire(tuple_deferred);
            BOOST_TEST(dec == error::invalid_name);
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(logs.contains("'percall': invalid lease: below 100 ms or above 365 days: the lease "
                             "(mutex_options::lease, or acquire_options::lease for one call) is "
                             "5 ms, not 100 ms to 365 days (nothing was sent)"));
    BOOST_TEST(logs.contains("'a}b': invalid lock name (the log names the rule it breaks): the "
                             "name is not hash-tagged but contains '}'"));
    BOOST_TEST(logs.contains("the name is hash-tagged and ends in a reserved suffix"));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_metrics
