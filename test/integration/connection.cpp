// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/test_config.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_connection {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::connection_config;
using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::request;
using corolock::test::config_for;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;

namespace {

using corolock::test::tuple_deferred;

// Starts async_run and records how it ended.
struct runner {
    std::atomic<bool> done{false};
    error_code ec;
    void start(corolock::connection& conn) {
        conn.async_run([this](error_code e) {
            ec = e;
            done = true;
        });
    }
};

// Retries a PING until it succeeds (after a restart), up to `limit`.
awaitable<bool> wait_until_usable(corolock::connection& conn,
                                  std::chrono::steady_clock::duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    request ping;
    ping.push("PING");
    while (std::chrono::steady_clock::now() < deadline) {
        auto [ec, n] = co_await conn.async_exec(ping, corolock::ignore, tuple_deferred);
        if (!ec)
            co_return true;
        co_await sleep_for(20ms);
    }
    co_return false;
}

// `workers` coroutines at once, each SET/GET of its own key and INCR of its own counter
// (`rounds` times); returns how many replies were not the ones their request asked for.
awaitable<int> interleaved_requests(corolock::connection& conn, std::string tag, int workers = 20,
                                    int rounds = 5) {
    auto ex = co_await asio::this_coro::executor;
    std::atomic<int> wrong{0};
    auto worker = [&](int id) -> awaitable<void> {
        const std::string key = tag + ":k:" + std::to_string(id);
        const std::string counter = tag + ":c:" + std::to_string(id);
        for (int i = 1; i <= rounds; ++i) {
            const std::string value = tag + "-" + std::to_string(id * 100 + i);
            request req;
            req.push("SET", key, value);
            req.push("GET", key);
            req.push("INCR", counter);
            generic_response resp;
            auto [ec, n] = co_await conn.async_exec(req, resp, tuple_deferred);
            if (ec || resp.size() != 3 || resp[0].value != "OK" || resp[1].value != value ||
                resp[2].value != std::to_string(i))
                ++wrong;
        }
    };
    std::vector<decltype(asio::co_spawn(ex, worker(0), asio::deferred))> ops;
    for (int id = 0; id < workers; ++id)
        ops.push_back(asio::co_spawn(ex, worker(id), asio::deferred));
    co_await asio::experimental::make_parallel_group(std::move(ops))
        .async_wait(asio::experimental::wait_for_all(), asio::deferred);
    co_return wrong.load();
}

} // namespace

BOOST_AUTO_TEST_SUITE(connection)

BOOST_AUTO_TEST_CASE(set_get_round_trip_binary_safe) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            const std::string key("a\0b\r\nc", 6);
            std::string big(1024 * 1024, '\0');
            for (std::size_t i = 0; i < big.size(); ++i)
                big[i] = static_cast<char>(i * 7 + 3);
            request req;
            req.push("SET", key, big);
            req.push("GET", key);
            req.push("STRLEN", key);
            generic_response resp;
            co_await conn.async_exec(req, resp);
            BOOST_REQUIRE_EQUAL(resp.size(), 3u);
            BOOST_TEST(resp[0].value == "OK");
            BOOST_TEST((resp[1].value == big));
            BOOST_TEST(resp[2].value == "1048576");
            BOOST_TEST(conn.is_connected());
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(run.done);
    BOOST_TEST(run.ec == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(thousand_coroutines_on_four_threads_get_their_own_replies) {
    redis_process srv;
    asio::io_context ioc(4);
    // The health check's PING (every 200 ms) queues behind up to 100,000 commands.
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    std::atomic<int> mismatches{0}, failures{0};
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            auto worker = [&](int id) -> awaitable<void> {
                for (int i = 0; i < 50; ++i) {
                    const std::string key = "k:" + std::to_string(id) + ":" + std::to_string(i);
                    const std::string value = "v" + std::to_string(id * 1000 + i);
                    request req;
                    req.push("SET", key, value);
                    req.push("GET", key);
                    generic_response resp;
                    auto [ec, n] = co_await conn.async_exec(req, resp, tuple_deferred);
                    if (ec)
                        ++failures;
                    else if (resp.size() != 2 || resp[1].value != value)
                        ++mismatches;
                }
            };
            std::vector<decltype(asio::co_spawn(ioc, worker(0), asio::deferred))> ops;
            for (int id = 0; id < 1000; ++id)
                ops.push_back(asio::co_spawn(ioc, worker(id), asio::deferred));
            co_await asio::experimental::make_parallel_group(std::move(ops))
                .async_wait(asio::experimental::wait_for_all(), asio::deferred);
            conn.cancel();
        }(),
        120s, 4);
    BOOST_TEST(failures == 0);
    BOOST_TEST(mismatches == 0);
    const auto st = conn.stats();
    BOOST_TEST_MESSAGE("commands=" << st.commands << " writes=" << st.writes);
    BOOST_TEST(st.commands >= 100000u);
    BOOST_TEST(st.writes * 10 < st.commands); // pipelining: many commands per write
    BOOST_TEST(st.replies >= 100000u);
}

