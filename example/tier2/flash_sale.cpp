// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A flash sale: 4 processes x 250 coroutines = 1,000 buyers rush for 100 items of stock.
//
// The stock is 10 items (`sale:<run>:item:<i>`) of 10 units each. Buyer b (0..999) wants item
// b % 10, so each item draws exactly 100 buyers for its 10 units: the outcome is fixed (100 sold,
// 900 turned away) and any difference is a bug, never bad luck. Each process makes one
// `corolock::mutex` per item, on `sale:<run>:lock:<i>` (2 s lease, watchdog), and every buyer of
// that item in the process shares it, as the request handlers of a real service would share a
// member. Each acquisition returns the buyer's own `corolock::lease` (its own owner and fencing
// token): a buyer waits up to 10 s for one, and buys with a fenced script run through its lease:
// the decrement runs only while that token is the newest for the lock, only if the stock is
// positive, and records the buyer in `sale:<run>:buyers`. A buyer who finds no stock left is
// turned away. Then it releases the lease.
//
// The parent sets up the stock, starts this program 4 times as `--worker N`, waits until every
// worker is connected, says go, collects each worker's counts from its stdout, reaps the workers
// (on every path: a worker left running is killed), and checks in Redis: 100 sold, no stock below
// zero, 100 buyers recorded, none twice, stock + sold = 10 for every item.
//
//   corolock_flash_sale [--host H] [--port P]
//
// Exits 0 only if every check passes.
#include "common.hpp"
#include "workers.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <exception>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int workers = 4;
constexpr int buyers_per_worker = 250;
constexpr int buyers = workers * buyers_per_worker;
constexpr int items = 10;
constexpr int stock_per_item = 10;
constexpr int total_stock = items * stock_per_item; // 100
constexpr auto acquire_wait = 10s;
constexpr auto lease_time = 2s;
constexpr auto worker_limit = 60s; // a worker gives up (exit 3) after this
constexpr auto parent_limit = 90s; // the parent kills the workers after this

constexpr auto tuple = asio::as_tuple(asio::deferred);

std::string item_key(const std::string& run, int item) {
    return "sale:" + run + ":item:" + std::to_string(item);
}
std::string lock_name(const std::string& run, int item) {
    return "sale:" + run + ":lock:" + std::to_string(item);
}
std::string fence_key(const std::string& run, int item) { // see doc/design.md, "Keys in Redis"
    return "{" + lock_name(run, item) + "}:fence";
}
std::string buyers_key(const std::string& run) {
    return "sale:" + run + ":buyers";
}

