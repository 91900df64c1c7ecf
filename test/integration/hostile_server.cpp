// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// A fake server that answers HELLO properly and then sends a hostile or broken reply: the
// exec must fail with a protocol error, the run loop must end cleanly, nothing may crash.
#include "common/coro_test.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_hostile_server {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;

namespace {

// Serves one connection: a valid HELLO reply, then `reply` to the first command, then silence.
awaitable<void> fake_server(asio::ip::tcp::acceptor& acceptor, std::string reply) {
    auto sock = co_await acceptor.async_accept(asio::use_awaitable);
    char buf[4096];
    co_await sock.async_read_some(asio::buffer(buf), asio::use_awaitable);
    co_await asio::async_write(sock, asio::buffer(std::string("%1\r\n+server\r\n+fake\r\n")),
                               asio::use_awaitable);
    co_await sock.async_read_some(asio::buffer(buf), asio::use_awaitable);
    co_await asio::async_write(sock, asio::buffer(reply), asio::use_awaitable);
    // Wait for the client to hang up.
    auto [ec, n] =
        co_await sock.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    (void)ec;
    (void)n;
}

// Like fake_server, then answers the second command with "+second".
awaitable<void> fake_server_two(asio::ip::tcp::acceptor& acceptor, std::string reply) {
    auto sock = co_await acceptor.async_accept(asio::use_awaitable);
    char buf[4096];
    co_await sock.async_read_some(asio::buffer(buf), asio::use_awaitable);
    co_await asio::async_write(sock, asio::buffer(std::string("%1\r\n+server\r\n+fake\r\n")),
                               asio::use_awaitable);
    co_await sock.async_read_some(asio::buffer(buf), asio::use_awaitable);
    co_await asio::async_write(sock, asio::buffer(reply), asio::use_awaitable);
    co_await sock.async_read_some(asio::buffer(buf), asio::use_awaitable);
    co_await asio::async_write(sock, asio::buffer(std::string("+second\r\n")), asio::use_awaitable);
    auto [ec, n] =
        co_await sock.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    (void)ec;
    (void)n;
}

struct outcome {
    error_code exec_ec;
    error_code run_ec;
};

outcome against(std::string reply, corolock::connection_config cfg = {}) {
    asio::io_context ioc;
    asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
    cfg.host = "127.0.0.1";
    cfg.port = std::to_string(acceptor.local_endpoint().port());
    cfg.reconnect_wait = std::chrono::seconds(0);
    cfg.health_check_interval = std::chrono::seconds(0);
    corolock::connection conn(ioc.get_executor(), cfg, {corolock::logger::level::off, {}});
    outcome out;
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            asio::co_spawn(ioc, fake_server(acceptor, std::move(reply)), asio::detached);
            bool run_done = false;
            conn.async_run([&](error_code ec) {
                out.run_ec = ec;
                run_done = true;
            });
            corolock::request req;
            req.push("GET", "x");
            corolock::generic_response resp;
            auto [ec, n] = co_await conn.async_exec(req, resp, asio::as_tuple(asio::deferred));
            out.exec_ec = ec;
            asio::steady_timer t(ioc);
            while (!run_done) {
                t.expires_after(5ms);
                co_await t.async_wait(asio::use_awaitable);
            }
        }(),
        20s, 1, corolock::test::drain_check::off);
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hostile_server)

BOOST_AUTO_TEST_CASE(unknown_type_byte) {
    auto o = against("?garbage\r\n");
    BOOST_TEST(o.exec_ec == error::invalid_type_byte);
    BOOST_TEST(o.run_ec == corolock::condition::protocol_violation);
}

BOOST_AUTO_TEST_CASE(oversized_bulk_header) {
    auto o = against("$99999999999999\r\n");
    BOOST_TEST(o.exec_ec == error::bulk_too_long);
}

BOOST_AUTO_TEST_CASE(malformed_length) {
    auto o = against("*-5\r\n");
    BOOST_TEST(o.exec_ec == error::invalid_length);
}