BOOST_AUTO_TEST_CASE(server_killed_and_restarted_mid_stream) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    std::atomic<int> ok{0}, failed{0};
    std::set<std::string> errors;
    bool stop = false;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            auto worker = [&]() -> awaitable<void> {
                request req;
                req.push("INCR", "counter");
                while (!stop) {
                    auto [ec, n] = co_await conn.async_exec(req, corolock::ignore, tuple_deferred);
                    if (ec) {
                        ++failed;
                        errors.insert(ec.message());
                        co_await sleep_for(5ms);
                    } else {
                        ++ok;
                    }
                }
            };
            for (int i = 0; i < 100; ++i)
                asio::co_spawn(ioc, worker(), asio::detached);
            co_await sleep_for(200ms);
            // Stop the server first so that requests are surely written and unanswered, then
            // crash it: those must fail, the rest must wait for the new server.
            srv.pause();
            co_await sleep_for(50ms);
            const int before = ok;
            srv.kill();
            BOOST_TEST_MESSAGE("killed after " << before << " INCRs");
            co_await sleep_for(300ms);
            BOOST_TEST(!conn.is_connected());
            srv.start();
            BOOST_TEST(co_await wait_until_usable(conn, 10s));
            const int after_restart = ok;
            co_await sleep_for(200ms);
            stop = true;
            co_await sleep_for(100ms);
            BOOST_TEST(before > 0);
            BOOST_TEST(ok > after_restart); // traffic flows again
            conn.cancel();
        }(),
        60s);
    BOOST_TEST(failed > 0);
    for (auto& e : errors)
        BOOST_TEST_MESSAGE("error seen: " << e);
    BOOST_TEST(conn.stats().connects >= 2u);
}

BOOST_AUTO_TEST_CASE(stalled_server_is_detected_by_health_check) {
    redis_process srv;
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.connect_timeout = 300ms;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s));
            srv.pause();
            request req;
            req.push("PING");
            const auto t0 = std::chrono::steady_clock::now();
            auto [ec, n] = co_await conn.async_exec(req, corolock::ignore, tuple_deferred);
            const auto waited = std::chrono::steady_clock::now() - t0;
            BOOST_TEST(ec == error::connection_lost);
            BOOST_TEST_MESSAGE(
                "stall noticed after "
                << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                << " ms (health interval 200 ms)");
            BOOST_TEST(!conn.is_connected());
            srv.resume();
            BOOST_TEST(co_await wait_until_usable(conn, 10s));
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(conn.stats().connects >= 2u);
}

