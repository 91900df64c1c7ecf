// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// redlock: RedLock over 5 private local masters (one connection each, one thread), each figure
// next to a reference from the same run:
//   1. acquire latency p50/p99 (one coroutine, acquire then release), next to a single-node
//      mutex acquire on the first master's connection, in alternating blocks (target <= 1.5x);
//   2. uncontended acquire + release cycles/s with 1, 50 and 256 coroutines (each on its own
//      name), next to the single-node mutex doing the same;
//   3. 50 coroutines contending for one name, holding 1 ms, against the ideal 1/hold.
// See bench/README.md.
#include "common.hpp"
#include <corolock/mutex.hpp>
#include <corolock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>
#include <memory>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

constexpr int node_count = 5;
constexpr int latency_blocks = 10;
constexpr int latency_block_cycles = 200;
constexpr int uncontended_counts[] = {1, 50, 256};
constexpr int contended_coroutines = 50;
constexpr auto contended_hold = 1ms;
constexpr double default_seconds = 2;
constexpr double target_latency_ratio = 1.5;

redlock_options redlock_fixed() {
    redlock_options o;
    o.lease = 10s;
    o.watchdog = false;
    return o;
}

mutex_options mutex_fixed() {
    mutex_options o;
    o.lease = 10s;
    o.watchdog = false;
    return o;
}

struct latencies {
    std::vector<double> redlock_us, mutex_us;
};

asio::awaitable<void> measure_latency(std::vector<connection*> nodes, latencies& out, crew& c) {
    corolock::redlock rl(nodes, "bench:rl:latency", redlock_fixed());
    corolock::mutex m(*nodes.front(), "bench:rl:latency:mutex", mutex_fixed());
    for (int b = 0; b < latency_blocks; ++b) {
        for (int i = 0; i < latency_block_cycles; ++i) {
            const auto t0 = clock_type::now();
            auto [ec, l] = co_await rl.async_acquire(tuple_deferred);
            const auto t1 = clock_type::now();
            if (ec) {
                c.note(ec, "redlock acquire");
                continue;
            }
            out.redlock_us.push_back(us_between(t0, t1));
            co_await l.async_release(tuple_deferred);
        }
        for (int i = 0; i < latency_block_cycles; ++i) {
            const auto t0 = clock_type::now();
            auto [ec, l] = co_await m.async_acquire(tuple_deferred);
            const auto t1 = clock_type::now();
            if (ec) {
                c.note(ec, "mutex acquire");
                continue;
            }
            out.mutex_us.push_back(us_between(t0, t1));
            co_await l.async_release(tuple_deferred);
        }
    }
}

// Each coroutine acquires and releases its own name until stopped.
template <class Lock>
asio::awaitable<void> cycle_worker(std::shared_ptr<Lock> lock, crew& c, std::uint64_t& cycles,
                                   const bool& measuring) {
    while (!c.stop) {
        auto [ec, l] = co_await lock->async_acquire(tuple_deferred);
        if (ec) {
            c.note(ec, "acquire");
            co_await sleep_for(10ms);
            continue;
        }
        auto [ec2] = co_await l.async_release(tuple_deferred);
        if (ec2)
            c.note(ec2, "release");
        else if (measuring)
            ++cycles;
    }
}

asio::awaitable<double> run_cycles(std::vector<connection*> nodes, int coroutines, bool redlock,
                                   double seconds, std::string& first_error) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    std::uint64_t cycles = 0;
    bool measuring = false;
    for (int i = 0; i < coroutines; ++i) {
        const auto name = "bench:rl:cycle:" + std::to_string(redlock) + ":" + std::to_string(i);
        if (redlock)
            c.spawn(ex,
                    cycle_worker(std::make_shared<corolock::redlock>(nodes, name, redlock_fixed()),
                                 c, cycles, measuring));
        else
            c.spawn(ex, cycle_worker(
                            std::make_shared<corolock::mutex>(*nodes.front(), name, mutex_fixed()),
                            c, cycles, measuring));
    }
    co_await sleep_for(300ms);
    measuring = true;
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(seconds));
    measuring = false;
    const auto t1 = clock_type::now();
    co_await c.finish();
    if (c.errors && first_error.empty())
        first_error = c.first_error;
    co_return double(cycles) / seconds_between(t0, t1);
}

asio::awaitable<void> contended_worker(corolock::redlock& rl, crew& c, std::uint64_t& cycles,
                                       const bool& measuring) {
    asio::steady_timer holding(co_await asio::this_coro::executor);
    while (!c.stop) {
        auto [ec, l] = co_await rl.async_acquire(tuple_deferred);
        if (ec) {
            c.note(ec, "acquire");
            co_await sleep_for(10ms);
            continue;
        }
        holding.expires_after(contended_hold);
        co_await holding.async_wait(asio::as_tuple(asio::use_awaitable));
        auto [ec2] = co_await l.async_release(tuple_deferred);
        if (ec2)
            c.note(ec2, "release");
        else if (measuring)
            ++cycles;
    }
}

} // namespace

