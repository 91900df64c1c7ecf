// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Faults around a hold: a reply lost with the connection (review L3, S1), the connection
// stopped under a holder and a waiter, and a holder process killed.
#include "integration/mutex/fixture.hpp"
#include <corolock/fair_mutex.hpp>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_mutex_faults {

using namespace mutex_test;

BOOST_AUTO_TEST_SUITE(mutex)
BOOST_AUTO_TEST_SUITE(faults)

// ---------------------------------------------------------------------------------------------
// Unknown outcomes: a reply lost with the connection (review L3, S1)

// A try_acquire that ran on Redis but whose reply was lost with the connection (review L3).
BOOST_FIXTURE_TEST_CASE(try_acquire_with_lost_reply_is_given_back, fixture) {
    run([&]() -> awaitable<void> {
        auto& c = proxied();
        corolock::mutex m(c, "lock:unknown:try"), other(peer, "lock:unknown:try");
        {
            lease w = co_await m.async_acquire(); // warm the scripts
            co_await w.async_release();
        }
        const auto undos = corolock::get_lock_stats(c).undos;
        proxy->half_open();
        bool done = false;
        error_code got_ec;
        lease got;
        m.async_try_acquire([&](error_code ec, lease l) {
            got_ec = ec;
            got = std::move(l);
            done = true;
        });
        // The script ran: the key is there (owner: this attempt), its reply is held.
        BOOST_REQUIRE(co_await eventually([&] { return exists("lock:unknown:try"); }, 3s));
        proxy->reset_all();
        proxy->heal();
        BOOST_REQUIRE(co_await eventually([&] { return done; }, 5s));
        BOOST_TEST(got_ec == error::connection_lost);
        BOOST_TEST(!got.owns());
        // Given back once reconnected: gone long before its 30 s lease.
        BOOST_TEST(co_await eventually([&] { return !exists("lock:unknown:try"); }, 3s));
        BOOST_TEST(corolock::get_lock_stats(c).undos > undos);
        BOOST_TEST(corolock::get_lock_stats(c).leases_held == 0u);

        // A later acquire and release leave the lock free.
        lease l = co_await m.async_acquire_for(5s);
        BOOST_TEST(owner("lock:unknown:try") == bulk(l.owner_id()));
        co_await l.async_release();
        BOOST_TEST(!exists("lock:unknown:try"));
        lease o = co_await other.async_try_acquire();
        BOOST_TEST(o.owns());
        co_await o.async_release();
    });
}

// The same for a waiting acquire (review L3/S1): the unknown attempt is undone and retried;
// the lease it then gets is the only record in Redis, and its release frees the lock.
BOOST_FIXTURE_TEST_CASE(acquire_with_lost_reply_is_undone_and_retried, fixture) {
    run([&]() -> awaitable<void> {
        auto& c = proxied();
        corolock::mutex m(c, "lock:unknown:acq"), other(peer, "lock:unknown:acq");
        {
            lease w = co_await m.async_acquire();
            co_await w.async_release();
        }
        const auto undos = corolock::get_lock_stats(c).undos;
        proxy->half_open();
        bool done = false;
        error_code got_ec;
        lease got;
        m.async_acquire_for(10s, [&](error_code ec, lease l) {
            got_ec = ec;
            got = std::move(l);
            done = true;
        });
        BOOST_REQUIRE(co_await eventually([&] { return exists("lock:unknown:acq"); }, 3s));
        const auto first_owner = owner("lock:unknown:acq");
        proxy->reset_all();
        proxy->heal();
        BOOST_REQUIRE(co_await eventually([&] { return done; }, 8s));
        BOOST_TEST(!got_ec);
        BOOST_REQUIRE(got.owns());
        BOOST_TEST(got.valid());
        BOOST_TEST(corolock::get_lock_stats(c).undos > undos);
        BOOST_TEST(owner("lock:unknown:acq") == bulk(got.owner_id()));
        BOOST_TEST(first_owner == bulk(got.owner_id())); // the same acquisition, redone
        auto [rec] = co_await got.async_release(tuple_deferred);
        BOOST_TEST(!rec);
        BOOST_TEST(!exists("lock:unknown:acq"));
        co_await sleep_for(100ms); // nothing comes back behind the release
        BOOST_TEST(!exists("lock:unknown:acq"));
        lease o = co_await other.async_try_acquire();
        BOOST_TEST(o.owns());
        co_await o.async_release();
    });
}

