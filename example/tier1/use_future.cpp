// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Completion tokens (2): `asio::use_future` from a plain thread. The io_context runs on a
// thread of its own; main() is ordinary blocking code, as in a command-line tool or a service
// that is not written with Asio. Each operation returns a std::future; `get()` gives the
// result, or throws `boost::system::system_error` for an error. Never call `get()` on the
// io_context's own thread: it would wait for work that thread can no longer do.
//
//   corolock_use_future [--host H] [--port P]
//
// Exits 0 only if each step did what it says.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

namespace {

// Blocking code: every call waits on a future.
std::vector<std::string> use_the_lock(corolock::connection& conn, const std::string& name) {
    std::vector<std::string> problems;
    corolock::mutex m(conn, name);

    corolock::lease l = m.async_acquire_for(5s, asio::use_future).get();
    std::cout << "acquired, fencing token " << l.token().value() << "\n";

    // A try while held: an empty lease (busy), not an exception.
    const corolock::lease busy = m.async_try_acquire(asio::use_future).get();
    std::cout << "a try while held: " << (busy ? "ACQUIRED" : "busy") << "\n";
    if (busy)
        problems.push_back("a try while held got the lock");

    const std::int64_t ttl = m.async_remaining_ttl(asio::use_future).get();
    std::cout << "the lock key's TTL while held: " << ttl << " ms\n";
    if (ttl <= 0)
        problems.push_back("no TTL on the held lock");

    l.async_release(asio::use_future).get(); // future<void>: get() only reports an error
    const std::int64_t after = m.async_remaining_ttl(asio::use_future).get();
    std::cout << "after the release: " << after << " (no key)\n";
    if (after != -2)
        problems.push_back("the lock key is still there after the release");

    // An error arrives as an exception from get(): a negative wait is refused before any I/O.
    try {
        m.async_acquire_for(-1s, asio::use_future).get();
        problems.push_back("a negative wait was accepted");
    } catch (const boost::system::system_error& e) {
        std::cout << "a negative wait: " << e.code().message() << "\n";
    }
    return problems;
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;

    asio::io_context ioc;
    auto work = asio::make_work_guard(ioc); // run() stays until the work guard is reset
    corolock::connection conn(ioc, ex::make_config(*server, "corolock-use-future"));
    conn.async_run(asio::detached);
    std::thread io_thread([&] { ioc.run(); });

    std::vector<std::string> problems;
    try {
        problems = use_the_lock(conn, "use-future:" + ex::make_run_tag() + ":lock");
    } catch (const std::exception& e) {
        problems.push_back(e.what());
    }
    conn.cancel();
    work.reset();
    io_thread.join();

    return ex::report(problems);
}
