// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Lost leases: taken by someone else, deleted from outside, lost while Redis still has the
// key, expired, checked against the clock (review S2, L1, Q4), and logged.
#include "integration/mutex/fixture.hpp"

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_mutex_loss {

using namespace mutex_test;

BOOST_AUTO_TEST_SUITE(mutex)
BOOST_AUTO_TEST_SUITE(loss)

// ---------------------------------------------------------------------------------------------
// Lost leases (review S2, L1, Q4)

// The lease is taken by someone else (force_unlock, then another owner acquires; review S2).
BOOST_FIXTURE_TEST_CASE(taken_lease_is_reported_and_refused, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:taken", lease_of(3s));
        corolock::mutex admin(peer, "lock:taken"), b(peer, "lock:taken");
        lease a = co_await m.async_acquire();
        const auto a_token = a.token();
        BOOST_TEST(co_await admin.async_force_unlock());
        lease lb = co_await b.async_try_acquire();
        BOOST_REQUIRE(lb.owns());
        BOOST_TEST(lb.token() > a_token);
        const auto t0 = clock_type::now();

        // Before a's watchdog has looked (renewals every 1 s): the fence refuses a at the server
        // (stale_token), or a already heard of the force-unlock and refuses it locally.
        auto [ec1, v1] = co_await fenced_incr_with(a, "taken:counter");
        BOOST_TEST((ec1 == error::stale_token || ec1 == error::lease_lost), ec1.message());
        BOOST_TEST(ec1 == corolock::condition::lock_lost);
        auto [ecb, vb] = co_await fenced_incr_with(lb, "taken:counter");
        BOOST_TEST(!ecb);
        BOOST_TEST(vb == "1");

        // A nested hold cannot revive it either (S2: a nested acquire got a fresh token).
        auto h = a.hold();
        BOOST_TEST(h.token() == a_token);

        auto [lost] = co_await a.async_wait_lost(tuple_deferred);
        const auto waited = clock_type::now() - t0;
        BOOST_TEST(lost == error::lease_lost);
        BOOST_TEST_MESSAGE("taken lease reported lost after " << ms(waited)
                                                              << " ms (renewal period 1000 ms)");
        BOOST_TEST((waited < 1500ms)); // within a renewal period (and a margin)
        BOOST_TEST(a.lost());
        BOOST_TEST(!a.valid());
        BOOST_TEST(!h.valid());
        BOOST_TEST(a.owns()); // not released yet: the caller learns it at release too
        auto [ec2, v2] = co_await fenced_incr_with(a, "taken:counter");
        BOOST_TEST(ec2 == corolock::condition::lock_lost); // refused locally now
        h.reset();
        auto [rec] = co_await a.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
        BOOST_TEST(owner("lock:taken") == bulk(lb.owner_id())); // b's key untouched
        BOOST_TEST(srv.command({"GET", "taken:counter"}) == "$1\r\n1\r\n");
        BOOST_TEST(lb.valid());
        co_await lb.async_release();
        BOOST_TEST(!exists("lock:taken"));
    });
}

BOOST_FIXTURE_TEST_CASE(key_deleted_from_outside_signals_lost, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:deleted", lease_of(300ms)), other(peer, "lock:deleted");
        lease l = co_await m.async_acquire();
        BOOST_TEST(srv.command({"DEL", "lock:deleted"}) == ":1\r\n");
        lease o = co_await other.async_try_acquire(); // another owner takes it
        BOOST_REQUIRE(o.owns());
        const auto t0 = clock_type::now();
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        const auto waited = clock_type::now() - t0;
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST_MESSAGE("lost noticed after " << ms(waited) << " ms (renewal period 100 ms)");
        BOOST_TEST((waited < 300ms)); // before the lease would have ended
        BOOST_TEST(l.lost());
        BOOST_TEST(!l.valid());
        auto [again] = co_await l.async_wait_lost(tuple_deferred); // asked again: same answer
        BOOST_TEST(again == error::lease_lost);
        auto [rec] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
        BOOST_TEST(owner("lock:deleted") == bulk(o.owner_id()));
        co_await o.async_release();
    });
}

