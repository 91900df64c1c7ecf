// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock over a real 6-node Redis Cluster (test/common/redis_cluster): waiters woken by
// SPUBLISH at the slot's master, a held lease that survives the resharding of its slot (and a
// waiter whose subscription moves with it), renewals of leases in many slots, and a holder told
// of a force-unlock at once.
#include "common/coro_test.hpp"
#include "common/redis_cluster.hpp"
#include "common/test_config.hpp"
#include "core/slot_table.hpp"
#include <corolock/cluster.hpp>
#include <corolock/multi_lock.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_cluster_lock {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error_code;
using corolock::detail::key_slot;
using corolock::test::cluster_config_for;
using corolock::test::eventually;
using corolock::test::quiet;
using corolock::test::redis_cluster;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace {

using corolock::test::tuple_deferred;

// Waiters retry on their own only every 5 s: a faster grant came from a release message.
corolock::mutex_options slow_retry(clock_type::duration lease) {
    corolock::mutex_options o;
    o.lease = lease;
    o.retry_base = 5s;
    o.retry_max = 5s;
    return o;
}

// A lock name whose slot is below `limit` (redis-cli --cluster reshard moves the lowest slots).
std::string name_below(std::uint16_t limit) {
    for (int i = 0;; ++i) {
        auto n = "lock:c" + std::to_string(i);
        if (key_slot(n) < limit)
            return n;
    }
}

// A node of `c` other than `node` (a seed that stays up when `node` is faulted).
redis_process& other_than(redis_cluster& c, const redis_process& node) {
    for (auto& n : c.nodes())
        if (n.get() != &node)
            return *n;
    throw std::logic_error("a cluster of one node");
}

// Runs a blocking cluster operation (redis-cli) on a thread of its own, so that the io_context
// and its watchdog keep running; rethrows what it threw.
template <class F>
awaitable<void> off_thread(F f) {
    auto done = std::async(std::launch::async, std::move(f));
    while (done.wait_for(0s) != std::future_status::ready)
        co_await sleep_for(20ms);
    done.get();
}

std::int64_t ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_lock)

// Two clients (two clusters objects, as two processes would have) contend on one name.
BOOST_AUTO_TEST_CASE(waiter_is_woken_by_spublish_and_tokens_grow) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    corolock::cluster b_cl(ioc.get_executor(), cluster_config_for(*c.nodes()[1]), quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex a(a_cl, "lock:order-7", slow_retry(2s));
            corolock::mutex b(b_cl, "lock:order-7", slow_retry(2s));
            auto [aec, la] = co_await a.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!aec, aec.message());
            auto& owner = c.master_of(key_slot("lock:order-7"));
            BOOST_TEST(owner.command({"EXISTS", "lock:order-7"}) == ":1\r\n");
            auto [tec, tl] = co_await b.async_try_acquire(tuple_deferred);
            BOOST_TEST(!tec, tec.message());
            BOOST_TEST(!tl.valid()); // held by A

            clock_type::time_point released{};
            auto releaser = [&]() -> awaitable<void> {
                co_await sleep_for(500ms);
                released = clock_type::now();
                auto [rec] = co_await la.async_release(tuple_deferred);
                BOOST_TEST(!rec, rec.message());
            };
            asio::co_spawn(ioc, releaser(), asio::detached);
            auto [bec, lb] = co_await b.async_acquire_for(10s, tuple_deferred);
            BOOST_TEST_REQUIRE(!bec, bec.message());
            const auto wait = clock_type::now() - released;
            std::cout << "cluster lock: waiter granted " << ms(wait)
                      << " ms after the release (retry timer 5 s)\n";
            BOOST_TEST((wait < 2s)); // a release message, not the 5 s timer
            BOOST_TEST(corolock::get_lock_stats(b_cl).pubsub_wakeups >= 1u);
            BOOST_TEST(lb.token() > la.token());
            auto [rec] = co_await lb.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            BOOST_TEST(owner.command({"EXISTS", "lock:order-7"}) == ":0\r\n");
            a_cl.cancel();
            b_cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// C1 under a lease: the slot of a held lease moves to another master. The watchdog's renewals
// follow MOVED, the lease is never lost, and a waiter subscribed at the old master is moved
// with the slot and woken by the release at the new one.
BOOST_AUTO_TEST_CASE(held_lease_survives_reshard_of_its_slot) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const auto name = name_below(50);
    auto& from = c.master_of(key_slot(name));
    redis_process* to = &c.master_of(16383);
    BOOST_REQUIRE(to != &from);
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    corolock::cluster b_cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex a(a_cl, name, slow_retry(900ms)); // a renewal every 300 ms
            corolock::mutex b(b_cl, name, slow_retry(900ms));
            auto [aec, la] = co_await a.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!aec, aec.message());
            bool b_done = false;
            clock_type::time_point b_granted{};
            corolock::lease lb;
            auto waiter = [&]() -> awaitable<void> {
                auto [ec, l] = co_await b.async_acquire_for(20s, tuple_deferred);
                BOOST_TEST(!ec, ec.message());
                b_granted = clock_type::now();
                lb = std::move(l);
                b_done = true;
            };
            asio::co_spawn(ioc, waiter(), asio::detached);
            co_await sleep_for(300ms); // B waits, subscribed at `from`
            const auto refreshes = a_cl.stats().refreshes;
            c.reshard(from, *to, 50);
            BOOST_TEST(to->command({"EXISTS", name}) == ":1\r\n"); // the key moved
            co_await sleep_for(2500ms);                            // almost three leases
            BOOST_TEST(la.valid());
            BOOST_TEST(!la.lost());
            BOOST_TEST(corolock::get_lock_stats(a_cl).leases_lost == 0u);
            // A saw the move: a renewal answered MOVED, or first the old master dropping A's
            // subscription (a holder listens for force-unlocks), which refreshes the map.
            BOOST_TEST((a_cl.stats().moved >= 1u || a_cl.stats().refreshes > refreshes));
            // Both subscriptions, the holder's and the waiter's, followed the slot.
            BOOST_TEST(to->command({"PUBSUB", "SHARDNUMSUB", "{" + name + "}:released"})
                           .ends_with(":2\r\n"));
            BOOST_TEST(!b_done);
            const auto released = clock_type::now();
            auto [rec] = co_await la.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            for (int i = 0; i < 100 && !b_done; ++i)
                co_await sleep_for(50ms);
            BOOST_TEST_REQUIRE(b_done);
            std::cout << "cluster lock: after the reshard, waiter granted "
                      << ms(b_granted - released) << " ms after the release\n";
            BOOST_TEST((b_granted - released < 3s)); // woken, not the 5 s timer
            BOOST_TEST(lb.token() > la.token());
            BOOST_TEST(to->command({"EXISTS", name}) == ":1\r\n");
            co_await lb.async_release(tuple_deferred);
            BOOST_TEST(to->command({"EXISTS", name}) == ":0\r\n");
            a_cl.cancel();
            b_cl.cancel();
        }(),
        90s, 1, corolock::test::drain_check::off);
}

