// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S14, the multi-lock under load (issue 9): 4 worker processes x 50 coroutines each take random
// pairs and triples of 10 names (listed in random order) and move units between the names'
// counters with a plain GET then SET (non-atomic) on the same redis-server. Some acquires are
// cancelled at a random point. Totals are conserved exactly (no two holders of a name ever
// overlap), nothing deadlocks, every acquire completes by its deadline (or is cancelled; within
// 150 ms plus the worker's own measured event-loop lag), and no lock key is left at the end.
#include "common/test_config.hpp"
#include "harness.hpp"
#include <corolock/multi_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s14_multi_lock {

namespace asio = boost::asio;
namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using namespace corolock::fault;
using corolock::error_code;
using corolock::test::redis_process;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int names = 10;
constexpr std::int64_t units_per_name = 1000;
using corolock::test::tuple_deferred;
// A completion counts as late when it comes this long after its deadline plus the worst lag of
// the worker's own event loop (a probe timer's overshoot, measured alongside: on a loaded
// machine every timer of the worker fires late, the lock's too). A deadline that is not honoured
// at all shows as seconds (a wait until the names come free).
constexpr auto late_slack = 150ms;

std::string lock_name(int i) {
    return "s14:lock:" + std::to_string(i);
}
std::string counter_name(int i) {
    return "s14:cnt:" + std::to_string(i);
}

struct mover_counts {
    std::uint64_t ok = 0, timeouts = 0, aborted = 0, late = 0, lost = 0, errors = 0;
    std::int64_t worst_us = 0;          // the latest completion after its deadline
    std::int64_t worst_lag_us = 0;      // the worst overshoot of the worker's probe timer
    std::vector<std::int64_t> after_us; // every completion's lateness (negative: early)
};

asio::awaitable<std::int64_t> get_counter(corolock::connection& c, const std::string& key) {
    corolock::request req;
    req.push("GET", key);
    corolock::generic_response resp;
    auto [ec, n] = co_await c.async_exec(req, resp, tuple_deferred);
    if (ec || resp.empty())
        throw boost::system::system_error(ec ? ec : error_code(corolock::error::unexpected_reply));
    co_return std::stoll(resp.at(0).value);
}

asio::awaitable<void> set_counter(corolock::connection& c, const std::string& key, std::int64_t v) {
    corolock::request req;
    req.push("SET", key, std::to_string(v));
    co_await c.async_exec(req, corolock::ignore);
}

asio::awaitable<void> mover(worker_io& io, std::int64_t until_ns, std::uint64_t seed,
                            mover_counts& n) {
    std::mt19937_64 rng(seed);
    auto ex = co_await asio::this_coro::executor;
    corolock::mutex_options opts;
    opts.lease = 2s;
    while (monotonic_ns() < until_ns) {
        std::vector<int> picked(names);
        std::iota(picked.begin(), picked.end(), 0);
        std::shuffle(picked.begin(), picked.end(), rng);
        picked.resize(2 + rng() % 2); // a pair or a triple, in random order
        std::vector<std::string> set;
        for (int i : picked)
            set.push_back(lock_name(i));
        corolock::multi_lock m(io.locks, set, opts);
        const auto deadline = clock_type::now() + std::chrono::milliseconds(100 + rng() % 1400);
        error_code ec;
        corolock::multi_lease l;
        if (rng() % 10 == 0) {
            // Cancelled at a random point: before the first write, on the wire, while waiting.
            asio::steady_timer t(ex, std::chrono::microseconds(rng() % 5000));
            auto [order, aec, al, tec] =
                co_await asio::experimental::make_parallel_group(
                    m.async_acquire_until(deadline, asio::deferred), t.async_wait(asio::deferred))
                    .async_wait(asio::experimental::wait_for_one(), asio::deferred);
            (void)order;
            (void)tec;
            ec = aec;
            l = std::move(al);
        } else {
            std::tie(ec, l) = co_await m.async_acquire_until(deadline, tuple_deferred);
        }
        const auto after = clock_type::now() - deadline;
        n.worst_us = std::max<std::int64_t>(
            n.worst_us, std::chrono::duration_cast<std::chrono::microseconds>(after).count());
        n.after_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(after).count());
        if (ec == asio::error::operation_aborted) {
            ++n.aborted;
            continue;
        }
        // connect_timeout: no attempt answered while the connection was down, its reconnect
        // timed out (what an acquire on a down connection reports instead of server_timeout).
        if (ec == corolock::error::acquire_timeout || ec == corolock::error::server_timeout ||
            ec == corolock::error::connect_timeout) {
            ++n.timeouts;
            continue;
        }
        if (ec || !l.owns()) {
            ++n.errors;
            std::cerr << "s14 acquire: " << ec.message() << "\n";
            continue;
        }
        // Move units from the first name to the others: read all, pause, write all.
        std::vector<std::int64_t> v;
        for (int i : picked)
            v.push_back(co_await get_counter(io.res, counter_name(i)));
        asio::steady_timer pause(ex, std::chrono::microseconds(rng() % 1000));
        co_await pause.async_wait(tuple_deferred);
        if (!l.valid()) { // a well-behaved holder writes nothing once it may have lost a name
            ++n.lost;
        } else {
            for (std::size_t k = 1; k < v.size(); ++k) {
                const auto amount = static_cast<std::int64_t>(1 + rng() % 5);
                v[0] -= amount;
                v[k] += amount;
            }
            for (std::size_t k = 0; k < v.size(); ++k)
                co_await set_counter(io.res, counter_name(picked[k]), v[k]);
        }
        auto [rec] = co_await l.async_release(tuple_deferred);
        if (rec) {
            ++n.lost;
            std::cerr << "s14 release: " << rec.message() << "\n";
        } else {
            ++n.ok;
        }
    }
}

