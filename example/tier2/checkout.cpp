// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A checkout that needs a lock. Each checkout takes three steps across three systems:
//
//   1. read the stock from the inventory (a Redis key);
//   2. charge the buyer at a slow payment service (a 50 ms call);
//   3. write the order to the order store (another key space, reached through its own
//      connection, standing for a database) and the new stock back to the inventory.
//
// No single script can make that atomic: the payment sits between the check and the write. Run
// without a lock, every buyer who read the stock before the first write lands pays for a unit
// that is gone: the shop oversells. Run under a per-item `corolock::mutex`, one checkout at a
// time crosses the three steps, and both writes are fenced with the lease's token: the order
// store keeps the largest token it has seen and refuses a smaller one (what any store can do:
// a column and a `WHERE`), and the inventory write goes through `lease::async_fenced_eval`.
//
// The program runs the same sale twice, 4 service instances (4 connections) x 10 buyers for 10
// units: unlocked, then locked. It prints both side by side, then shows a stale holder: an
// instance that pauses (its thread blocks, so its watchdog cannot renew) past its lease while
// another instance takes the lock and sells; when it wakes up, its order write carries the old
// token and the order store refuses it.
//
//   corolock_checkout [--host H] [--port P]
//
// Exits 0 only if the unlocked sale oversold (the race showed), the locked one did not, and the
// stale holder was refused.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <future>
#include <iomanip>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int instances = 4; // service instances, each with its own connection
constexpr int buyers_per_instance = 10;
constexpr int buyers = instances * buyers_per_instance;
constexpr int stock_units = 10;
constexpr auto payment_time = 50ms;
constexpr auto acquire_wait = 10s;

constexpr auto tuple = asio::as_tuple(asio::deferred);

// The keys of one sale.
struct sale_keys {
    explicit sale_keys(const std::string& tag)
        : stock("checkout:" + tag + ":stock"), orders("checkout:" + tag + ":orders"),
          last_token("checkout:" + tag + ":orders:last-token"), lock("checkout:" + tag + ":lock") {}
    std::string stock;      // the inventory
    std::string orders;     // the order store: a list of buyer ids
    std::string last_token; // the order store's fence: the largest token it accepted
    std::string lock;       // the item's lock (its fence key is "{<lock>}:fence")
};

// The order store. It checks the writer's token itself, so a writer whose lease was lost cannot
// slip an order in after a newer holder: KEYS[1] = orders, KEYS[2] = last token; ARGV[1] =
// buyer, ARGV[2] = token (0: none). Tokens are below 2^53, so Lua numbers hold them exactly.
const corolock::script& record_order_script() {
    static const corolock::script s(R"lua(
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) < last then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('RPUSH', KEYS[1], ARGV[1])
return 1
)lua");
    return s;
}

// The inventory write of a holder: runs only while its token is the newest for the lock.
const corolock::fenced_script& set_stock_script() {
    static const corolock::fenced_script s("return redis.call('SET', KEYS[1], ARGV[1])");
    return s;
}

struct tally {
    int sold = 0, turned_away = 0, refused = 0, errors = 0;
    std::string first_problem;
    void problem(std::string what) {
        if (errors++ == 0)
            first_problem = std::move(what);
    }
};

// Step 1: the stock as the inventory has it now.
asio::awaitable<long long> read_stock(corolock::connection& conn, const sale_keys& k) {
    corolock::request req;
    req.push("GET", k.stock);
    corolock::generic_response resp;
    co_await conn.async_exec(req, resp);
    co_return resp.empty() ? 0 : std::atoll(resp[0].value.c_str());
}

// Step 2: the payment service. Slow, as payment services are; the buyer is charged.
asio::awaitable<void> charge(int& charges) {
    co_await ex::sleep_for(payment_time);
    ++charges;
}

// Step 3a: the order store's write, with the writer's token (0 without a lock). True if stored.
asio::awaitable<bool> record_order(corolock::connection& conn, const sale_keys& k, int buyer,
                                   std::uint64_t token) {
    const std::string who = std::to_string(buyer), tok = std::to_string(token);
    const std::string_view keys[] = {k.orders, k.last_token};
    const std::string_view args[] = {who, tok};
    corolock::generic_response resp;
    co_await conn.async_eval(record_order_script(), keys, args, resp);
    co_return !resp.empty() && resp[0].value == "1";
}

// The three steps of one checkout. With `l` null they run unlocked (plain writes); else under
// that lease, with both writes fenced by its token.
asio::awaitable<void> checkout_steps(corolock::connection& conn, corolock::lease* l,
                                     const sale_keys& k, int buyer, int& charges, tally& t) {
    const long long stock = co_await read_stock(conn, k);
    if (stock <= 0) {
        ++t.turned_away;
        co_return;
    }
    co_await charge(charges);
    const std::uint64_t token = l ? l->token().value() : 0;
    if (!co_await record_order(conn, k, buyer, token)) {
        ++t.refused; // a newer holder wrote meanwhile: not sold (a real shop refunds here)
        co_return;
    }
    const std::string left = std::to_string(stock - 1);
    if (!l) {
        corolock::request req;
        req.push("SET", k.stock, left);
        co_await conn.async_exec(req, corolock::ignore);
    } else {
        const std::string_view keys[] = {k.stock};
        const std::string_view args[] = {left};
        corolock::generic_response resp;
        auto [ec] = co_await l->async_fenced_eval(set_stock_script(), keys, args, resp, tuple);
        if (ec)
            t.problem("fenced stock write: " + ec.message());
    }
    ++t.sold;
}

