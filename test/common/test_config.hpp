// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_TEST_CONFIG_HPP
#define COROLOCK_TEST_COMMON_TEST_CONFIG_HPP

#include "common/redis_process.hpp"
#include <corolock/cluster.hpp>
#include <corolock/config.hpp>
#include <corolock/logger.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::test {

// `co_await op(tuple_deferred)`: the error code comes back in the tuple, never thrown.
inline constexpr auto tuple_deferred = boost::asio::as_tuple(boost::asio::deferred);

// A connection to `srv` tuned for tests: faults are noticed and repaired within a few hundred
// milliseconds (health check 200 ms, reconnect 20..200 ms, connect timeout 1 s).
connection_config config_for(const redis_process& srv);

// A cluster client seeded with `seed`, tuned for tests: node health check 500 ms, connect
// timeout 500 ms, reconnect 50..200 ms, map refresh every 1 s (timeout 500 ms).
cluster_config cluster_config_for(const redis_process& seed);

// A logger that prints nothing (tests provoke failures on purpose).
logger quiet();
// COROLOCK_TEST_LOG=ring keeps the log here; a failing coroutine test prints it.
struct log_ring_t {
    std::mutex m;
    std::deque<std::string> lines;
};
log_ring_t& log_ring();
void dump_log_ring();

// Keeps every line a connection logs (any thread): tests check the lines that matter.
struct log_capture {
    std::mutex m;
    std::vector<std::string> lines;

    // A logger at `lvl` that appends here.
    logger make(logger::level lvl = logger::level::debug);
    // Lines that contain `needle`.
    std::size_t count(std::string_view needle);
    bool contains(std::string_view needle) { return count(needle) != 0; }
};

// Sleeps on the calling coroutine's executor.
boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d);

// Polls `done` every `step` until it holds or `within` has passed; returns its last value.
boost::asio::awaitable<bool>
eventually(std::function<bool()> done, std::chrono::steady_clock::duration within,
           std::chrono::steady_clock::duration step = std::chrono::milliseconds(5));

// A RESP2 bulk string, as redis_process::command returns it.
std::string bulk(std::string_view s);

// Appends `text` to the file at `path` in one write on an O_APPEND descriptor, so that what
// several processes append never interleaves (stdio flushes in 4 KiB pieces: another process's
// piece could land inside a line). False if it could not.
bool append_whole(const char* path, const std::string& text);

} // namespace corolock::test

#endif
