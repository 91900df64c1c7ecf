// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// corolock::cluster against a real 6-node Redis Cluster (3 masters, 3 replicas) started by the
// fixture, and against a fake node that always answers MOVED to itself (the redirect budget).
#include "common/coro_test.hpp"
#include "common/redis_cluster.hpp"
#include "common/test_config.hpp"
#include "core/access.hpp"
#include "core/slot_table.hpp"
#include "io/connection_impl.hpp"
#include <corolock/cluster.hpp>
#include <corolock/connection.hpp>
#include <corolock/resp3/parser.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_cluster {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::request;
using corolock::detail::key_slot;
using corolock::test::quiet;
using corolock::test::redis_cluster;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;

namespace {

// Requests wait for a node's connection 500 ms at most: a dead node fails them quickly.
corolock::cluster_config fast_fail_config(const redis_process& seed) {
    auto cfg = corolock::test::cluster_config_for(seed);
    cfg.node.max_wait_for_connection = 500ms;
    return cfg;
}

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

// A key whose slot is below `limit` (redis-cli --cluster reshard moves a master's lowest slots).
std::string key_below(std::uint16_t limit) {
    for (int i = 0;; ++i) {
        auto k = "k" + std::to_string(i);
        if (key_slot(k) < limit)
            return k;
    }
}

awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(nothrow);
}

std::string text_of(const generic_response& r) {
    return r.empty() ? "" : r.front().value;
}

struct cluster_fixture {
    cluster_fixture() {
        const auto t0 = std::chrono::steady_clock::now();
        c = std::make_unique<redis_cluster>();
        std::cout << "cluster: 6 nodes ready in "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - t0)
                         .count()
                  << " ms\n";
    }
    std::unique_ptr<redis_cluster> c;
};

} // namespace

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_AUTO_TEST_CASE(routes_by_slot_and_follows_moved_after_reshard) {
    if (!redis_cluster::available())
        return;
    cluster_fixture f;
    asio::io_context ioc;
    corolock::cluster cl(ioc.get_executor(), fast_fail_config(*f.c->nodes()[0]), quiet());
    const auto key = key_below(50); // moved by the reshard below
    auto& owner = f.c->master_of(key_slot(key));
    // The last slot is served by another master (3 masters: 0-5460, 5461-10922, 10923-16383).
    redis_process* other = &f.c->master_of(16383);
    BOOST_REQUIRE(other != &owner);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            cl.async_run(asio::detached);
            // Keys of all three masters, by routing key.
            for (std::string k : {"{a}", "{b}", "{c}", "{d}", "{e}", key.c_str()}) {
                request set;
                set.push("SET", k, "v-" + k);
                generic_response r;
                auto [ec, n] = co_await cl.async_exec(k, set, r, nothrow);
                BOOST_TEST(!ec);
                BOOST_TEST(text_of(r) == "OK");
            }
            BOOST_TEST(cl.is_connected());
            BOOST_TEST(cl.stats().nodes >= 3u);
            // A script routed by its keys; keys of two slots fail before anything is sent.
            corolock::script get("return redis.call('GET', KEYS[1])");
            std::vector<std::string_view> keys{"{b}"};
            generic_response r;
            auto [eec] = co_await cl.async_eval(get, keys, {}, r, nothrow);
            BOOST_TEST(!eec);
            BOOST_TEST(text_of(r) == "v-{b}");
            std::vector<std::string_view> cross{"{a}", "{b}"};
            generic_response rc;
            auto [cec] = co_await cl.async_eval(get, cross, {}, rc, nothrow);
            BOOST_TEST(cec == error::cross_slot);
            BOOST_TEST(rc.empty());

            // Move the key's slot behind the client's back: the next request gets MOVED and
            // follows.
            const auto moved_before = cl.stats().moved;
            const auto t0 = std::chrono::steady_clock::now();
            f.c->reshard(owner, *other, 50);
            std::cout << "cluster: reshard of 50 slots took "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - t0)
                             .count()
                      << " ms\n";
            request get_req;
            get_req.push("GET", key);
            generic_response g;
            auto [gec, gn] = co_await cl.async_exec(key, get_req, g, nothrow);
            BOOST_TEST(!gec);
            BOOST_TEST(text_of(g) == "v-" + key);
            BOOST_TEST(cl.stats().moved > moved_before);
            // With `ignore` too (the MOVED text is read from the private attempt buffer).
            auto [iec, in] = co_await cl.async_exec(key, get_req, corolock::ignore, nothrow);
            BOOST_TEST(!iec);

            // A hand-made migration: a key missing on the source is answered ASK, and the client
            // sends ASKING + the command as one request to the target; the map is not changed.
            const std::string ask_key = "{ask}";
            const auto slot = std::to_string(key_slot(ask_key));
            auto& src = f.c->master_of(key_slot(ask_key));
            auto& dst = &src == other ? owner : *other;
            BOOST_TEST(dst.command({"CLUSTER", "SETSLOT", slot, "IMPORTING", f.c->id(src)}) ==
                       "+OK\r\n");
            BOOST_TEST(src.command({"CLUSTER", "SETSLOT", slot, "MIGRATING", f.c->id(dst)}) ==
                       "+OK\r\n");
            const auto asks_before = cl.stats().asks;
            request set_ask;
            set_ask.push("SET", ask_key, "on-target");
            generic_response ar;
            auto [aec, an] = co_await cl.async_exec(ask_key, set_ask, ar, nothrow);
            BOOST_TEST(!aec);
            BOOST_TEST(text_of(ar) == "OK");
            BOOST_TEST(cl.stats().asks > asks_before);
            // The key went to the target: the source, not having it, answers ASK itself.
            BOOST_TEST(src.command({"EXISTS", ask_key}).starts_with("-ASK"));
            cl.cancel();
        }(),
        60s);
}

