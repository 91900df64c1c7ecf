// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Waiting and wake-ups: release messages over pub/sub, hand-offs within a connection and
// between connections, force_unlock, and the fallback timers when pub/sub is refused.
#include "integration/mutex/fixture.hpp"

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_mutex_waiting {

using namespace mutex_test;

BOOST_AUTO_TEST_SUITE(mutex)
BOOST_AUTO_TEST_SUITE(waiting)

// ---------------------------------------------------------------------------------------------
// Wake-ups by releases

BOOST_FIXTURE_TEST_CASE(five_hundred_waiters_are_woken_by_releases, fixture) {
    run([&]() -> awaitable<void> {
        constexpr int n = 500;
        std::atomic<int> inside{0}, overlaps{0}, done{0};
        corolock::mutex m(conn, "lock:herd");
        auto waiter = [&]() -> awaitable<void> {
            lease l = co_await m.async_acquire();
            if (inside.fetch_add(1) != 0)
                ++overlaps;
            co_await sleep_for(std::chrono::microseconds(500));
            inside.fetch_sub(1);
            co_await l.async_release();
            ++done;
        };
        const auto before = stats();
        std::vector<decltype(asio::co_spawn(ioc, waiter(), asio::deferred))> ops;
        for (int i = 0; i < n; ++i)
            ops.push_back(asio::co_spawn(ioc, waiter(), asio::deferred));
        co_await asio::experimental::make_parallel_group(std::move(ops))
            .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        const auto after = stats();
        // Woken by a release: through pub/sub, or (waiters and holder on one connection) by
        // the hand-off that sends the head's attempt behind the release.
        const auto pubsub =
            after.pubsub_wakeups + after.handoffs - before.pubsub_wakeups - before.handoffs;
        const auto timer = after.timer_wakeups - before.timer_wakeups;
        const auto attempts = after.attempts - before.attempts;
        BOOST_TEST_MESSAGE("500 waiters: " << attempts << " attempts, " << pubsub
                                           << " pub/sub wake-ups, " << timer << " timer wake-ups");
        BOOST_TEST(done == n);
        BOOST_TEST(overlaps == 0);
        BOOST_TEST(pubsub >= static_cast<std::uint64_t>(n / 2));
        BOOST_TEST(timer * 20 <= pubsub); // the fallback timer is the exception
        // No thundering herd: each waiter makes its first try, the retry after subscribing (all
        // 500 start before the first reply) and about one attempt per wake-up, not one per
        // release it hears of.
        BOOST_TEST(attempts < static_cast<std::uint64_t>(4 * n));
        BOOST_TEST(!exists("lock:herd"));
    });
}

// The release publishes only when a waiter was refused by this holder: its waiting attempt
// marks the hash (`w`), a try leaves the hash as it was (doc/design.md, "Scripts").
BOOST_FIXTURE_TEST_CASE(a_release_publishes_only_when_someone_waits, fixture) {
    run([&]() -> awaitable<void> {
        const auto publishes = [&] {
            const auto info = srv.command({"INFO", "commandstats"});
            const auto at = info.find("cmdstat_publish:calls=");
            return at == std::string::npos ? 0 : std::stoll(info.substr(at + 22));
        };
        BOOST_TEST(srv.command({"CONFIG", "RESETSTAT"}) == "+OK\r\n");
        corolock::mutex m(conn, "lock:quiet"), other(peer, "lock:quiet");
        for (int i = 0; i < 20; ++i) {
            lease l = co_await m.async_acquire();
            co_await l.async_release();
        }
        BOOST_TEST(publishes() == 0); // nobody waited: no message
        lease held = co_await m.async_acquire();
        BOOST_TEST(!(co_await other.async_try_acquire()).owns());
        BOOST_TEST(srv.command({"HEXISTS", "lock:quiet", "w"}) == ":0\r\n"); // a try: no mark
        error_code waited = asio::error::would_block;
        lease got;
        other.async_acquire([&](error_code ec, lease l) {
            waited = ec;
            got = std::move(l);
        });
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"HGET", "lock:quiet", "w"}) == bulk("1");
            },
            2s));
        co_await held.async_release();
        BOOST_TEST(co_await eventually([&] { return waited != asio::error::would_block; }, 2s));
        BOOST_TEST(!waited);
        BOOST_TEST(got.owns());
        BOOST_TEST(publishes() == 1); // the waiter's message
        co_await got.async_release();
        BOOST_TEST(publishes() == 1); // nobody waits any more
    });
}

