// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// The ZooKeeper backend: the same lease model on ZooKeeper's lock recipe. An acquisition
// creates an ephemeral sequential node under the lock's path and holds once its node is the
// lowest; the node's creation zxid is the fencing token, a total order with no clock in it. The
// lease stays valid while the session is heard from (`valid_until()` moves on with every
// reply), and a fenced write is one ZooKeeper transaction that also checks the lease's node is
// still there, so a holder whose node is gone writes nothing.
//
// Two service instances, each with its own `zk_connection` (its own session): the first holds
// the lock while the second's try finds it busy, writes the item's stock through its lease and
// releases; then the second acquires with a larger token and reads the first one's write.
//
// The servers come from COROLOCK_ZK_HOSTS ("host:port,..."; CTest runs it under
// corolock_script_backend, which starts a throw-away ZooKeeper server of the process kit).
// Without it, it says so and exits 77 (skipped). The data node and the lock's parent nodes
// stay on the server (the recipe keeps a lock's path; this API deletes only its own lock nodes),
// under /corolock-example/<run tag>.
//
//   COROLOCK_ZK_HOSTS=127.0.0.1:2181 corolock_zk_lease
//
// Exits 0 only if each step did what it says.
#include "common.hpp"
#include <corolock/zookeeper/connection.hpp>
#include <corolock/zookeeper/mutex.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> two_instances(corolock::zk_connection& one, corolock::zk_connection& two,
                                    std::string tag, std::vector<std::string>& problems) {
    const std::string dir = "/corolock-example/" + tag;
    // The data sits beside the lock, under the parent that the first acquire creates.
    const std::string lock = dir + "/lock", stock = dir + "/stock";
    corolock::zk_mutex first(one, lock), second(two, lock);

    corolock::zk_lease a = co_await first.async_acquire_for(5s);
    const corolock::zk_lease busy = co_await second.async_try_acquire();
    const std::uint64_t first_token = a.token().value();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        a.valid_until() - corolock::zk_lease::clock::now());
    std::cout << "first instance holds " << lock << " (node " << a.name() << ", token "
              << first_token << ", valid for " << left.count() << " ms more); the second's try "
              << "found it " << (busy ? "FREE" : "busy") << "\n";
    if (busy)
        problems.push_back("both instances held the lock");
    if (!a.valid())
        problems.push_back("a fresh lease is not valid");

    co_await a.async_fenced_write(stock, "9 units, token " + std::to_string(first_token));
    co_await a.async_release();

    corolock::zk_lease b = co_await second.async_acquire_for(5s);
    std::cout << "then the second got it (token " << b.token().value() << ")\n";
    if (b.token().value() <= first_token)
        problems.push_back("the later token is not larger");
    const std::string data = co_await two.async_get(stock);
    std::cout << stock << ": " << data << "\n";
    if (data != "9 units, token " + std::to_string(first_token))
        problems.push_back("the stock node does not hold the first instance's write");
    co_await b.async_release();
}

} // namespace

int main() {
    const char* hosts = std::getenv("COROLOCK_ZK_HOSTS");
    if (!hosts || !*hosts) {
        std::cout << "COROLOCK_ZK_HOSTS names no ZooKeeper server: skipped\n";
        return 77;
    }
    corolock::zk_config cfg;
    cfg.hosts = hosts;
    // A lease is lost when the session is not heard from for about this long; 10 s is the
    // default too, spelled out since it is the knob a deployment tunes first.
    cfg.session_timeout = 10s;

    std::vector<std::string> problems;
    asio::io_context ioc;
    corolock::zk_connection one(ioc.get_executor(), cfg), two(ioc.get_executor(), cfg);
    one.async_run(asio::detached); // each drives its session until cancel()
    two.async_run(asio::detached);
    const auto stop = [&] {
        one.cancel(); // closes the sessions: any node still held goes at once
        two.cancel();
    };
    asio::steady_timer limit(ioc, 30s);
    limit.async_wait([&](corolock::error_code ec) {
        if (!ec) {
            problems.push_back("timed out");
            stop();
        }
    });
    asio::co_spawn(ioc, two_instances(one, two, ex::make_run_tag(), problems),
                   [&](std::exception_ptr e) {
                       if (e)
                           try {
                               std::rethrow_exception(e);
                           } catch (const std::exception& x) {
                               problems.push_back(x.what());
                           }
                       limit.cancel();
                       stop();
                   });
    ioc.run();

    return ex::report(problems);
}