// A waiter's subscription follows its slot (scale-out review L1, K2): the slot of the waiter's
// channel moves while its connection to the old master is down (so no `sunsubscribe` reaches
// it). The subscription goes to the new master with the map that says so, or, if the old
// connection re-sends its SSUBSCRIBE first, through the MOVED answer; either way the release
// there wakes the waiter by a message, not by its fallback timer (5 s). Before, the MOVED was
// taken as a refusal: "waiters get no release messages", for good.
BOOST_AUTO_TEST_CASE(a_waiters_subscription_follows_its_slot_to_the_new_master) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const std::string name = "lock:resub";
    const std::string channel = "{lock:resub}:released";
    const auto slot = std::to_string(key_slot(name));
    auto& from = c.master_of(key_slot(name));
    redis_process* to = &c.master_of(16383);
    if (to == &from)
        to = &c.master_of(0);
    const auto from_id = c.id(from);
    const auto to_id = c.id(*to);
    auto subscribers = [&](redis_process& n) {
        return n.command({"PUBSUB", "SHARDNUMSUB", channel});
    };
    asio::io_context ioc;
    corolock::test::log_capture log;
    corolock::cluster a_cl(ioc.get_executor(), cluster_config_for(*to), quiet());
    corolock::cluster b_cl(ioc.get_executor(), cluster_config_for(*to),
                           log.make(corolock::logger::level::info));
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex a(a_cl, name, slow_retry(10s)); // no renewal during the test
            corolock::mutex b(b_cl, name, slow_retry(10s));
            auto [aec, la] = co_await a.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!aec, aec.message());
            bool b_done = false;
            clock_type::time_point b_granted{};
            corolock::lease lb;
            auto waiter = [&]() -> awaitable<void> {
                auto [ec, l] = co_await b.async_acquire_for(20s, tuple_deferred);
                BOOST_TEST(!ec, ec.message());
                b_granted = clock_type::now();
                lb = std::move(l);
                b_done = true;
            };
            asio::co_spawn(ioc, waiter(), asio::detached);
            // B waits there; A, the holder, listens there for force-unlocks.
            BOOST_TEST_REQUIRE(
                co_await eventually([&] { return subscribers(from).ends_with(":2\r\n"); }, 2s));

            // The clients' connections to `from` drop and cannot come back (their user is
            // disabled there) while the slot moves, keys included, to `to`.
            BOOST_TEST(from.command({"ACL", "SETUSER", "admin", "on", ">pw", "~*", "&*",
                                     "+@all"}) == "+OK\r\n");
            from.set_command_auth("admin", "pw");
            BOOST_TEST(from.command({"ACL", "SETUSER", "default", "off"}) == "+OK\r\n");
            for (const char* type : {"normal", "pubsub"})
                from.command({"CLIENT", "KILL", "USER", "default", "TYPE", type});
            BOOST_TEST(to->command({"CLUSTER", "SETSLOT", slot, "IMPORTING", from_id}) ==
                       "+OK\r\n");
            BOOST_TEST(from.command({"CLUSTER", "SETSLOT", slot, "MIGRATING", to_id}) == "+OK\r\n");
            BOOST_TEST(from.command({"MIGRATE", "127.0.0.1", std::to_string(to->port()), "", "0",
                                     "5000", "KEYS", name, "{lock:resub}:fence"}) == "+OK\r\n");
            for (auto* n : {to, &from})
                BOOST_TEST(n->command({"CLUSTER", "SETSLOT", slot, "NODE", to_id}) == "+OK\r\n");
            co_await sleep_for(300ms); // reconnects fail meanwhile; the maps learn the move
            BOOST_TEST(from.command({"ACL", "SETUSER", "default", "on"}) == "+OK\r\n");

            // B's subscription reaches `to`: with the map that moved the slot (the cluster
            // follows each slot's owner), or through MOVED when its connection to `from` came
            // back and re-sent the SSUBSCRIBE first.
            BOOST_TEST(
                co_await eventually([&] { return subscribers(*to).ends_with(":2\r\n"); }, 2s));
            BOOST_TEST(!log.contains("waiters get no release messages"));
            BOOST_TEST(!b_done);
            const auto woken = corolock::get_lock_stats(b_cl).pubsub_wakeups;
            const auto released = clock_type::now();
            auto [rec] = co_await la.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            for (int i = 0; i < 120 && !b_done; ++i)
                co_await sleep_for(50ms);
            BOOST_TEST_REQUIRE(b_done);
            std::cout << "cluster lock: subscription answered MOVED, waiter granted "
                      << ms(b_granted - released) << " ms after the release\n";
            BOOST_TEST((b_granted - released < 2s)); // a release message, not the timer
            BOOST_TEST(corolock::get_lock_stats(b_cl).pubsub_wakeups > woken);
            if (corolock::get_lock_stats(b_cl).pubsub_wakeups <= woken) {
                std::lock_guard<std::mutex> g(log.m);
                for (const auto& line : log.lines)
                    std::cout << "  log: " << line << "\n";
            }
            BOOST_TEST(to->command({"EXISTS", name}) == ":1\r\n");
            co_await lb.async_release(tuple_deferred);
            a_cl.cancel();
            b_cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// Issue 28: a node connection that comes back re-subscribes every channel it had, and a node
