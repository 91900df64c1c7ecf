// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Sentinel and replica acknowledgement against real servers: a master, a replica and three
// Sentinels (test/common/sentinel_set), started and reaped by each test.
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/sentinel_set.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_sentinel {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::test::lease_of;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sentinel_set;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace {

using corolock::test::tuple_deferred;

corolock::connection_config config_for(const std::vector<corolock::address>& sentinels,
                                       std::string master = "m1") {
    corolock::connection_config c;
    c.health_check_interval = 200ms;
    c.reconnect_wait = 20ms;
    c.reconnect_wait_max = 200ms;
    c.connect_timeout = 1s;
    c.max_wait_for_connection = 15s;
    c.sentinel.addresses = sentinels;
    c.sentinel.master_name = std::move(master);
    c.sentinel.connect_timeout = 300ms;
    return c;
}

// The port of the server the connection is on now.
awaitable<std::string> server_port(corolock::connection& conn) {
    corolock::request req;
    req.push("CONFIG", "GET", "port");
    corolock::generic_response resp;
    auto [ec, n] = co_await conn.async_exec(req, resp, tuple_deferred);
    if (ec || resp.size() != 3)
        co_return "error: " + ec.message();
    co_return resp[2].value;
}

// Acquires and releases until it works (failover in progress), up to `limit`.
awaitable<bool> lock_cycle_works(corolock::mutex& m, clock_type::duration limit) {
    const auto end = clock_type::now() + limit;
    while (clock_type::now() < end) {
        auto [ec, l] = co_await m.async_acquire_for(2s, tuple_deferred);
        if (!ec && l.valid()) {
            auto [rec] = co_await l.async_release(tuple_deferred);
            if (!rec)
                co_return true;
        }
        co_await sleep_for(100ms);
    }
    co_return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sentinel)

BOOST_AUTO_TEST_CASE(discovery_errors_and_replica_sync) {
    const auto t0 = clock_type::now();
    sentinel_set set;
    std::cout << "sentinel set ready in " << (clock_type::now() - t0) / 1ms << " ms\n";
    const auto master = std::to_string(set.node(0).port());
    asio::io_context ioc;
    // T1: the first Sentinel address is closed; the second knows the master.
    auto addrs = set.addresses();
    redis_process closed({}, redis_process::start_mode::later);
    closed.start();
    const corolock::address dead{"127.0.0.1", std::to_string(closed.port())};
    closed.kill();
    addrs.insert(addrs.begin(), dead);
    corolock::connection conn(ioc.get_executor(), config_for(addrs), quiet());
    conn.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            BOOST_TEST(co_await server_port(conn) == master);
            BOOST_TEST(conn.stats().resolves >= 1u);
            // Replica acknowledgement with a live replica: grants and renewals pass.
            corolock::mutex_options o;
            o.lease = 600ms;
            o.replica_sync = {1, 100ms};
            corolock::mutex m(conn, "lock:sentinel:sync", o);
            auto [ec, l] = co_await m.async_acquire(tuple_deferred);
            BOOST_TEST(!ec, ec.message());
            co_await sleep_for(1s); // about 5 renewals, each with WAIT 1
            BOOST_TEST(l.valid());
            auto [rec] = co_await l.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            BOOST_TEST(get_lock_stats(conn).renewals >= 3u);
            conn.cancel();
        }(),
        30s, 1, corolock::test::drain_check::off);

    // All Sentinels closed; a wrong master name. reconnect_wait 0: async_run ends with the error.
    auto ends_with = [&](corolock::connection_config c) {
        c.reconnect_wait = 0ms;
        asio::io_context io;
        corolock::connection cn(io.get_executor(), c, quiet());
        error_code out;
        cn.async_run([&](error_code ec) { out = ec; });
        io.run_for(10s);
        return out;
    };
    BOOST_TEST(ends_with(config_for({dead})) == error::sentinel_resolve_failed);
    BOOST_TEST(ends_with(config_for(set.addresses(), "no-such-master")) ==
               error::sentinel_unknown_master);
    BOOST_TEST(error_code(error::sentinel_resolve_failed) ==
               corolock::condition::connection_failure);
}