// A PING queued behind half a million commands is late, but replies keep coming: the health
// check must not take a busy server for a stalled one (it did, and dropped the connection with
// every command in flight failing with an unknown outcome).
BOOST_AUTO_TEST_CASE(busy_server_is_not_taken_for_a_stalled_one) {
    redis_process srv;
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.health_check_interval = 50ms;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    runner run;
    int failures = 0;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s));
            request incrs;
            for (int i = 0; i < 100; ++i)
                incrs.push("INCR", "n");
            std::vector<decltype(conn.async_exec(incrs, corolock::ignore, asio::deferred))> ops;
            for (int i = 0; i < 5000; ++i)
                ops.push_back(conn.async_exec(incrs, corolock::ignore, asio::deferred));
            const auto t0 = std::chrono::steady_clock::now();
            auto [order, ecs, ns] =
                co_await asio::experimental::make_parallel_group(std::move(ops))
                    .async_wait(asio::experimental::wait_for_all(), asio::deferred);
            const auto took = std::chrono::steady_clock::now() - t0;
            failures = static_cast<int>(
                std::count_if(ecs.begin(), ecs.end(), [](error_code ec) { return !!ec; }));
            std::cout << "500,000 INCRs drained in "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms (health interval 50 ms)\n";
            request get;
            get.push("GET", "n");
            generic_response n;
            auto [ec, m] = co_await conn.async_exec(get, n, tuple_deferred);
            BOOST_TEST(!ec);
            BOOST_TEST(n.size() == 1u);
            if (!n.empty())
                BOOST_TEST(n.front().value == "500000");
            conn.cancel();
        }(),
        120s);
    BOOST_TEST(failures == 0);
    BOOST_TEST(conn.stats().connects == 1u);
}

BOOST_AUTO_TEST_CASE(script_survives_script_flush) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    const corolock::script echo("return {KEYS[1], ARGV[1]}");
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            const std::string_view keys[] = {"key"};
            const std::string_view args[] = {"arg"};
            for (int round = 0; round < 3; ++round) {
                generic_response resp;
                co_await conn.async_eval(echo, keys, args, resp);
                BOOST_REQUIRE_EQUAL(resp.size(), 3u);
                BOOST_TEST(resp[1].value == "key");
                BOOST_TEST(resp[2].value == "arg");
                BOOST_TEST(srv.command({"SCRIPT", "FLUSH"}) == "+OK\r\n");
            }
            BOOST_TEST(echo.sha1().size() == 40u);
            conn.cancel();
        }(),
        30s);
}

// A `deferred` async_eval is only a description: building it sends nothing (the request is
// built when the operation starts), and awaiting it runs the script once.
BOOST_AUTO_TEST_CASE(deferred_eval_sends_nothing_until_awaited) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    const corolock::script incr("return redis.call('INCR', KEYS[1])");
    const auto any_script_ran = [&] {
        const auto info = srv.command({"INFO", "commandstats"});
        return info.find("cmdstat_evalsha:") != std::string::npos ||
               info.find("cmdstat_eval:") != std::string::npos;
    };
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s));
            const std::string_view keys[] = {"deferred:runs"};
            generic_response resp;
            auto op = conn.async_eval(incr, keys, {}, resp);
            co_await sleep_for(200ms); // time enough for anything sent to arrive
            BOOST_TEST(srv.command({"GET", "deferred:runs"}) == "$-1\r\n");
            BOOST_TEST(!any_script_ran());
            BOOST_TEST(resp.empty());
            co_await std::move(op);
            BOOST_TEST(resp.at(0).value == "1");
            BOOST_TEST(srv.command({"GET", "deferred:runs"}) == "$1\r\n1\r\n");
            conn.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_CASE(pubsub_message_arrives_during_ten_thousand_commands) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            auto sub = conn.subscribe("news");
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s)); // SUBSCRIBE went first
            std::vector<generic_response> resps(10000);
            generic_response published;
            request incr;
            incr.push("INCR", "n");
            request publish;
            publish.push("PUBLISH", "news", "hello");
            std::vector<decltype(conn.async_exec(incr, resps[0], asio::deferred))> ops;
            for (std::size_t i = 0; i < resps.size(); ++i) {
                ops.push_back(conn.async_exec(incr, resps[i], asio::deferred));
                if (i == 5000)
                    ops.push_back(conn.async_exec(publish, published, asio::deferred));
            }
            auto group = asio::experimental::make_parallel_group(std::move(ops));
            corolock::message msg;
            auto recv = sub.async_receive(msg, asio::deferred);
            co_await group.async_wait(asio::experimental::wait_for_all(), asio::deferred);
            co_await std::move(recv);
            BOOST_TEST(msg.channel == "news");
            BOOST_TEST(msg.payload == "hello");
            std::set<std::string> seen;
            for (auto& r : resps)
                if (!r.empty())
                    seen.insert(r.front().value);
            BOOST_TEST(seen.size() == 10000u);     // every INCR got its own reply
            BOOST_TEST(conn.stats().pushes >= 2u); // subscribe confirmation + message
            conn.cancel();
        }(),
        60s);
}