// refuses channels of different slots in one SSUBSCRIBE (CROSSSLOT). Two names of one master in
// two slots, a holder and a waiter on each; every connection to that master is killed: both
// channels must have both subscribers again, and both waiters be woken by release messages.
BOOST_AUTO_TEST_CASE(a_reconnect_resubscribes_channels_of_several_slots) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    std::vector<std::string> names{"lock:xs0"};
    auto& node = c.master_of(key_slot(names[0]));
    for (int i = 1; names.size() < 2; ++i) {
        auto n = "lock:xs" + std::to_string(i);
        if (&c.master_of(key_slot(n)) == &node && key_slot(n) != key_slot(names[0]))
            names.push_back(n);
    }
    auto subscribers = [&](const std::string& name) {
        return node.command({"PUBSUB", "SHARDNUMSUB", "{" + name + "}:released"});
    };
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), cluster_config_for(other_than(c, node)), quiet());
    corolock::cluster b_cl(ioc.get_executor(), cluster_config_for(other_than(c, node)), quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            std::vector<corolock::lease> held;
            int granted = 0;
            clock_type::time_point released{};
            clock_type::duration slowest{};
            for (const auto& name : names) {
                corolock::mutex a(a_cl, name, slow_retry(10s));
                auto [ec, l] = co_await a.async_acquire(tuple_deferred);
                BOOST_TEST_REQUIRE(!ec, ec.message());
                held.push_back(std::move(l));
                auto waiter = [&, name]() -> awaitable<void> {
                    corolock::mutex b(b_cl, name, slow_retry(10s));
                    auto [wec, wl] = co_await b.async_acquire_for(20s, tuple_deferred);
                    BOOST_TEST(!wec, wec.message());
                    slowest = std::max(slowest, clock_type::now() - released);
                    ++granted;
                    co_await wl.async_release(tuple_deferred);
                };
                asio::co_spawn(ioc, waiter(), asio::detached);
            }
            for (const auto& name : names)
                BOOST_TEST_REQUIRE(
                    co_await eventually([&] { return subscribers(name).ends_with(":2\r\n"); }, 2s));

            node.command({"CLIENT", "KILL", "TYPE", "pubsub"});
            node.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
            for (const auto& name : names)
                BOOST_TEST(
                    co_await eventually([&] { return subscribers(name).ends_with(":2\r\n"); }, 3s),
                    name << " after the reconnect: " << subscribers(name));
            const auto woken = corolock::get_lock_stats(b_cl).pubsub_wakeups;
            released = clock_type::now();
            for (auto& l : held) {
                auto [rec] = co_await l.async_release(tuple_deferred);
                BOOST_TEST(!rec, rec.message());
            }
            BOOST_TEST(co_await eventually([&] { return granted == 2; }, 8s));
            BOOST_TEST((slowest < 2s)); // release messages, not the 5 s timer
            BOOST_TEST(corolock::get_lock_stats(b_cl).pubsub_wakeups >= woken + 2);
            a_cl.cancel();
            b_cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// Issue 28 (K2): a master is killed and its replica promoted. The waiter's subscription must go
// to the new master with the first map that names it, not when the dead node's connection is
// closed two maps later: until then the waiter heard no release and took the name only on its
// timer. The holder's key was replicated (WAIT), so it keeps renewing on the new master.
BOOST_AUTO_TEST_CASE(a_failover_moves_the_waiters_subscription_with_the_map) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const std::string name = "lock:fo-sub";
    const std::string channel = "{lock:fo-sub}:released";
    auto& dying = c.master_of(key_slot(name));
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), cluster_config_for(other_than(c, dying)), quiet());
    corolock::cluster b_cl(ioc.get_executor(), cluster_config_for(other_than(c, dying)), quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex_options o = slow_retry(10s);
            corolock::mutex a(a_cl, name, o);
            auto [aec, la] = co_await a.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!aec, aec.message());
            BOOST_TEST(dying.command({"WAIT", "1", "2000"}) == ":1\r\n");
            bool b_done = false;
            clock_type::time_point released{}, b_granted{};
            auto waiter = [&]() -> awaitable<void> {
                corolock::mutex b(b_cl, name, slow_retry(10s));
                auto [ec, l] = co_await b.async_acquire_for(40s, tuple_deferred);
                BOOST_TEST(!ec, ec.message());
                b_granted = clock_type::now();
                b_done = true;
                co_await l.async_release(tuple_deferred);
            };
            asio::co_spawn(ioc, waiter(), asio::detached);
            BOOST_TEST_REQUIRE(co_await eventually(
                [&] {
                    return dying.command({"PUBSUB", "SHARDNUMSUB", channel}).ends_with(":2\r\n");
                },
                2s));

            dying.kill();
            co_await off_thread([&] { c.wait_ok(); });
            auto& promoted = c.master_of(key_slot(name));
            // Each cluster learns the new map from a request of its own: a try on the held name
            // (answered "held", with no lease, once it reaches the new master).
            for (auto* cl : {&a_cl, &b_cl}) {
                corolock::mutex probe(*cl, name);
                bool answered = false;
                for (int i = 0; i < 200 && !answered; ++i) {
                    auto [pec, pl] = co_await probe.async_try_acquire(tuple_deferred);
                    answered = !pec && !pl.valid();
                    if (!answered)
                        co_await sleep_for(50ms);
                }
                BOOST_TEST_REQUIRE(answered);
            }
            const auto routed = clock_type::now();
            BOOST_TEST(co_await eventually(
                [&] {
                    return promoted.command({"PUBSUB", "SHARDNUMSUB", channel}).ends_with(":2\r\n");
                },
                1s));
            std::cout << "cluster lock: both subscriptions at the promoted master "
                      << ms(clock_type::now() - routed) << " ms after both maps routed there\n";
            BOOST_TEST_REQUIRE(la.valid()); // renewed on the promoted master
            BOOST_TEST(!b_done);
            const auto woken = corolock::get_lock_stats(b_cl).pubsub_wakeups;
            released = clock_type::now();
            auto [rec] = co_await la.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            BOOST_TEST(co_await eventually([&] { return b_done; }, 8s));
            BOOST_TEST((b_granted - released < 2s)); // a release message, not the 10 s timer
            BOOST_TEST(corolock::get_lock_stats(b_cl).pubsub_wakeups > woken);
            a_cl.cancel();
            b_cl.cancel();
        }(),
        90s, 1, corolock::test::drain_check::off);
}

