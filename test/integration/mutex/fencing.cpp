// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Fencing tokens that only increase, across flush, expiry, restarts and an older snapshot
// (review S5); fenced writes refusing a stale token; fence keys that expire.
#include "integration/mutex/fixture.hpp"

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_mutex_fencing {

using namespace mutex_test;

BOOST_AUTO_TEST_SUITE(mutex)
BOOST_AUTO_TEST_SUITE(fencing)

// ---------------------------------------------------------------------------------------------
// Tokens (review S5)

BOOST_FIXTURE_TEST_CASE(tokens_increase_across_flushall_expiry_and_restart, fixture) {
    run(
        [&]() -> awaitable<void> {
            // The largest token seen, of the backend the tokens come from.
            corolock::fencing_token last(corolock::lock_backend::redis, 0);
            int checked = 0, not_increasing = 0;
            auto check = [&](const lease& l) {
                if (l.token() <= last)
                    ++not_increasing;
                last = l.token();
                ++checked;
            };
            corolock::mutex m(conn, "lock:fence");
            for (int i = 0; i < 3000; ++i) {
                lease l = co_await m.async_acquire();
                check(l);
                co_await l.async_release();
            }
            BOOST_TEST(not_increasing == 0);
            // The fence key lost (FLUSHALL, or evicted).
            BOOST_TEST(srv.command({"FLUSHALL"}) == "+OK\r\n");
            {
                lease l = co_await m.async_acquire();
                BOOST_TEST(l.token() > last);
                check(l);
                co_await l.async_release();
            }
            // Fixed leases that run out between acquisitions.
            corolock::mutex e(conn, "lock:fence", lease_of(100ms, false));
            for (int i = 0; i < 5; ++i) {
                lease l = co_await e.async_acquire();
                check(l);
                co_await l.async_wait_lost(tuple_deferred);
                co_await sleep_for(10ms);
            }
            BOOST_TEST(not_increasing == 0);
            // A restart without persistence loses everything.
            srv.restart();
            auto [ec, r] = co_await m.async_acquire_for(10s, tuple_deferred);
            BOOST_REQUIRE(!ec);
            BOOST_TEST(r.token() > last);
            check(r);
            co_await r.async_release();
            BOOST_TEST(not_increasing == 0);
            BOOST_TEST_MESSAGE(checked << " tokens checked");
        },
        120s);
}

// A redis-server restarted from an older RDB snapshot brings back a stale fence key (review S5).
BOOST_FIXTURE_TEST_CASE(tokens_increase_after_restoring_an_older_snapshot, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:snap");
        lease l1 = co_await m.async_acquire();
        const auto t1 = l1.token();
        co_await l1.async_release();
        BOOST_TEST(srv.command({"SAVE"}) == "+OK\r\n"); // dump.rdb in the server's own dir
        lease l2 = co_await m.async_acquire();
        const auto t2 = l2.token();
        co_await l2.async_release();
        lease l3 = co_await m.async_acquire(); // held across the crash
        const auto t3 = l3.token();
        BOOST_TEST(t3 > t2);
        BOOST_TEST(t2 > t1);
        srv.restart(); // SIGKILL, then start: loads the snapshot
        // The snapshot was loaded: the fence key is T1's again.
        BOOST_TEST(srv.command({"GET", "{lock:snap}:fence"}) == bulk(std::to_string(t1.value())));
        BOOST_TEST(!exists("lock:snap"));
        auto [ec, l4] = co_await m.async_acquire_for(10s, tuple_deferred);
        BOOST_REQUIRE(!ec);
        BOOST_TEST_MESSAGE("T1 " << t1 << ", T2 " << t2 << ", T3 " << t3 << ", after restore "
                                 << l4.token());
        BOOST_TEST(l4.token() > t3);
        // T3's lease did not survive; its release cannot touch l4's key.
        auto [rec] = co_await l3.async_release(tuple_deferred);
        BOOST_TEST(rec == corolock::condition::lock_lost);
        BOOST_TEST(owner("lock:snap") == bulk(l4.owner_id()));
        auto [fec, v] = co_await fenced_incr_with(l4, "snap:counter");
        BOOST_TEST(!fec);
        co_await l4.async_release();
    });
}

// ---------------------------------------------------------------------------------------------
// Fenced writes and fence keys