// A loss reported while Redis still has our key (the renewal answered after the local
// deadline; review L1). The key is deleted at once (owner-checked), and re-acquiring is a new
// owner.
BOOST_FIXTURE_TEST_CASE(loss_with_key_still_in_redis_cleans_up, fixture) {
    run([&]() -> awaitable<void> {
        auto& c = proxied();
        corolock::mutex m(c, "lock:late", lease_of(3s)), b(peer, "lock:late");
        {
            // Warm the renew script (a cold cache would add a NOSCRIPT round trip).
            corolock::mutex w(c, "lock:warm", lease_of(100ms));
            lease wl = co_await w.async_acquire();
            co_await sleep_for(50ms); // a renewal at 33 ms
            co_await wl.async_release();
        }
        lease a = co_await m.async_acquire();
        const std::string a_owner(a.owner_id());
        const auto a_token = a.token();
        co_await sleep_for(100ms);
        // A latency spike: the renewal at lease/3 runs on Redis, its answer comes after the
        // local deadline. Redis then has the key for up to a lease after the renewal.
        proxy->delay(direction::server_to_client, 2500ms);
        auto [ec] = co_await a.async_wait_lost(tuple_deferred);
        const auto lost_at = clock_type::now();
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST(!a.valid());
        // Without the cleanup the key would live about a second more (renewed at ~1 s for 3 s,
        // lost at ~3 s).
        const bool freed = co_await eventually([&] { return !exists("lock:late"); }, 600ms, 2ms);
        BOOST_TEST(freed);
        BOOST_TEST_MESSAGE("key gone " << ms(clock_type::now() - lost_at)
                                       << " ms after the loss report");
        lease lb = co_await b.async_try_acquire();
        BOOST_TEST(lb.owns());
        proxy->heal();
        auto [rec] = co_await a.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
        if (lb) {
            BOOST_TEST(owner("lock:late") == bulk(lb.owner_id())); // a's release touched nothing
            co_await lb.async_release();
        }
        // Re-acquiring gives a new owner and a larger token: never the old record.
        lease again = co_await m.async_acquire_for(5s);
        BOOST_TEST(again.valid());
        BOOST_TEST(again.owner_id() != a_owner);
        BOOST_TEST(again.token() > a_token);
        if (lb)
            BOOST_TEST(again.token() > lb.token());
        co_await again.async_release();
        BOOST_TEST(!exists("lock:late"));
    });
}

BOOST_FIXTURE_TEST_CASE(fixed_lease_expires_and_reports_lost, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:fixed", lease_of(200ms, false));
        const auto before = clock_type::now();
        lease l = co_await m.async_acquire();
        const auto after = clock_type::now();
        // Review Q4: the deadline is known and starts at the send, between `before` and
        // `after`: valid_until = send time + lease - drift (200 ms / 100 + 2 ms = 4 ms).
        BOOST_TEST((l.valid_until() >= before + 196ms));
        BOOST_TEST((l.valid_until() <= after + 196ms));
        co_await sleep_for(50ms);
        auto [ex] = co_await l.async_extend(tuple_deferred); // a fixed lease is extended by hand
        BOOST_TEST(!ex);
        BOOST_TEST((l.valid_until() > before + 200ms));
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST((clock_type::now() >= l.valid_until()));
        BOOST_TEST(!l.valid());
        BOOST_TEST(co_await eventually([&] { return !exists("lock:fixed"); }, 200ms));
        auto [ex2] = co_await l.async_extend(tuple_deferred); // never brings it back
        BOOST_TEST(ex2 == error::lease_lost);
        BOOST_TEST(!exists("lock:fixed"));
        auto [rec] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
    });
}

// valid() checks the clock itself, whatever the watchdog has had time to do (review Q4).
BOOST_FIXTURE_TEST_CASE(valid_checks_the_clock, fixture) {
    bool valid_before = false, valid_after = true, lost_flag = true;
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:clock", lease_of(100ms, false));
        lease l = co_await m.async_acquire();
        valid_before = l.valid();
        // Block this (only) thread past the deadline: nothing else can run meanwhile.
        spin_for(l.valid_until() - clock_type::now() + 5ms);
        valid_after = l.valid();
        lost_flag = l.lost(); // not reported yet: the watchdog could not run
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
    });
    BOOST_TEST(valid_before);
    BOOST_TEST(!valid_after);
    BOOST_TEST(!lost_flag);
}

// ---------------------------------------------------------------------------------------------
// Logging

BOOST_FIXTURE_TEST_CASE(lost_leases_and_undos_are_logged, fixture) {
    log_capture logs;
    corolock::connection logged(ioc.get_executor(), config_for(srv), logs.make());
    run([&]() -> awaitable<void> {
        logged.async_run(asio::detached);
        corolock::mutex m(logged, "lock:log", lease_of(300ms));
        lease l = co_await m.async_acquire();
        BOOST_TEST(!logs.contains("lease lost"));
        srv.command({"DEL", "lock:log"});
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST(logs.contains("lease lost"));
        co_await l.async_release(tuple_deferred);

        // A grant nobody waits for any more (cancelled while its script is on the wire). (The
        // lost lease's cleanup above is an undo too.)
        const auto undos_logged = logs.count("undo sent");
        corolock::mutex u(logged, "lock:log:undo");
        asio::cancellation_signal sig;
        bool done = false;
        error_code uec;
        u.async_acquire(asio::bind_cancellation_slot(sig.slot(), [&](error_code e, lease) {
            uec = e;
            done = true;
        }));
        sig.emit(asio::cancellation_type::terminal);
        BOOST_REQUIRE(co_await eventually([&] { return done; }, 2s));
        BOOST_TEST(uec == asio::error::operation_aborted);
        BOOST_TEST(co_await eventually([&] { return logs.count("undo sent") > undos_logged; }, 2s));
        BOOST_TEST(logs.contains("given back"));
        BOOST_TEST(co_await eventually([&] { return !exists("lock:log:undo"); }, 2s));
        logged.cancel();
    });
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_mutex_loss
