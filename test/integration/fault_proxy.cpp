// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The fault proxy itself, against a real redis-server: each fault does what the fault suite
// relies on.
#include "common/fault_proxy.hpp"

#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/test_config.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_fault_proxy {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::request;
using corolock::test::direction;
using proxy_type = corolock::test::fault_proxy;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace {

long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

corolock::connection_config through(const redis_process& srv, const proxy_type& proxy) {
    auto cfg = corolock::test::config_for(srv);
    cfg.port = std::to_string(proxy.port());
    return cfg;
}

// An exec started now whose end is recorded, so a test can look at it while it is pending.
struct pending_exec {
    request req;
    generic_response resp;
    bool done = false;
    error_code ec;
    clock_type::time_point started = clock_type::now(), finished{};

    void start(corolock::connection& conn) {
        conn.async_exec(req, resp, [this](error_code e, std::size_t) {
            ec = e;
            done = true;
            finished = clock_type::now();
        });
    }
};

awaitable<clock_type::duration> ping_time(corolock::connection& conn) {
    request ping;
    ping.push("PING");
    const auto t0 = clock_type::now();
    co_await conn.async_exec(ping, corolock::ignore);
    co_return clock_type::now() - t0;
}

awaitable<void> wait_for(const bool& flag, clock_type::duration limit) {
    const auto until = clock_type::now() + limit;
    while (!flag && clock_type::now() < until)
        co_await sleep_for(2ms);
}

struct fixture {
    redis_process srv;
    proxy_type proxy{srv.port()};
    asio::io_context ioc;

    void run(corolock::connection& conn, std::function<awaitable<void>()> body) {
        run_coroutine_test(
            ioc,
            [&]() -> awaitable<void> {
                conn.async_run(asio::detached);
                co_await body();
                conn.cancel();
            }(),
            30s);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(fault_proxy)

BOOST_FIXTURE_TEST_CASE(forwards_and_counts, fixture) {
    corolock::connection conn(ioc.get_executor(), through(srv, proxy), corolock::test::quiet());
    run(conn, [&]() -> awaitable<void> {
        request req;
        req.push("SET", "proxied", "value");
        req.push("GET", "proxied");
        generic_response resp;
        co_await conn.async_exec(req, resp);
        BOOST_TEST(resp.at(1).value == "value");
        BOOST_TEST(srv.command({"GET", "proxied"}) == "$5\r\nvalue\r\n");
        const auto st = proxy.stats();
        BOOST_TEST(st.accepted == 1u);
        BOOST_TEST(st.open == 1u);
        BOOST_TEST(st.bytes_read[0] == st.bytes_written[0]);
        BOOST_TEST(st.bytes_read[0] > 0u);
        BOOST_TEST(st.bytes_written[1] > 0u);
        BOOST_TEST(st.bytes_held[0] + st.bytes_held[1] == 0u);
    });
}

BOOST_FIXTURE_TEST_CASE(delay_makes_replies_late_and_keeps_order, fixture) {
    auto cfg = through(srv, proxy);
    cfg.health_check_interval = 1s; // a 250 ms round trip is slow, not dead
    corolock::connection conn(ioc.get_executor(), cfg, corolock::test::quiet());
    run(conn, [&]() -> awaitable<void> {
        const auto base = co_await ping_time(conn);
        proxy.delay(direction::server_to_client, 150ms);
        const auto one_way = co_await ping_time(conn);
        proxy.delay(direction::client_to_server, 100ms);
        const auto both = co_await ping_time(conn);
        BOOST_TEST_MESSAGE("PING " << ms(base) << " ms; reply delayed 150 ms: " << ms(one_way)
                                   << " ms; plus request delayed 100 ms: " << ms(both) << " ms");
        BOOST_TEST(ms(one_way) >= 150);
        BOOST_TEST(ms(one_way) < 150 + 150);
        BOOST_TEST(ms(both) >= 250);
        BOOST_TEST(ms(both) < 250 + 150);

        // Jitter never reorders bytes: 300 pipelined INCRs each see their own number. (The
        // health check's PINGs share the stream, so the replies would shift if bytes moved.)
        proxy.delay(direction::client_to_server, 3ms, 3ms);
        proxy.delay(direction::server_to_client, 3ms, 3ms);
        constexpr int n = 300;
        std::vector<std::unique_ptr<pending_exec>> ops;
        for (int i = 0; i < n; ++i) {
            ops.push_back(std::make_unique<pending_exec>());
            ops.back()->req.push("INCR", "ordered");
            ops.back()->start(conn);
            if (i % 10 == 0)
                co_await sleep_for(1ms); // spread over many writes and chunks
        }
        for (auto& op : ops)
            co_await wait_for(op->done, 10s);
        int in_order = 0;
        for (int i = 0; i < n; ++i)
            if (!ops[i]->ec && ops[i]->resp.at(0).value == std::to_string(i + 1))
                ++in_order;
        BOOST_TEST(in_order == n);
        proxy.heal();
        const auto healed = co_await ping_time(conn);
        BOOST_TEST(ms(healed) < 100);
    });
}

BOOST_FIXTURE_TEST_CASE(blackhole_holds_bytes_until_heal, fixture) {
    auto cfg = through(srv, proxy);
    cfg.health_check_interval = 0s; // keep the connection through the partition
    corolock::connection conn(ioc.get_executor(), cfg, corolock::test::quiet());
    run(conn, [&]() -> awaitable<void> {
        co_await ping_time(conn);
        proxy.blackhole();
        pending_exec ping;
        ping.req.push("PING", "held");
        ping.start(conn);
        co_await sleep_for(600ms);
        BOOST_TEST(!ping.done);
        BOOST_TEST(proxy.stats().bytes_held[0] > 0u);
        BOOST_TEST(conn.is_connected()); // the sockets stay open
        const auto healed_at = clock_type::now();
        proxy.heal();
        co_await wait_for(ping.done, 2s);
        BOOST_REQUIRE(ping.done);
        BOOST_TEST(!ping.ec);
        BOOST_TEST(ping.resp.at(0).value == "held");
        BOOST_TEST_MESSAGE("answered " << ms(ping.finished - healed_at) << " ms after heal");
        BOOST_TEST(ms(ping.finished - healed_at) < 200);
        BOOST_TEST(proxy.stats().accepted == 1u); // the same connection all along
    });
}

BOOST_FIXTURE_TEST_CASE(half_open_runs_requests_but_withholds_replies, fixture) {
    auto cfg = through(srv, proxy);
    cfg.health_check_interval = 0s;
    corolock::connection conn(ioc.get_executor(), cfg, corolock::test::quiet());
    run(conn, [&]() -> awaitable<void> {
        co_await ping_time(conn);
        proxy.half_open();
        pending_exec set;
        set.req.push("SET", "half", "open");
        set.start(conn);
        bool applied = false;
        for (int i = 0; i < 200 && !applied; ++i) {
            applied = srv.command({"GET", "half"}) == "$4\r\nopen\r\n";
            if (!applied)
                co_await sleep_for(5ms);
        }
        BOOST_TEST(applied); // the request reached the server...
        co_await sleep_for(200ms);
        BOOST_TEST(!set.done); // ...its reply did not come back
        BOOST_TEST(proxy.stats().bytes_held[1] > 0u);
        proxy.heal();
        co_await wait_for(set.done, 2s);
        BOOST_TEST(set.done);
        BOOST_TEST(!set.ec);
    });
}

BOOST_FIXTURE_TEST_CASE(reset_all_fails_in_flight_requests_and_reconnects, fixture) {
    corolock::connection conn(ioc.get_executor(), through(srv, proxy), corolock::test::quiet());
    run(conn, [&]() -> awaitable<void> {
        co_await ping_time(conn);
        const auto connects = conn.stats().connects;
        proxy.delay(direction::server_to_client, 5s); // the reply stays in the proxy
        pending_exec ping;
        ping.req.push("PING");
        ping.start(conn);
        co_await sleep_for(50ms);
        const auto reset_at = clock_type::now();
        proxy.reset_all();
        co_await wait_for(ping.done, 2s);
        BOOST_REQUIRE(ping.done);
        BOOST_TEST(ping.ec == error::connection_lost);
        BOOST_TEST_MESSAGE("in-flight request failed " << ms(ping.finished - reset_at)
                                                       << " ms after reset_all");
        BOOST_TEST(ms(ping.finished - reset_at) < 100);
        BOOST_TEST(proxy.stats().reset == 1u);
        proxy.heal();
        const auto t = co_await ping_time(conn); // waits for the reconnection
        BOOST_TEST(ms(t) < 1000);
        BOOST_TEST(conn.stats().connects == connects + 1);
        BOOST_TEST(proxy.stats().accepted == 2u);
    });
}

BOOST_FIXTURE_TEST_CASE(refuse_new_blocks_reconnection_until_lifted, fixture) {
    corolock::connection conn(ioc.get_executor(), through(srv, proxy), corolock::test::quiet());
    run(conn, [&]() -> awaitable<void> {
        co_await ping_time(conn);
        const auto connects = conn.stats().connects;
        proxy.refuse_new(true);
        proxy.reset_all();
        co_await sleep_for(20ms);
        pending_exec ping;
        ping.req.push("PING");
        ping.start(conn);
        co_await sleep_for(700ms);
        BOOST_TEST(!ping.done); // waiting for a connection (up to max_wait_for_connection)
        BOOST_TEST(!conn.is_connected());
        const auto refused = proxy.stats().refused;
        BOOST_TEST_MESSAGE(refused << " connection attempts refused in 700 ms");
        BOOST_TEST(refused >= 2u);
        const auto lifted_at = clock_type::now();
        proxy.refuse_new(false);
        co_await wait_for(ping.done, 3s);
        BOOST_REQUIRE(ping.done);
        BOOST_TEST(!ping.ec);
        BOOST_TEST_MESSAGE("served " << ms(ping.finished - lifted_at) << " ms after lifting");
        BOOST_TEST(ms(ping.finished - lifted_at) < 1000); // reconnect back-off is at most 200 ms
        BOOST_TEST(conn.stats().connects == connects + 1);
    });
}

BOOST_AUTO_TEST_CASE(destructor_closes_open_connections) {
    redis_process srv;
    asio::io_context ioc;
    auto proxy = std::make_unique<proxy_type>(srv.port());
    corolock::connection conn(ioc.get_executor(), through(srv, *proxy), corolock::test::quiet());
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            co_await ping_time(conn);
            proxy->blackhole(); // bytes held inside must not keep it alive
            pending_exec ping;
            ping.req.push("PING");
            ping.start(conn);
            co_await sleep_for(50ms);
            const auto t0 = clock_type::now();
            proxy.reset();
            BOOST_TEST(ms(clock_type::now() - t0) < 500);
            co_await wait_for(ping.done, 2s);
            BOOST_TEST(ping.done);
            BOOST_TEST(ping.ec == error::connection_lost);
            conn.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_fault_proxy