// A master with no replica: replica_sync refuses (shortfall::refuse, the default), or grants on
// the master alone (shortfall::count_connected).
BOOST_AUTO_TEST_CASE(replica_sync_without_replica_refuses_and_leaves_no_key) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), corolock::test::config_for(srv), quiet());
    conn.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex_options o;
            o.replica_sync = {1, 20ms};
            corolock::mutex m(conn, "lock:nosync", o);
            auto [ec, l] = co_await m.async_acquire(tuple_deferred);
            BOOST_TEST(ec == error::replicas_not_synced, ec.message());
            BOOST_TEST(!l.valid());
            // The grant was given back (owner-checked release, sent before this returns).
            co_await sleep_for(100ms);
            BOOST_TEST(srv.command({"EXISTS", "lock:nosync"}) == ":0\r\n");
            // The other choice: only the replicas the master has (none) must acknowledge. The
            // grant stands, and so do its renewals (WAIT then ROLE each time).
            o.lease = 600ms;
            o.replica_sync = {1, 20ms, corolock::replica_sync::shortfall::count_connected};
            corolock::mutex c(conn, "lock:nosync:count", o);
            auto [cec, cl] = co_await c.async_acquire(tuple_deferred);
            BOOST_TEST(!cec, cec.message());
            co_await sleep_for(700ms); // past the lease: renewed about 3 times
            BOOST_TEST(cl.valid());
            BOOST_TEST(get_lock_stats(conn).renewals >= 2u);
            auto [crec] = co_await cl.async_release(tuple_deferred);
            BOOST_TEST(!crec, crec.message());
            // Invalid settings fail before anything is sent.
            for (auto bad : {corolock::replica_sync{-1, 20ms}, corolock::replica_sync{1, 0ms},
                             corolock::replica_sync{1, 20s}}) {
                o.replica_sync = bad;
                corolock::mutex b(conn, "lock:nosync:bad", o);
                auto [bec, bl] = co_await b.async_try_acquire(tuple_deferred);
                BOOST_TEST(bec == error::invalid_argument, bec.message());
            }
            conn.cancel();
        }(),
        30s, 1, corolock::test::drain_check::off);
}

// T2: the master is SIGKILLed while a lease is held and acquires wait.
BOOST_AUTO_TEST_CASE(master_killed_client_moves_to_new_master) {
    sentinel_set set;
    const auto replica = std::to_string(set.node(1).port());
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(set.addresses()), quiet());
    conn.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:sentinel:t2", lease_of(2s));
            auto [ec, held] = co_await m.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!ec, ec.message());
            int waiter_ok = 0;
            auto waiter = [&]() -> awaitable<void> {
                auto [wec, wl] = co_await m.async_acquire_for(20s, tuple_deferred);
                if (!wec && wl.valid()) {
                    ++waiter_ok;
                    co_await wl.async_release(tuple_deferred);
                }
            };
            for (int i = 0; i < 3; ++i)
                asio::co_spawn(ioc, waiter(), asio::detached);
            const auto t_kill = clock_type::now();
            set.node(0).kill();
            // The held lease cannot be renewed on a dead master: it is reported lost or the
            // new master took its (replicated) key; either way the waiters get the lock.
            held = {};
            BOOST_TEST(co_await lock_cycle_works(m, 20s));
            std::cout << "SIGKILL: first lock cycle on the new master after "
                      << (clock_type::now() - t_kill) / 1ms << " ms\n";
            BOOST_TEST(co_await server_port(conn) == replica);
            for (int i = 0; i < 100 && waiter_ok < 3; ++i)
                co_await sleep_for(100ms);
            BOOST_TEST(waiter_ok == 3);
            BOOST_TEST(conn.stats().resolves >= 2u);
            conn.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// T2 under load: two clients cycling on 3 names with 2 ms holds (8 coroutines per name) and on