// A key deleted behind its holder (issue 17 section 4.4) on a cluster. No channel reaches every
// node, so a force-unlock publishes the deleted owner on the name's release channel, in its
// slot, where the holder's cluster listens while it holds the name: forced from another client,
// a 30 s lease (next renewal in 10 s) is reported lost within a second. Anyone may SPUBLISH
// there: a forged message naming a live lease is verified with a renewal, not trusted.
BOOST_AUTO_TEST_CASE(a_force_unlock_tells_a_cluster_holder_at_once) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const std::string name = "lock:forced", forged_name = "lock:forged";
    auto& owner = c.master_of(key_slot(name));
    auto& forged_owner = c.master_of(key_slot(forged_name));
    auto subscribers = [](redis_process& n, const std::string& lock) {
        return n.command({"PUBSUB", "SHARDNUMSUB", "{" + lock + "}:released"});
    };
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    corolock::cluster b_cl(ioc.get_executor(), cluster_config_for(*c.nodes()[1]), quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(a_cl, name, slow_retry(30s));
            corolock::mutex other(a_cl, forged_name, slow_retry(30s));
            corolock::mutex admin(b_cl, name);
            auto [aec, l] = co_await m.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!aec, aec.message());
            auto [oec, bystander] = co_await other.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!oec, oec.message());
            // The holder listens on each name it holds (the SSUBSCRIBE follows the grant).
            BOOST_TEST(co_await eventually(
                [&] { return subscribers(owner, name).ends_with(":1\r\n"); }, 2s));
            BOOST_TEST(co_await eventually(
                [&] { return subscribers(forged_owner, forged_name).ends_with(":1\r\n"); }, 2s));

            // Forged: the lease still holds its key, so it is renewed and stays valid.
            const auto renewals = corolock::get_lock_stats(a_cl).renewals;
            BOOST_TEST(forged_owner.command({"SPUBLISH", "{" + forged_name + "}:released",
                                             "forced " + std::string(bystander.owner_id())}) ==
                       ":1\r\n");
            BOOST_TEST(co_await eventually(
                [&] { return corolock::get_lock_stats(a_cl).renewals > renewals; }, 2s));
            BOOST_TEST(bystander.valid());
            BOOST_TEST(!bystander.lost());
            BOOST_TEST(forged_owner.command({"EXISTS", forged_name}) == ":1\r\n");

            // Forced by another client: the holder is told at once.
            bool lost = false;
            error_code lost_ec;
            asio::co_spawn(
                ioc,
                [&]() -> awaitable<void> {
                    auto [ec] = co_await l.async_wait_lost(tuple_deferred);
                    lost_ec = ec;
                    lost = true;
                },
                asio::detached);
            auto [fec, deleted] = co_await admin.async_force_unlock(tuple_deferred);
            BOOST_TEST_REQUIRE(!fec, fec.message());
            BOOST_TEST(deleted);
            const auto forced = clock_type::now();
            BOOST_TEST(co_await eventually([&] { return lost; }, 1s));
            if (lost)
                std::cout << "cluster lock: force-unlocked holder told "
                          << ms(clock_type::now() - forced)
                          << " ms after the force-unlock (lease 30 s, next renewal in 10 s)\n";
            BOOST_TEST(lost_ec == corolock::error::lease_lost, lost_ec.message());
            BOOST_TEST(!l.valid());
            BOOST_TEST(bystander.valid()); // another name of the same cluster is untouched
            BOOST_TEST(corolock::get_lock_stats(a_cl).lost_by(
                           corolock::lease_loss::renewal_refused) == 1u);
            // A lease that ends stops listening.
            BOOST_TEST(co_await eventually(
                [&] { return subscribers(owner, name).ends_with(":0\r\n"); }, 2s));
            auto [rec] = co_await bystander.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            BOOST_TEST(co_await eventually(
                [&] { return subscribers(forged_owner, forged_name).ends_with(":0\r\n"); }, 2s));
            if (!lost)
                co_await l.async_release(tuple_deferred); // ends the wait for loss
            a_cl.cancel();
            b_cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// Leases in many slots on three masters: the watchdog renews them one script per slot (a
