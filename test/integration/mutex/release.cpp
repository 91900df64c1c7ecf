// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Release and destruction: with_lock on every path, a lease dropped without release, a mutex
// destroyed with acquires pending (review L2), an io_context destroyed with a holder and a
// waiter.
#include "integration/mutex/fixture.hpp"

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_mutex_release {

using namespace mutex_test;

BOOST_AUTO_TEST_SUITE(mutex)
BOOST_AUTO_TEST_SUITE(release)

// ---------------------------------------------------------------------------------------------
// with_lock

BOOST_FIXTURE_TEST_CASE(with_lock_releases_on_every_path, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:scoped", lease_of(300ms));
        std::uint64_t seen = 0;
        // Each body yields first (see with_lock_body_that_finishes_at_once for why).
        co_await corolock::with_lock(m, [&](lease& l) -> awaitable<void> {
            co_await sleep_for(10ms);
            seen = l.token().value();
            BOOST_TEST(l.valid());
            BOOST_TEST(exists("lock:scoped"));
        });
        BOOST_TEST(seen > 0u);
        BOOST_TEST(!exists("lock:scoped"));

        bool threw = false;
        try {
            co_await corolock::with_lock(m, [&](lease&) -> awaitable<void> {
                co_await sleep_for(10ms);
                throw std::runtime_error("boom");
            });
        } catch (const std::runtime_error&) {
            threw = true;
        }
        BOOST_TEST(threw);
        BOOST_TEST(!exists("lock:scoped"));

        // The lease is lost while the body runs: the body is cancelled, lease_lost is thrown.
        bool body_cancelled = false;
        error_code thrown;
        try {
            co_await corolock::with_lock(m, [&](lease&) -> awaitable<void> {
                srv.command({"DEL", "lock:scoped"});
                try {
                    co_await sleep_for(10s);
                } catch (const boost::system::system_error&) {
                    body_cancelled = true;
                    throw;
                }
            });
        } catch (const boost::system::system_error& e) {
            thrown = e.code();
        }
        BOOST_TEST(body_cancelled);
        BOOST_TEST(thrown == error::lease_lost);
        BOOST_TEST(!exists("lock:scoped"));
        BOOST_TEST(stats().leases_held == 0u);
    });
}

