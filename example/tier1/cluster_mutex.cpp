// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A mutex over a Redis Cluster: the same `corolock::mutex`, made on a `corolock::cluster` in
// place of a connection. The cluster client learns the slot map from any seed node and sends
// each lock script to the master of the name's slot. A name with a hash tag (`{sku-1}:lock`)
// puts the lock in the slot of the data it guards (`{sku-1}:stock`), so a fenced write of that
// data runs on the same master in one script.
//
// Two service instances (two cluster clients) share 3 item locks spread over the masters: the
// first holds each lock while the second's try finds it busy, writes the item's stock through
// its lease, releases; then the second acquires with a larger token.
//
// The seed node comes from COROLOCK_CLUSTER_HOST / COROLOCK_CLUSTER_PORT (CTest runs it under
// corolock_script_cluster, which starts a 3-master cluster of the process kit). Without them it
// says so and exits 77 (skipped).
//
//   COROLOCK_CLUSTER_HOST=127.0.0.1 COROLOCK_CLUSTER_PORT=7000 corolock_cluster_mutex
//
// Exits 0 only if each step did what it says.
#include "common.hpp"
#include <corolock/cluster.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

namespace {

constexpr int items = 3;

const corolock::fenced_script& set_stock() {
    static const corolock::fenced_script s("return redis.call('SET', KEYS[1], ARGV[1], 'EX', 60)");
    return s;
}

asio::awaitable<void> two_instances(corolock::cluster& first, corolock::cluster& second,
                                    std::string tag, std::vector<std::string>& problems) {
    for (int i = 0; i < items; ++i) {
        const std::string item = "{" + tag + "-sku-" + std::to_string(i) + "}";
        const std::string stock = item + ":stock";
        corolock::mutex a(first, item + ":lock"), b(second, item + ":lock");

        corolock::lease la = co_await a.async_acquire_for(5s);
        const corolock::lease busy = co_await b.async_try_acquire();
        const std::string units = std::to_string(10 + i);
        const std::string_view keys[] = {stock};
        const std::string_view args[] = {units};
        corolock::generic_response resp;
        co_await la.async_fenced_eval(set_stock(), keys, args, resp);
        const auto first_token = la.token().value();
        co_await la.async_release();

        corolock::lease lb = co_await b.async_acquire_for(5s);
        std::cout << item << ": first instance held it (token " << first_token
                  << "), the second's try found it " << (busy ? "FREE" : "busy")
                  << ", then the second got it (token " << lb.token().value() << ")\n";
        if (busy)
            problems.push_back(item + ": both instances held the lock");
        if (lb.token().value() <= first_token)
            problems.push_back(item + ": the later token is not larger");
        corolock::request del;
        del.push("DEL", stock);
        co_await second.async_exec(stock, del, corolock::ignore);
        co_await lb.async_release();
    }
    const auto st = corolock::get_lock_stats(second);
    std::cout << "second instance: " << st.attempts << " acquire attempts\n";
}

} // namespace

int main() {
    const char* host = std::getenv("COROLOCK_CLUSTER_HOST");
    const char* port = std::getenv("COROLOCK_CLUSTER_PORT");
    if (!host || !*host || !port || !*port) {
        std::cout << "COROLOCK_CLUSTER_HOST / COROLOCK_CLUSTER_PORT name no cluster node: "
                     "skipped\n";
        return 77;
    }
    corolock::cluster_config cfg;
    cfg.seeds = {{host, port}};

    std::vector<std::string> problems;
    asio::io_context ioc;
    corolock::cluster first(ioc, cfg), second(ioc, cfg);
    first.async_run(asio::detached);
    second.async_run(asio::detached);
    asio::steady_timer limit(ioc, 30s);
    limit.async_wait([&](corolock::error_code ec) {
        if (!ec) {
            problems.push_back("timed out");
            first.cancel();
            second.cancel();
        }
    });
    asio::co_spawn(ioc, two_instances(first, second, ex::make_run_tag(), problems),
                   [&](std::exception_ptr e) {
                       if (e)
                           try {
                               std::rethrow_exception(e);
                           } catch (const std::exception& x) {
                               problems.push_back(x.what());
                           }
                       limit.cancel();
                       first.cancel();
                       second.cancel();
                   });
    ioc.run();

    return ex::report(problems);
}
