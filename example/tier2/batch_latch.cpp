// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A batch job in two phases: `loaders` workers each load one shard of the input, and `reducers`
// workers may start only once every shard is loaded. They share nothing but Redis (here they
// are coroutines on two connections; in production, processes on different hosts).
//
// The coordinator makes a latch for the run with one count per shard (`async_create`) and hands
// its generation to the loaders; each loader counts down with its shard id when its shard is
// in. A loader that lost its reply (`connection_lost`) simply counts down again with the same
// id: it counts once. The reducers `async_wait` on the latch: the last count-down opens it and
// wakes every reducer, in every process, at once.
//
//   corolock_batch_latch [--host H] [--port P]
//
// Exits 0 only if every reducer woke after every shard was loaded.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/latch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <string>

namespace {

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

constexpr int loaders = 4;
constexpr int reducers = 6;

struct job {
    std::string run;
    int woken = 0;   // reducers that woke
    int saw_all = 0; // of them, those that found every shard loaded
    std::string problem;

    std::string latch_name() const { return "batch:" + run + ":loaded"; }
    std::string shards_key() const { return "batch:" + run + ":shards"; }

    asio::awaitable<void> load(corolock::connection& conn, int shard, std::uint64_t generation) {
        co_await ex::sleep_for(std::chrono::milliseconds(50 * (shard + 1))); // the work
        corolock::request r;
        r.push("INCR", shards_key());
        co_await conn.async_exec(r, corolock::ignore);
        corolock::latch done(conn, latch_name());
        const std::string id = "shard-" + std::to_string(shard);
        // A retry after a lost reply is safe: the same id counts once. Shard 0 shows it.
        for (int attempt = 0; attempt < (shard == 0 ? 2 : 1); ++attempt) {
            auto state = co_await done.async_count_down(id, generation);
            std::cout << id << " counted down: " << state.remaining << " shard(s) to go"
                      << (state.open ? ", open" : "") << "\n";
        }
    }

    asio::awaitable<void> reduce(corolock::connection& conn) {
        corolock::latch loaded(conn, latch_name());
        co_await loaded.async_wait_for(20s); // throws on no_latch, timeout, ...
        ++woken;
        corolock::request r;
        r.push("GET", shards_key());
        corolock::generic_response resp;
        co_await conn.async_exec(r, resp);
        if (!resp.empty() && resp[0].value == std::to_string(loaders))
            ++saw_all;
    }
};

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;
    job j;
    j.run = ex::make_run_tag();
    try {
        ex::run_with_connection(
            *server, "corolock-batch-latch-1",
            [&](corolock::connection& conn) -> asio::awaitable<void> {
                auto exec = co_await asio::this_coro::executor;
                corolock::connection conn2(exec,
                                           ex::make_config(*server, "corolock-batch-latch-2"));
                conn2.async_run(asio::detached);
                // The coordinator: one count per shard.
                corolock::latch loaded(conn, j.latch_name());
                const auto round = co_await loaded.async_create(loaders);
                int finished = 0;
                auto count = [&](std::exception_ptr e) {
                    ++finished;
                    if (e && j.problem.empty())
                        try {
                            std::rethrow_exception(e);
                        } catch (const std::exception& x) {
                            j.problem = x.what();
                        }
                };
                for (int r = 0; r < reducers; ++r) // waiting before anything is loaded
                    asio::co_spawn(exec, j.reduce(r % 2 ? conn2 : conn), count);
                for (int s = 0; s < loaders; ++s)
                    asio::co_spawn(exec, j.load(s % 2 ? conn2 : conn, s, round.generation), count);
                while (finished < loaders + reducers)
                    co_await ex::sleep_for(10ms);
                corolock::request cleanup;
                cleanup.push("DEL", j.shards_key(), j.latch_name(), "{" + j.latch_name() + "}:d");
                co_await conn.async_exec(cleanup, corolock::ignore);
                conn2.cancel();
            },
            30s);
    } catch (const std::exception& e) {
        j.problem = e.what();
    }
    std::cout << j.woken << " of " << reducers << " reducers woke, " << j.saw_all
              << " after every shard was loaded\n";
    if (!j.problem.empty())
        std::cerr << "problem: " << j.problem << "\n";
    return j.problem.empty() && j.woken == reducers && j.saw_all == reducers ? 0 : 1;
}