BOOST_AUTO_TEST_CASE(a_killed_master_fails_over_and_requests_reach_the_new_one) {
    if (!redis_cluster::available())
        return;
    cluster_fixture f;
    asio::io_context ioc;
    corolock::cluster cl(ioc.get_executor(), fast_fail_config(*f.c->nodes()[0]), quiet());
    const std::string key = "{failover}";
    auto& owner = f.c->master_of(key_slot(key));
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            cl.async_run(asio::detached);
            request set;
            set.push("SET", key, "1");
            auto [ec, n] = co_await cl.async_exec(key, set, corolock::ignore, nothrow);
            BOOST_TEST(!ec);
            owner.kill();
            const auto t0 = std::chrono::steady_clock::now();
            // Until the replica takes over, requests fail (not_connected, cluster_down, or
            // too_many_redirects); never a hang, never a wrong answer.
            error_code last;
            int attempts = 0;
            for (; std::chrono::steady_clock::now() - t0 < 15s; ++attempts) {
                request incr;
                incr.push("INCR", key);
                generic_response r;
                auto [iec, in] = co_await cl.async_exec(key, incr, r, nothrow);
                last = iec;
                std::cout << "  attempt " << attempts << ": " << iec.message() << " "
                          << (r.empty() ? "" : r.front().value) << "\n";
                if (!iec && !r.empty() && r.front().data_type == corolock::resp3::type::number)
                    break;
                co_await sleep_for(100ms);
            }
            BOOST_TEST(!last);
            std::cout << "cluster: first request served after the master's SIGKILL in "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - t0)
                             .count()
                      << " ms (" << attempts << " failed attempts)\n";
            cl.cancel();
        }(),
        60s);
}

// A map refresh asks the masters in a random order: a master whose connection is down must be
// asked last, or every refresh that picks it first waits refresh_timeout, and so do the requests
// waiting for that refresh (in a node added and removed while running, a lease renewal waited
// 520 ms and the lease was lost).
BOOST_AUTO_TEST_CASE(map_refresh_asks_a_dead_master_last) {
    if (!redis_cluster::available())
        return;
    cluster_fixture f;
    asio::io_context ioc;
    corolock::test::log_capture log;
    auto& seed = *f.c->nodes()[0];
    auto cfg = corolock::test::cluster_config_for(seed);
    cfg.refresh_interval = 20ms;
    cfg.refresh_timeout = 300ms;
    corolock::cluster cl(ioc.get_executor(), cfg, log.make(corolock::logger::level::info));
    // One key per master, so that the client has a connection to each.
    std::vector<std::string> keys;
    std::vector<std::uint16_t> ports;
    for (int i = 0; keys.size() < 3; ++i) {
        auto k = "k" + std::to_string(i);
        const auto port = f.c->master_of(key_slot(k)).port();
        if (std::find(ports.begin(), ports.end(), port) == ports.end()) {
            keys.push_back(k);
            ports.push_back(port);
        }
    }
    redis_process* victim = nullptr;
    for (const auto& k : keys)
        if (auto& m = f.c->master_of(key_slot(k)); m.port() != seed.port())
            victim = &m;
    BOOST_REQUIRE(victim);
    const std::string dead = "no map from 127.0.0.1:" + std::to_string(victim->port());
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            cl.async_run(asio::detached);
            for (const auto& k : keys) {
                request set;
                set.push("SET", k, "1");
                auto [ec, n] = co_await cl.async_exec(k, set, corolock::ignore, nothrow);
                BOOST_TEST_REQUIRE(!ec, ec.message());
            }
            BOOST_TEST(cl.stats().nodes == 3u);
            victim->kill();
            BOOST_TEST_REQUIRE(co_await corolock::test::eventually(
                [&] { return log.contains("connection lost"); }, 5s));
            // Until the cluster marks it failed (about 1 s), the victim is still a master in
            // the map: about 50 refreshes, a third of which drew it first.
            const auto refreshes = cl.stats().refreshes;
            co_await sleep_for(1s);
            const auto asked_dead = log.count(dead);
            std::cout << "cluster: " << cl.stats().refreshes - refreshes
                      << " refreshes in the second after a master's SIGKILL, " << asked_dead
                      << " asked it\n";
            BOOST_TEST(asked_dead == 0u);
            BOOST_TEST(cl.stats().refreshes - refreshes >= 10u);
            cl.cancel();
        }(),
        60s);
}