// 3 names with 2.5 s holds (2 per name, renewed across the failover) while the master is
// SIGKILLed. Tokens of a name grow in grant order across the failover, no two leases that were
// never reported lost are inside at once, and the cycles go on at the promoted replica.
BOOST_AUTO_TEST_CASE(master_killed_under_load_tokens_grow_and_no_overlap) {
    sentinel_set set;
    const auto replica = std::to_string(set.node(1).port());
    asio::io_context ioc;
    corolock::connection a(ioc.get_executor(), config_for(set.addresses()), quiet());
    corolock::connection b(ioc.get_executor(), config_for(set.addresses()), quiet());
    a.async_run(asio::detached);
    b.async_run(asio::detached);

    constexpr int short_names = 3, names = 6;
    struct inside_entry {
        const corolock::lease* lease;
        std::shared_ptr<bool> lost; // set when its holder leaves: was it reported lost?
    };
    struct name_state {
        std::uint64_t last_token = 0;
        std::vector<inside_entry> inside;
    };
    std::vector<name_state> state(names);
    std::vector<std::pair<std::shared_ptr<bool>, std::shared_ptr<bool>>> overlaps;
    std::uint64_t grants = 0, regressions = 0, lost = 0, failed = 0;
    bool stop = false;
    int running = 0;
    clock_type::time_point last_grant{};
    clock_type::duration longest_gap{}; // between two grants: the failover's blackout

    auto cycle = [&](corolock::connection& conn, int n) -> awaitable<void> {
        ++running;
        corolock::mutex m(conn, "lock:sentinel:load:" + std::to_string(n), lease_of(2s));
        asio::steady_timer hold(ioc);
        const auto hold_for = n < short_names ? clock_type::duration(2ms) : 2500ms;
        while (!stop) {
            auto [ec, l] = co_await m.async_acquire_for(3s, tuple_deferred);
            if (ec || !l.valid()) {
                ++failed;
                co_await sleep_for(20ms);
                continue;
            }
            auto& st = state[static_cast<std::size_t>(n)];
            ++grants;
            const auto now = clock_type::now();
            if (last_grant != clock_type::time_point{})
                longest_gap = std::max(longest_gap, now - last_grant);
            last_grant = now;
            if (l.token().value() <= st.last_token)
                ++regressions;
            st.last_token = std::max(st.last_token, l.token().value());
            auto mine = std::make_shared<bool>(false);
            for (const auto& other : st.inside)
                if (other.lease->valid())
                    overlaps.emplace_back(other.lost, mine);
            st.inside.push_back({&l, mine});
            hold.expires_after(hold_for);
            co_await hold.async_wait(asio::as_tuple(asio::deferred));
            *mine = l.lost();
            lost += *mine ? 1 : 0;
            std::erase_if(st.inside, [&](const inside_entry& e) { return e.lease == &l; });
            co_await l.async_release(tuple_deferred);
        }
        --running;
    };

    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            for (int n = 0; n < names; ++n)
                for (int i = 0; i < (n < short_names ? 4 : 1); ++i) {
                    asio::co_spawn(ioc, cycle(a, n), asio::detached);
                    asio::co_spawn(ioc, cycle(b, n), asio::detached);
                }
            co_await sleep_for(1500ms);
            const auto before = grants;
            set.node(0).kill();
            co_await corolock::test::eventually([&] { return grants >= before + 300; }, 30s, 50ms);
            stop = true;
            BOOST_TEST(co_await corolock::test::eventually([&] { return running == 0; }, 15s));
            std::size_t unlost_overlaps = 0;
            for (const auto& [x, y] : overlaps)
                unlost_overlaps += (!*x && !*y) ? 1 : 0;
            std::cout << "SIGKILL under load: " << before << " grants before the kill, "
                      << grants - before << " after; longest time without a grant "
                      << longest_gap / 1ms << " ms; " << lost << " leases reported lost, " << failed
                      << " acquires failed; overlaps " << overlaps.size()
                      << " (among leases never reported lost " << unlost_overlaps
                      << "); token regressions " << regressions << "\n";
            BOOST_TEST(before > 50u);
            BOOST_TEST(grants >= before + 300);
            BOOST_TEST(regressions == 0u);
            BOOST_TEST(unlost_overlaps == 0u);
            BOOST_TEST(co_await server_port(a) == replica);
            BOOST_TEST(co_await server_port(b) == replica);
            a.cancel();
            b.cancel();
        }(),
        90s, 1, corolock::test::drain_check::off);
}