// Measures how late a 5 ms timer fires on this worker's event loop, until `until_ns`.
asio::awaitable<void> lag_probe(std::int64_t until_ns, mover_counts& n) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (monotonic_ns() < until_ns) {
        t.expires_after(5ms);
        const auto due = t.expiry();
        co_await t.async_wait(tuple_deferred);
        n.worst_lag_us = std::max<std::int64_t>(
            n.worst_lag_us,
            std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - due).count());
    }
}

} // namespace

COROLOCK_FAULT_WORKER(multi_mover) {
    const auto a = parse_args(args);
    const auto port = static_cast<std::uint16_t>(std::stoi(a.at("port")));
    const std::int64_t until_ns = std::stoll(a.at("until_ns"));
    const int coros = std::stoi(a.at("coros"));
    const std::uint64_t seed = std::stoull(a.at("seed"));
    // No faults here: a PONG delayed by the load must not drop the connection (a drop makes
    // releases' outcomes unknown, and their keys stay until their leases end).
    worker_io io(port, port, 2s);
    history_writer out("-");
    mover_counts n;
    std::uint64_t held = 0, waiting = 0;
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        using op = decltype(asio::co_spawn(ex, mover(io, 0, 0, n), asio::deferred));
        std::vector<op> ops;
        ops.push_back(asio::co_spawn(ex, lag_probe(until_ns, n), asio::deferred));
        for (int c = 0; c < coros; ++c)
            ops.push_back(
                asio::co_spawn(ex, mover(io, until_ns, seed * 1000 + c, n), asio::deferred));
        auto [order, errors] = co_await asio::experimental::make_parallel_group(std::move(ops))
                                   .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        (void)order;
        for (const auto& e : errors)
            if (e)
                ++n.errors;
        const auto allowed_us =
            n.worst_lag_us +
            std::chrono::duration_cast<std::chrono::microseconds>(late_slack).count();
        for (auto a : n.after_us)
            n.late += a > allowed_us;
        const auto st = get_lock_stats(io.locks);
        held = st.leases_held;
        waiting = st.waiters;
        record r{"stats", {}};
        r.fields["w"] = a.at("worker");
        r.fields["ok"] = std::to_string(n.ok);
        r.fields["timeouts"] = std::to_string(n.timeouts);
        r.fields["aborted"] = std::to_string(n.aborted);
        r.fields["late"] = std::to_string(n.late);
        r.fields["worst_us"] = std::to_string(n.worst_us);
        r.fields["lag_us"] = std::to_string(n.worst_lag_us);
        r.fields["lost"] = std::to_string(n.lost);
        r.fields["errors"] = std::to_string(n.errors);
        r.fields["held"] = std::to_string(held);
        r.fields["waiting"] = std::to_string(waiting);
        r.fields["connects"] = std::to_string(io.locks.stats().connects);
        r.fields["undos"] = std::to_string(st.undos);
        r.fields["leases_lost"] = std::to_string(st.leases_lost);
        out.write(r);
    });
    return ok && n.errors == 0 && held == 0 && waiting == 0 ? 0 : 1;
}

