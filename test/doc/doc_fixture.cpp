// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The states that the commands shown in the docs run against (test/doc/run_doc_commands.sh):
//
//   doc_fixture PORT hold NAME             acquire NAME (60 s lease, no watchdog) and exit
//                                          without releasing, as a holder that crashed
//   doc_fixture PORT acl USER PASSWORD NAME  as USER: acquire, renew, wait, release, force-unlock
//
// `acl` checks that a user with only the ACL rule of doc/deployments.md can do everything a lock
// user does: two connections, a holder whose 1 s lease the watchdog renews, a waiter on the
// other connection woken by the release message (pub/sub), a force-unlock, and
// not one error or warning in the log. Exit status 0 on success; the reason on stderr otherwise.
#include <corolock/corolock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> log_problems; // warnings and errors the library logged
std::vector<std::string> log_info;     // its info lines

corolock::logger recording_logger() {
    return corolock::logger{corolock::logger::level::info,
                            [](corolock::logger::level l, std::string_view msg) {
                                if (l == corolock::logger::level::info) {
                                    log_info.emplace_back(msg);
                                    return;
                                }
                                std::cerr << "log " << l << ": " << msg << "\n";
                                log_problems.emplace_back(msg);
                            }};
}

void require(bool ok, const std::string& what) {
    if (!ok)
        throw std::runtime_error(what);
}

asio::awaitable<void> sleep(std::chrono::steady_clock::duration d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

asio::awaitable<void> hold(corolock::connection& conn, std::string name) {
    corolock::mutex_options o;
    o.lease = 60s;
    o.watchdog = false;
    corolock::mutex m(conn, name, o);
    auto l = co_await m.async_acquire();
    std::cout << "held " << name << " token " << l.token().value() << std::endl;
    // A crashed holder: the key stays until its lease ends.
    std::_Exit(0);
}

asio::awaitable<void> acl(corolock::connection& a, corolock::connection& b, std::string name) {
    corolock::mutex_options o;
    o.lease = 1s; // renewed every 333 ms by the watchdog: room for a loaded machine
    corolock::mutex holder_side(a, name, o), waiter_side(b, name, o);

    auto l = co_await holder_side.async_acquire();
    require(l.owns(), "no lease");
    // The waiter subscribes to the release channel on its own connection.
    bool woken = false;
    asio::co_spawn(
        co_await asio::this_coro::executor,
        [&]() -> asio::awaitable<void> {
            auto w = co_await waiter_side.async_acquire_for(10s);
            woken = w.owns();
            co_await w.async_release();
        },
        asio::detached);
    co_await sleep(2500ms); // seven renewals
    require(l.valid(), "the lease was not renewed");
    require(corolock::get_lock_stats(a).renewals >= 3, "fewer than 3 renewals");
    co_await l.async_release();
    for (int i = 0; i < 100 && !woken; ++i)
        co_await sleep(10ms);
    require(woken, "the waiter did not get the lock");
    const auto waiter = corolock::get_lock_stats(b);
    // Its fallback timer, capped by the holder's 1 s TTL, fires meanwhile too: the release
    // message is what must have come.
    require(waiter.pubsub_wakeups >= 1, "the waiter was not woken by the release message");

    require(log_problems.empty(), "the library logged a warning or an error");

    // An administrator's force-unlock publishes on corolock:forced; the holder logs its loss.
    auto again = co_await holder_side.async_acquire();
    co_await waiter_side.async_force_unlock();
    for (int i = 0; i < 100 && !again.lost(); ++i)
        co_await sleep(10ms);
    require(again.lost(), "the holder was not told of the force-unlock");
    const auto told = [](const std::string& line) {
        return line.find("a force-unlock names this lease") != std::string::npos;
    };
    require(std::any_of(log_info.begin(), log_info.end(), told),
            "no message on corolock:forced reached the holder");
    require(log_problems.size() == 1 && log_problems[0].find("lease lost") != std::string::npos,
            "the force-unlock logged something else than the holder's loss");
    std::cout << "acl ok: acquire, renew, wait (pub/sub), release, force-unlock\n";
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() < 3) {
        std::cerr << "usage: doc_fixture PORT hold NAME | PORT acl USER PASSWORD NAME\n";
        return 2;
    }
    asio::io_context ioc;
    corolock::connection_config cfg;
    cfg.port = args[0];
    cfg.reconnect_wait = 0s; // a refused HELLO ends async_run instead of retrying
    int status = 1;
    auto done = [&](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::cerr << "doc_fixture " << args[1] << ": " << x.what() << "\n";
            }
        } else {
            status = 0;
        }
        ioc.stop();
    };
    if (args[1] == "hold") {
        corolock::connection conn(ioc.get_executor(), cfg, recording_logger());
        conn.async_run(asio::detached);
        asio::co_spawn(ioc, hold(conn, args[2]), done);
        ioc.run_for(20s);
    } else if (args[1] == "acl" && args.size() == 5) {
        cfg.username = args[2];
        cfg.password = args[3];
        corolock::connection a(ioc.get_executor(), cfg, recording_logger());
        corolock::connection b(ioc.get_executor(), cfg, recording_logger());
        a.async_run(asio::detached);
        b.async_run(asio::detached);
        asio::co_spawn(ioc, acl(a, b, args[4]), done);
        ioc.run_for(20s);
    } else {
        std::cerr << "unknown fixture " << args[1] << "\n";
        return 2;
    }
    if (status != 0)
        std::cerr << "doc_fixture " << args[1] << ": failed\n";
    return status;
}
