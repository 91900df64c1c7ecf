// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A cache refreshed under a read-write lock: many readers, one refresher at a time.
//
// The cache is two keys, `cfg:<run>:version` and `cfg:<run>:body`, written in two steps (as a
// refresh from a slow source would: first the version, then the body). 40 reader coroutines on
// one connection read both under `async_acquire_shared`, in a loop; a refresher on another
// connection rewrites them under `async_acquire` 10 times, each refresh a fenced write of the
// version through its lease (refused if a newer writer exists) and a plain write of the body.
// Readers stamp what they read with their lease's token (the last write's token). The example
// checks that no reader ever saw a version and a body of different refreshes (a torn read),
// that readers shared the lock (several at once), and that the refresher was never starved by
// the stream of readers (writer preference: each refresh waited less than a second).
//
//   corolock_cached_config [--host H] [--port P]
//
// Exits 0 only if every check passes.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/shared_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> pause(std::chrono::steady_clock::duration d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::deferred);
}

const corolock::fenced_script set_version("return redis.call('SET', KEYS[1], ARGV[1])");

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;
    const std::string run = ex::make_run_tag();
    const std::string name = "cfg:" + run, version = name + ":version", body = name + ":body";
    int torn = 0, reads = 0, inside = 0, most_inside = 0, refreshes = 0;
    double slowest_refresh_ms = 0;
    std::cout << "server              " << server->host << ":" << server->port << "\n";
    try {
        ex::run_with_connection(
            *server, "corolock-cached-config",
            [&](corolock::connection& conn) -> asio::awaitable<void> {
                auto exec = co_await asio::this_coro::executor;
                corolock::connection writer_conn(exec, ex::make_config(*server, "refresher"));
                writer_conn.async_run(asio::detached);
                corolock::shared_mutex readers(conn, name), refresher(writer_conn, name);
                bool stop = false;
                int running = 0;
                for (int i = 0; i < 40; ++i) {
                    ++running;
                    asio::co_spawn(
                        exec,
                        [&]() -> asio::awaitable<void> {
                            while (!stop) {
                                auto l = co_await readers.async_acquire_shared();
                                most_inside = std::max(most_inside, ++inside);
                                corolock::request get;
                                get.push("MGET", version, body);
                                corolock::generic_response resp;
                                co_await conn.async_exec(get, resp);
                                const bool empty =
                                    resp.size() == 3 && resp[1].value.empty() &&
                                    resp[2].value.empty(); // before the first refresh
                                if (resp.size() != 3 ||
                                    (!empty && resp[2].value != "body of " + resp[1].value))
                                    ++torn;
                                ++reads;
                                co_await pause(5ms);
                                --inside;
                                co_await l.async_release();
                            }
                            --running;
                        },
                        asio::detached);
                }
                for (int i = 1; i <= 10; ++i) {
                    co_await pause(30ms);
                    const auto asked = std::chrono::steady_clock::now();
                    auto l = co_await refresher.async_acquire();
                    slowest_refresh_ms = std::max(
                        slowest_refresh_ms, ex::to_ms(std::chrono::steady_clock::now() - asked));
                    const std::string v = std::to_string(i);
                    const std::string_view keys[] = {version};
                    const std::string_view args[] = {v};
                    corolock::generic_response resp;
                    co_await l.async_fenced_eval(set_version, keys, args, resp);
                    co_await pause(10ms); // the slow source
                    corolock::request set;
                    set.push("SET", body, "body of " + v);
                    co_await writer_conn.async_exec(set, corolock::ignore);
                    ++refreshes;
                    co_await l.async_release();
                }
                stop = true;
                while (running > 0)
                    co_await pause(10ms);
                corolock::request cleanup;
                cleanup.push("DEL", version, body, "{" + name + "}:fence");
                co_await conn.async_exec(cleanup, corolock::ignore);
                writer_conn.cancel();
            },
            60s);
    } catch (const std::exception& e) {
        std::cout << "FAILED: " << e.what() << "\n";
        return 1;
    }
    std::cout << "reads: " << reads << ", torn: " << torn
              << ", readers at once, at most: " << most_inside << "\nrefreshes: " << refreshes
              << ", slowest wait for the write lock: " << static_cast<long>(slowest_refresh_ms)
              << " ms\n";
    const bool ok =
        torn == 0 && reads > 0 && most_inside > 1 && refreshes == 10 && slowest_refresh_ms < 1000;
    std::cout << (ok ? "OK" : "FAILED") << "\n";
    return ok ? 0 : 1;
}