// A fair_mutex waiter whose connection fails keeps its place in the line: the undo of an
// attempt with an unknown outcome leaves the place where it was, and the undo of a grant whose
// reply was lost puts the waiter back at the head, not behind the waiters that came after it.
BOOST_FIXTURE_TEST_CASE(a_fault_on_a_fair_waiters_connection_keeps_its_place, fixture) {
    run([&]() -> awaitable<void> {
        auto& c = proxied();
        auto o = lease_of(10s);
        o.retry_base = 200ms;
        o.retry_max = 1s;
        const std::string name = "fair:fault";
        corolock::fair_mutex h(conn, name, o), w1(c, name, o), w2(peer, name, o);
        {
            lease warm = co_await w1.async_acquire(); // the scripts are loaded on c
            co_await warm.async_release();
        }
        lease held = co_await h.async_acquire();
        struct grants {
            std::vector<int> order;
            lease l1, l2;
        };
        // Shared with the handlers: a failed check may leave one to run after this body.
        auto g = std::make_shared<grants>();
        auto& order = g->order;
        auto& l1 = g->l1;
        auto& l2 = g->l2;
        w1.async_acquire_for(30s, [g](error_code ec, lease l) {
            BOOST_TEST(!ec, ec.message());
            g->l1 = std::move(l);
            g->order.push_back(1);
        });
        auto line_size = [&] { return srv.command({"ZCARD", "{fair:fault}:q"}); };
        BOOST_REQUIRE(co_await eventually([&] { return line_size() == ":1\r\n"; }, 3s));
        w2.async_acquire_for(30s, [g](error_code ec, lease l) {
            BOOST_TEST(!ec, ec.message());
            g->l2 = std::move(l);
            g->order.push_back(2);
        });
        BOOST_REQUIRE(co_await eventually([&] { return line_size() == ":2\r\n"; }, 3s));
        auto line = [&] { return srv.command({"ZRANGE", "{fair:fault}:q", "0", "-1"}); };
        const auto first_line = line(); // w1, then w2
        constexpr int replies = static_cast<int>(direction::server_to_client);

        // 1. A retry of w1 (refused: h holds) whose reply is lost with the connection.
        auto undos = corolock::get_lock_stats(c).undos;
        proxy->half_open();
        BOOST_REQUIRE(
            co_await eventually([&] { return proxy->stats().bytes_held[replies] > 0; }, 5s));
        proxy->reset_all();
        proxy->heal();
        BOOST_REQUIRE(
            co_await eventually([&] { return corolock::get_lock_stats(c).undos > undos; }, 5s));
        co_await sleep_for(1500ms); // reconnected, and w1 has retried at least once
        BOOST_TEST(line() == first_line);

        // 2. The grant to w1 at h's release, its reply lost with the connection.
        undos = corolock::get_lock_stats(c).undos;
        proxy->half_open();
        co_await held.async_release();
        BOOST_REQUIRE(co_await eventually([&] { return exists(name); }, 5s)); // w1's grant
        BOOST_REQUIRE(
            co_await eventually([&] { return proxy->stats().bytes_held[replies] > 0; }, 5s));
        const auto granted_to = owner(name);
        proxy->reset_all();
        proxy->heal();
        BOOST_REQUIRE(co_await eventually([&] { return !order.empty(); }, 8s));
        BOOST_TEST(corolock::get_lock_stats(c).undos > undos);
        BOOST_TEST(order == std::vector<int>{1}, "w1 first, its place kept");
        BOOST_TEST(l1.valid());
        BOOST_TEST(owner(name) == granted_to); // the same acquisition, redone
        co_await l1.async_release();
        BOOST_REQUIRE(co_await eventually([&] { return order.size() == 2; }, 5s));
        BOOST_TEST((order == std::vector<int>{1, 2}));
        co_await l2.async_release();
        BOOST_TEST(srv.command({"EXISTS", name, "{fair:fault}:q", "{fair:fault}:qd"}) == ":0\r\n");
    });
}

// ---------------------------------------------------------------------------------------------
// A stopped connection, a killed holder process

BOOST_FIXTURE_TEST_CASE(stopping_the_connection_ends_waits_and_leases, fixture) {
    error_code waiter_ec = asio::error::would_block, lost_ec = asio::error::would_block;
    bool holder_lost = false, holder_valid = true;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            corolock::mutex m(conn, "lock:stop");
            lease holder = co_await m.async_acquire();
            m.async_acquire([&](error_code ec, lease) { waiter_ec = ec; }); // no deadline
            holder.async_wait_lost([&](error_code ec) { lost_ec = ec; });
            co_await sleep_for(100ms);
            conn.cancel();
            co_await eventually(
                [&] {
                    return waiter_ec != asio::error::would_block &&
                           lost_ec != asio::error::would_block;
                },
                2s);
            holder_lost = holder.lost();
            holder_valid = holder.valid();
        }(),
        30s); // the drain check: nothing may be left waiting for a 30 s lease
    BOOST_TEST(waiter_ec == error::not_connected);
    BOOST_TEST(lost_ec == error::lease_lost);
    BOOST_TEST(holder_lost);
    BOOST_TEST(!holder_valid);
}

BOOST_AUTO_TEST_CASE(holder_process_killed_lock_frees_within_lease) {
    redis_process srv;
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        // The holder: acquire with a 1 s watchdog lease, say so, then run until killed.
        ::close(ready[0]);
        asio::io_context ioc;
        corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
        conn.async_run(asio::detached);
        corolock::mutex m(conn, "lock:killed", lease_of(1s));
        lease held; // kept: dropping it would release
        m.async_acquire([&](error_code ec, lease l) {
            held = std::move(l);
            const char c = ec ? 'e' : 'k';
            (void)!::write(ready[1], &c, 1);
        });
        ioc.run();
        ::_exit(0);
    }
    ::close(ready[1]);
    char c = 0;
    BOOST_REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    BOOST_REQUIRE(c == 'k');
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    clock_type::duration waited{};
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            co_await sleep_for(1500ms); // the watchdog has renewed at least once by now
            corolock::mutex m(conn, "lock:killed");
            BOOST_TEST(!(co_await m.async_try_acquire()).owns());
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
            const auto t0 = clock_type::now();
            lease l = co_await m.async_acquire_for(5s);
            waited = clock_type::now() - t0;
            co_await l.async_release();
            conn.cancel();
        }(),
        30s);
    BOOST_TEST_MESSAGE("free again " << ms(waited) << " ms after SIGKILL (lease 1000 ms)");
    BOOST_TEST((waited < 1250ms)); // within the lease plus a small margin
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_mutex_faults
