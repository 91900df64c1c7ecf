// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// What every example shares: where the Redis server is (the command line wins, then the
// environment, COROLOCK_REDIS_HOST / COROLOCK_REDIS_PORT, which tools/test.sh exports, then
// 127.0.0.1:6379), a way to run one coroutine against a fresh connection, and the worker side of
// the examples that run several processes (tell_parent; the parent side is workers.hpp).
#ifndef COROLOCK_EXAMPLE_COMMON_HPP
#define COROLOCK_EXAMPLE_COMMON_HPP

#include <corolock/config.hpp>
#include <corolock/connection.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <fcntl.h>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace corolock_example {

struct server_options {
    std::string host = "127.0.0.1";
    std::string port = "6379";
};

/// An option of one example beyond --host/--port, written `--name VALUE` and kept as text.
/// Hidden options are what a parent passes to its workers; usage does not list them.
struct extra_option {
    std::string_view name; // with its dashes: "--worker"
    std::string* value;
    std::string_view help = {};
    bool hidden = false;
};

inline void print_usage(std::string_view program, std::ostream& os,
                        std::initializer_list<extra_option> extra = {}) {
    os << "usage: " << program << " [--host H] [--port P]";
    for (const auto& e : extra)
        if (!e.hidden)
            os << " [" << e.name << " VALUE]";
    os << "\n  defaults: $COROLOCK_REDIS_HOST / $COROLOCK_REDIS_PORT, else 127.0.0.1 / 6379\n";
    for (const auto& e : extra)
        if (!e.hidden)
            os << "  " << e.name << "  " << e.help << "\n";
}

/// Reads --host/--port (and the environment), plus the example's own `extra` options. On a bad
/// or unknown argument prints usage and returns nullopt; `exit_code` is then what main should
/// return (0 after --help).
inline std::optional<server_options>
parse_server_options(int argc, char** argv, int& exit_code,
                     std::initializer_list<extra_option> extra = {}) {
    server_options o;
    if (const char* h = std::getenv("COROLOCK_REDIS_HOST"); h && *h)
        o.host = h;
    if (const char* p = std::getenv("COROLOCK_REDIS_PORT"); p && *p)
        o.port = p;
    const std::string_view program = argc > 0 ? argv[0] : "example";
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            print_usage(program, std::cout, extra);
            exit_code = 0;
            return std::nullopt;
        }
        if ((arg == "--host" || arg == "--port") && i + 1 < argc) {
            (arg == "--host" ? o.host : o.port) = argv[++i];
            continue;
        }
        const auto e = std::find_if(extra.begin(), extra.end(),
                                    [&](const extra_option& x) { return x.name == arg; });
        if (e != extra.end() && i + 1 < argc) {
            *e->value = argv[++i];
            continue;
        }
        std::cerr << program << ": bad argument " << arg << "\n";
        print_usage(program, std::cerr, extra);
        exit_code = 2;
        return std::nullopt;
    }
    return o;
}

/// A whole number from an option's text, or `fallback` when it is empty; nullopt when malformed.
inline std::optional<long long> parse_number(const std::string& text, long long fallback) {
    if (text.empty())
        return fallback;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0')
        return std::nullopt;
    return v;
}

/// A connection_config for the examples: the given server, a name that shows in CLIENT LIST.
inline corolock::connection_config make_config(const server_options& o, std::string name) {
    corolock::connection_config cfg;
    cfg.host = o.host;
    cfg.port = o.port;
    cfg.client_name = std::move(name);
    return cfg;
}

/// Tags this run's keys, so runs sharing a server (ctest -j) never see each other's data.
inline std::string make_run_tag() {
    std::random_device rd;
    return std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);
}

inline boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
    co_await t.async_wait(boost::asio::use_awaitable);
}

inline double to_ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

/// Runs `body(conn)` (a callable returning `awaitable<void>`) on a fresh io_context with one
/// running connection, then stops the connection. Rethrows what the body threw; throws
/// std::runtime_error if it did not finish within `limit`.
template <class Body>
void run_with_connection(const server_options& o, std::string client_name, Body body,
                         std::chrono::steady_clock::duration limit) {
    namespace asio = boost::asio;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), make_config(o, std::move(client_name)));
    conn.async_run(asio::detached);
    bool finished = false, timed_out = false;
    std::exception_ptr failure;
    asio::steady_timer deadline(ioc, limit);
    deadline.async_wait([&](corolock::error_code ec) {
        if (!ec) {
            timed_out = true;
            conn.cancel(); // fails whatever is outstanding, so the body ends
        }
    });
    asio::co_spawn(ioc, body(conn), [&](std::exception_ptr e) {
        finished = true;
        failure = e;
        deadline.cancel();
        conn.cancel();
    });
    ioc.run();
    if (timed_out || !finished)
        throw std::runtime_error("timed out");
    if (failure)
        std::rethrow_exception(failure);
}

/// The end of an example's main: prints each problem, then OK or FAILED; returns the exit
/// status (0 only when there is no problem).
inline int report(const std::vector<std::string>& problems) {
    for (const auto& p : problems)
        std::cout << "problem: " << p << "\n";
    std::cout << (problems.empty() ? "OK" : "FAILED") << "\n";
    return problems.empty() ? 0 : 1;
}

/// Sends one line to the parent (a worker's stdout is a pipe the parent reads). One write per
/// line, so lines of concurrent coroutines never interleave.
inline void tell_parent(std::string line) {
    line += '\n';
    std::string_view rest = line;
    while (!rest.empty()) {
        const ssize_t n = ::write(STDOUT_FILENO, rest.data(), rest.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; // the parent is gone; it will not read anything anyway
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
}

/// Splits a line on spaces.
inline std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(std::move(w));
    return out;
}

} // namespace corolock_example

#endif