int run_redlock(const options& o) {
    const double seconds = o.seconds > 0 ? o.seconds : default_seconds;
    std::vector<std::unique_ptr<test::redis_process>> servers;
    for (int i = 0; i < node_count; ++i)
        servers.push_back(std::make_unique<test::redis_process>());
    std::cerr << "corolock-bench: started " << node_count << " redis-server masters\n";

    asio::io_context ioc(1);
    std::vector<std::unique_ptr<connection>> conns;
    std::vector<connection*> nodes;
    for (auto& s : servers) {
        target t;
        t.host = "127.0.0.1";
        t.port = std::to_string(s->port());
        conns.push_back(std::make_unique<connection>(ioc.get_executor(), bench_config(t),
                                                     logger{logger::level::error, {}}));
        conns.back()->async_run([](error_code) {});
        nodes.push_back(conns.back().get());
    }

    latencies lat;
    double uncontended_rl[3] = {}, uncontended_mx[3] = {};
    double contended = 0;
    redlock_stats contended_stats{};
    std::string first_error;
    std::exception_ptr failure;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            std::string err;
            for (auto* n : nodes)
                if (!co_await first_ping(*n, err))
                    throw std::runtime_error(err);
            crew c;
            co_await measure_latency(nodes, lat, c);
            if (c.errors)
                first_error = c.first_error;
            for (int i = 0; i < 3; ++i) {
                uncontended_rl[i] =
                    co_await run_cycles(nodes, uncontended_counts[i], true, seconds, first_error);
                uncontended_mx[i] =
                    co_await run_cycles(nodes, uncontended_counts[i], false, seconds, first_error);
            }
            auto ex = co_await asio::this_coro::executor;
            corolock::redlock rl(nodes, "bench:rl:contended", redlock_fixed());
            crew cc;
            std::uint64_t cycles = 0;
            bool measuring = false;
            for (int i = 0; i < contended_coroutines; ++i)
                cc.spawn(ex, contended_worker(rl, cc, cycles, measuring));
            co_await sleep_for(300ms);
            const auto s0 = rl.stats();
            measuring = true;
            const auto t0 = clock_type::now();
            co_await sleep_for(seconds_of(seconds));
            measuring = false;
            const auto t1 = clock_type::now();
            const auto s1 = rl.stats();
            co_await cc.finish();
            contended = double(cycles) / seconds_between(t0, t1);
            contended_stats.rounds = s1.rounds - s0.rounds;
            contended_stats.rounds_timed_out = s1.rounds_timed_out - s0.rounds_timed_out;
            if (cc.errors && first_error.empty())
                first_error = cc.first_error;
        },
        [&](std::exception_ptr e) {
            failure = e;
            for (auto& cn : conns)
                cn->cancel();
        });
    ioc.run();
    if (failure)
        std::rethrow_exception(failure);

    const double rl50 = percentile(lat.redlock_us, 0.5), rl99 = percentile(lat.redlock_us, 0.99);
    const double mx50 = percentile(lat.mutex_us, 0.5), mx99 = percentile(lat.mutex_us, 0.99);
    std::cout << "redlock over " << node_count << " local masters (one connection each, "
              << "one thread), " << cores() << " cores, load " << loadavg() << "\n";
    std::cout << "1. acquire latency (" << lat.redlock_us.size() << " + " << lat.mutex_us.size()
              << " acquisitions, alternating blocks of " << latency_block_cycles << ")\n"
              << "   redlock p50 " << show(rl50, 1) << " us, p99 " << show(rl99, 1) << " us\n"
              << "   mutex   p50 " << show(mx50, 1) << " us, p99 " << show(mx99, 1)
              << " us (one master)\n"
              << "   ratio p50 " << against(rl50 / mx50, 2, "<=", target_latency_ratio) << ", p99 "
              << show(rl99 / mx99, 2) << "\n";
    std::cout << "2. uncontended acquire + release cycles/s (own name per coroutine, fixed "
                 "10 s lease)\n";
    for (int i = 0; i < 3; ++i)
        std::cout << "   " << uncontended_counts[i] << " coroutines: redlock "
                  << show(uncontended_rl[i], 0) << ", mutex " << show(uncontended_mx[i], 0)
                  << " (ratio " << show(uncontended_rl[i] / uncontended_mx[i], 2) << ")\n";
    const double hold_s = std::chrono::duration<double>(contended_hold).count();
    std::cout << "3. contended: " << contended_coroutines << " coroutines, one name, hold "
              << show(hold_s * 1000, 0) << " ms: " << show(contended, 0)
              << " cycles/s against 1/hold = " << show(1 / hold_s, 0) << " (share "
              << show(contended * hold_s, 2) << "); rounds " << contended_stats.rounds
              << ", decided by node timeout " << contended_stats.rounds_timed_out << "\n";
    if (!first_error.empty())
        std::cout << "   first error: " << first_error << "\n";
    if (o.json) {
        json_line j;
        j.num("redlock_p50_us", rl50)
            .num("redlock_p99_us", rl99)
            .num("mutex_p50_us", mx50)
            .num("mutex_p99_us", mx99);
        for (int i = 0; i < 3; ++i) {
            j.num("redlock_cycles_" + std::to_string(uncontended_counts[i]), uncontended_rl[i]);
            j.num("mutex_cycles_" + std::to_string(uncontended_counts[i]), uncontended_mx[i]);
        }
        j.num("contended_cycles", contended);
        j.print(std::cout);
    }
    return 0;
}

} // namespace corolock::bench