// T3: the master is paused 4 s; the client moves to the new master before SIGCONT (normally on
// the watch's +switch-master).
BOOST_AUTO_TEST_CASE(master_paused_client_follows_switch_before_resume) {
    sentinel_set set;
    const auto replica = std::to_string(set.node(1).port());
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(set.addresses()), quiet());
    conn.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:sentinel:t3", lease_of(1s));
            BOOST_TEST(co_await lock_cycle_works(m, 5s));
            set.node(0).pause();
            const auto t_pause = clock_type::now();
            // An acquire queued during the pause: its grant must come from the new master.
            auto [ec, l] = co_await m.async_acquire_for(3900ms, tuple_deferred);
            std::cout << "SIGSTOP: acquire done after " << (clock_type::now() - t_pause) / 1ms
                      << " ms (" << ec.message() << "), switches " << conn.stats().master_switches
                      << ", resolves " << conn.stats().resolves << "\n";
            BOOST_TEST(!ec, ec.message());
            // Moved by the watch's +switch-master, or (it raced the message once in CI) by the
            // health check's reconnect resolving the new master first: either way a second
            // resolution, and the connection is on the new master before SIGCONT.
            const auto st = conn.stats();
            BOOST_TEST(st.resolves >= 2u);
            BOOST_TEST(co_await server_port(conn) == replica); // before SIGCONT
            const auto token = l.token().value();
            const bool still_paused = clock_type::now() - t_pause < 4s;
            co_await sleep_for(4s - (clock_type::now() - t_pause));
            set.node(0).resume();
            BOOST_TEST(still_paused);
            // The grant is on the new master, with our token.
            const auto reply = set.node(1).command({"HGET", "lock:sentinel:t3", "token"});
            BOOST_TEST(reply.find(std::to_string(token)) != std::string::npos, reply);
            co_await l.async_release(tuple_deferred);
            BOOST_TEST(co_await lock_cycle_works(m, 5s));
            BOOST_TEST(co_await server_port(conn) == replica);
            conn.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// T5: a graceful switch (SENTINEL FAILOVER): locks keep working on the new master.
BOOST_AUTO_TEST_CASE(graceful_failover_locks_keep_working) {
    sentinel_set set;
    const auto replica = set.node(1).port();
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(set.addresses()), quiet());
    conn.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:sentinel:t5", lease_of(1s));
            BOOST_TEST(co_await lock_cycle_works(m, 5s));
            const auto reply = set.sentinel(0).command({"SENTINEL", "FAILOVER", "m1"});
            BOOST_TEST(reply == "+OK\r\n", reply);
            const auto t0 = clock_type::now();
            while (clock_type::now() - t0 < 15s && set.master_port() != replica)
                co_await sleep_for(100ms);
            BOOST_TEST(set.master_port() == replica);
            // A Sentinel that has not heard of the switch yet may still name the old master,
            // which passes ROLE until Sentinel converts it (then CLIENT KILL, READONLY or the
            // next +switch-master moves the client): poll.
            std::string on;
            while (clock_type::now() - t0 < 20s &&
                   (on = co_await server_port(conn)) != std::to_string(replica))
                co_await sleep_for(100ms);
            BOOST_TEST(on == std::to_string(replica));
            std::cout << "SENTINEL FAILOVER: client on the new master after "
                      << (clock_type::now() - t0) / 1ms << " ms, switches "
                      << conn.stats().master_switches << "\n";
            BOOST_TEST(co_await lock_cycle_works(m, 15s));
            conn.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// One of the Sentinels we watch stops answering (paused): the watches on the others hear the
// next switch.
BOOST_AUTO_TEST_CASE(paused_sentinel_the_watch_moves_on) {
    sentinel_set set;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(set.addresses()), quiet());
    conn.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:sentinel:watch", lease_of(1s));
            BOOST_TEST(co_await lock_cycle_works(m, 5s));
            // A Sentinel whose client list shows our subscription (flags=P; every Sentinel has
            // one now, one watch each).
            int watched = -1;
            for (int tries = 0; tries < 50 && watched < 0; ++tries) {
                for (int i = 0; i < 3 && watched < 0; ++i)
                    if (set.sentinel(i).command({"CLIENT", "LIST"}).find(" flags=P ") !=
                        std::string::npos)
                        watched = i;
                if (watched < 0)
                    co_await sleep_for(100ms);
            }
            BOOST_TEST_REQUIRE(watched >= 0, set.sentinel(0).command({"CLIENT", "LIST"}));
            set.sentinel(watched).pause();
            co_await sleep_for(1s); // five health-check intervals: the watch has moved
            // A switch forced through a live Sentinel (no election among the two that answer,
            // which may take rounds): only a watch that left the paused one hears it.
            const int live = (watched + 1) % 3;
            const auto reply = set.sentinel(live).command({"SENTINEL", "FAILOVER", "m1"});
            BOOST_TEST(reply == "+OK\r\n", reply);
            const auto t_switch = clock_type::now();
            while (clock_type::now() - t_switch < 15s && conn.stats().master_switches == 0)
                co_await sleep_for(100ms);
            std::cout << "paused Sentinel: switch heard after "
                      << (clock_type::now() - t_switch) / 1ms << " ms\n";
            // Only the watch counts switches: the paused Sentinel could not have told us.
            BOOST_TEST(conn.stats().master_switches >= 1u);
            set.sentinel(watched).resume();
            conn.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// T4: the master is SIGKILLed and restarted empty after the switch. It is a writable master for
