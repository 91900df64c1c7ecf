// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_SERVER_FIXTURE_HPP
#define COROLOCK_TEST_COMMON_SERVER_FIXTURE_HPP

#include "common/redis_process.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test {

// Options with this lease (and the watchdog on or off).
mutex_options lease_of(std::chrono::steady_clock::duration lease, bool watchdog = true);

// The integration tests' fixture: a redis-server child, an io_context and two connections to
// the server (`conn`, the one under test, and `peer`, another client), both running for the
// length of a test body.
struct server_fixture {
    redis_process srv;
    boost::asio::io_context ioc;
    connection conn;
    connection peer;

    server_fixture();
    // `conn` with test settings changed by `adjust` (say, no health check).
    explicit server_fixture(const std::function<void(connection_config&)>& adjust);

    // Runs `body` with both connections (and every one made by `add_connection`) running, then
    // stops them; fails the test if it takes longer than `limit`.
    void run(std::function<boost::asio::awaitable<void>()> body,
             std::chrono::seconds limit = std::chrono::seconds(60), unsigned threads = 1);

    // Call from the body: one more connection, running at once and stopped with the others.
    connection& add_connection(connection_config cfg, logger log);

    // What the server says, through redis_process::command.
    bool exists(std::string_view key);
    std::string owner(std::string_view key); // a lock hash's owner field (raw reply)

private:
    std::vector<std::unique_ptr<connection>> extra_;
};

} // namespace corolock::test

#endif