BOOST_AUTO_TEST_CASE(subscription_is_renewed_after_reconnect) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            auto sub = conn.subscribe("events");
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s));
            srv.restart();
            BOOST_REQUIRE(co_await wait_until_usable(conn, 10s));
            BOOST_TEST(srv.command({"PUBLISH", "events", "after-restart"}) == ":1\r\n");
            corolock::message msg;
            co_await sub.async_receive(msg);
            BOOST_TEST(msg.payload == "after-restart");
            conn.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_CASE(select_database) {
    redis_process srv;
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.database = 3;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            request req;
            req.push("SET", "in-db-3", "yes");
            req.push("CLIENT", "INFO");
            generic_response resp;
            co_await conn.async_exec(req, resp);
            BOOST_REQUIRE_EQUAL(resp.size(), 2u);
            BOOST_TEST(resp[1].value.find(" db=3 ") != std::string::npos);
            BOOST_TEST(srv.command({"EXISTS", "in-db-3"}) == ":0\r\n"); // not in db 0
            conn.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_CASE(slow_subscriber_drops_oldest_and_never_blocks_replies) {
    redis_process srv;
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.push_buffer_size = 10;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            auto sub = conn.subscribe("firehose");
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s));
            // 100 messages nobody reads yet, interleaved with requests that must still answer.
            for (int i = 0; i < 100; ++i) {
                request req;
                req.push("PUBLISH", "firehose", std::to_string(i));
                req.push("INCR", "still-flowing");
                generic_response resp;
                co_await conn.async_exec(req, resp);
                BOOST_TEST(resp.at(1).value == std::to_string(i + 1));
            }
            BOOST_TEST(sub.dropped() == 90u);
            BOOST_TEST(conn.stats().pushes_dropped == 90u);
            // What is left is the newest ten, in order.
            for (int i = 90; i < 100; ++i) {
                corolock::message msg;
                co_await sub.async_receive(msg);
                BOOST_TEST(msg.payload == std::to_string(i));
            }
            conn.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_CASE(acl_user_and_password) {
    redis_process srv({"--user", "alice", "on", ">secret", "~*", "&*", "+@all"});
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.username = "alice";
    cfg.password = "secret";
    cfg.client_name = "acl-test";
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            request req;
            req.push("ACL", "WHOAMI");
            req.push("CLIENT", "GETNAME");
            generic_response resp;
            co_await conn.async_exec(req, resp);
            BOOST_REQUIRE_EQUAL(resp.size(), 2u);
            BOOST_TEST(resp[0].value == "alice");
            BOOST_TEST(resp[1].value == "acl-test");
            conn.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_CASE(wrong_password_fails_clearly_without_retry_storm) {
    redis_process srv({"--requirepass", "right"});
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.password = "wrong";
    cfg.reconnect_wait = 50ms;
    cfg.reconnect_wait_max = 2s;
    cfg.max_wait_for_connection = 500ms;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            request req;
            req.push("PING");
            auto [ec, n] = co_await conn.async_exec(req, corolock::ignore, tuple_deferred);
            BOOST_TEST(ec == error::auth_failed);
            co_await sleep_for(1500ms);
            conn.cancel();
        }(),
        30s);
    const auto info = srv.command({"INFO", "stats"});
    const auto pos = info.find("total_connections_received:");
    BOOST_REQUIRE(pos != std::string::npos);
    const int attempts = std::stoi(info.substr(pos + 27));
    BOOST_TEST_MESSAGE("connection attempts in 2 s: " << attempts);
    BOOST_TEST(attempts < 30);
    BOOST_TEST(conn.stats().connects == 0u);

    // Without reconnection, async_run itself reports the cause.
    asio::io_context ioc2;
    cfg.reconnect_wait = 0s;
    corolock::connection once(ioc2.get_executor(), cfg, quiet());
    error_code run_ec;
    once.async_run([&](error_code e) { run_ec = e; });
    ioc2.run_for(10s);
    BOOST_TEST(run_ec == error::auth_failed);
}

