// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What the ZooKeeper suites share: one standalone server for the whole binary (a start costs
// about half a second), a connection that runs for a test's scope, and the server's own count of
// ephemeral nodes, which tells whether anything was left behind.
#ifndef COROLOCK_TEST_ZOOKEEPER_ZK_TEST_HPP
#define COROLOCK_TEST_ZOOKEEPER_ZK_TEST_HPP

#include "common/coro_test.hpp"
#include "common/test_config.hpp"
#include "common/zk_process.hpp"
#include <corolock/zk_connection.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace corolock::test {

// The binary's server, started on first use, stopped at exit.
zk_ensemble& shared_zk();

// A config for `hosts` (the shared server by default) with a short session timeout.
zk_config zk_test_config(const std::string& hosts = {},
                         std::chrono::milliseconds timeout = std::chrono::seconds(2));

// A zk_connection whose async_run runs from construction to destruction (then cancelled).
class running_zk {
public:
    running_zk(const boost::asio::any_io_executor& ex, zk_config cfg);
    ~running_zk();
    zk_connection& operator*() noexcept { return *conn_; }
    zk_connection* operator->() noexcept { return conn_.get(); }
    // The run's outcome, once it ended.
    const std::shared_ptr<error_code>& run_result() const noexcept { return result_; }

private:
    std::unique_ptr<zk_connection> conn_;
    std::shared_ptr<error_code> result_;
};

// The server's `zk_ephemerals_count` (mntr) for node i of `zk`; -1 if it does not answer.
int ephemerals(const zk_ensemble& zk, int i = 0);
// Waits (up to 3 s, without blocking the io_context) until node i counts `n` ephemeral nodes;
// the count it saw last.
boost::asio::awaitable<int> wait_ephemerals(const zk_ensemble& zk, int n, int i = 0);

} // namespace corolock::test

#endif