// BUG (found by this test): a body that completes before async_wait_lost has reached the
// connection's strand. with_lock then cancels the wait before it is registered; the
// cancellation is lost and with_lock waits until the lease is lost (see
// wait_lost_cancelled_right_after_initiation_completes). After the check, the test deletes the
// lock so that the hung with_lock ends (it then throws lease_lost) instead of hanging the suite.
BOOST_FIXTURE_TEST_CASE(with_lock_body_that_finishes_at_once, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:scoped:fast", lease_of(300ms));
        corolock::mutex admin(peer, "lock:scoped:fast");
        for (const bool throws : {false, true}) {
            BOOST_TEST_CONTEXT("body " << (throws ? "throws" : "returns") << " at once") {
                bool ran = false, done = false;
                std::exception_ptr failure;
                asio::co_spawn(co_await asio::this_coro::executor,
                               corolock::with_lock(m,
                                                   [&](lease&) -> awaitable<void> {
                                                       ran = true;
                                                       if (throws)
                                                           throw std::runtime_error("boom");
                                                       co_return;
                                                   }),
                               [&](std::exception_ptr e) {
                                   failure = e;
                                   done = true;
                               });
                BOOST_TEST(co_await eventually([&] { return done; }, 2s));
                BOOST_TEST(ran);
                if (!done) {
                    co_await admin.async_force_unlock(); // unblock the hung with_lock
                    BOOST_REQUIRE(co_await eventually([&] { return done; }, 3s));
                }
                BOOST_TEST(static_cast<bool>(failure) == throws);
                BOOST_TEST(co_await eventually([&] { return !exists("lock:scoped:fast"); }, 1s));
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Dropped leases, destroyed mutexes and contexts (review L2)

// A dropped lease (destructor) releases without waiting: the next owner gets in at once.
BOOST_FIXTURE_TEST_CASE(dropped_lease_releases_promptly, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex a(conn, "lock:drop", lease_of(10s)), b(peer, "lock:drop", lease_of(10s));
        {
            lease l = co_await a.async_acquire();
            BOOST_TEST(exists("lock:drop"));
        } // dropped
        const auto t0 = clock_type::now();
        auto [ec, lb] = co_await b.async_acquire_for(20s, tuple_deferred);
        const auto waited = clock_type::now() - t0;
        BOOST_TEST(!ec);
        BOOST_TEST_MESSAGE("free again " << ms(waited) << " ms after the drop (lease 10 s)");
        BOOST_TEST((waited < 2s)); // well before the 10 s lease
        co_await lb.async_release();

        // acquire + drop, no awaited release, 1000 times: every one acquires.
        int acquired = 0;
        for (int i = 0; i < 1000; ++i) {
            auto [e, l] = co_await a.async_acquire_for(10s, tuple_deferred);
            if (!e && l.valid())
                ++acquired;
        }
        BOOST_TEST(acquired == 1000);
        BOOST_TEST(co_await eventually([&] { return !exists("lock:drop"); }, 2s));
        BOOST_TEST(co_await eventually([&] { return stats().leases_held == 0u; }, 1s));
        lease o = co_await b.async_try_acquire();
        BOOST_TEST(o.owns());
        co_await o.async_release();
    });
}

// A lease dropped right before its connection is stopped (cancel() or its destructor) is still
// released, also behind another request's pending reply, when its release waits for the writer:
// the stop writes what is queued first. Review of 2026-11-26: held back for the writer, 10 of 10
// releases were left unwritten; behind a pending reply, 3 of 3 before the stop wrote them.
BOOST_AUTO_TEST_CASE(a_lease_dropped_right_before_the_connection_stops_is_released) {
    redis_process srv;
    corolock::request busy; // a 100 ms script
    busy.push("EVAL",
              "local t=redis.call('TIME') local s=t[1]*1000000+t[2] repeat "
              "t=redis.call('TIME') until t[1]*1000000+t[2]-s > 100000 return 1",
              "0");
    int left_behind = 0;
    constexpr int rounds = 6;
    log_capture warnings; // a clean stop warns of nothing (issue 28: "release failed" was logged)
    std::vector<error_code> busy_ecs; // a request written, unanswered at the stop: a cancellation
    for (int round = 0; round < rounds; ++round) {
        const bool behind_a_reply = round % 3 != 0, destroy = round % 3 == 2;
        asio::io_context ioc;
        auto c = std::make_unique<corolock::connection>(
            ioc.get_executor(), config_for(srv), warnings.make(corolock::logger::level::warning));
        c->async_run(asio::detached);
        const std::string name = "lock:drop-stop:" + std::to_string(round);
        corolock::generic_response busy_resp;
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                {
                    corolock::mutex m(*c, name, lease_of(30s));
                    co_await (co_await m.async_acquire()).async_release(); // scripts loaded
                    lease l = co_await m.async_acquire();
                    if (behind_a_reply) {
                        c->async_exec(busy, busy_resp,
                                      [&](error_code ec, std::size_t) { busy_ecs.push_back(ec); });
                        co_await sleep_for(20ms); // written, its reply pending
                    }
                } // dropped, with its mutex
                if (destroy)
                    c.reset();
                else
                    c->cancel();
            },
            asio::detached);
        ioc.run_for(10s);
        BOOST_TEST(ioc.stopped());
        if (srv.command({"EXISTS", name}) == ":1\r\n")
            ++left_behind;
    }
    BOOST_TEST(left_behind == 0);
    BOOST_TEST(busy_ecs.size() == 4u);
    for (const auto& ec : busy_ecs)
        BOOST_TEST(ec == asio::error::operation_aborted, ec.message());
    std::lock_guard<std::mutex> lk(warnings.m);
    BOOST_TEST(warnings.lines.empty(),
               warnings.lines.size()
                   << " warnings, the first: "
                   << (warnings.lines.empty() ? std::string() : warnings.lines.front()));
}