// KEYS[1] = the item's stock, KEYS[2] = the buyers list; ARGV[1] = "<buyer>@<item>".
// Runs only while the caller's token is the newest for the item's lock.
const corolock::fenced_script& buy_script() {
    static const corolock::fenced_script s(R"lua(
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
if stock <= 0 then return 0 end
redis.call('DECR', KEYS[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
)lua");
    return s;
}

// ------------------------------------------------------------------------------------ worker

struct tally {
    std::uint64_t bought = 0;
    std::uint64_t turned_away = 0;
    std::uint64_t timeouts = 0;
    std::uint64_t errors = 0;
    std::uint64_t cycles = 0; // acquire + release
    clock_type::duration slowest_acquire{};
    std::string first_problem;

    void problem(std::string what) {
        ++errors;
        if (first_problem.empty())
            first_problem = std::move(what);
    }
};

// `m` is the item's mutex, shared by every buyer of that item in this process; the lease is this
// buyer's own.
asio::awaitable<void> buyer(corolock::mutex& m, const std::string& run, int id, tally& t) {
    const int item = id % items;
    const auto asked = clock_type::now();
    auto [ec, l] = co_await m.async_acquire_for(acquire_wait, tuple);
    t.slowest_acquire = std::max(t.slowest_acquire, clock_type::now() - asked);
    // acquire_timeout: the lock stayed busy; server_timeout: Redis answered nothing in time.
    if (ec == corolock::error::acquire_timeout || ec == corolock::error::server_timeout) {
        ++t.timeouts;
        co_return;
    }
    if (ec) {
        t.problem("acquire: " + ec.message());
        co_return;
    }

    const std::string stock = item_key(run, item), list = buyers_key(run);
    const std::string me = std::to_string(id) + "@" + std::to_string(item);
    const std::string_view keys[] = {stock, list};
    const std::string_view args[] = {me};
    corolock::generic_response resp;
    auto [fec] = co_await l.async_fenced_eval(buy_script(), keys, args, resp, tuple);
    if (fec)
        t.problem("fenced buy: " + fec.message());
    else if (!resp.empty() && resp[0].value == "1")
        ++t.bought;
    else if (!resp.empty() && resp[0].value == "0")
        ++t.turned_away;
    else
        t.problem("fenced buy: unexpected reply");

    auto [rec] = co_await l.async_release(tuple); // consumes the lease
    if (rec)
        t.problem("release: " + rec.message());
    else
        ++t.cycles;
}

asio::awaitable<void> worker_main(corolock::connection& conn, int index, const std::string& run,
                                  tally& t, clock_type::duration& elapsed) {
    auto exec = co_await asio::this_coro::executor;
    corolock::request ping;
    ping.push("PING");
    co_await conn.async_exec(ping, corolock::ignore); // connected: ready to start
    ex::tell_parent("ready");

    asio::posix::stream_descriptor in(exec, ::dup(STDIN_FILENO));
    char go = 0;
    auto [rec, n] =
        co_await asio::async_read(in, asio::buffer(&go, 1), asio::as_tuple(asio::use_awaitable));
    if (rec || n != 1 || go != 'g') {
        t.problem("no start signal from the parent");
        co_return;
    }

    // One mutex per item for the whole process, shared by all its buyers of that item.
    corolock::mutex_options opts;
    opts.lease = lease_time;
    std::deque<corolock::mutex> locks;
    for (int i = 0; i < items; ++i)
        locks.emplace_back(conn, lock_name(run, i), opts);

    const auto start = clock_type::now();
    std::vector<decltype(asio::co_spawn(exec, buyer(locks[0], run, 0, t), asio::deferred))> ops;
    for (int i = 0; i < buyers_per_worker; ++i) {
        const int id = index * buyers_per_worker + i;
        ops.push_back(asio::co_spawn(exec, buyer(locks[id % items], run, id, t), asio::deferred));
    }
    auto [order, errors] = co_await asio::experimental::make_parallel_group(std::move(ops))
                               .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
    (void)order;
    for (const auto& e : errors)
        if (e)
            t.problem("a buyer threw");
    elapsed = clock_type::now() - start;
}

std::int64_t micros(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

int run_worker(const ex::server_options& server, int index, const std::string& run) {
    asio::io_context ioc;
    corolock::connection conn(
        ioc.get_executor(),
        ex::make_config(server, "corolock-flash-sale-worker-" + std::to_string(index)));
    tally t;
    clock_type::duration elapsed{};
    asio::steady_timer limit(ioc, worker_limit);
    limit.async_wait([&](corolock::error_code ec) {
        if (!ec) {
            std::cerr << "flash_sale worker " << index << ": gave up after " << worker_limit.count()
                      << " s\n";
            std::_Exit(3);
        }
    });
    conn.async_run(asio::detached);
    asio::co_spawn(ioc, worker_main(conn, index, run, t, elapsed), [&](std::exception_ptr e) {
        if (e)
            t.problem("worker coroutine threw");
        limit.cancel();
        conn.cancel();
    });
    ioc.run();

    const auto st = corolock::get_lock_stats(conn);
    ex::tell_parent("report bought=" + std::to_string(t.bought) + " turned_away=" +
                    std::to_string(t.turned_away) + " timeouts=" + std::to_string(t.timeouts) +
                    " errors=" + std::to_string(t.errors) + " cycles=" + std::to_string(t.cycles) +
                    " attempts=" + std::to_string(st.attempts) +
                    " pubsub=" + std::to_string(st.pubsub_wakeups) +
                    " timer=" + std::to_string(st.timer_wakeups) +
                    " elapsed_us=" + std::to_string(micros(elapsed)) +
                    " slowest_acquire_us=" + std::to_string(micros(t.slowest_acquire)));
    if (!t.first_problem.empty())
        std::cerr << "flash_sale worker " << index << ": " << t.first_problem << "\n";
    return t.errors == 0 ? 0 : 1;
}

// ------------------------------------------------------------------------------------ parent

struct report {
    bool received = false;
    std::map<std::string, std::uint64_t> counts;
    std::uint64_t operator[](const std::string& k) const {
        const auto it = counts.find(k);
        return it == counts.end() ? 0 : it->second;
    }
};

report parse_report(const std::vector<std::string>& w) {
    report r;
    r.received = true;
    for (std::size_t i = 1; i < w.size(); ++i)
        if (const auto eq = w[i].find('='); eq != std::string::npos)
            r.counts[w[i].substr(0, eq)] = std::strtoull(w[i].c_str() + eq + 1, nullptr, 10);
    return r;
}

// What Redis holds after the sale.
struct outcome {
    std::vector<long long> stock = std::vector<long long>(items, 0);
    std::vector<std::string> buyers;
};

int run_sale(const ex::server_options& server) {
    const std::string run = ex::make_run_tag();
    std::vector<std::string> problems;

    // 1. Stock: 10 items x 10 units (the keys expire on their own if this run is interrupted).
    ex::run_with_connection(
        server, "corolock-flash-sale",
        [&](corolock::connection& conn) -> asio::awaitable<void> {
            corolock::request r;
            r.push("DEL", buyers_key(run));
            for (int i = 0; i < items; ++i)
                r.push("SET", item_key(run, i), stock_per_item, "EX", 600);
            co_await conn.async_exec(r, corolock::ignore);
        },
        10s);

    // 2. Workers: start, wait until each is connected, say go, collect the reports.
    ex::worker_processes procs;
    for (int n = 0; n < workers; ++n)
        procs.spawn({"--host", server.host, "--port", server.port, "--worker", std::to_string(n),
                     "--run", run});
    const auto deadline = clock_type::now() + parent_limit;
    std::vector<report> reports(workers);
    int ready = 0;
    while (ready < workers) {
        const auto ev = procs.next_line(deadline);
        if (!ev || ev->closed)
            break; // a worker ended before it was ready: no sale
        if (ev->line == "ready")
            ++ready;
    }
    const auto start = clock_type::now();
    auto stop = start;
    if (ready == workers) {
        for (std::size_t n = 0; n < procs.size(); ++n)
            procs.send(n, "g");
        while (const auto ev = procs.next_line(deadline)) {
            const auto w = ex::words(ev->line);
            if (!w.empty() && w[0] == "report") {
                reports[ev->worker] = parse_report(w);
                stop = clock_type::now();
            }
        }
    } else {
        problems.push_back("only " + std::to_string(ready) + " of " + std::to_string(workers) +
                           " workers got ready");
    }
    if (procs.timed_out())
        problems.push_back("workers still running after " + std::to_string(parent_limit.count()) +
                           " s: killed");
    procs.reap_all(clock_type::now() + 5s);
    for (int n = 0; n < workers; ++n) {
        if (!procs.exited_ok(n))
            problems.push_back("worker " + std::to_string(n) + " ended with " + procs.describe(n));
        if (!reports[n].received)
            problems.push_back("no report from worker " + std::to_string(n));
    }

    // 3. What Redis says, then clean up.
    outcome got;
    ex::run_with_connection(
        server, "corolock-flash-sale",
        [&](corolock::connection& conn) -> asio::awaitable<void> {
            corolock::request r;
            r.push("LRANGE", buyers_key(run), 0, -1);
            for (int i = 0; i < items; ++i)
                r.push("GET", item_key(run, i));
            corolock::generic_response resp;
            co_await conn.async_exec(r, resp);
            // Node 0 is the LRANGE array, its elements follow at depth 1, then one GET each.
            std::size_t at = 1;
            for (; at < resp.size() && resp[at].depth == 1; ++at)
                got.buyers.push_back(resp[at].value);
            for (int i = 0; i < items && at < resp.size(); ++i, ++at)
                got.stock[i] = resp[at].data_type == corolock::resp3::type::null
                                   ? 0
                                   : std::atoll(resp[at].value.c_str());
            corolock::request cleanup;
            cleanup.push("DEL", buyers_key(run));
            for (int i = 0; i < items; ++i)
                cleanup.push("DEL", item_key(run, i), lock_name(run, i), fence_key(run, i));
            co_await conn.async_exec(cleanup, corolock::ignore);
        },
        10s);

    // 4. Checks.
    std::uint64_t bought = 0, turned_away = 0, timeouts = 0, errors = 0, cycles = 0, attempts = 0,
                  pubsub = 0, timer = 0;
    for (const auto& r : reports) {
        bought += r["bought"];
        turned_away += r["turned_away"];
        timeouts += r["timeouts"];
        errors += r["errors"];
        cycles += r["cycles"];
        attempts += r["attempts"];
        pubsub += r["pubsub"];
        timer += r["timer"];
    }
    std::set<std::string> unique_buyers;
    std::vector<long long> recorded(items, 0);
    std::uint64_t duplicates = 0;
    for (const auto& b : got.buyers) {
        const auto at = b.find('@');
        if (!unique_buyers.insert(b.substr(0, at)).second)
            ++duplicates;
        if (at != std::string::npos) {
            const int item = std::atoi(b.c_str() + at + 1);
            if (item >= 0 && item < items)
                ++recorded[item];
        }
    }
    const auto sold = static_cast<long long>(got.buyers.size());
    long long oversold = 0, below_zero = 0, unbalanced = 0;
    for (int i = 0; i < items; ++i) {
        oversold += std::max(0LL, recorded[i] - stock_per_item);
        below_zero += got.stock[i] < 0 ? 1 : 0;
        unbalanced += got.stock[i] + recorded[i] != stock_per_item ? 1 : 0;
    }
    if (sold != total_stock)
        problems.push_back("sold " + std::to_string(sold) + ", expected " +
                           std::to_string(total_stock));
    if (oversold != 0 || below_zero != 0)
        problems.push_back("oversold: " + std::to_string(oversold) + " units, " +
                           std::to_string(below_zero) + " items below zero");
    if (duplicates != 0)
        problems.push_back(std::to_string(duplicates) + " buyers recorded twice");
    if (unbalanced != 0)
        problems.push_back(std::to_string(unbalanced) +
                           " items where stock + sold != " + std::to_string(stock_per_item));
    if (bought != static_cast<std::uint64_t>(sold))
        problems.push_back("workers counted " + std::to_string(bought) + " purchases, Redis " +
                           std::to_string(sold));
    if (errors != 0)
        problems.push_back(std::to_string(errors) + " errors in the workers");
    if (bought + turned_away + timeouts + errors != static_cast<std::uint64_t>(buyers))
        problems.push_back("buyers unaccounted for");

    const double secs = std::chrono::duration<double>(stop - start).count();
    const auto rate = [&](double n) { return secs > 0 ? n / secs : 0.0; };
    std::cout << "server              " << server.host << ":" << server.port << "\n"
              << "buyers              " << workers << " processes x " << buyers_per_worker
              << " coroutines = " << buyers << "\n"
              << "stock               " << items << " items x " << stock_per_item << " = "
              << total_stock << "\n"
              << "sold                " << sold << "\n"
              << "oversold            " << oversold << "\n"
              << "turned away         " << turned_away << "\n"
              << "acquire timeouts    " << timeouts << "\n"
              << "errors              " << errors << "\n"
              << "total time          " << secs << " s\n"
              << "purchases/s         " << rate(double(sold)) << "\n"
              << "lock cycles/s       " << rate(double(cycles)) << "  (" << cycles
              << " acquire+release)\n"
              << "acquire attempts    " << attempts << "  (" << pubsub << " pub/sub wake-ups, "
              << timer << " timer wake-ups)\n";
    for (int n = 0; n < workers; ++n)
        std::cout << "worker " << n << "            bought " << reports[n]["bought"]
                  << ", turned away " << reports[n]["turned_away"] << ", "
                  << reports[n]["elapsed_us"] / 1000 << " ms, slowest acquire "
                  << reports[n]["slowest_acquire_us"] / 1000 << " ms, " << procs.describe(n)
                  << "\n";
    for (const auto& p : problems)
        std::cout << "problem             " << p << "\n";
    std::cout << (problems.empty() ? "OK" : "FAILED") << "\n";
    return problems.empty() ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    std::string worker, run;
    const auto server = ex::parse_server_options(
        argc, argv, exit_code, {{"--worker", &worker, "", true}, {"--run", &run, "", true}});
    if (!server)
        return exit_code;
    try {
        if (!worker.empty()) {
            const auto index = ex::parse_number(worker, 0);
            if (!index || *index < 0 || *index >= workers || run.empty()) {
                std::cerr << "flash_sale: bad --worker/--run\n";
                return 2;
            }
            return run_worker(*server, static_cast<int>(*index), run);
        }
        return run_sale(*server);
    } catch (const std::exception& e) {
        std::cerr << "flash_sale: " << e.what() << "\n";
        return 1;
    }
}
