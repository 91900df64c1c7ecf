// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Completion tokens (1): plain callbacks, no coroutine anywhere. Every corolock operation takes
// any Asio completion token; a callback receives the operation's completion signature:
// `(error_code, lease)` for an acquire, `(error_code)` for a release. Handlers run on the
// io_context's thread, never inside the initiating call.
//
// It acquires a lock, finds it busy with a try on the same name (an empty lease, not an error),
// releases it, and proves the release with a second try that succeeds.
//
//   corolock_callbacks [--host H] [--port P]
//
// Exits 0 only if each step did what it says.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;

    asio::io_context ioc;
    corolock::connection conn(ioc, ex::make_config(*server, "corolock-callbacks"));
    corolock::mutex m(conn, "callbacks:" + ex::make_run_tag() + ":lock");
    conn.async_run(asio::detached);

    std::vector<std::string> problems;
    bool finished = false;
    corolock::lease held; // the first lease, kept between the callbacks
    const auto finish = [&] {
        finished = true;
        conn.cancel(); // run() returns once nothing is left to do
    };
    asio::steady_timer limit(ioc, 10s);
    limit.async_wait([&](corolock::error_code ec) {
        if (!ec)
            conn.cancel(); // fails whatever is outstanding: the chain below ends
    });

    m.async_acquire([&](corolock::error_code ec, corolock::lease l) {
        if (ec) {
            problems.push_back("acquire: " + ec.message());
            return finish();
        }
        std::cout << "acquired, fencing token " << l.token().value() << "\n";
        held = std::move(l);
        m.async_try_acquire([&](corolock::error_code ec, corolock::lease busy) {
            if (ec || busy)
                problems.push_back("a try while held should find the lock busy");
            else
                std::cout << "a try while held: busy (an empty lease, no error)\n";
            held.async_release([&](corolock::error_code ec) {
                if (ec) {
                    problems.push_back("release: " + ec.message());
                    return finish();
                }
                std::cout << "released\n";
                m.async_try_acquire([&](corolock::error_code ec, corolock::lease again) {
                    if (ec || !again) {
                        problems.push_back("a try after the release should get the lock");
                        return finish();
                    }
                    std::cout << "a try after the release: acquired, token "
                              << again.token().value() << "\n";
                    again.async_release([&](corolock::error_code ec) {
                        if (ec)
                            problems.push_back("second release: " + ec.message());
                        limit.cancel();
                        finish();
                    });
                });
            });
        });
    });
    ioc.run();

    if (!finished)
        problems.push_back("timed out");
    return ex::report(problems);
}
