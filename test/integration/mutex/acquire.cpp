// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Acquiring: try_acquire, acquire_for and its deadline, a key of the wrong type, argument
// checks and durations at their limits (review Q3), a timed-out acquire retried (review L5).
#include "integration/mutex/fixture.hpp"

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_mutex_acquire {

using namespace mutex_test;

BOOST_AUTO_TEST_SUITE(mutex)
BOOST_AUTO_TEST_SUITE(acquire)

// ---------------------------------------------------------------------------------------------
// Try, acquire and ownership

BOOST_FIXTURE_TEST_CASE(try_acquire_release_and_ownership, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:basic"), other(peer, "lock:basic");
        BOOST_TEST(m.name() == "lock:basic");
        lease a = co_await m.async_try_acquire();
        BOOST_REQUIRE(a.owns());
        BOOST_TEST(a.valid());
        BOOST_TEST(!a.lost());
        BOOST_TEST(a.token().value() > 0u);
        BOOST_TEST(a.name() == "lock:basic");
        BOOST_TEST(a.owner_id().size() == 32u);
        BOOST_TEST(owner("lock:basic") == bulk(a.owner_id()));
        BOOST_TEST((a.valid_until() > clock_type::now() + 25s)); // the default 30 s lease
        BOOST_TEST((a.valid_until() <= clock_type::now() + 30s));

        // Held by a: an empty lease, not an error; from the same handle too (it is no owner).
        lease b = co_await other.async_try_acquire();
        BOOST_TEST(!b.owns());
        BOOST_TEST(b.token().value() == 0u);
        lease same = co_await m.async_try_acquire();
        BOOST_TEST(!same.owns());
        auto [ec] = co_await b.async_release(tuple_deferred);
        BOOST_TEST(ec == error::not_owner); // b never held it
        BOOST_TEST(ec == corolock::condition::lock_lost);
        auto [wl] = co_await b.async_wait_lost(tuple_deferred);
        BOOST_TEST(wl == error::not_owner);
        BOOST_TEST(exists("lock:basic")); // and nothing changed

        std::int64_t ttl = co_await m.async_remaining_ttl();
        BOOST_TEST(ttl > 25000);

        // A lease moves like a unique_lock.
        lease moved = std::move(a);
        BOOST_TEST(!a.owns()); // NOLINT(bugprone-use-after-move): moved-from is empty
        BOOST_TEST(moved.valid());
        co_await moved.async_release();
        BOOST_TEST(!moved.owns());
        BOOST_TEST(!exists("lock:basic"));
        auto [ec2] = co_await moved.async_release(tuple_deferred);
        BOOST_TEST(ec2 == error::not_owner); // double release
        lease c = co_await other.async_try_acquire();
        BOOST_TEST(c.owns());
        BOOST_TEST(c.token() > moved.token());

        // Move-assigning over a lease releases what it owned.
        corolock::mutex m2(conn, "lock:basic:2");
        lease d = co_await m2.async_acquire();
        BOOST_TEST(exists("lock:basic:2"));
        d = std::move(c);
        BOOST_TEST(d.name() == "lock:basic");
        BOOST_TEST(co_await eventually([&] { return !exists("lock:basic:2"); }, 2s));
        co_await d.async_release();
        BOOST_TEST(!exists("lock:basic"));
    });
}

BOOST_FIXTURE_TEST_CASE(wrong_type_key_is_left_untouched, fixture) {
    run([&]() -> awaitable<void> {
        BOOST_TEST(srv.command({"SET", "lock:wrong", "user data"}) == "+OK\r\n");
        corolock::mutex m(conn, "lock:wrong");
        auto [ec, l] = co_await m.async_try_acquire(tuple_deferred);
        BOOST_TEST(ec == error::wrong_type);
        BOOST_TEST(!l.owns());
        auto [ec2, l2] = co_await m.async_acquire(tuple_deferred);
        BOOST_TEST(ec2 == error::wrong_type);
        BOOST_TEST(!l2.owns());
        BOOST_TEST(srv.command({"GET", "lock:wrong"}) == "$9\r\nuser data\r\n");
        auto [ec3, deleted] = co_await m.async_force_unlock(tuple_deferred);
        BOOST_TEST(!ec3);
        BOOST_TEST(!deleted); // not a lock: force unlock refuses too
        BOOST_TEST(srv.command({"GET", "lock:wrong"}) == "$9\r\nuser data\r\n");
    });
}

// ---------------------------------------------------------------------------------------------
// Deadlines