// script's keys must share a slot on a cluster) and none is lost.
BOOST_AUTO_TEST_CASE(leases_in_many_slots_keep_renewing) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    asio::io_context ioc;
    corolock::cluster cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            std::vector<std::unique_ptr<corolock::mutex>> ms;
            std::vector<corolock::lease> held;
            corolock::mutex_options o;
            o.lease = 600ms;
            for (int i = 0; i < 50; ++i) {
                ms.push_back(
                    std::make_unique<corolock::mutex>(cl, "lock:many:" + std::to_string(i), o));
                auto [ec, l] = co_await ms.back()->async_acquire(tuple_deferred);
                BOOST_TEST_REQUIRE(!ec, ec.message());
                held.push_back(std::move(l));
            }
            co_await sleep_for(1500ms); // two and a half leases
            for (auto& l : held)
                BOOST_TEST(l.valid());
            const auto st = corolock::get_lock_stats(cl);
            BOOST_TEST(st.leases_lost == 0u);
            BOOST_TEST(st.leases_held == 50u);
            BOOST_TEST(st.renewals >= 100u);
            std::cout << "cluster lock: " << st.renewals << " renewals in " << st.renewal_calls
                      << " scripts\n";
            for (auto& l : held) {
                auto [rec] = co_await l.async_release(tuple_deferred);
                BOOST_TEST(!rec, rec.message());
            }
            BOOST_TEST(corolock::get_lock_stats(cl).leases_held == 0u);
            cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// A free lock whose slot is being migrated while its fence key is still on the source: the
// acquire script's keys are split between the nodes, and the source answers TRYAGAIN. A try
// says so (error::try_again, never "held by another"); a waiting acquire completes once the
// migration ends.
BOOST_AUTO_TEST_CASE(try_acquire_in_a_split_migration_says_try_again) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const std::string name = "lock:split";
    const auto fence = "{lock:split}:fence";
    const auto slot = std::to_string(key_slot(name));
    auto& src = c.master_of(key_slot(name));
    redis_process* dst = &c.master_of(16383);
    if (dst == &src)
        dst = &c.master_of(0);
    asio::io_context ioc;
    corolock::cluster cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(cl, name);
            auto [ec, l] = co_await m.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!ec, ec.message());
            co_await l.async_release(tuple_deferred);
            BOOST_TEST(src.command({"EXISTS", fence}) == ":1\r\n"); // kept for fencing
            BOOST_TEST(dst->command({"CLUSTER", "SETSLOT", slot, "IMPORTING", c.id(src)}) ==
                       "+OK\r\n");
            BOOST_TEST(src.command({"CLUSTER", "SETSLOT", slot, "MIGRATING", c.id(*dst)}) ==
                       "+OK\r\n");
            auto [tec, tl] = co_await m.async_try_acquire(tuple_deferred);
            BOOST_TEST(tec == corolock::error::try_again, tec.message());
            BOOST_TEST(!tl.valid());
            // Nothing was granted: the source, lacking the key, redirects a plain EXISTS.
            BOOST_TEST(src.command({"EXISTS", name}).starts_with("-ASK"));
            // The migration ends while an acquire waits it out.
            auto finish = [&]() -> awaitable<void> {
                co_await sleep_for(300ms);
                BOOST_TEST(src.command({"MIGRATE", "127.0.0.1", std::to_string(dst->port()), "",
                                        "0", "5000", "KEYS", fence}) == "+OK\r\n");
                for (auto* n : {dst, &src})
                    BOOST_TEST(n->command({"CLUSTER", "SETSLOT", slot, "NODE", c.id(*dst)}) ==
                               "+OK\r\n");
            };
            asio::co_spawn(ioc, finish(), asio::detached);
            auto [wec, wl] = co_await m.async_acquire_for(10s, tuple_deferred);
            BOOST_TEST_REQUIRE(!wec, wec.message());
            BOOST_TEST(dst->command({"EXISTS", name}) == ":1\r\n");
            BOOST_TEST(cl.stats().retries >= 1u);
            co_await wl.async_release(tuple_deferred);
            cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// A multi-lock over names on three masters: all held or none, and an overlapping set waits.
BOOST_AUTO_TEST_CASE(multi_lock_over_names_on_three_masters) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const std::vector<std::string> names{"lock:m:a", "lock:m:b", "lock:m:c", "lock:m:d"};
    std::set<redis_process*> owners;
    for (const auto& n : names)
        owners.insert(&c.master_of(key_slot(n)));
    BOOST_REQUIRE(owners.size() >= 2u); // names on at least two masters
    asio::io_context ioc;
    corolock::cluster cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::multi_lock all(cl, names);
            corolock::multi_lock two(cl, {"lock:m:b", "lock:m:d"});
            auto [ec, ml] = co_await all.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!ec, ec.message());
            for (const auto& n : names)
                BOOST_TEST(c.master_of(key_slot(n)).command({"EXISTS", n}) == ":1\r\n", n);
            auto [tec, tl] = co_await two.async_try_acquire(tuple_deferred);
            BOOST_TEST(!tec, tec.message());
            BOOST_TEST(!tl.owns()); // an overlapping set: nothing is held by the try
            BOOST_TEST(c.master_of(key_slot("lock:m:b")).command({"HGET", "lock:m:b", "token"}) ==
                       "$" + std::to_string(std::to_string(ml.token("lock:m:b").value()).size()) +
                           "\r\n" + std::to_string(ml.token("lock:m:b").value()) + "\r\n");
            auto [rec] = co_await ml.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            auto [wec, wl] = co_await two.async_acquire_for(5s, tuple_deferred);
            BOOST_TEST_REQUIRE(!wec, wec.message());
            BOOST_TEST(c.master_of(key_slot("lock:m:a")).command({"EXISTS", "lock:m:a"}) ==
                       ":0\r\n");
            co_await wl.async_release(tuple_deferred);
            for (const auto& n : names)
                BOOST_TEST(c.master_of(key_slot(n)).command({"EXISTS", n}) == ":0\r\n", n);
            cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// C3: the master holding a lease is SIGKILLed; its replica takes over (about 2.5 s). The holder