// One checkout: unlocked when `m` is null, else under a lease of `m`, released at the end.
asio::awaitable<void> checkout(corolock::connection& conn, corolock::mutex* m, const sale_keys& k,
                               int buyer, int& charges, tally& t) {
    if (!m) {
        co_await checkout_steps(conn, nullptr, k, buyer, charges, t);
        co_return;
    }
    auto [ec, granted] = co_await m->async_acquire_for(acquire_wait, tuple);
    if (ec) {
        t.problem("acquire: " + ec.message());
        co_return;
    }
    corolock::lease l = std::move(granted);
    co_await checkout_steps(conn, &l, k, buyer, charges, t);
    co_await l.async_release();
}

struct sale_result {
    tally t;
    int charges = 0;
    long long orders = 0, stock_left = 0;
    double seconds = 0;
    long long oversold() const { return std::max(0LL, orders - stock_units); }
};

// One sale: `instances` connections, each with its buyers (and its own mutex on the item when
// locked), all let go at once.
sale_result run_sale(const ex::server_options& server, bool locked) {
    const sale_keys k(ex::make_run_tag() + (locked ? ":locked" : ":unlocked"));
    sale_result r;
    ex::run_with_connection(
        server, "corolock-checkout",
        [&](corolock::connection& admin) -> asio::awaitable<void> {
            auto exec = co_await asio::this_coro::executor;
            corolock::request setup;
            setup.push("SET", k.stock, stock_units, "EX", 600);
            co_await admin.async_exec(setup, corolock::ignore);

            std::deque<corolock::connection> conns;
            std::deque<corolock::mutex> locks;
            corolock::request ping;
            ping.push("PING");
            for (int i = 0; i < instances; ++i) {
                conns.emplace_back(
                    exec, ex::make_config(server, "corolock-checkout-" + std::to_string(i)));
                conns.back().async_run(asio::detached);
                locks.emplace_back(conns.back(), k.lock);
                co_await conns.back().async_exec(ping, corolock::ignore); // connected
            }

            const auto start = clock_type::now();
            std::vector<decltype(asio::co_spawn(
                exec, checkout(admin, nullptr, k, 0, r.charges, r.t), asio::deferred))>
                ops;
            for (int b = 0; b < buyers; ++b) {
                const int i = b % instances;
                ops.push_back(asio::co_spawn(
                    exec, checkout(conns[i], locked ? &locks[i] : nullptr, k, b, r.charges, r.t),
                    asio::deferred));
            }
            auto [order, errors] =
                co_await asio::experimental::make_parallel_group(std::move(ops))
                    .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
            (void)order;
            r.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
            for (const auto& e : errors)
                if (e)
                    r.t.problem("a checkout threw");
            for (auto& c : conns)
                c.cancel();

            corolock::request check;
            check.push("LLEN", k.orders);
            check.push("GET", k.stock);
            check.push("DEL", k.stock, k.orders, k.last_token, k.lock, "{" + k.lock + "}:fence");
            corolock::generic_response resp;
            co_await admin.async_exec(check, resp);
            r.orders = std::atoll(resp.at(0).value.c_str());
            r.stock_left = std::atoll(resp.at(1).value.c_str());
        },
        60s);
    return r;
}

// A stale holder: instance A takes the lock (500 ms lease, watchdog on), reads the stock, then
// its thread blocks, as in a long GC pause or a SIGSTOP: its watchdog cannot renew, so Redis
// lets the lease expire. Instance B takes the lock with a newer token and sells. A wakes up and
// writes its order with its old token: the order store refuses it, and so does the inventory.
struct stale_result {
    std::uint64_t a_token = 0, b_token = 0;
    bool b_stored = false, a_stored = true, a_inventory_refused = false;
    std::string a_inventory_error, a_problem;
};