BOOST_FIXTURE_TEST_CASE(acquire_for_times_out, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:timeout");
        lease held = co_await m.async_acquire();
        auto [ec, l] = co_await m.async_acquire_for(200ms, tuple_deferred);
        BOOST_TEST(ec == error::acquire_timeout);
        BOOST_TEST(ec == corolock::condition::lock_contention);
        BOOST_TEST(!l.owns());
        co_await held.async_release();
        lease l2 = co_await m.async_acquire_for(1s);
        BOOST_TEST(l2.valid());
        co_await l2.async_release();
    });
}

// A wait already over when it begins (zero, a deadline past, time_point::min()) is one attempt:
// the lock if it is free, else acquire_timeout; never a race between the reply and a deadline
// that has passed (before, the outcome on a free lock depended on which was seen first).
BOOST_FIXTURE_TEST_CASE(a_zero_wait_is_one_attempt, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:zero-wait"), other(peer, "lock:zero-wait");
        const auto past = clock_type::now() - 1s;
        for (int i = 0; i < 20; ++i) {
            auto [e1, l1] = co_await m.async_acquire_for(0ms, tuple_deferred);
            BOOST_TEST(!e1, e1.message());
            BOOST_TEST(l1.owns());
            co_await l1.async_release();
            auto [e2, l2] = co_await m.async_acquire_until(past, tuple_deferred);
            BOOST_TEST(!e2, e2.message());
            BOOST_TEST(l2.owns());
            co_await l2.async_release();
            auto [e3, l3] =
                co_await m.async_acquire_until(clock_type::time_point::min(), tuple_deferred);
            BOOST_TEST(!e3, e3.message()); // min() is a past deadline, not a negative wait
            BOOST_TEST(l3.owns());
            co_await l3.async_release();
        }
        lease held = co_await other.async_acquire();
        for (int i = 0; i < 5; ++i) {
            auto [e1, l1] = co_await m.async_acquire_for(0ms, tuple_deferred);
            BOOST_TEST(e1 == error::acquire_timeout);
            BOOST_TEST(!l1.owns());
            auto [e2, l2] = co_await m.async_acquire_until(past, tuple_deferred);
            BOOST_TEST(e2 == error::acquire_timeout);
            BOOST_TEST(!l2.owns());
        }
        co_await held.async_release();
    });
}

// An acquire_for that timed out while Redis stalled, retried at once (review L5).
BOOST_FIXTURE_TEST_CASE(timed_out_acquire_retried_gets_a_full_lease, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:retry");
        {
            lease w = co_await m.async_acquire(); // warm the scripts
            co_await w.async_release();
        }
        corolock::request stall;
        stall.push("DEBUG", "SLEEP", "0.3");
        bool slept = false;
        peer.async_exec(stall, corolock::ignore, [&](error_code, std::size_t) { slept = true; });
        co_await sleep_for(50ms); // Redis is asleep now
        auto [ec1, l1] = co_await m.async_acquire_for(30ms, tuple_deferred);
        BOOST_TEST(ec1 == error::server_timeout); // Redis, not the lock, kept it
        BOOST_TEST(!l1.owns());
        auto [ec2, l2] = co_await m.async_acquire_for(5s, tuple_deferred);
        BOOST_REQUIRE(!ec2);
        BOOST_REQUIRE(l2.owns());
        BOOST_TEST(l2.token().value() > 0u);
        BOOST_TEST(l2.valid());
        BOOST_TEST(owner("lock:retry") == bulk(l2.owner_id()));
        BOOST_TEST(srv.command({"HGET", "lock:retry", "token"}) ==
                   bulk(std::to_string(l2.token().value())));
        auto [fec, v] = co_await fenced_incr_with(l2, "retry:counter");
        BOOST_TEST(!fec);
        BOOST_TEST(v == "1");
        co_await l2.async_release();
        BOOST_TEST(!exists("lock:retry"));
        co_await sleep_for(100ms);
        BOOST_TEST(!exists("lock:retry"));
        BOOST_TEST(stats().leases_held == 0u);
        BOOST_TEST(co_await eventually([&] { return slept; }, 2s));
    });
}

// ---------------------------------------------------------------------------------------------
// Arguments and durations at their limits (review Q3)