namespace {

// A node that claims every slot and answers every other command with MOVED to itself.
awaitable<void> self_moving_node(asio::ip::tcp::acceptor& acceptor, std::atomic<int>& routed) {
    const auto port = acceptor.local_endpoint().port();
    for (;;) {
        auto [aec, sock] = co_await acceptor.async_accept(nothrow);
        if (aec)
            co_return;
        asio::co_spawn(
            acceptor.get_executor(),
            [](asio::ip::tcp::socket sock, std::uint16_t port,
               std::atomic<int>& routed) -> awaitable<void> {
                std::string in;
                corolock::resp3::parser p;
                std::string name;
                char buf[4096];
                for (;;) {
                    auto [ec, n] = co_await sock.async_read_some(asio::buffer(buf), nothrow);
                    if (ec)
                        co_return;
                    in.append(buf, n);
                    std::string out;
                    for (;;) {
                        error_code pec;
                        auto node = p.consume(in, pec);
                        if (pec)
                            co_return;
                        if (!node)
                            break;
                        if (node->depth == 1 && name.empty())
                            name = std::string(node->value);
                        if (!p.done())
                            continue;
                        in.erase(0, p.consumed());
                        p.reset();
                        if (name == "HELLO") {
                            out += "%1\r\n+server\r\n+fake\r\n";
                        } else if (name == "PING") {
                            out += "+PONG\r\n";
                        } else if (name == "CLUSTER") {
                            const auto ps = std::to_string(port);
                            out += "*1\r\n%2\r\n+slots\r\n*2\r\n:0\r\n:16383\r\n+nodes\r\n*1\r\n"
                                   "%5\r\n+id\r\n+fake\r\n+port\r\n:" +
                                   ps +
                                   "\r\n+ip\r\n+127.0.0.1\r\n+role\r\n+master\r\n+health\r\n"
                                   "+online\r\n";
                        } else {
                            ++routed;
                            out += "-MOVED 1 127.0.0.1:" + std::to_string(port) + "\r\n";
                        }
                        name.clear();
                    }
                    if (!out.empty()) {
                        auto [wec, wn] =
                            co_await asio::async_write(sock, asio::buffer(out), nothrow);
                        if (wec)
                            co_return;
                    }
                }
            }(std::move(sock), port, routed),
            asio::detached);
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(io_context_destroyed_with_a_routed_request_frees_the_cluster) {
    // A coroutine that owns its cluster, with a request routed to a node and blocked there
    // (BLPOP), when the io_context is destroyed: the routing coroutine holds the cluster, the
    // node's queue holds the routing coroutine. All of it must be freed: the frame, and the
    // cluster and its node connections (their logger, a copy of the cluster's, owns a token).
    if (!redis_cluster::available())
        return;
    cluster_fixture f;
    std::weak_ptr<int> frame_alive, cluster_alive;
    bool sent = false, answered = false;
    {
        asio::io_context ioc;
        auto frame_token = std::make_shared<int>(0);
        auto cluster_token = std::make_shared<int>(0);
        frame_alive = frame_token;
        cluster_alive = cluster_token;
        auto cfg = fast_fail_config(*f.c->nodes()[0]);
        cfg.node.health_check_interval = 0s; // its PING would queue behind the BLPOP
        asio::co_spawn(
            ioc,
            [&, frame_token, cfg,
             log = corolock::logger{corolock::logger::level::off,
                                    [cluster_token](corolock::logger::level, std::string_view) {
                                    }}]() -> awaitable<void> {
                corolock::cluster cl(co_await asio::this_coro::executor, cfg, log);
                cl.async_run(asio::detached);
                request blpop;
                blpop.push("BLPOP", "frees:list", "30");
                sent = true;
                co_await cl.async_exec("frees:list", blpop, corolock::ignore, nothrow);
                answered = true;
            },
            asio::detached);
        cluster_token.reset();
        // Run until the request is on the node, blocked there (bootstrap first: up to 20 s).
        auto& owner = f.c->master_of(key_slot("frees:list"));
        bool blocked = false;
        for (int i = 0; i < 200 && !blocked; ++i) {
            ioc.run_for(100ms);
            blocked =
                owner.command({"INFO", "clients"}).find("blocked_clients:1") != std::string::npos;
        }
        ioc.stop();
        BOOST_TEST(blocked);
    }
    BOOST_TEST(sent);
    BOOST_TEST(!answered);
    BOOST_TEST(frame_alive.expired());
    BOOST_TEST(cluster_alive.expired());
}

BOOST_AUTO_TEST_CASE(redirect_budget_against_a_node_that_moves_to_itself) {
    asio::io_context ioc;
    asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
    std::atomic<int> routed{0};
    asio::co_spawn(ioc, self_moving_node(acceptor, routed), asio::detached);
    corolock::cluster_config cfg;
    cfg.seeds.push_back({"127.0.0.1", std::to_string(acceptor.local_endpoint().port())});
    cfg.max_redirects = 5;
    corolock::cluster cl(ioc.get_executor(), cfg, quiet());
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            cl.async_run(asio::detached);
            request get;
            get.push("GET", "x");
            generic_response r;
            auto [ec, n] = co_await cl.async_exec("x", get, r, nothrow);
            BOOST_TEST(ec == error::too_many_redirects);
            BOOST_TEST(routed.load() == 6); // the first send and 5 re-sends, then no more
            BOOST_TEST(cl.stats().moved == 5u);
            cl.cancel();
            acceptor.close();
        }(),
        30s, 1, corolock::test::drain_check::off);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cluster_pubsub)

// Sharded pub/sub on node connections (what the cluster makes): SSUBSCRIBE at the channel's
// master receives SPUBLISH; at a node that does not own the slot it is refused with -MOVED, and
// the PING barrier keeps the stream in step (the next request gets its own reply).
BOOST_AUTO_TEST_CASE(sharded_subscribe_at_owner_and_at_a_stale_node) {
    if (!redis_cluster::available())
        return;
    cluster_fixture f;
    asio::io_context ioc;
    const std::string channel = "{pubsub}:released";
    auto& owner = f.c->master_of(key_slot(channel));
    auto& stale = f.c->master_of(key_slot(channel) < 8000 ? 16383 : 0);
    BOOST_REQUIRE(&stale != &owner);
    auto node_config = [](redis_process& p) {
        corolock::connection_config cfg = corolock::test::config_for(p);
        cfg.health_check_interval = 0s;
        return cfg;
    };
    corolock::connection at_owner(ioc.get_executor(), node_config(owner), quiet());
    corolock::connection at_stale(ioc.get_executor(), node_config(stale), quiet());
    corolock::detail::access::impl(at_owner).use_sharded_pubsub();
    corolock::detail::access::impl(at_stale).use_sharded_pubsub();
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            at_owner.async_run(asio::detached);
            at_stale.async_run(asio::detached);
            auto good = at_owner.subscribe(channel);
            auto bad = at_stale.subscribe(channel);
            request ping;
            ping.push("PING", "in-step");
            generic_response r1, r2;
            auto [e1, n1] = co_await at_owner.async_exec(ping, r1, nothrow);
            auto [e2, n2] = co_await at_stale.async_exec(ping, r2, nothrow);
            BOOST_TEST(!e1);
            BOOST_TEST(!e2);
            BOOST_TEST(text_of(r1) == "in-step");
            BOOST_TEST(text_of(r2) == "in-step"); // after the refused SSUBSCRIBE: in step
            BOOST_TEST(at_stale.is_connected());  // not dropped with unexpected_reply
            BOOST_TEST(owner.command({"SPUBLISH", channel, "hello"}) == ":1\r\n");
            corolock::message m;
            auto [rec] = co_await good.async_receive(m, nothrow);
            BOOST_TEST(!rec);
            BOOST_TEST(m.channel == channel);
            BOOST_TEST(m.payload == "hello");
            corolock::message none;
            auto [bec] = co_await bad.async_receive(none, nothrow);
            BOOST_TEST(bec == error::subscribe_refused);
            at_owner.cancel();
            at_stale.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_cluster