stale_result run_stale_holder(const ex::server_options& server,
                              std::vector<std::string>& problems) {
    const sale_keys k(ex::make_run_tag() + ":stale");
    stale_result r;
    const auto admin = [&](auto&&... command) {
        ex::run_with_connection(
            server, "corolock-checkout",
            [&](corolock::connection& conn) -> asio::awaitable<void> {
                corolock::request req;
                req.push(command...);
                co_await conn.async_exec(req, corolock::ignore);
            },
            10s);
    };
    admin("SET", k.stock, stock_units, "EX", 600);

    std::promise<void> a_holds, b_sold;
    auto a_holds_future = a_holds.get_future();
    auto b_sold_future = b_sold.get_future();
    std::thread a([&] {
        try {
            ex::run_with_connection(
                server, "corolock-checkout-a",
                [&](corolock::connection& conn) -> asio::awaitable<void> {
                    corolock::mutex_options opts;
                    opts.lease = 500ms;
                    corolock::mutex m(conn, k.lock, opts);
                    corolock::lease l = co_await m.async_acquire();
                    r.a_token = l.token().value();
                    const long long stock = co_await read_stock(conn, k);
                    a_holds.set_value();
                    // The pause: this thread runs A's io_context, so nothing of A runs, its
                    // watchdog included, until B has sold.
                    b_sold_future.wait_for(20s);
                    r.a_stored = co_await record_order(conn, k, -1, r.a_token);
                    const std::string left = std::to_string(stock - 1);
                    const std::string_view keys[] = {k.stock};
                    const std::string_view args[] = {left};
                    corolock::generic_response resp;
                    auto [ec] =
                        co_await l.async_fenced_eval(set_stock_script(), keys, args, resp, tuple);
                    r.a_inventory_refused = ec == corolock::condition::lock_lost;
                    r.a_inventory_error = ec ? ec.message() : "accepted";
                },
                30s);
        } catch (const std::exception& e) {
            r.a_problem = std::string("stale holder A: ") + e.what();
        }
    });

    if (a_holds_future.wait_for(20s) != std::future_status::ready) {
        problems.push_back("stale holder A never got the lock");
    } else {
        try {
            ex::run_with_connection(
                server, "corolock-checkout-b",
                [&](corolock::connection& conn) -> asio::awaitable<void> {
                    corolock::mutex m(conn, k.lock);
                    corolock::lease l = co_await m.async_acquire_for(acquire_wait);
                    r.b_token = l.token().value();
                    r.b_stored = co_await record_order(conn, k, -2, r.b_token);
                    co_await l.async_release();
                },
                30s);
        } catch (const std::exception& e) {
            problems.push_back(std::string("holder B: ") + e.what());
        }
    }
    b_sold.set_value(); // A wakes up
    a.join();
    if (!r.a_problem.empty())
        problems.push_back(r.a_problem);
    admin("DEL", k.stock, k.orders, k.last_token, k.lock, "{" + k.lock + "}:fence");
    return r;
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;
    try {
        const sale_result unlocked = run_sale(*server, false);
        const sale_result locked = run_sale(*server, true);
        std::vector<std::string> problems;
        const stale_result stale = run_stale_holder(*server, problems);

        const auto row = [](std::string_view what, auto u, auto l) {
            std::cout << std::left << std::setw(22) << what << std::right << std::setw(10) << u
                      << std::setw(10) << l << "\n";
        };
        const auto rate = [](const sale_result& r) {
            return r.seconds > 0 ? static_cast<long long>(buyers / r.seconds) : 0LL;
        };
        std::cout << "server " << server->host << ":" << server->port << "; " << instances
                  << " instances x " << buyers_per_instance << " buyers for " << stock_units
                  << " units; payment takes " << ex::to_ms(payment_time) << " ms\n\n";
        row("", "unlocked", "locked");
        row("sold", unlocked.t.sold, locked.t.sold);
        row("charged", unlocked.charges, locked.charges);
        row("orders stored", unlocked.orders, locked.orders);
        row("oversold", unlocked.oversold(), locked.oversold());
        row("stock left", unlocked.stock_left, locked.stock_left);
        row("turned away", unlocked.t.turned_away, locked.t.turned_away);
        row("errors", unlocked.t.errors, locked.t.errors);
        row("time (ms)", static_cast<long long>(unlocked.seconds * 1000),
            static_cast<long long>(locked.seconds * 1000));
        row("checkouts/s", rate(unlocked), rate(locked));
        std::cout << "\nstale holder: A (token " << stale.a_token
                  << ") paused past its lease; B (token " << stale.b_token
                  << ") sold: " << (stale.b_stored ? "stored" : "REFUSED")
                  << "\n  A's order write after the pause: "
                  << (stale.a_stored ? "STORED" : "refused by the order store")
                  << "\n  A's fenced inventory write: " << stale.a_inventory_error << "\n\n";

        for (const auto* r : {&unlocked, &locked})
            if (!r->t.first_problem.empty())
                problems.push_back(r->t.first_problem);
        if (unlocked.oversold() == 0)
            problems.push_back("the unlocked sale did not oversell: the race did not show");
        if (locked.oversold() != 0 || locked.orders != stock_units || locked.stock_left != 0)
            problems.push_back("the locked sale oversold or lost units");
        if (locked.charges != locked.t.sold || locked.t.refused != 0)
            problems.push_back("the locked sale charged buyers it did not sell to");
        if (!stale.b_stored || stale.a_stored || !stale.a_inventory_refused ||
            stale.b_token <= stale.a_token)
            problems.push_back("the stale holder was not refused");
        return ex::report(problems);
    } catch (const std::exception& e) {
        std::cerr << "checkout: " << e.what() << "\n";
        return 1;
    }
}