// Argument errors, and durations at their limits (review Q3).
BOOST_FIXTURE_TEST_CASE(invalid_arguments_fail_before_redis, fixture) {
    // A connection that never runs: anything sent would wait, so prompt errors prove nothing
    // was sent (and its commands counter stays 0).
    asio::io_context idle;
    corolock::connection offline(idle.get_executor(), config_for(srv), quiet());
    struct bad {
        std::string name;
        mutex_options opts;
        error expected;
    };
    auto with = [](auto change) {
        mutex_options o;
        change(o);
        return o;
    };
    using dur = clock_type::duration;
    const std::vector<bad> cases{
        {"", {}, error::invalid_name},
        {"a}b", {}, error::invalid_name},          // no hash tag, and a '}'
        {"{t}:fence", {}, error::invalid_name},    // lock {t}'s fence key
        {"{t}:released", {}, error::invalid_name}, // lock {t}'s channel
        {"x", lease_of(0s), error::invalid_lease},
        {"x", lease_of(-5s), error::invalid_lease},
        {"x", lease_of(99ms), error::invalid_lease},
        {"x", lease_of(one_year + 1ms), error::invalid_lease},
        {"x", with([](auto& o) { o.max_hold = dur::max(); }), error::invalid_argument},
        {"x", with([](auto& o) { o.max_hold = one_year + 1ms; }), error::invalid_argument},
        {"x", with([](auto& o) { o.max_hold = -1ms; }), error::invalid_argument},
        {"x", with([](auto& o) { o.retry_base = dur::zero(); }), error::invalid_argument},
        {"x", with([](auto& o) { o.retry_max = dur::max(); }), error::invalid_argument},
        {"x", with([](auto& o) { o.retry_max = o.retry_base - 1ms; }), error::invalid_argument},
        {"x", with([](auto& o) { o.fence_retention = dur::zero(); }), error::invalid_argument},
        {"x", with([](auto& o) { o.fence_retention = one_year + 1ms; }), error::invalid_argument},
    };
    run_coroutine_test(
        idle,
        [&]() -> awaitable<void> {
            for (const auto& c : cases) {
                BOOST_TEST_CONTEXT("name '" << c.name << "', expected " << c.expected) {
                    corolock::mutex m(offline, c.name, c.opts);
                    auto [e1, l1] = co_await m.async_acquire(tuple_deferred);
                    BOOST_TEST(e1 == c.expected);
                    BOOST_TEST(e1 == corolock::condition::invalid_argument);
                    BOOST_TEST(!l1.owns());
                    auto [e2, l2] = co_await m.async_try_acquire(tuple_deferred);
                    BOOST_TEST(e2 == c.expected);
                    auto [e3, l3] = co_await m.async_acquire_for(1s, tuple_deferred);
                    BOOST_TEST(e3 == c.expected);
                }
            }
            corolock::mutex ok(offline, "x");
            auto [ew, lw] = co_await ok.async_acquire_for(-1ms, tuple_deferred);
            BOOST_TEST(ew == error::invalid_wait);
            BOOST_TEST(!lw.owns());
        }(),
        10s);
    BOOST_TEST(offline.stats().commands == 0u);
}

BOOST_FIXTURE_TEST_CASE(durations_at_their_limits_work, fixture) {
    run([&]() -> awaitable<void> {
        // max_hold up to a year is valid, and does not end the lease early.
        auto opts = lease_of(300ms);
        opts.max_hold = one_year;
        opts.fence_retention = one_year;
        corolock::mutex m(conn, "lock:limits", opts);
        lease l = co_await m.async_acquire();
        co_await sleep_for(500ms);
        BOOST_TEST(l.valid());
        BOOST_TEST(!l.lost());
        // The fence key lives lease + fence_retention: a year (a PTTL of 11 digits).
        const auto fence_ttl = srv.command({"PTTL", "{lock:limits}:fence"});
        BOOST_TEST(std::stoll(fence_ttl.substr(1)) > ms(one_year - 1h));

        // A huge wait waits (it does not overflow into "timed out at once").
        for (auto wait : {clock_type::duration::max(), clock_type::duration(one_year * 100)}) {
            bool done = false;
            error_code got_ec = asio::error::would_block;
            lease got;
            m.async_acquire_for(wait, [&](error_code ec, lease g) {
                got_ec = ec;
                got = std::move(g);
                done = true;
            });
            co_await sleep_for(300ms);
            BOOST_TEST(!done);
            co_await l.async_release();
            BOOST_REQUIRE(co_await eventually([&] { return done; }, 2s));
            BOOST_TEST(!got_ec);
            BOOST_TEST(got.valid());
            l = std::move(got);
        }
        co_await l.async_release();

        // The smallest lease is one that can be held: the watchdog keeps it through 30
        // renewals (at 10 ms it was lost at once, issue 28).
        corolock::mutex tiny(conn, "lock:limits:tiny", lease_of(100ms));
        lease t = co_await tiny.async_acquire();
        BOOST_TEST(t.owns());
        co_await sleep_for(1s);
        BOOST_TEST(t.valid());
        BOOST_TEST(!t.lost());
        BOOST_TEST(exists("lock:limits:tiny"));
        auto [rec] = co_await t.async_release(tuple_deferred);
        BOOST_TEST(!rec, rec.message());
    });
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_mutex_acquire