// either keeps renewing on the promoted replica (the key was replicated) or is told its lease
// is lost; another client gets the lock within seconds, with a larger fencing token.
BOOST_AUTO_TEST_CASE(owner_master_killed_lock_works_after_failover) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const std::string name = "lock:failover";
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    corolock::cluster b_cl(ioc.get_executor(), cluster_config_for(*c.nodes()[1]), quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex_options o;
            o.lease = 1500ms;
            corolock::mutex a(a_cl, name, o);
            corolock::mutex b(b_cl, name, o);
            auto [ec, la] = co_await a.async_acquire(tuple_deferred);
            BOOST_TEST_REQUIRE(!ec, ec.message());
            const auto t_kill = clock_type::now();
            c.master_of(key_slot(name)).kill();
            corolock::lease lb;
            while (clock_type::now() - t_kill < 20s && !lb.valid()) {
                auto [bec, l] = co_await b.async_acquire_for(2s, tuple_deferred);
                if (!bec)
                    lb = std::move(l);
                else if (la.valid() && !la.lost())
                    co_await la.async_release(tuple_deferred); // the key survived: free it
            }
            BOOST_TEST_REQUIRE(lb.valid());
            std::cout << "cluster lock: lock taken by another client "
                      << ms(clock_type::now() - t_kill) << " ms after SIGKILL of its master\n";
            // Never two valid leases: A was released, or told lost, before B got in.
            BOOST_TEST(!la.valid());
            BOOST_TEST(lb.token() > la.token());
            auto [rec] = co_await lb.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            a_cl.cancel();
            b_cl.cancel();
        }(),
        90s, 1, corolock::test::drain_check::off);
}

// Leases in one slot share a renew script. While their slot is half migrated (one key moved),
// that script is answered TRYAGAIN: the batch is split and each lease renewed alone, the moved
// one through ASK at the importing node. None is lost while the migration stays half done.
BOOST_AUTO_TEST_CASE(renewal_batch_in_a_half_migrated_slot_is_split) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const std::vector<std::string> names{"{tag}:a", "{tag}:b", "{tag}:c"};
    const auto slot = std::to_string(key_slot("{tag}"));
    auto& src = c.master_of(key_slot("{tag}"));
    redis_process* dst = &c.master_of(16383);
    if (dst == &src)
        dst = &c.master_of(0);
    asio::io_context ioc;
    corolock::cluster cl(ioc.get_executor(), cluster_config_for(*c.nodes()[0]), quiet());
    cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex_options o;
            o.lease = 900ms; // a renewal every 300 ms
            std::vector<std::unique_ptr<corolock::mutex>> ms;
            std::vector<corolock::lease> held;
            for (const auto& n : names) {
                ms.push_back(std::make_unique<corolock::mutex>(cl, n, o));
                auto [ec, l] = co_await ms.back()->async_acquire(tuple_deferred);
                BOOST_TEST_REQUIRE(!ec, ec.message());
                held.push_back(std::move(l));
            }
            BOOST_TEST(dst->command({"CLUSTER", "SETSLOT", slot, "IMPORTING", c.id(src)}) ==
                       "+OK\r\n");
            BOOST_TEST(src.command({"CLUSTER", "SETSLOT", slot, "MIGRATING", c.id(*dst)}) ==
                       "+OK\r\n");
            const auto port = std::to_string(dst->port());
            BOOST_TEST(src.command({"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS",
                                    "{tag}:a"}) == "+OK\r\n");
            co_await sleep_for(2500ms); // almost three leases, half migrated
            for (auto& l : held)
                BOOST_TEST(l.valid());
            BOOST_TEST(corolock::get_lock_stats(cl).leases_lost == 0u);
            BOOST_TEST(cl.stats().asks >= 1u); // "{tag}:a" renewed at the importing node
            BOOST_TEST(src.command({"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS",
                                    "{tag}:b", "{tag}:c", "{tag}:a:fence", "{tag}:b:fence",
                                    "{tag}:c:fence"}) == "+OK\r\n");
            for (auto* n : {dst, &src})
                BOOST_TEST(n->command({"CLUSTER", "SETSLOT", slot, "NODE", c.id(*dst)}) ==
                           "+OK\r\n");
            for (auto& l : held) {
                auto [rec] = co_await l.async_release(tuple_deferred);
                BOOST_TEST(!rec, rec.message());
            }
            for (const auto& n : names)
                BOOST_TEST(dst->command({"EXISTS", n}) == ":0\r\n", n);
            cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

