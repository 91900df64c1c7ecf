// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Exactly once: an HTTP-like handler, `handle_order(order_id)`, receives the same orders from
// several clients (coroutines on two connections), all at once and again later (clients retry
// whatever they did not see succeed). Each order must be applied exactly once.
//
// A lock is the wrong tool: released when the handler returns, it lets the next retry apply the
// order again. The handler takes an idempotency claim instead (`corolock::async_claim`), which
// stays in Redis for a retention window (10 minutes in a real service; a few seconds here):
//   claimed        -> do the work; on success keep the claim (repeats are refused for the
//                     window); on failure give it back, so that a retry can proceed;
//   refused        -> a duplicate (done, or being done, by someone else): answer "already
//                     submitted";
//   error          -> the outcome is unknown (connection_lost): answer "try again later".
// The work of some orders fails on its first attempt on purpose, to exercise give-back + retry.
//
//   corolock_duplicate_order [--host H] [--port P]
//
// Exits 0 only if Redis shows every order applied exactly once.
#include "common.hpp"
#include <corolock/claim.hpp>
#include <corolock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;

constexpr int orders = 12;
constexpr int clients = 4;     // each submits every order, on connection i % 2
constexpr auto retention = 5s; // 10 min in a real service
constexpr auto tuple = asio::as_tuple(asio::deferred);

enum class outcome { applied, duplicate, failed, error };

struct service {
    std::string run;
    std::set<std::string> attempted; // orders whose work ran at least once (to fail the first)
    int counts[4] = {};
    std::string first_problem;

    std::string claim_key(const std::string& id) const { return "claim:" + run + ":" + id; }
    std::string applied_key(const std::string& id) const { return "applied:" + run + ":" + id; }
    std::string total_key() const { return "applied:" + run + ":total"; }
    static bool fails_first(const std::string& id) { return std::stoi(id.substr(2)) % 3 == 0; }

    // The business work: every third order's first attempt fails (a payment gateway timeout).
    asio::awaitable<void> apply(corolock::connection& conn, const std::string& id) {
        co_await ex::sleep_for(20ms); // the work takes a while: duplicates arrive meanwhile
        if (attempted.insert(id).second && fails_first(id))
            throw std::runtime_error("payment gateway timeout");
        corolock::request r;
        r.push("INCR", applied_key(id));
        r.push("INCR", total_key());
        co_await conn.async_exec(r, corolock::ignore);
    }

    asio::awaitable<outcome> handle_order(corolock::connection& conn, std::string id) {
        auto [ec, claim] = co_await corolock::async_claim(conn, claim_key(id), retention, tuple);
        if (ec) {
            if (first_problem.empty())
                first_problem = "claim " + id + ": " + ec.message();
            co_return outcome::error; // unknown: the client retries later
        }
        if (!claim)
            co_return outcome::duplicate; // applied, or being applied, by another submission
        bool ok = true;
        try {
            co_await apply(conn, id);
        } catch (const std::exception&) {
            ok = false; // no co_await inside a handler: give back below
        }
        if (ok)
            co_return outcome::applied; // keep the claim: repeats are refused for the window
        auto [gec] = co_await claim.async_give_back(tuple);
        if (gec && first_problem.empty()) // the claim then simply lasts its window
            first_problem = "give back " + id + ": " + gec.message();
        co_return outcome::failed;
    }

    // Every client submits every order, all at once.
    asio::awaitable<void> wave(corolock::connection* conns[2]) {
        auto exec = co_await asio::this_coro::executor;
        std::vector<decltype(asio::co_spawn(exec, handle_order(*conns[0], ""), asio::deferred))>
            ops;
        for (int c = 0; c < clients; ++c)
            for (int o = 1; o <= orders; ++o)
                ops.push_back(asio::co_spawn(
                    exec, handle_order(*conns[c % 2], "O-" + std::to_string(o)), asio::deferred));
        auto [order, errors, results] =
            co_await asio::experimental::make_parallel_group(std::move(ops))
                .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
        (void)order;
        for (std::size_t i = 0; i < results.size(); ++i)
            ++counts[static_cast<int>(errors[i] ? outcome::error : results[i])];
    }
};

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;

    service svc;
    svc.run = ex::make_run_tag();
    std::vector<std::string> applied(orders + 1);
    std::string total;
    int waves_counts[2][4] = {};
    try {
        ex::run_with_connection(
            *server, "corolock-duplicate-order-1",
            [&](corolock::connection& conn) -> asio::awaitable<void> {
                corolock::connection conn2(co_await asio::this_coro::executor,
                                           ex::make_config(*server, "corolock-duplicate-order-2"));
                conn2.async_run(asio::detached);
                corolock::connection* conns[2] = {&conn, &conn2};
                for (int w = 0; w < 2; ++w) { // at once, then retries after the first finished
                    co_await svc.wave(conns);
                    std::copy(std::begin(svc.counts), std::end(svc.counts), waves_counts[w]);
                    std::fill(std::begin(svc.counts), std::end(svc.counts), 0);
                    co_await ex::sleep_for(200ms);
                }
                corolock::request check, cleanup;
                cleanup.push("DEL", svc.total_key());
                for (int o = 1; o <= orders; ++o) {
                    const std::string id = "O-" + std::to_string(o);
                    check.push("GET", svc.applied_key(id));
                    cleanup.push("DEL", svc.applied_key(id), svc.claim_key(id));
                }
                check.push("GET", svc.total_key());
                corolock::generic_response resp;
                co_await conn.async_exec(check, resp);
                for (int i = 0; i < static_cast<int>(resp.size()) && i <= orders; ++i)
                    (i < orders ? applied[i + 1] : total) = resp[i].value;
                co_await conn.async_exec(cleanup, corolock::ignore);
                conn2.cancel();
            },
            30s);
    } catch (const std::exception& e) {
        svc.first_problem = e.what();
    }

    bool ok = total == std::to_string(orders);
    std::cout << "orders " << orders << ", each submitted by " << clients
              << " clients at once, then by all again (retries); retention " << retention.count()
              << " s\n"
              << "                  applied  duplicate  failed+given back  error\n";
    for (int w = 0; w < 2; ++w) {
        const auto& c = waves_counts[w];
        std::cout << (w == 0 ? "first wave        " : "retry wave        ") << c[0] << "        "
                  << c[1] << "         " << c[2] << "                  " << c[3] << "\n";
    }
    std::cout << "applied per order in Redis:";
    for (int o = 1; o <= orders; ++o) {
        const bool once = applied[o] == "1";
        ok = ok && once;
        std::cout << " O-" << o << "=" << (applied[o].empty() ? "0" : applied[o])
                  << (once ? "" : "(!)");
    }
    std::cout << "\ntotal applied     " << (total.empty() ? "0" : total) << " (expected " << orders
              << ")\n";
    if (!svc.first_problem.empty())
        std::cout << "first problem     " << svc.first_problem << "\n";
    std::cout << (ok ? "OK: every order applied exactly once"
                     : "FAILED: an order was applied twice or never")
              << "\n";
    return ok ? 0 : 1;
}
