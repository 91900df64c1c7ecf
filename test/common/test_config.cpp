// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/test_config.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace corolock::test {

using namespace std::chrono_literals;

connection_config config_for(const redis_process& srv) {
    connection_config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = std::to_string(srv.port());
    cfg.health_check_interval = 200ms;
    cfg.connect_timeout = 1s;
    cfg.reconnect_wait = 20ms;
    cfg.reconnect_wait_max = 200ms;
    cfg.max_wait_for_connection = 5s;
    return cfg;
}

cluster_config cluster_config_for(const redis_process& seed) {
    cluster_config cfg;
    cfg.seeds.push_back({seed.host(), std::to_string(seed.port())});
    cfg.node.health_check_interval = 500ms;
    cfg.node.connect_timeout = 500ms;
    cfg.node.reconnect_wait = 50ms;
    cfg.node.reconnect_wait_max = 200ms;
    cfg.refresh_interval = 1s;
    cfg.refresh_timeout = 500ms;
    return cfg;
}

log_ring_t& log_ring() {
    static log_ring_t r;
    return r;
}

void dump_log_ring() {
    auto& r = log_ring();
    std::lock_guard g(r.m);
    for (const auto& l : r.lines)
        std::fprintf(stderr, "%s\n", l.c_str());
    r.lines.clear();
}

logger quiet() {
    // COROLOCK_TEST_LOG=1 (or debug), info or warning: the library's log on stderr, each line
    // with the milliseconds of the steady clock. COROLOCK_TEST_LOG=ring: debug lines kept in
    // memory (the last 4,000) and printed only when a coroutine test fails (dump_log_ring), so
    // that a rare failure under load is not made rarer by the writes.
    const char* env = std::getenv("COROLOCK_TEST_LOG");
    if (!env)
        return {logger::level::off, {}};
    const std::string_view v = env;
    const auto stamp = [] {
        return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
    };
    if (v == "ring")
        return {logger::level::debug, [stamp](logger::level, std::string_view line) {
                    auto& r = log_ring();
                    std::lock_guard g(r.m);
                    r.lines.push_back(std::to_string(stamp()) + " " + std::string(line));
                    if (r.lines.size() > 4000)
                        r.lines.pop_front();
                }};
    const auto lvl = v == "warning" ? logger::level::warning
                     : v == "info"  ? logger::level::info
                                    : logger::level::debug;
    return {lvl, [stamp](logger::level, std::string_view line) {
                std::fprintf(stderr, "%lld %s\n", stamp(), std::string(line).c_str());
            }};
}

logger log_capture::make(logger::level lvl) {
    return {lvl, [this](logger::level, std::string_view line) {
                std::lock_guard g(m);
                lines.emplace_back(line);
            }};
}

std::size_t log_capture::count(std::string_view needle) {
    std::lock_guard g(m);
    std::size_t n = 0;
    for (const auto& l : lines)
        n += l.find(needle) != std::string::npos;
    return n;
}

boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
    co_await t.async_wait(boost::asio::use_awaitable);
}

boost::asio::awaitable<bool> eventually(std::function<bool()> done,
                                        std::chrono::steady_clock::duration within,
                                        std::chrono::steady_clock::duration step) {
    const auto until = std::chrono::steady_clock::now() + within;
    for (;;) {
        if (done())
            co_return true;
        if (std::chrono::steady_clock::now() >= until)
            co_return false;
        co_await sleep_for(step);
    }
}

std::string bulk(std::string_view s) {
    // Appended piece by piece: g++ 12 at -O2/-O3 flags `"$" + std::to_string(...)` with a false
    // -Wrestrict (GCC bug 105651), which broke the Release build of the tests.
    std::string out = "$";
    out += std::to_string(s.size());
    out += "\r\n";
    out += s;
    out += "\r\n";
    return out;
}

bool append_whole(const char* path, const std::string& text) {
    const int fd = ::open(path, O_WRONLY | O_APPEND);
    if (fd < 0)
        return false;
    const auto n = ::write(fd, text.data(), text.size());
    ::close(fd);
    return n == static_cast<ssize_t>(text.size());
}

} // namespace corolock::test