BOOST_AUTO_TEST_CASE(closed_port_fails_fast) {
    // A port nobody listens on: bind, note it, close.
    asio::io_context probe;
    asio::ip::tcp::acceptor a(probe, {asio::ip::make_address("127.0.0.1"), 0});
    const auto port = a.local_endpoint().port();
    a.close();

    asio::io_context ioc;
    connection_config cfg;
    cfg.port = std::to_string(port);
    cfg.reconnect_wait = 0s;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    error_code run_ec;
    const auto t0 = std::chrono::steady_clock::now();
    conn.async_run([&](error_code e) { run_ec = e; });
    ioc.run_for(10s);
    BOOST_TEST(run_ec == asio::error::connection_refused);
    BOOST_TEST(run_ec == corolock::condition::connection_failure);
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < 5s)); // no connect timeout involved

    // Requests sent to a stopped connection fail at once.
    request req;
    req.push("PING");
    error_code exec_ec;
    conn.async_exec(req, corolock::ignore, [&](error_code e, std::size_t) { exec_ec = e; });
    ioc.restart();
    ioc.run_for(5s);
    BOOST_TEST(exec_ec == error::not_connected);
}

BOOST_AUTO_TEST_CASE(unix_socket) {
    const std::string path = "/tmp/corolock-test-" + std::to_string(::getpid()) + ".sock";
    redis_process srv({"--unixsocket", path, "--unixsocketperm", "700"});
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.unix_socket = path;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            request req;
            req.push("CLIENT", "INFO");
            generic_response resp;
            co_await conn.async_exec(req, resp);
            BOOST_REQUIRE_EQUAL(resp.size(), 1u);
            BOOST_TEST(resp[0].value.find("laddr=" + path) != std::string::npos);
            conn.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_CASE(cancelling_a_thousand_random_execs_leaves_connection_usable) {
    redis_process srv;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s));
            std::mt19937 rng(42);
            constexpr int n = 2000;
            std::vector<asio::cancellation_signal> signals(n);
            std::vector<generic_response> resps(n);
            std::vector<request> reqs(n);
            std::atomic<int> completed{0}, aborted{0}, wrong{0};
            for (int i = 0; i < n; ++i) {
                reqs[i].push("SET", "c:" + std::to_string(i), std::to_string(i));
                reqs[i].push("GET", "c:" + std::to_string(i));
                conn.async_exec(reqs[i], resps[i],
                                asio::bind_cancellation_slot(
                                    signals[i].slot(), [&, i](error_code ec, std::size_t) {
                                        ++completed;
                                        if (ec == asio::error::operation_aborted)
                                            ++aborted;
                                        else if (ec || resps[i].size() != 2 ||
                                                 resps[i][1].value != std::to_string(i))
                                            ++wrong;
                                    }));
            }
            // Cancel 1000 at random moments: some still queued, some on the wire.
            std::vector<int> order(n);
            for (int i = 0; i < n; ++i)
                order[i] = i;
            std::shuffle(order.begin(), order.end(), rng);
            for (int k = 0; k < 1000; ++k) {
                signals[order[k]].emit(asio::cancellation_type::terminal);
                if (k % 100 == 0)
                    co_await sleep_for(std::chrono::microseconds(rng() % 2000));
            }
            while (completed < n)
                co_await sleep_for(5ms);
            BOOST_TEST(wrong == 0);
            BOOST_TEST(aborted > 0);
            BOOST_TEST_MESSAGE("aborted " << aborted << " of 1000 cancelled");
            // The stream is still in step: fresh requests get their own replies.
            for (int i = 0; i < 100; ++i) {
                request req;
                req.push("SET", "after", std::to_string(i));
                req.push("GET", "after");
                generic_response resp;
                co_await conn.async_exec(req, resp);
                BOOST_TEST(resp.at(1).value == std::to_string(i));
            }
            conn.cancel();
        }(),
        60s);
}

