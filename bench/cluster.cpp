// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// cluster: the lock over a private 3-master Redis Cluster (one replica each) next to one
// private standalone server, in the same run and on one thread: uncontended acquire + release
// cycles (each coroutine on its own name, watchdog leases) at 1 and 50 coroutines, then the
// time from a master's SIGKILL to the first successful acquire of a name in its slots, once
// per shard. See bench/README.md.
#include "common.hpp"
#include "common/redis_cluster.hpp"
#include "core/slot_table.hpp"
#include <corolock/cluster.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <iostream>
#include <memory>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto cluster_warmup = 500ms;
constexpr double default_seconds = 3;
constexpr int cluster_counts[] = {1, 50};
// One name in each master's slots of a fresh 3-master cluster (0-5460, 5461-10922,
// 10923-16383): the slot to kill the master of, and a name found there.
constexpr std::uint16_t shard_slots[] = {0, 8000, 16383};

asio::awaitable<void> cycle_worker(corolock::mutex& m, crew& c, std::uint64_t& cycles) {
    while (!c.stop) {
        auto [ec, l] = co_await m.async_acquire(tuple_deferred);
        if (!ec)
            std::tie(ec) = co_await l.async_release(tuple_deferred);
        if (ec) {
            c.note(ec, "lock");
            co_await sleep_for(10ms);
            continue;
        }
        ++cycles;
    }
}

// Uncontended cycles/s of `coroutines` coroutines, each on its own mutex over `io` (a
// connection or a cluster).
template <class Io>
asio::awaitable<double> cycles_per_s(Io& io, int coroutines, double seconds, crew& c) {
    auto ex = co_await asio::this_coro::executor;
    std::uint64_t cycles = 0;
    std::vector<std::unique_ptr<corolock::mutex>> locks;
    for (int i = 0; i < coroutines; ++i) {
        locks.push_back(
            std::make_unique<corolock::mutex>(io, "bench:cluster:" + std::to_string(i)));
        c.spawn(ex, cycle_worker(*locks.back(), c, cycles));
    }
    co_await sleep_for(cluster_warmup);
    const auto c0 = cycles;
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(seconds));
    const auto t1 = clock_type::now();
    const auto c1 = cycles;
    co_await c.finish();
    co_return double(c1 - c0) / seconds_between(t0, t1);
}

// A name whose slot is `slot`'s master's: the same shard (first-fit by CRC16).
std::string name_in_shard(test::redis_cluster& c, std::uint16_t slot) {
    auto& owner = c.master_of(slot);
    for (int i = 0;; ++i) {
        auto n = "bench:failover:" + std::to_string(i);
        if (&c.master_of(static_cast<std::uint16_t>(corolock::detail::key_slot(n))) == &owner)
            return n;
    }
}

} // namespace

int run_cluster(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_seconds;
    if (o.host || o.port || o.threads != 1) {
        std::cerr << "corolock-bench: cluster starts its own servers and runs on one thread\n";
        return 2;
    }
    if (!test::redis_process::available() || !test::redis_cluster::available()) {
        std::cerr << "corolock-bench: cluster needs redis-server and redis-cli\n";
        return 2;
    }
    test::redis_process standalone;
    test::redis_cluster nodes(3, 1);
    std::cerr << "corolock-bench: started a standalone redis-server and a 6-node cluster\n";

    asio::io_context ioc(1);
    target t;
    t.host = "127.0.0.1";
    t.port = std::to_string(standalone.port());
    corolock::connection conn(ioc.get_executor(), bench_config(t));
    corolock::cluster_config cfg; // the defaults a user gets, but for the seed
    cfg.seeds.push_back({"127.0.0.1", std::to_string(nodes.nodes()[0]->port())});
    corolock::cluster cl(ioc.get_executor(), cfg);
    conn.async_run(asio::detached);
    cl.async_run(asio::detached);

    struct row {
        int coroutines;
        double standalone = missing, cluster = missing;
    };
    std::vector<row> rows;
    std::vector<double> failover_ms;
    std::uint64_t errors = 0;
    std::string first_error;
    std::exception_ptr failed;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            for (int n : cluster_counts) {
                row r{n};
                crew a, b;
                r.standalone = co_await cycles_per_s(conn, n, o.seconds, a);
                r.cluster = co_await cycles_per_s(cl, n, o.seconds, b);
                errors += a.errors + b.errors;
                if (first_error.empty())
                    first_error = !a.first_error.empty() ? a.first_error : b.first_error;
                rows.push_back(r);
            }
            // Failover: one master per shard, each killed while its name is free.
            for (auto slot : shard_slots) {
                const auto name = name_in_shard(nodes, slot);
                corolock::mutex m(cl, name);
                auto [ec, l] = co_await m.async_acquire(tuple_deferred);
                if (!ec)
                    co_await l.async_release(tuple_deferred);
                const auto t0 = clock_type::now();
                nodes.master_of(slot).kill();
                for (;;) {
                    auto [aec, al] = co_await m.async_acquire_for(100ms, tuple_deferred);
                    if (!aec) { // else tried again at once: the figure's resolution is 100 ms
                        failover_ms.push_back(us_between(t0, clock_type::now()) / 1000);
                        co_await al.async_release(tuple_deferred);
                        break;
                    }
                    if (clock_type::now() - t0 > 60s) {
                        first_error = "no acquire within 60 s of the master's death";
                        break;
                    }
                }
            }
            conn.cancel();
            cl.cancel();
        },
        [&](std::exception_ptr e) {
            failed = e;
            conn.cancel();
            cl.cancel();
        });
    ioc.run();
    if (failed)
        std::rethrow_exception(failed);

    std::cout << "\ncluster: one thread; 3-master cluster (1 replica each, cluster-node-timeout "
                 "1000 ms, client defaults) vs one standalone server, both private; "
              << o.seconds << " s per figure after " << cluster_warmup.count() << " ms warm-up; "
              << cores() << " cores shared with 7 servers\n";
    json_line j;
    for (const auto& r : rows) {
        const double ratio = r.cluster / r.standalone;
        std::cout << "  " << r.coroutines << " coroutine(s), uncontended cycles/s: cluster "
                  << show(r.cluster, 0) << ", standalone " << show(r.standalone, 0) << ": ratio "
                  << show(ratio, 3) << "\n";
        const std::string k = "c" + std::to_string(r.coroutines) + "_";
        j.num(k + "cluster_cycles_per_s", r.cluster)
            .num(k + "standalone_cycles_per_s", r.standalone)
            .num(k + "ratio", ratio);
    }
    std::cout << "  master SIGKILL to first acquire in its slots:";
    for (double ms : failover_ms)
        std::cout << " " << show(ms, 0) << " ms";
    auto sorted = failover_ms;
    const double median = sorted.empty() ? missing : percentile(sorted, 0.5);
    std::cout << " (median " << show(median, 0) << " ms)\n";
    j.num("failover_to_acquire_ms_median", median);
    if (!first_error.empty())
        std::cout << "  error: " << first_error << "\n";
    if (o.json)
        j.print(std::cout);
    return errors == 0 && first_error.empty() ? 0 : 1;
}

} // namespace corolock::bench