// C4: the master of a lock's slot is paused (SIGSTOP) and an acquire is queued on its socket.
// The client's health check drops that connection; the queued attempt's outcome is unknown, so
// it is undone and a fresh attempt reaches the replica promoted meanwhile. When the old master
// resumes it may still run the queued script, but it rejoins as a replica and takes the new
// master's data: the lock has one holder, whose lease keeps renewing.
BOOST_AUTO_TEST_CASE(paused_master_acquire_queued_during_the_pause) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const std::string name = "lock:paused";
    auto& old_master = c.master_of(key_slot(name));
    auto& seed = other_than(c, old_master);
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), cluster_config_for(seed), quiet());
    corolock::cluster b_cl(ioc.get_executor(), cluster_config_for(seed), quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex_options o;
            o.lease = 3s; // a renewal every second
            corolock::mutex a(a_cl, name, o);
            corolock::mutex b(b_cl, name, o);
            { // both clients connected to the slot's master, the scripts loaded
                auto [ec, l] = co_await a.async_acquire(tuple_deferred);
                BOOST_TEST_REQUIRE(!ec, ec.message());
                co_await l.async_release(tuple_deferred);
                auto [tec, tl] = co_await b.async_try_acquire(tuple_deferred);
                BOOST_TEST_REQUIRE(tl.valid());
                co_await tl.async_release(tuple_deferred);
            }
            old_master.pause();
            const auto paused = clock_type::now();
            auto [ec, la] = co_await a.async_acquire_for(30s, tuple_deferred);
            BOOST_TEST_REQUIRE(!ec, ec.message());
            std::cout << "cluster lock: acquire queued on a paused master granted "
                      << ms(clock_type::now() - paused) << " ms after the pause\n";
            auto& new_master = c.master_of(key_slot(name));
            BOOST_TEST_REQUIRE(&new_master != &old_master); // granted by the promoted replica
            BOOST_TEST(new_master.command({"EXISTS", name}) == ":1\r\n");
            old_master.resume();
            // The old master rejoins as a replica (polled: blocking this thread would stop
            // the watchdog).
            const bool rejoined = co_await eventually(
                [&] { return old_master.command({"ROLE"}).find("slave") != std::string::npos; },
                30s, 100ms);
            BOOST_TEST_REQUIRE(rejoined);
            co_await sleep_for(2500ms); // the queued script has run, or never will; renewals go on
            BOOST_TEST(la.valid());
            BOOST_TEST(!la.lost());
            BOOST_TEST(corolock::get_lock_stats(a_cl).leases_lost == 0u);
            auto [tec, tl] = co_await b.async_try_acquire(tuple_deferred);
            BOOST_TEST(!tec, tec.message());
            BOOST_TEST(!tl.valid()); // one holder: A
            auto [rec] = co_await la.async_release(tuple_deferred);
            BOOST_TEST(!rec, rec.message());
            auto [bec, lb] = co_await b.async_acquire_for(5s, tuple_deferred);
            BOOST_TEST_REQUIRE(!bec, bec.message());
            BOOST_TEST(lb.token() > la.token());
            co_await lb.async_release(tuple_deferred);
            BOOST_TEST(new_master.command({"EXISTS", name}) == ":0\r\n"); // no orphan
            a_cl.cancel();
            b_cl.cancel();
        }(),
        90s, 1, corolock::test::drain_check::off);
}

// C3 with replica acknowledgement: acquires of fresh names stream to one master, each with
// `replica_sync{1, ...}`, until that master is SIGKILLed, and on after its replica took over
// (and the killed master, restarted, became the replica the new master needs to grant). Every
// grant the client was given is on the promoted replica: 0 lost grants; and the tokens of one
// name acquired again and again only grow.
BOOST_AUTO_TEST_CASE(killed_master_with_replica_sync_loses_no_grant) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    const auto slot = key_slot("{rs}");
    auto& old_master = c.master_of(slot);
    asio::io_context ioc;
    corolock::cluster cl(ioc.get_executor(), cluster_config_for(other_than(c, old_master)),
                         quiet());
    cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex_options o;
            o.lease = 60s; // fixed: the grants must outlive the test, never renewed
            o.watchdog = false;
            o.replica_sync = {1, 500ms};
            std::vector<std::unique_ptr<corolock::mutex>> ms_;
            std::vector<std::pair<std::string, corolock::lease>> granted;
            std::map<std::string, int> failures;
            std::size_t before_kill = 0;
            std::optional<clock_type::time_point> killed;
            clock_type::time_point first_after{};
            corolock::mutex seq(cl, "{rs}:seq", o);
            std::uint64_t last_token = 0;
            bool tokens_grow = true;
            const auto start = clock_type::now();
            for (int i = 0; clock_type::now() - start < 40s; ++i) {
                if (!killed && clock_type::now() - start > 500ms) {
                    before_kill = granted.size();
                    old_master.kill();
                    killed = clock_type::now();
                }
                // The promoted replica has no replica of its own (every WAIT answers 0) until
                // the killed master comes back as one.
                if (killed && !old_master.running() && clock_type::now() - *killed > 4s)
                    old_master.start();
                const auto name = "{rs}:" + std::to_string(i);
                ms_.push_back(std::make_unique<corolock::mutex>(cl, name, o));
                auto [ec, l] = co_await ms_.back()->async_acquire_for(3s, tuple_deferred);
                if (ec) {
                    ++failures[ec.message()];
                    continue;
                }
                granted.emplace_back(name, std::move(l));
                // One name acquired and released again and again: its tokens only grow.
                auto [sec, sl] = co_await seq.async_acquire_for(3s, tuple_deferred);
                if (!sec) {
                    tokens_grow = tokens_grow && sl.token().value() > last_token;
                    last_token = sl.token().value();
                    co_await sl.async_release(tuple_deferred);
                }
                if (killed && first_after == clock_type::time_point{})
                    first_after = clock_type::now();
                if (killed && granted.size() >= before_kill + 50)
                    break;
            }
            std::cout << "cluster lock: replica_sync 1: failed attempts:";
            for (auto& [what, n] : failures)
                std::cout << " " << n << " x " << what << ";";
            std::cout << "\n";
            BOOST_TEST_REQUIRE(killed.has_value());
            BOOST_TEST_REQUIRE(granted.size() >= before_kill + 50); // the cluster serves again
            auto& new_master = c.master_of(slot);
            BOOST_TEST_REQUIRE(&new_master != &old_master);
            std::size_t lost = 0;
            for (auto& [name, l] : granted)
                if (new_master.command({"EXISTS", name}) != ":1\r\n")
                    ++lost;
            std::cout << "cluster lock: replica_sync 1: " << before_kill
                      << " grants before SIGKILL of the master, " << granted.size() - before_kill
                      << " after (the first " << ms(first_after - *killed)
                      << " ms after it, the old master restarted 4 s after), lost grants: " << lost
                      << "\n";
            BOOST_TEST(before_kill > 0u);
            BOOST_TEST(lost == 0u);
            BOOST_TEST(tokens_grow, "a token of {rs}:seq repeated or went back");
            for (auto& [name, l] : granted)
                co_await l.async_release(tuple_deferred);
            cl.cancel();
        }(),
        120s, 1, corolock::test::drain_check::off);
}