BOOST_AUTO_TEST_CASE(nesting_bomb) {
    std::string bomb;
    for (int i = 0; i < 1000; ++i)
        bomb += "*1\r\n";
    auto o = against(bomb);
    BOOST_TEST(o.exec_ec == error::nesting_too_deep);
}

BOOST_AUTO_TEST_CASE(reply_larger_than_max_read_size) {
    std::string big = "*5000\r\n";
    for (int i = 0; i < 5000; ++i)
        big += ":1\r\n";
    corolock::connection_config cfg;
    cfg.max_read_size = 1024;
    // The nodes before the limit reach the response; the exec still fails as a whole.
    auto o = against(big.substr(0, 8000), cfg);
    BOOST_TEST(o.exec_ec == error::message_too_large);
}

BOOST_AUTO_TEST_CASE(million_tiny_elements_are_bounded_and_the_stream_stays_in_step) {
    // 4 MiB on the wire, well within max_read_size, but 1 Mi nodes (~64 MiB as a
    // generic_response): the exec fails after max_reply_nodes, the rest is read and dropped,
    // and the next request gets its own reply on the same connection.
    constexpr std::size_t elements = 1024 * 1024;
    std::string bomb = "*" + std::to_string(elements) + "\r\n";
    bomb.reserve(bomb.size() + elements * 4);
    for (std::size_t i = 0; i < elements; ++i)
        bomb += ":1\r\n";
    asio::io_context ioc;
    asio::ip::tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
    corolock::connection_config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = std::to_string(acceptor.local_endpoint().port());
    cfg.reconnect_wait = std::chrono::seconds(0);
    cfg.health_check_interval = std::chrono::seconds(0);
    BOOST_TEST(cfg.max_reply_nodes == 256u * 1024u);
    BOOST_TEST(cfg.max_read_size == 64u * 1024u * 1024u);
    corolock::connection conn(ioc.get_executor(), cfg, {corolock::logger::level::off, {}});
    error_code first_ec, second_ec;
    std::size_t first_nodes = 0, first_bytes = 0;
    corolock::generic_response second;
    bool run_done = false;
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            asio::co_spawn(ioc, fake_server_two(acceptor, std::move(bomb)), asio::detached);
            conn.async_run([&](error_code) { run_done = true; });
            corolock::request req;
            req.push("LRANGE", "x", 0, -1);
            corolock::generic_response resp;
            auto [ec, n] = co_await conn.async_exec(req, resp, asio::as_tuple(asio::deferred));
            first_ec = ec;
            first_nodes = resp.size();
            first_bytes = n;
            corolock::request ping;
            ping.push("PING");
            auto [ec2, n2] = co_await conn.async_exec(ping, second, asio::as_tuple(asio::deferred));
            second_ec = ec2;
            BOOST_TEST(!run_done);
            BOOST_TEST(conn.stats().connects == 1u);
            conn.cancel();
            asio::steady_timer t(ioc);
            while (!run_done) {
                t.expires_after(5ms);
                co_await t.async_wait(asio::use_awaitable);
            }
        }(),
        30s, 1, corolock::test::drain_check::off);
    BOOST_TEST(first_ec == error::message_too_large);
    BOOST_TEST(first_nodes == cfg.max_reply_nodes); // adopted nodes stop at the limit
    BOOST_TEST(first_bytes == 4u * elements + 10u); // the whole reply was read
    BOOST_TEST(!second_ec);
    BOOST_REQUIRE(second.size() == 1u);
    BOOST_TEST(second[0].value == "second");
}

BOOST_AUTO_TEST_CASE(unsolicited_extra_reply) {
    // Two replies to one command: the second has no request to go to.
    auto o = against("+first\r\n+second\r\n");
    BOOST_TEST(!o.exec_ec);
    BOOST_TEST(o.run_ec == error::unexpected_reply);
}

BOOST_AUTO_TEST_CASE(missing_crlf_after_blob) {
    auto o = against("$3\r\nabcXY");
    BOOST_TEST(o.exec_ec == error::missing_crlf);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_hostile_server