BOOST_AUTO_TEST_CASE(busy_handler_never_stalls_the_connection) {
    // A handler that hogs its thread must not run inside the connection's strand: replies to
    // other coroutines keep arriving on the second thread while it spins.
    redis_process srv;
    asio::io_context ioc(2);
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    runner run;
    std::atomic<bool> spinning{false}, stop_counting{false};
    std::atomic<int> completions{0}, during_spin{0}, failures{0};
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s));
            auto counter = [&]() -> awaitable<void> {
                request incr;
                incr.push("INCR", "busy:counter");
                while (!stop_counting) {
                    auto [ec, n] = co_await conn.async_exec(incr, corolock::ignore, tuple_deferred);
                    if (ec) {
                        ++failures;
                        co_return;
                    }
                    ++completions;
                    if (spinning)
                        ++during_spin;
                }
            };
            auto hog = [&]() -> awaitable<void> {
                while (completions < 10)
                    co_await sleep_for(1ms);
                request ping;
                ping.push("PING");
                co_await conn.async_exec(ping, corolock::ignore);
                // The continuation of an exec: spin for ~1 s without yielding.
                spinning = true;
                const auto end = std::chrono::steady_clock::now() + 1s;
                while (std::chrono::steady_clock::now() < end) {
                }
                spinning = false;
                stop_counting = true;
            };
            co_await asio::experimental::make_parallel_group(
                asio::co_spawn(ioc, counter(), asio::deferred),
                asio::co_spawn(ioc, hog(), asio::deferred))
                .async_wait(asio::experimental::wait_for_all(), asio::deferred);
            conn.cancel();
        }(),
        30s, 2);
    BOOST_TEST_MESSAGE("completions while a handler spun: " << during_spin << " of "
                                                            << completions);
    BOOST_TEST(failures == 0);
    BOOST_TEST(during_spin > 0);
}