// C6: a master joins (add-node) and takes a thousand slots, gives them back and leaves
// (del-node), while leases in those slots are held and renewed and a churn of acquires and
// releases runs on names in moving and staying slots. No lease is lost, the churn keeps going,
// and the client closes its connection to the node that left.
BOOST_AUTO_TEST_CASE(node_added_and_removed_while_running) {
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    auto& first = c.master_of(0); // the reshard moves its lowest 1000 slots
    asio::io_context ioc;
    corolock::test::log_capture log; // printed if a lease is lost: why, and what came before
    corolock::cluster cl(ioc.get_executor(), cluster_config_for(first),
                         log.make(corolock::logger::level::info));
    cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex_options o;
            o.lease = 900ms; // a renewal every 300 ms
            // Ten names in moving slots, ten in others.
            std::vector<std::string> moving, staying;
            for (int i = 0; moving.size() < 10 || staying.size() < 10; ++i) {
                auto n = "lock:node:" + std::to_string(i);
                auto& side = key_slot(n) < 1000 ? moving : staying;
                if (side.size() < 10)
                    side.push_back(std::move(n));
            }
            std::vector<std::unique_ptr<corolock::mutex>> ms_;
            std::vector<corolock::lease> held;
            for (const auto* side : {&moving, &staying})
                for (const auto& n : *side) {
                    ms_.push_back(std::make_unique<corolock::mutex>(cl, n, o));
                    auto [ec, l] = co_await ms_.back()->async_acquire(tuple_deferred);
                    BOOST_TEST_REQUIRE(!ec, ec.message());
                    held.push_back(std::move(l));
                }
            // The churn: acquire and release names of both kinds, one after the other.
            bool stop = false;
            std::size_t cycles = 0, failed = 0;
            clock_type::duration longest{};
            auto churn = [&]() -> awaitable<void> {
                std::vector<std::unique_ptr<corolock::mutex>> cm;
                for (int i = 0; i < 4; ++i)
                    cm.push_back(std::make_unique<corolock::mutex>(
                        cl, "{" + (i % 2 ? staying : moving)[i] + "}:churn", o));
                auto last = clock_type::now();
                for (std::size_t i = 0; !stop; ++i) {
                    auto [ec, l] =
                        co_await cm[i % cm.size()]->async_acquire_for(10s, tuple_deferred);
                    if (!ec)
                        std::tie(ec) = co_await l.async_release(tuple_deferred);
                    ec ? ++failed : ++cycles;
                    longest = std::max(longest, clock_type::now() - last);
                    last = clock_type::now();
                }
            };
            bool churn_done = false;
            asio::co_spawn(ioc, churn(), [&](std::exception_ptr) { churn_done = true; });

            auto& fresh = c.start_node();
            const auto t0 = clock_type::now();
            co_await off_thread([&] { c.add_master(fresh); });
            co_await off_thread([&] { c.reshard(first, fresh, 1000); });
            BOOST_TEST(fresh.command({"EXISTS", moving.front()}) == ":1\r\n"); // the key moved
            co_await sleep_for(1s);
            const auto cycles_joined = cycles;
            BOOST_TEST(cl.stats().nodes == 4u);
            co_await off_thread([&] { c.reshard(fresh, first, 1000); });
            co_await off_thread([&] { c.remove_node(fresh); });
            const auto t1 = clock_type::now();
            co_await sleep_for(2s); // a map refresh (every 1 s) sees the node gone
            for (auto& l : held)
                BOOST_TEST(l.valid());
            BOOST_TEST(corolock::get_lock_stats(cl).leases_lost == 0u);
            if (corolock::get_lock_stats(cl).leases_lost != 0) {
                std::lock_guard<std::mutex> g(log.m);
                for (const auto& line : log.lines)
                    std::cout << "  log: " << line << "\n";
            }
            BOOST_TEST(cl.stats().moved >= 1u);
            BOOST_TEST(cl.stats().nodes == 3u); // the connection to the node that left is closed
            BOOST_TEST(first.command({"EXISTS", moving.front()}) == ":1\r\n"); // moved back
            BOOST_TEST(cycles > cycles_joined); // the churn went on after the node joined
            stop = true;
            while (!churn_done)
                co_await sleep_for(10ms);
            std::cout << "cluster lock: add-node, 1000 slots there and back, del-node in "
                      << ms(t1 - t0) << " ms: " << held.size() << " leases kept, " << cycles
                      << " churn cycles (" << failed << " failed, longest gap " << ms(longest)
                      << " ms)\n";
            BOOST_TEST(failed == 0u);
            BOOST_TEST(cycles > 0u);
            for (auto& l : held)
                co_await l.async_release(tuple_deferred);
            cl.cancel();
        }(),
        120s, 1, corolock::test::drain_check::off);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_cluster_lock
