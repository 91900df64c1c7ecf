// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// One connection, a thousand coroutines: each writes its own keys and reads them back, and every
// reply must be the one its coroutine asked for. The connection pipelines whatever is queued
// while a write is in flight, so the summary shows many commands per socket write.
//
//   corolock_demo_pipeline [--host H] [--port P]
//
// Exits non-zero if any reply did not match or any request failed.
#include "common.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <random>
#include <string>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr int coroutines = 1000;
constexpr int rounds = 50;                                  // each round: one SET, one GET
constexpr std::uint64_t commands = coroutines * rounds * 2; // 100,000
constexpr auto deadline = 60s;

struct tally {
    std::uint64_t done = 0;
    std::uint64_t mismatches = 0;
    std::uint64_t errors = 0;
    std::string first_problem;

    void problem(std::string what) {
        if (first_problem.empty())
            first_problem = std::move(what);
    }
};

asio::awaitable<void> check_keys(corolock::connection& conn, int id, const std::string& run_tag,
                                 tally& t) {
    constexpr auto tuple = asio::as_tuple(asio::deferred);
    const std::string key = "corolock:example:pipeline:" + run_tag + ":" + std::to_string(id);
    for (int round = 0; round < rounds; ++round) {
        // Unique per coroutine and round: a reply meant for anyone else cannot match.
        const std::string value = run_tag + "/" + std::to_string(id) + "/" + std::to_string(round);

        corolock::request set;
        set.push("SET", key, value, "EX", 60); // the keys clean themselves up
        corolock::generic_response set_resp;
        auto [ec1, n1] = co_await conn.async_exec(set, set_resp, tuple);
        ++t.done;
        if (ec1) {
            ++t.errors;
            t.problem("SET failed: " + ec1.message());
            co_return;
        }
        if (set_resp.size() != 1 || set_resp[0].value != "OK") {
            ++t.mismatches;
            t.problem("SET " + key + " got an unexpected reply");
        }

        corolock::request get;
        get.push("GET", key);
        corolock::generic_response get_resp;
        auto [ec2, n2] = co_await conn.async_exec(get, get_resp, tuple);
        ++t.done;
        if (ec2) {
            ++t.errors;
            t.problem("GET failed: " + ec2.message());
            co_return;
        }
        if (get_resp.size() != 1 || get_resp[0].data_type != corolock::resp3::type::blob_string ||
            get_resp[0].value != value) {
            ++t.mismatches;
            t.problem("GET " + key + " returned " +
                      (get_resp.empty() ? std::string("nothing") : get_resp[0].value) +
                      ", expected " + value);
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = corolock_example::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;

    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(),
                              corolock_example::make_config(*server, "corolock-pipeline-demo"));
    tally t;
    std::random_device rd;
    const std::string run_tag = std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);

    int running = 0;
    bool timed_out = false;
    asio::steady_timer watchdog(ioc, deadline);
    watchdog.async_wait([&](corolock::error_code ec) {
        if (!ec) {
            timed_out = true;
            conn.cancel(); // fails whatever is outstanding, so the coroutines end
        }
    });

    conn.async_run([&](corolock::error_code ec) {
        if (ec && ec != asio::error::operation_aborted)
            t.problem("connection ended: " + ec.message());
    });

    const auto start = std::chrono::steady_clock::now();
    auto stop = start;
    for (int id = 0; id < coroutines; ++id) {
        ++running;
        asio::co_spawn(ioc, check_keys(conn, id, run_tag, t), [&](std::exception_ptr e) {
            if (e) {
                ++t.errors;
                t.problem("a coroutine threw");
            }
            if (--running == 0) {
                stop = std::chrono::steady_clock::now();
                watchdog.cancel();
                conn.cancel();
            }
        });
    }
    ioc.run();

    const auto st = conn.stats();
    const double elapsed = std::chrono::duration<double>(stop - start).count();
    std::cout << "server              " << server->host << ":" << server->port << "\n"
              << "coroutines          " << coroutines << "\n"
              << "commands            " << t.done << " of " << commands << "\n"
              << "elapsed             " << elapsed << " s\n"
              << "commands/s          " << (elapsed > 0 ? double(t.done) / elapsed : 0) << "\n"
              << "writes              " << st.writes << "  (" << st.commands
              << " commands written)\n"
              << "commands per write  "
              << (st.writes > 0 ? double(st.commands) / double(st.writes) : 0) << "\n"
              << "mismatches          " << t.mismatches << "\n"
              << "errors              " << t.errors << "\n";
    if (timed_out)
        std::cout << "timed out after " << deadline.count() << " s\n";
    if (!t.first_problem.empty())
        std::cout << "first problem       " << t.first_problem << "\n";
    const bool ok = t.mismatches == 0 && t.errors == 0 && !timed_out && t.done == commands;
    std::cout << (ok ? "OK" : "FAILED") << "\n";
    return ok ? 0 : 1;
}