BOOST_AUTO_TEST_CASE(refused_subscription_fails_clearly_and_never_shifts_replies) {
    // Redis 7 gives a new ACL user no channel rights (acl-pubsub-default resetchannels): its
    // SUBSCRIBE is answered -NOPERM, an error reply, not a push. `&ok:*` allows one family.
    redis_process srv({"--user", "app", "on", ">pw", "~*", "&ok:*", "+@all"});
    asio::io_context ioc;
    auto cfg = config_for(srv);
    cfg.username = "app";
    cfg.password = "pw";
    std::mutex log_mutex;
    std::vector<std::string> lines;
    corolock::logger log{corolock::logger::level::warning,
                         [&](corolock::logger::level, std::string_view line) {
                             std::lock_guard<std::mutex> g(log_mutex);
                             lines.emplace_back(line);
                         }};
    corolock::connection conn(ioc.get_executor(), cfg, log);
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            BOOST_REQUIRE(co_await wait_until_usable(conn, 5s));
            BOOST_TEST(co_await interleaved_requests(conn, "before") == 0);

            // The SUBSCRIBE goes out in the same write as the requests behind it.
            auto denied = conn.subscribe("secret");
            auto allowed = conn.subscribe("ok:1");
            BOOST_TEST(co_await interleaved_requests(conn, "with") == 0);
            corolock::message msg;
            auto [rec] = co_await denied.async_receive(msg, tuple_deferred);
            BOOST_TEST(rec == error::subscribe_refused);
            BOOST_TEST(error_code(rec) == corolock::condition::server_failure);
            // Final: a second receive fails at once, with no second SUBSCRIBE.
            auto [rec2] = co_await denied.async_receive(msg, tuple_deferred);
            BOOST_TEST(rec2 == error::subscribe_refused);

            // The permitted one works on the same connection.
            BOOST_TEST(srv.command({"PUBLISH", "ok:1", "hello"}) == ":1\r\n");
            auto [aec] = co_await allowed.async_receive(msg, tuple_deferred);
            BOOST_TEST(!aec);
            BOOST_TEST(msg.payload == "hello");

            // A SUBSCRIBE in a user's request: its slot holds the refusal; nothing shifts.
            request mixed;
            mixed.push("SET", "mixed", "1");
            mixed.push("SUBSCRIBE", "secret2");
            mixed.push("INCR", "mixed");
            generic_response mresp;
            auto [mec, mn] = co_await conn.async_exec(mixed, mresp, tuple_deferred);
            BOOST_TEST(!mec);
            BOOST_REQUIRE(mresp.size() == 3u);
            BOOST_TEST(mresp[0].value == "OK");
            BOOST_TEST(mresp[1].value.starts_with("NOPERM"));
            BOOST_TEST(mresp[2].value == "2");
            request sub_only;
            sub_only.push("SUBSCRIBE", "secret3");
            auto [iec, in] = co_await conn.async_exec(sub_only, corolock::ignore, tuple_deferred);
            BOOST_TEST(iec == error::subscribe_refused);
            BOOST_TEST(co_await interleaved_requests(conn, "after") == 0);

            // After a reconnect: the refused channel is not retried, the allowed one is.
            srv.restart();
            BOOST_REQUIRE(co_await wait_until_usable(conn, 10s));
            auto denied_again = conn.subscribe("secret4");
            BOOST_TEST(co_await interleaved_requests(conn, "reconnected") == 0);
            auto [rec3] = co_await denied_again.async_receive(msg, tuple_deferred);
            BOOST_TEST(rec3 == error::subscribe_refused);
            BOOST_TEST(srv.command({"PUBLISH", "ok:1", "again"}) == ":1\r\n");
            auto [aec2] = co_await allowed.async_receive(msg, tuple_deferred);
            BOOST_TEST(!aec2);
            BOOST_TEST(msg.payload == "again");
            BOOST_TEST(co_await interleaved_requests(conn, "end") == 0);
            conn.cancel();
        }(),
        60s);
    std::lock_guard<std::mutex> g(log_mutex);
    int refusals = 0;
    for (const auto& l : lines) {
        BOOST_TEST_MESSAGE("log: " << l);
        if (l.starts_with("subscription refused: SUBSCRIBE "))
            ++refusals;
    }
    // secret, then secret4 after the reconnect: once each, never retried.
    BOOST_TEST(refusals == 2);
    BOOST_TEST(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
                   return l == "subscription refused: SUBSCRIBE secret: NOPERM this user has no "
                               "permissions to access one of the channels used as arguments";
               }) == 1);
}

