// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// An API client rate-limited across processes: a partner's API allows 20 calls per second with
// bursts of 5, whoever calls it. Two worker processes, each with 4 coroutines on one connection,
// make 6 calls per coroutine; every call first takes its slot from one shared
// `corolock::rate_limiter` (`async_acquire`: the slot is reserved on the server in one round
// trip, then the coroutine sleeps until it; no polling, no retry storm).
//
// Each worker tells the parent when (in the server's time) each of its calls was allowed to go
// out. The parent checks that every call got through and that over every window of length L the
// calls never exceeded burst + L x rate / period.
//
//   corolock_rate_limited_api [--host H] [--port P]
//
// Exits 0 only if every check passes.
#include "common.hpp"
#include "workers.hpp"
#include <corolock/connection.hpp>
#include <corolock/rate_limiter.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

constexpr int workers = 2;
constexpr int coroutines = 4;
constexpr int calls_each = 6;
constexpr corolock::rate_limit partner_limit{20, 1s, 5}; // 20 per second, 5 at once

std::string limiter_name(const std::string& run) {
    return "rl:" + run + ":partner-api";
}

// The partner's API (here: nothing; a real client would send its HTTP request).
asio::awaitable<void> call_partner_api() {
    co_return;
}

int run_worker(const ex::server_options& server, const std::string& run) {
    int failures = 0;
    ex::run_with_connection(
        server, "corolock-rate-limited-api",
        [&](corolock::connection& conn) -> asio::awaitable<void> {
            corolock::rate_limiter api(conn, limiter_name(run), partner_limit);
            int running = coroutines;
            for (int c = 0; c < coroutines; ++c)
                asio::co_spawn(
                    co_await asio::this_coro::executor,
                    [&]() -> asio::awaitable<void> {
                        for (int i = 0; i < calls_each; ++i) {
                            // Waits at most 5 s for a slot; a refusal or an error skips the call.
                            auto [ec, d] =
                                co_await api.async_acquire(1, 5s, asio::as_tuple(asio::deferred));
                            if (ec || !d.admitted) {
                                ++failures;
                                std::cerr << "no slot: " << ec.message() << "\n";
                                continue;
                            }
                            const auto slot =
                                d.server_time_us +
                                std::chrono::duration_cast<std::chrono::microseconds>(d.wait)
                                    .count();
                            ex::tell_parent("call " + std::to_string(slot));
                            co_await call_partner_api();
                        }
                        --running;
                    },
                    asio::detached);
            while (running > 0)
                co_await ex::sleep_for(10ms);
        },
        60s);
    return failures == 0 ? 0 : 1;
}

int run_parent(const ex::server_options& server) {
    const std::string run = ex::make_run_tag();
    ex::worker_processes procs;
    for (int n = 0; n < workers; ++n)
        procs.spawn({"--host", server.host, "--port", server.port, "--worker", std::to_string(n),
                     "--run", run});
    std::vector<std::int64_t> calls;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (const auto ev = procs.next_line(deadline)) {
        const auto w = ex::words(ev->line);
        if (w.size() == 2 && w[0] == "call")
            calls.push_back(std::strtoll(w[1].c_str(), nullptr, 10));
    }
    procs.reap_all(std::chrono::steady_clock::now() + 5s);
    bool ok = !procs.timed_out();
    for (int n = 0; n < workers; ++n)
        if (!procs.exited_ok(n)) {
            std::cerr << "worker " << n << " ended with " << procs.describe(n) << "\n";
            ok = false;
        }
    const auto expected = static_cast<std::size_t>(workers * coroutines * calls_each);
    if (calls.size() != expected) {
        std::cerr << calls.size() << " calls went out, " << expected << " expected\n";
        ok = false;
    }
    // Over every window [a, b] of call times: calls <= burst + (b - a) / T (+1 for rounding).
    std::sort(calls.begin(), calls.end());
    const double t_us = 1e6 / static_cast<double>(partner_limit.rate);
    double worst = -1e9;
    for (std::size_t i = 0; i < calls.size(); ++i)
        for (std::size_t j = i; j < calls.size(); ++j)
            worst = std::max(worst, static_cast<double>(j - i + 1) -
                                        static_cast<double>(partner_limit.burst) -
                                        static_cast<double>(calls[j] - calls[i]) / t_us);
    if (worst > 1.0) {
        std::cerr << "the limit was exceeded by " << worst << " calls in some window\n";
        ok = false;
    }
    if (!calls.empty())
        std::cout << calls.size() << " calls from " << workers << " processes over "
                  << static_cast<double>(calls.back() - calls.front()) / 1e6
                  << " s of server time (limit 20/s, burst 5); most above burst + L/T in any "
                     "window: "
                  << worst << "\n";
    std::cout << (ok ? "ok" : "FAILED") << "\n";
    return ok ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    int code = 0;
    std::string worker, run;
    const auto server = ex::parse_server_options(
        argc, argv, code, {{"--worker", &worker, "", true}, {"--run", &run, "", true}});
    if (!server)
        return code;
    try {
        return worker.empty() ? run_parent(*server) : run_worker(*server, run);
    } catch (const std::exception& e) {
        std::cerr << "rate_limited_api: " << e.what() << "\n";
        return 1;
    }
}
