// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Cancellation with a timer. Boost 1.81 has no `cancel_after`, so an acquire is raced against
// a `steady_timer`; whichever finishes first cancels the other through its cancellation slot.
// Two ways to write the race: `experimental::make_parallel_group(...).async_wait(wait_for_one())`
// and `||` of `experimental::awaitable_operators` (on non-throwing branches: `||` waits for the
// first *success*, so give each branch `as_tuple`). A cancelled acquire completes at once with
// `operation_aborted`, and leaves nothing behind in Redis. (`mutex::async_acquire_for` is the
// library's own bounded wait; the race is for any other deadline: a shutdown, a request's
// budget, a client that went away.)
//
//   corolock_cancel_with_timer [--host H] [--port P]
//
// Exits 0 only if both races were won by the timer and no lock was left behind.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

namespace {

constexpr auto patience = 200ms;

asio::awaitable<void> races(corolock::connection& conn, std::string name,
                            std::vector<std::string>& problems) {
    auto exec = co_await asio::this_coro::executor;
    corolock::mutex m(conn, name);
    corolock::lease holder = co_await m.async_acquire(); // someone else holds it meanwhile

    // 1. parallel_group: the first to finish cancels the other.
    asio::steady_timer t1(exec, patience);
    auto [order, ec, l, timer_ec] =
        co_await asio::experimental::make_parallel_group(m.async_acquire(asio::deferred),
                                                         t1.async_wait(asio::deferred))
            .async_wait(asio::experimental::wait_for_one(), asio::deferred);
    std::cout << "parallel_group: " << (order[0] == 1 ? "the timer" : "the acquire")
              << " finished first; the acquire ended with '" << ec.message() << "'\n";
    if (order[0] != 1 || ec != asio::error::operation_aborted || l)
        problems.push_back("parallel_group: the acquire should have been cancelled");

    // 2. `||`: the same race, as an expression.
    using namespace asio::experimental::awaitable_operators;
    asio::steady_timer t2(exec, patience);
    auto r = co_await (m.async_acquire(asio::as_tuple(asio::use_awaitable)) ||
                       t2.async_wait(asio::as_tuple(asio::use_awaitable)));
    std::cout << "||: " << (r.index() == 1 ? "the timer" : "the acquire") << " won\n";
    if (r.index() != 1)
        problems.push_back("||: the acquire should have been cancelled");

    // Nothing was left behind: once the holder releases, the lock key is gone.
    co_await holder.async_release();
    const std::int64_t ttl = co_await m.async_remaining_ttl();
    std::cout << "after the holder's release the lock key's TTL is " << ttl << " (no key)\n";
    if (ttl != -2)
        problems.push_back("a cancelled acquire left the lock behind");
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;
    std::vector<std::string> problems;
    try {
        ex::run_with_connection(
            *server, "corolock-cancel-with-timer",
            [&](corolock::connection& conn) {
                return races(conn, "cancel:" + ex::make_run_tag() + ":lock", problems);
            },
            30s);
    } catch (const std::exception& e) {
        problems.push_back(e.what());
    }
    return ex::report(problems);
}