BOOST_FIXTURE_TEST_CASE(force_unlock_frees_and_wakes_waiters, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:force", lease_of(3s)), admin(peer, "lock:force");
        lease holder = co_await m.async_acquire();
        error_code waited = asio::error::would_block;
        lease got;
        m.async_acquire([&](error_code ec, lease l) {
            waited = ec;
            got = std::move(l);
        });
        co_await sleep_for(50ms);
        BOOST_TEST(waited == asio::error::would_block); // still waiting
        const auto pubsub = stats().pubsub_wakeups;
        bool deleted = co_await admin.async_force_unlock();
        BOOST_TEST(deleted);
        BOOST_REQUIRE(co_await eventually([&] { return waited != asio::error::would_block; }, 2s));
        BOOST_TEST(!waited);
        BOOST_TEST(got.valid());
        BOOST_TEST(got.token() > holder.token());
        BOOST_TEST(stats().pubsub_wakeups > pubsub);
        auto [lost] = co_await holder.async_wait_lost(tuple_deferred);
        BOOST_TEST(lost == error::lease_lost); // the holder's next renewal finds it taken
        auto [rec] = co_await holder.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
        BOOST_TEST(owner("lock:force") == bulk(got.owner_id()));
        co_await got.async_release();
    });
}

// ---------------------------------------------------------------------------------------------
// Hand-offs

BOOST_FIXTURE_TEST_CASE(handoffs_between_connections_need_no_fallback_timer, fixture) {
    // Two processes' worth of waiters (two connections) alternate on one lock: every handoff
    // must come from a release message, none from the fallback timer.
    run([&]() -> awaitable<void> {
        auto worker = [&](corolock::connection& c) -> awaitable<void> {
            // A long fallback, so that release messages do the handoffs.
            auto opts = lease_of(5s);
            opts.retry_base = 1s;
            opts.retry_max = 2s;
            corolock::mutex m(c, "lock:pingpong", opts);
            for (int i = 0; i < 500; ++i) {
                lease l = co_await m.async_acquire_for(20s);
                co_await l.async_release();
            }
        };
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ioc, worker(conn), asio::deferred),
            asio::co_spawn(ioc, worker(peer), asio::deferred))
            .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        const auto a = stats(), b = corolock::get_lock_stats(peer);
        BOOST_TEST_MESSAGE("1000 cycles: pub/sub wake-ups " << a.pubsub_wakeups + b.pubsub_wakeups
                                                            << ", timer wake-ups "
                                                            << a.timer_wakeups + b.timer_wakeups);
        // The fallback draws with full jitter, so a rare early timer is legitimate.
        BOOST_TEST(a.timer_wakeups + b.timer_wakeups <= 10u);
        BOOST_TEST(!exists("lock:pingpong"));
    });
}