// about 10 s, until Sentinel demotes it; a connection never grants from it meanwhile.
BOOST_AUTO_TEST_CASE(restarted_empty_master_gets_no_grant) {
    sentinel_set set;
    const auto replica = set.node(1).port();
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(set.addresses()), quiet());
    conn.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:sentinel:t4", lease_of(3s));
            BOOST_TEST(co_await lock_cycle_works(m, 5s));
            set.node(0).kill();
            set.wait_master(replica, 15000ms);
            set.node(0).start(); // same port, no data, and it believes it is a master
            BOOST_TEST(set.node(0).command({"ROLE"}).find("master") != std::string::npos);
            // A new connection asks the Sentinels, so it goes to the new master; the old one
            // reconnected there already.
            corolock::connection fresh(ioc.get_executor(), config_for(set.addresses()), quiet());
            fresh.async_run(asio::detached);
            for (auto* c : {&conn, &fresh}) {
                corolock::mutex mc(*c, "lock:sentinel:t4", lease_of(3s));
                auto [ec, l] = co_await mc.async_acquire_for(10s, tuple_deferred);
                BOOST_TEST_REQUIRE(!ec, ec.message());
                BOOST_TEST(co_await server_port(*c) == std::to_string(replica));
                const auto on_new = set.node(1).command({"HGET", "lock:sentinel:t4", "token"});
                BOOST_TEST(on_new.find(std::to_string(l.token().value())) != std::string::npos,
                           on_new);
                // While the restarted node still calls itself a master, it has no grant.
                if (set.node(0).command({"ROLE"}).find("master") != std::string::npos)
                    BOOST_TEST(set.node(0).command({"EXISTS", "lock:sentinel:t4"}) == ":0\r\n");
                co_await l.async_release(tuple_deferred);
            }
            fresh.cancel();
            conn.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// T3 without the switch watch: the client stays on the paused master, and an acquire queued
// there runs when it resumes, a zombie master whose replica was promoted. With replica_sync the
// grant's WAIT sees no replica: it is refused and given back, never used.
BOOST_AUTO_TEST_CASE(without_switch_watch_replica_sync_refuses_the_zombie_grant) {
    sentinel_set set;
    asio::io_context ioc;
    auto cfg = config_for(set.addresses());
    cfg.sentinel.follow_switch_master = false;
    cfg.health_check_interval = 20s; // keep the connection on the paused master
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    conn.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex_options o;
            o.lease = 2s;
            o.replica_sync = {1, 100ms};
            o.try_timeout = 10s; // the try waits for the paused master's resume
            corolock::mutex m(conn, "lock:sentinel:t3off", o);
            BOOST_TEST(co_await lock_cycle_works(m, 5s));
            set.node(0).pause();
            const auto t_pause = clock_type::now();
            asio::steady_timer resume(ioc, 4s);
            resume.async_wait([&](error_code) { set.node(0).resume(); });
            auto [ec, l] = co_await m.async_try_acquire(tuple_deferred);
            std::cout << "zombie grant: " << ec.message() << " after "
                      << (clock_type::now() - t_pause) / 1ms << " ms\n";
            const bool after_resume = clock_type::now() - t_pause >= 4s;
            BOOST_TEST(after_resume); // it ran on the resumed master
            BOOST_TEST(ec == error::replicas_not_synced, ec.message());
            BOOST_TEST(!l.valid());
            BOOST_TEST(conn.stats().master_switches == 0u);
            co_await sleep_for(200ms); // the give-back, sent before the completion
            BOOST_TEST(set.node(0).command({"EXISTS", "lock:sentinel:t3off"}) == ":0\r\n");
            conn.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_sentinel