BOOST_FIXTURE_TEST_CASE(fenced_write_refuses_stale_token, fixture) {
    run([&]() -> awaitable<void> {
        const corolock::fenced_script decr("return redis.call('DECRBY', KEYS[1], ARGV[1])");
        BOOST_TEST(srv.command({"SET", "stock", "10"}) == "+OK\r\n");
        corolock::mutex a(conn, "lock:stock", lease_of(200ms, false)), b(peer, "lock:stock");
        lease la = co_await a.async_acquire();
        const std::string_view keys[] = {"stock"};
        const std::string_view args[] = {"1"};
        corolock::generic_response resp;
        co_await la.async_fenced_eval(decr, keys, args, resp);
        BOOST_TEST(resp.at(0).value == "9");
        co_await sleep_for(300ms);             // a's fixed lease runs out...
        lease lb = co_await b.async_acquire(); // ...and b takes over with a newer token
        BOOST_TEST(lb.token() > la.token());
        resp.clear();
        co_await lb.async_fenced_eval(decr, keys, args, resp);
        BOOST_TEST(resp.at(0).value == "8");
        // a's write is refused: locally (known lost), nothing sent.
        resp.clear();
        auto [ec] = co_await la.async_fenced_eval(decr, keys, args, resp, tuple_deferred);
        BOOST_TEST(ec == corolock::condition::lock_lost);
        co_await lb.async_release();
        // The body's own errors are not stale_token (review Q6).
        lease lc = co_await b.async_acquire();
        const corolock::fenced_script fails("return redis.error_reply('STALE body error')");
        resp.clear();
        auto [bec] = co_await lc.async_fenced_eval(fails, keys, args, resp, tuple_deferred);
        BOOST_TEST(bec == error::server_error);
        co_await lc.async_release();
        BOOST_TEST(srv.command({"GET", "stock"}) == "$1\r\n8\r\n");
    });
}

// A `deferred` fenced write sends nothing until it is awaited (its request is built when the
// operation starts), then runs once.
BOOST_FIXTURE_TEST_CASE(deferred_fenced_eval_sends_nothing_until_awaited, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:deferred");
        lease l = co_await m.async_acquire();
        const std::string_view keys[] = {"deferred:runs"};
        corolock::generic_response resp;
        auto op = l.async_fenced_eval(fenced_incr, keys, {}, resp);
        co_await sleep_for(200ms); // time enough for anything sent to arrive
        BOOST_TEST(srv.command({"GET", "deferred:runs"}) == "$-1\r\n");
        BOOST_TEST(resp.empty());
        co_await std::move(op);
        BOOST_TEST(resp.at(0).value == "1");
        BOOST_TEST(srv.command({"GET", "deferred:runs"}) == bulk("1"));
        co_await l.async_release();
    });
}

// Fence keys expire fence_retention after the last lease: 100,000 lock names leave nothing.
BOOST_FIXTURE_TEST_CASE(fence_keys_expire_after_retention, fixture) {
    run(
        [&]() -> awaitable<void> {
            auto opts = lease_of(100ms, false);
            opts.fence_retention = 200ms;
            constexpr int workers = 40, per_worker = 2500; // 100,000 names
            // A 100 ms fixed lease may run out before its release under this load (the release
            // then says lease_lost): both leave no lock key.
            std::atomic<int> acquired{0}, failed{0}, released{0}, expired{0};
            auto ex = co_await asio::this_coro::executor;
            auto worker = [&](int w) -> awaitable<void> {
                for (int i = 0; i < per_worker; ++i) {
                    corolock::mutex m(conn, "gc:" + std::to_string(w) + ":" + std::to_string(i),
                                      opts);
                    auto [ec, l] = co_await m.async_acquire(tuple_deferred);
                    if (ec) {
                        ++failed;
                        continue;
                    }
                    ++acquired;
                    auto [rec] = co_await l.async_release(tuple_deferred);
                    if (!rec)
                        ++released;
                    else if (rec == error::lease_lost)
                        ++expired;
                    else
                        ++failed;
                }
            };
            const auto t0 = clock_type::now();
            std::vector<decltype(asio::co_spawn(ex, worker(0), asio::deferred))> ops;
            for (int w = 0; w < workers; ++w)
                ops.push_back(asio::co_spawn(ex, worker(w), asio::deferred));
            co_await asio::experimental::make_parallel_group(std::move(ops))
                .async_wait(asio::experimental::wait_for_all(), asio::deferred);
            BOOST_TEST_MESSAGE("100,000 acquire+release in " << ms(clock_type::now() - t0)
                                                             << " ms");
            BOOST_TEST_MESSAGE(released << " released, " << expired << " expired first");
            BOOST_TEST(acquired == workers * per_worker);
            BOOST_TEST(released + expired == workers * per_worker);
            BOOST_TEST(failed == 0);
            // A fence key outlives its lock...
            corolock::mutex probe(conn, "gc:probe", opts);
            lease p = co_await probe.async_acquire();
            co_await p.async_release();
            BOOST_TEST(exists("{gc:probe}:fence"));
            // ...by lease + fence_retention only. (Redis reclaims expired keys in the
            // background, so DBSIZE may lag their expiry a little.)
            co_await sleep_for(400ms);
            BOOST_TEST_MESSAGE("DBSIZE 400 ms later: " << srv.command({"DBSIZE"}));
            BOOST_TEST(
                co_await eventually([&] { return srv.command({"DBSIZE"}) == ":0\r\n"; }, 1s, 20ms));
        },
        120s);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_mutex_fencing