BOOST_FIXTURE_TEST_CASE(a_release_hands_the_lock_to_a_local_waiter_in_one_write, fixture) {
    // Holder and waiter on one connection: the waiter's attempt goes out behind the release, in
    // the same write, instead of waiting for the release message (two round trips).
    auto cfg = config_for(srv);
    cfg.health_check_interval = clock_type::duration::zero(); // no PING in the counted writes
    corolock::connection quiet_conn(ioc.get_executor(), cfg, quiet());
    run([&]() -> awaitable<void> {
        quiet_conn.async_run(asio::detached);
        auto opts = lease_of(10s, false);
        opts.retry_base = opts.retry_max = 10s; // no fallback attempt in the counted window
        corolock::mutex m(quiet_conn, "lock:handoff", opts);
        lease a = co_await m.async_acquire();
        error_code got = asio::error::would_block;
        lease b;
        m.async_acquire_for(5s, [&](error_code ec, lease l) {
            got = ec;
            b = std::move(l);
        });
        co_await sleep_for(50ms); // b has tried, subscribed and retried: it waits as head
        // c waits behind b, so that b's leaving does not empty the queue (an UNSUBSCRIBE would
        // be one more write).
        error_code c_got = asio::error::would_block;
        m.async_acquire_for(5s, [&](error_code ec, lease) { c_got = ec; });
        co_await sleep_for(20ms);
        const auto before = corolock::get_lock_stats(quiet_conn);
        const auto writes = quiet_conn.stats().writes;
        co_await a.async_release();
        BOOST_TEST(co_await eventually([&] { return got != asio::error::would_block; }, 2s, 1ms));
        BOOST_TEST(!got);
        BOOST_TEST(b.valid());
        const auto after = corolock::get_lock_stats(quiet_conn);
        BOOST_TEST(after.handoffs - before.handoffs == 1u);
        BOOST_TEST(after.pubsub_wakeups == before.pubsub_wakeups); // its own message is no wake-up
        BOOST_TEST(after.attempts - before.attempts == 1u);        // one attempt, granted
        BOOST_TEST(quiet_conn.stats().writes - writes == 1u);      // release + attempt, one write
        BOOST_TEST(owner("lock:handoff") == "$32\r\n" + std::string(b.owner_id()) + "\r\n");
        co_await b.async_release();
        BOOST_TEST(co_await eventually([&] { return c_got != asio::error::would_block; }, 2s));
        BOOST_TEST(!c_got); // and c gets it from b the same way
        quiet_conn.cancel();
    });
}

// ---------------------------------------------------------------------------------------------
// Fallback timers

BOOST_AUTO_TEST_CASE(waiters_without_channel_rights_fall_back_to_their_timers) {
    // Redis 7 gives a new ACL user no channel rights: the lock's SUBSCRIBE is refused. Waiters
    // must still get the lock (on their back-off timers), every reply must still match (a
    // shifted reply once made a try_acquire of a held lock answer "acquired"), and the refusal
    // is logged once, clearly.
    redis_process srv({"--user", "app", "on", ">pw", "~*", "+@all"});
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.username = "app";
    cfg.password = "pw";
    log_capture logs;
    corolock::connection conn(ioc.get_executor(), cfg, logs.make());
    corolock::connection other(ioc.get_executor(), cfg, quiet());
    int inside = 0, most = 0, done = 0, wrong = 0;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            other.async_run(asio::detached);
            corolock::mutex m(conn, "acl:lock", lease_of(2s));
            corolock::mutex held_elsewhere(other, "acl:held", lease_of(5s));
            auto h = co_await held_elsewhere.async_acquire(asio::use_awaitable);
            corolock::mutex probe(conn, "acl:held", lease_of(5s));
            auto holder = co_await m.async_acquire(asio::use_awaitable);
            auto ex = co_await asio::this_coro::executor;
            for (int i = 0; i < 10; ++i)
                asio::co_spawn(
                    ex,
                    [&]() -> awaitable<void> {
                        auto l = co_await m.async_acquire_for(10s, asio::use_awaitable);
                        most = std::max(most, ++inside);
                        // A try of a lock held by another connection must say "held".
                        auto [ec, other_lease] =
                            co_await probe.async_try_acquire(tuple_use_awaitable);
                        wrong += ec || other_lease.owns();
                        co_await sleep_for(2ms);
                        --inside;
                        co_await l.async_release(asio::use_awaitable);
                        ++done;
                    },
                    asio::detached);
            co_await sleep_for(100ms); // every waiter queues; the SUBSCRIBE is refused
            co_await holder.async_release(asio::use_awaitable);
            for (int i = 0; i < 500 && done < 10; ++i)
                co_await sleep_for(20ms);
            co_await h.async_release(asio::use_awaitable);
            conn.cancel();
            other.cancel();
        }(),
        60s);
    BOOST_TEST(done == 10);
    BOOST_TEST(most == 1);
    BOOST_TEST(wrong == 0);
    BOOST_TEST(logs.count("get no release messages") == 1u);
    BOOST_TEST(logs.contains("subscription refused"));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_mutex_waiting