BOOST_AUTO_TEST_CASE(io_context_destroyed_with_requests_queued_frees_them) {
    // A coroutine that owns its connection and waits for a reply is a cycle: the frame holds the
    // connection, whose queue holds the request, whose handler holds the frame. The io_context
    // destroys only the handlers in its own queues; stopping and destroying it while the request
    // waits (here: for a connection to a port nobody listens on) must still free all of it.
    asio::io_context probe;
    asio::ip::tcp::acceptor a(probe, {asio::ip::make_address("127.0.0.1"), 0});
    const auto port = a.local_endpoint().port();
    a.close();

    std::weak_ptr<int> frame_alive, handler_alive, connection_alive;
    bool started = false, completed = false;
    {
        asio::io_context ioc;
        auto frame_token = std::make_shared<int>(0);
        frame_alive = frame_token;
        asio::co_spawn(
            ioc,
            [&, port, frame_token]() -> awaitable<void> {
                connection_config cfg;
                cfg.port = std::to_string(port);
                cfg.reconnect_wait = 10s;
                cfg.max_wait_for_connection = 0s;
                corolock::connection conn(co_await asio::this_coro::executor, cfg, quiet());
                conn.async_run(asio::detached);
                request ping;
                ping.push("PING");
                started = true;
                co_await conn.async_exec(ping, corolock::ignore, tuple_deferred);
                completed = true;
            },
            asio::detached);
        auto handler_token = std::make_shared<int>(0);
        handler_alive = handler_token;
        // A second one with a plain callback that owns the connection through a shared_ptr.
        connection_config cfg;
        cfg.port = std::to_string(port);
        cfg.reconnect_wait = 10s;
        cfg.max_wait_for_connection = 0s;
        // Its logger owns a token: the connection itself must be freed too.
        auto connection_token = std::make_shared<int>(0);
        connection_alive = connection_token;
        auto conn = std::make_shared<corolock::connection>(
            ioc.get_executor(), cfg,
            corolock::logger{corolock::logger::level::off,
                             [connection_token](corolock::logger::level, std::string_view) {}});
        connection_token.reset();
        conn->async_run(asio::detached);
        static const request ping = [] {
            request r;
            r.push("PING");
            return r;
        }();
        conn->async_exec(ping, corolock::ignore, [conn, handler_token](error_code, std::size_t) {});
        conn.reset();
        ioc.run_for(300ms);
        ioc.stop();
    }
    BOOST_TEST(started);
    BOOST_TEST(!completed);
    BOOST_TEST(frame_alive.expired());
    BOOST_TEST(handler_alive.expired());
    BOOST_TEST(connection_alive.expired());
}

// issue 21: `connection conn(ioc)` and a URL carry user, percent-encoded password, database and
// socket to a real server; a refused URL never reaches one.
BOOST_AUTO_TEST_CASE(url_and_io_context_constructor) {
    const std::string sock = "/tmp/corolock-url-" + std::to_string(::getpid()) + ".sock";
    redis_process srv({"--user", "bob", "on", ">p@ss:w", "~*", "&*", "+@all", "--unixsocket", sock,
                       "--unixsocketperm", "700"});
    asio::io_context ioc;
    auto tcp = connection_config::from_url(
        "redis://bob:p%40ss%3Aw@127.0.0.1:" + std::to_string(srv.port()) + "/2", config_for(srv));
    auto local =
        connection_config::from_url("unix://bob:p%40ss%3Aw@" + sock + "?db=4", config_for(srv));
    corolock::connection by_url(ioc, tcp, quiet());
    corolock::connection by_socket(ioc, local, quiet());
    BOOST_TEST((by_url.get_executor() == asio::any_io_executor(ioc.get_executor())));
    runner run_tcp, run_unix;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run_tcp.start(by_url);
            run_unix.start(by_socket);
            corolock::connection* const both[] = {&by_url, &by_socket};
            for (auto* c : both) {
                request req;
                req.push("ACL", "WHOAMI");
                req.push("CLIENT", "INFO");
                generic_response resp;
                co_await c->async_exec(req, resp);
                BOOST_REQUIRE_EQUAL(resp.size(), 2u);
                BOOST_TEST(resp[0].value == "bob");
                const bool over_socket = c == &by_socket;
                BOOST_TEST(resp[1].value.find(over_socket ? " db=4 " : " db=2 ") !=
                           std::string::npos);
                BOOST_TEST((resp[1].value.find("laddr=" + sock) != std::string::npos) ==
                           over_socket);
            }
            by_url.cancel();
            by_socket.cancel();
        }(),
        30s);
    // Refused before any connection exists: the reason names the part.
    BOOST_CHECK_EXCEPTION(
        connection_config::from_url("redis://127.0.0.1:" + std::to_string(srv.port()) + "/db2"),
        boost::system::system_error, [](const boost::system::system_error& e) {
            return e.code() == error::invalid_url &&
                   std::string(e.what()).find("'/db2'") != std::string::npos;
        });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_connection
