// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A double-clicked "buy" button: one order id is submitted 50 times at once. Each submission is
// its own coroutine with its own `corolock::mutex` on `order:<run>:<id>` (the ownership rule: one
// mutex object per logical owner) and makes one `async_try_acquire`. Exactly one gets the lock
// and creates the order, with a fenced write; the other 49 are refused at once, without waiting.
//
// The lock is an idempotency key: it has a fixed 60 s lease and is not released when the order is
// created, so a repeat of the same order id within the lease is refused too (the last step shows
// a late 51st submission being refused). The example removes its keys at the end.
//
//   corolock_duplicate_order [--host H] [--port P]
//
// Exits 0 only if exactly one submission created the order and the other 50 were refused.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

constexpr int submissions = 50;
constexpr auto idempotency_window = 60s;
constexpr auto tuple = asio::as_tuple(asio::deferred);

// KEYS[1] = the order hash, KEYS[2] = a counter of creations; ARGV[1] = who.
const corolock::fenced_script& create_order_script() {
    static const corolock::fenced_script s(R"lua(
redis.call('HSET', KEYS[1], 'status', 'created', 'by', ARGV[1])
return redis.call('INCR', KEYS[2])
)lua");
    return s;
}

struct tally {
    int created = 0;
    int refused = 0;
    int errors = 0;
    std::string creator;
    std::string first_problem;
    void problem(std::string what) {
        ++errors;
        if (first_problem.empty())
            first_problem = std::move(what);
    }
};

struct names {
    std::string lock, order, creations;
};

// One submission of the order. The winner's mutex must outlive this coroutine (the lock stays
// held as the idempotency key), so it is kept by the caller.
asio::awaitable<void> submit(corolock::mutex& m, const names& n, int who, tally& t) {
    auto [ec, acquired] = co_await m.async_try_acquire(tuple);
    if (ec) {
        t.problem("try_acquire: " + ec.message());
        co_return;
    }
    if (!acquired) {
        ++t.refused; // a duplicate: someone else holds this order id
        co_return;
    }
    const std::string by = "submission-" + std::to_string(who);
    const std::string_view keys[] = {n.order, n.creations};
    const std::string_view args[] = {by};
    corolock::generic_response resp;
    auto [fec] = co_await m.async_fenced_eval(create_order_script(), keys, args, resp, tuple);
    if (fec) {
        t.problem("create: " + fec.message());
        co_return;
    }
    ++t.created;
    t.creator = by;
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;

    const std::string run = ex::make_run_tag();
    const std::string order_id = "A-1001";
    const names n{"order:" + run + ":" + order_id, "orders:" + run + ":" + order_id,
                  "orders:" + run + ":" + order_id + ":creations"};
    tally t;
    int late_refused = 0;
    std::string stored_by, creations;
    std::uint64_t writes = 0, commands = 0;
    double elapsed_ms = 0;
    try {
        ex::run_with_connection(
            *server, "corolock-duplicate-order",
            [&](corolock::connection& conn) -> asio::awaitable<void> {
                auto exec = co_await asio::this_coro::executor;
                corolock::mutex_options opts;
                opts.lease = idempotency_window;
                opts.watchdog = false; // the lease is the idempotency window
                std::vector<std::unique_ptr<corolock::mutex>> locks;
                std::vector<decltype(asio::co_spawn(exec, submit(*locks.front(), n, 0, t),
                                                    asio::deferred))>
                    ops;
                const auto before = conn.stats();
                const auto start = std::chrono::steady_clock::now();
                for (int i = 0; i < submissions; ++i) {
                    locks.push_back(std::make_unique<corolock::mutex>(conn, n.lock, opts));
                    ops.push_back(
                        asio::co_spawn(exec, submit(*locks.back(), n, i, t), asio::deferred));
                }
                auto [order, errors] =
                    co_await asio::experimental::make_parallel_group(std::move(ops))
                        .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
                (void)order;
                elapsed_ms = ex::to_ms(std::chrono::steady_clock::now() - start);
                for (const auto& e : errors)
                    if (e)
                        t.problem("a submission threw");
                const auto after = conn.stats();
                writes = after.writes - before.writes;
                commands = after.commands - before.commands;

                // A late repeat of the same order id, while the window is open: refused too.
                corolock::mutex late(conn, n.lock, opts);
                auto [lec, late_ok] = co_await late.async_try_acquire(tuple);
                late_refused = !lec && !late_ok ? 1 : 0;
                if (late_ok)
                    co_await late.async_release();

                corolock::request check;
                check.push("HGET", n.order, "by");
                check.push("GET", n.creations);
                corolock::generic_response resp;
                co_await conn.async_exec(check, resp);
                if (resp.size() == 2) {
                    stored_by = resp[0].value;
                    creations = resp[1].value;
                }

                // Clean up: the lock (with its fence key) and the order.
                for (auto& l : locks)
                    if (l->held())
                        co_await l->async_release();
                corolock::request cleanup;
                cleanup.push("DEL", n.order, n.creations, n.lock, "{" + n.lock + "}:fence");
                co_await conn.async_exec(cleanup, corolock::ignore);
            },
            30s);
    } catch (const std::exception& e) {
        t.problem(e.what());
    }

    const bool ok = t.created == 1 && t.refused == submissions - 1 && t.errors == 0 &&
                    late_refused == 1 && stored_by == t.creator && creations == "1";
    std::cout << "server              " << server->host << ":" << server->port << "\n"
              << "order               " << order_id << ", submitted " << submissions
              << " times at once\n"
              << "created             " << t.created << "  (by " << t.creator << ")\n"
              << "refused             " << t.refused << "\n"
              << "late repeat         " << (late_refused ? "refused" : "NOT refused") << "\n"
              << "errors              " << t.errors << "\n"
              << "order record        by " << stored_by << ", creations " << creations << "\n"
              << "elapsed             " << elapsed_ms << " ms  (" << commands << " commands in "
              << writes << " socket writes)\n";
    if (!t.first_problem.empty())
        std::cout << "first problem       " << t.first_problem << "\n";
    std::cout << (ok ? "OK" : "FAILED") << "\n";
    return ok ? 0 : 1;
}
