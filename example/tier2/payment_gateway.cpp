// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// At most 3 concurrent calls to a payment gateway, whichever coroutine, thread or process makes
// them: a `corolock::semaphore` of 3 permits on `gateway:<run>`.
//
// 40 checkouts start at once. Each takes one permit (waiting at most 5 s), "calls the gateway"
// (50 ms), then records the charge with a guarded write through its permit's lease: the write
// runs only while the permit is still live on the server's clock, so a checkout stalled past its
// permit cannot write after another took its place. The gateway counts the calls in flight; the
// example checks that it never saw more than 3 at once, that every checkout was charged once,
// and that no permit is left in Redis at the end.
//
//   corolock_payment_gateway [--host H] [--port P]
//
// Exits 0 only if every check passes.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

namespace {

constexpr int checkouts = 40;
constexpr std::size_t gateway_limit = 3;

// The gateway's own view: how many calls it serves at once.
struct gateway {
    int in_flight = 0, most = 0;
    asio::awaitable<void> charge() {
        most = std::max(most, ++in_flight);
        asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
        co_await t.async_wait(asio::deferred);
        --in_flight;
    }
};

// Records the charge only while the permit is live (a guarded write).
const corolock::fenced_script record_charge("return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)");

asio::awaitable<void> checkout(corolock::semaphore& permits, gateway& g, const std::string& ledger,
                               int order, int& failures) {
    auto [ec, permit] = co_await permits.async_acquire_for(5s, 1, asio::as_tuple(asio::deferred));
    if (ec) {
        std::cout << "  order " << order << ": no permit (" << ec.message() << ")\n";
        ++failures;
        co_return;
    }
    co_await g.charge();
    const std::string_view keys[] = {ledger};
    const std::string field = std::to_string(order);
    const std::string_view args[] = {field};
    corolock::generic_response resp;
    auto [wec] = co_await permit.async_fenced_eval(record_charge, keys, args, resp,
                                                   asio::as_tuple(asio::deferred));
    if (wec) {
        std::cout << "  order " << order << ": charge not recorded (" << wec.message() << ")\n";
        ++failures;
    }
    co_await permit.async_release();
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;
    const std::string run = ex::make_run_tag();
    const std::string name = "gateway:" + run, ledger = "gateway:" + run + ":ledger";
    gateway g;
    int failures = 0;
    std::int64_t charged = -1, left = -1;
    std::cout << "server              " << server->host << ":" << server->port << "\n";
    try {
        ex::run_with_connection(
            *server, "corolock-payment-gateway",
            [&](corolock::connection& conn) -> asio::awaitable<void> {
                corolock::semaphore permits(conn, name, gateway_limit);
                auto exec = co_await asio::this_coro::executor;
                std::vector<decltype(asio::co_spawn(exec, asio::awaitable<void>(), asio::deferred))>
                    ops;
                for (int i = 0; i < checkouts; ++i)
                    ops.push_back(asio::co_spawn(exec, checkout(permits, g, ledger, i, failures),
                                                 asio::deferred));
                co_await asio::experimental::make_parallel_group(std::move(ops))
                    .async_wait(asio::experimental::wait_for_all(), asio::deferred);
                corolock::request req;
                req.push("HLEN", ledger);
                req.push("EXISTS", name);
                req.push("DEL", ledger);
                corolock::generic_response resp; // three integers, one node each
                co_await conn.async_exec(req, resp);
                charged = std::stoll(resp.at(0).value);
                left = std::stoll(resp.at(1).value);
            },
            60s);
    } catch (const std::exception& e) {
        std::cout << "FAILED: " << e.what() << "\n";
        return 1;
    }
    std::cout << "gateway calls at once, at most: " << g.most << " (limit " << gateway_limit
              << ")\ncharges recorded: " << charged << " of " << checkouts
              << "\npermit key left: " << left << "\n";
    const bool ok = failures == 0 && g.most <= static_cast<int>(gateway_limit) && g.most > 1 &&
                    charged == checkouts && left == 0;
    std::cout << (ok ? "OK" : "FAILED") << "\n";
    return ok ? 0 : 1;
}