BOOST_AUTO_TEST_SUITE(s14_multi_lock)

BOOST_AUTO_TEST_CASE(moves_between_counters_conserve_the_total, *utf::timeout(120)) {
    constexpr int workers = 4, coros = 50;
    constexpr auto run_for = 8s;
    const auto seed = pick_seed();
    BOOST_TEST_MESSAGE("seed " << seed);
    redis_process srv;
    for (int i = 0; i < names; ++i)
        BOOST_TEST(srv.command({"SET", counter_name(i), std::to_string(units_per_name)}) ==
                   "+OK\r\n");
    schedule faults;
    const auto until_ns =
        faults.start_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(run_for).count();
    std::vector<std::unique_ptr<worker_process>> procs;
    for (int w = 0; w < workers; ++w)
        procs.push_back(std::make_unique<worker_process>(
            "multi_mover",
            std::vector<std::string>{
                "worker=" + std::to_string(w), "port=" + std::to_string(srv.port()),
                "until_ns=" + std::to_string(until_ns), "coros=" + std::to_string(coros),
                "seed=" + std::to_string(seed + static_cast<std::uint64_t>(w))}));
    faults.note("4 multi_mover workers started");
    // No deadlock: every worker is done within its run time plus its longest acquire.
    for (auto& p : procs)
        BOOST_TEST(p->wait(30s) == 0);
    const auto end = faults.note("workers done");

    mover_counts total;
    for (auto& p : procs)
        for (const auto& r : parse_records(p->output()))
            if (r.kind == "stats") {
                BOOST_TEST_MESSAGE("  worker "
                                   << r.text("w") << ": ok " << r.text("ok") << ", timeouts "
                                   << r.text("timeouts") << ", aborted " << r.text("aborted")
                                   << ", lost " << r.text("lost") << ", latest completion "
                                   << r.text("worst_us") << " us after its deadline (loop lag "
                                   << r.text("lag_us") << " us); " << r.text("connects")
                                   << " connects, " << r.text("undos") << " undos, held "
                                   << r.text("held"));
                total.ok += static_cast<std::uint64_t>(r.num("ok"));
                total.timeouts += static_cast<std::uint64_t>(r.num("timeouts"));
                total.aborted += static_cast<std::uint64_t>(r.num("aborted"));
                total.late += static_cast<std::uint64_t>(r.num("late"));
                total.lost += static_cast<std::uint64_t>(r.num("lost"));
                total.errors += static_cast<std::uint64_t>(r.num("errors"));
                BOOST_TEST(r.num("held") == 0);
                BOOST_TEST(r.num("waiting") == 0);
            }
    std::int64_t sum = 0;
    for (int i = 0; i < names; ++i) {
        const auto v = reply_values(srv.command({"GET", counter_name(i)}));
        BOOST_REQUIRE(v.size() == 1u);
        sum += std::stoll(v[0]);
    }
    std::vector<std::string> left;
    for (const auto& k : orphan_keys(srv))
        if (k.starts_with("s14:lock:"))
            left.push_back(k);
    BOOST_TEST_MESSAGE("S14: " << total.ok << " moves in " << ms_text(end - faults.start_ns())
                               << " ms, " << total.timeouts << " timeouts, " << total.aborted
                               << " cancelled, " << total.lost << " lost, total " << sum);
    BOOST_TEST(sum == names * units_per_name);
    BOOST_TEST(total.ok > 500u); // liveness: the workers made progress
    BOOST_TEST(total.aborted > 0u);
    BOOST_TEST(total.late == 0u);
    BOOST_TEST(total.lost == 0u);
    BOOST_TEST(total.errors == 0u);
    BOOST_TEST(left.empty());
    for (const auto& k : left)
        BOOST_TEST_MESSAGE("  left: " << k);
    if (corolock::fault::current_test_failed())
        BOOST_TEST_MESSAGE(faults.str());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s14_multi_lock