// Destroying a mutex with an acquire pending (review L2).
BOOST_FIXTURE_TEST_CASE(destroying_a_mutex_cancels_its_pending_acquires, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex hm(conn, "lock:doomed", lease_of(2s));
        lease h = co_await hm.async_acquire();
        error_code xec = asio::error::would_block;
        bool x_lease = false, xdone = false;
        {
            corolock::mutex x(conn, "lock:doomed", lease_of(2s));
            x.async_acquire([&](error_code ec, lease l) {
                xec = ec;
                x_lease = l.owns();
                xdone = true;
            });
            co_await sleep_for(100ms);
            BOOST_TEST(!xdone); // waiting behind h
            BOOST_TEST(stats().waiters == 1u);
        }
        BOOST_TEST(co_await eventually([&] { return xdone; }, 1s));
        BOOST_TEST(xec == asio::error::operation_aborted);
        BOOST_TEST(!x_lease);
        BOOST_TEST(stats().waiters == 0u);
        co_await h.async_release();
        co_await sleep_for(200ms); // a grant would arrive now
        BOOST_TEST(!exists("lock:doomed"));
        BOOST_TEST(stats().leases_held == 0u);
        const auto renewals = stats().renewals;
        co_await sleep_for(800ms);                // more than a renewal period of the 2 s lease
        BOOST_TEST(stats().renewals == renewals); // nothing renewed an ownerless lock
        BOOST_TEST(!exists("lock:doomed"));

        // Destroyed while the first attempt is on the wire: aborted, and the grant is undone.
        constexpr int n = 50;
        int aborted = 0, completed = 0, granted = 0;
        for (int i = 0; i < n; ++i) {
            corolock::mutex d(conn, "lock:doomed:" + std::to_string(i));
            d.async_acquire([&](error_code ec, lease l) {
                ++completed;
                if (ec == asio::error::operation_aborted)
                    ++aborted;
                if (l)
                    ++granted; // dropped here: released
            });
        }
        BOOST_REQUIRE(co_await eventually([&] { return completed == n; }, 2s));
        BOOST_TEST(aborted == n);
        BOOST_TEST(granted == 0);
        BOOST_TEST(co_await eventually(
            [&] {
                for (int i = 0; i < n; ++i)
                    if (exists("lock:doomed:" + std::to_string(i)))
                        return false;
                return true;
            },
            2s, 20ms));
        BOOST_TEST(stats().leases_held == 0u);
        BOOST_TEST(stats().undos >= static_cast<std::uint64_t>(n));
    });
}

BOOST_AUTO_TEST_CASE(io_context_destroyed_with_a_holder_and_a_waiter_frees_both) {
    // Coroutines that own their connection and mutex, one holding a lease, one waiting behind
    // it, when the io_context is stopped and destroyed: nothing they own may outlive it (each
    // frame is held by a handler queued inside corolock: the lease's wait for loss, the
    // waiter's queue entry and timer). The key is left to expire.
    redis_process srv;
    corolock::test::orphaned_pair pair;
    std::weak_ptr<int> connection_alive;
    {
        asio::io_context ioc;
        // The connection's logger owns a token: the connection itself must be freed too.
        auto connection_token = std::make_shared<int>(0);
        connection_alive = connection_token;
        corolock::connection conn(
            ioc.get_executor(), config_for(srv),
            corolock::logger{corolock::logger::level::off,
                             [connection_token](corolock::logger::level, std::string_view) {}});
        connection_token.reset();
        conn.async_run(asio::detached);
        pair.run(
            ioc,
            [&](bool& held) -> awaitable<void> {
                corolock::mutex m(conn, "lock:orphaned", lease_of(2s));
                lease l = co_await m.async_acquire();
                held = true;
                co_await l.async_wait_lost(tuple_deferred);
            },
            [&]() -> awaitable<void> {
                corolock::mutex m(conn, "lock:orphaned", lease_of(2s));
                co_await m.async_acquire(tuple_deferred);
            });
    }
    pair.check();
    BOOST_TEST(connection_alive.expired());
    const auto pttl = srv.command({"PTTL", "lock:orphaned"}); // held, left to expire
    BOOST_REQUIRE(pttl.starts_with(":"));
    BOOST_TEST(std::stoll(pttl.substr(1)) > 0);
}

// The watchdog's timer outlives the last lease (it runs out rather than being cancelled), but
// not the connection: stopped after a release, the io_context runs out of work at once, not a
// renewal period (10 s here) later.
BOOST_AUTO_TEST_CASE(a_stopped_connection_leaves_no_watchdog_timer_behind) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    conn.async_run(asio::detached);
    bool released = false;
    asio::co_spawn(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:timer", lease_of(30s)); // watchdog, renewal in 10 s
            lease l = co_await m.async_acquire();
            co_await l.async_release();
            released = true;
            conn.cancel();
        },
        asio::detached);
    const auto t0 = clock_type::now();
    ioc.run_for(20s);
    const auto took = clock_type::now() - t0;
    BOOST_TEST(released);
    BOOST_TEST(ioc.stopped()); // ran out of work
    BOOST_TEST_MESSAGE("the io_context ran out of work " << ms(took) << " ms after the start");
    BOOST_TEST((took < 5s));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_mutex_release
