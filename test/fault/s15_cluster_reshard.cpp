// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S15, the lock over a Redis Cluster while its slots move (issue 8): 4 worker processes, each
// with one `corolock::cluster` client, hold 50 watchdog leases apiece (200 in all) and run the
// counter loop on 20 contended names (2 coroutines per name per worker), while the scenario
// reshards 2,000 slots from one master to another and back, again and again. Every held lease
// survives, no two critical sections of a name overlap, every fenced write is accepted in token
// order, each name's plain counter is exact, the waiters keep making progress, and no lock key
// is left on any node.
#include "common/redis_cluster.hpp"
#include "common/test_config.hpp"
#include "harness.hpp"
#include <corolock/cluster.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using namespace corolock::fault;
using corolock::test::redis_cluster;
using corolock::test::redis_process;
using corolock::test::tuple_deferred;

namespace {

constexpr int names = 20;
constexpr int held_per_worker = 50;

std::string lock_name(int i) {
    return "s15:lock:" + std::to_string(i);
}
std::string resource_name(int i) {
    return "s15:res:" + std::to_string(i);
}

} // namespace

// One worker: holds `held` leases for its whole run, and runs `coros` counter loops per name
// until `until_ns`. Its last line is a `stats` record.
COROLOCK_FAULT_WORKER(cluster_mix) {
    const auto a = parse_args(args);
    const auto seed_port = static_cast<std::uint16_t>(std::stoi(a.at("seed_port")));
    const auto res_port = static_cast<std::uint16_t>(std::stoi(a.at("res_port")));
    const int worker = std::stoi(a.at("worker"));
    const int coros = std::stoi(a.at("coros"));
    const std::int64_t until_ns = std::stoll(a.at("until_ns"));
    // The lock connection of worker_io goes to the seed node and stays unused: the locks go
    // through the cluster client below. A PONG delayed by the load must not drop a node.
    worker_io io(seed_port, res_port, 2s);
    corolock::cluster_config cfg;
    cfg.seeds.push_back({"127.0.0.1", std::to_string(seed_port)});
    cfg.node = fault_config(seed_port);
    cfg.node.health_check_interval = 2s;
    cfg.refresh_interval = 1s;
    corolock::cluster cl(io.ioc.get_executor(), cfg, corolock::test::quiet());
    history_writer out(a.at("history"));
    std::deque<counter_context> cxs;
    std::size_t held_lost = 0, held_failed = 0;
    corolock::lock_stats st;
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        cl.async_run(asio::detached);
        corolock::mutex_options hold;
        hold.lease = 900ms; // a renewal every 300 ms, through every reshard
        std::vector<std::unique_ptr<corolock::mutex>> hm;
        std::vector<corolock::lease> held;
        for (int i = 0; i < held_per_worker; ++i) {
            hm.push_back(std::make_unique<corolock::mutex>(
                cl, "s15:held:" + std::to_string(worker) + ":" + std::to_string(i), hold));
            auto [ec, l] = co_await hm.back()->async_acquire_for(10s, tuple_deferred);
            if (ec)
                ++held_failed;
            else
                held.push_back(std::move(l));
        }
        std::vector<std::unique_ptr<corolock::mutex>> cm;
        int running = 0;
        for (int i = 0; i < names; ++i) {
            counter_options o;
            o.worker = worker;
            o.lock = lock_name(i);
            o.resource = resource_name(i);
            o.iterations = 0;
            o.until_ns = until_ns;
            o.lease = 900ms;
            o.acquire_wait = 10000ms;
            o.seed = std::stoull(a.at("seed"));
            cxs.push_back(counter_context{o, until_ns, io.res, out});
            cm.push_back(std::make_unique<corolock::mutex>(cl, o.lock, hold));
            for (int k = 0; k < coros; ++k) {
                ++running;
                asio::co_spawn(io.ioc, counter_loop(cxs.back(), *cm.back(), i * 100 + k),
                               [&](std::exception_ptr) { --running; });
            }
        }
        asio::steady_timer t(io.ioc);
        while (running > 0) {
            t.expires_after(20ms);
            co_await t.async_wait(tuple_deferred);
        }
        for (auto& l : held)
            held_lost += !l.valid();
        for (auto& l : held)
            co_await l.async_release(tuple_deferred);
        st = corolock::get_lock_stats(cl);
        cl.cancel();
    });
    int unexpected = 0;
    for (const auto& cx : cxs)
        unexpected += cx.unexpected;
    record r{"stats", {}};
    r.fields["w"] = std::to_string(worker);
    r.fields["held_lost"] = std::to_string(held_lost);
    r.fields["held_failed"] = std::to_string(held_failed);
    r.fields["leases_lost"] = std::to_string(st.leases_lost);
    r.fields["held"] = std::to_string(st.leases_held);
    r.fields["waiting"] = std::to_string(st.waiters);
    r.fields["renewals"] = std::to_string(st.renewals);
    r.fields["moved"] = std::to_string(cl.stats().moved);
    r.fields["asks"] = std::to_string(cl.stats().asks);
    r.fields["retries"] = std::to_string(cl.stats().retries);
    r.fields["unexpected"] = std::to_string(unexpected);
    out.write(r);
    return ok && unexpected == 0 && held_failed == 0 ? 0 : 1;
}

BOOST_AUTO_TEST_SUITE(s15_cluster_reshard)

BOOST_AUTO_TEST_CASE(locks_hold_while_slots_move_back_and_forth, *utf::timeout(240)) {
    if (!redis_cluster::available())
        return;
    constexpr int workers = 4, coros = 2;
    constexpr auto run_for = 25s;
    const auto seed = pick_seed();
    BOOST_TEST_MESSAGE("seed " << seed);
    redis_cluster c;
    fenced_resource res;
    temp_dir dir;
    schedule faults;
    const auto until_ns =
        faults.start_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(run_for).count();
    std::vector<std::unique_ptr<worker_process>> procs;
    for (int w = 0; w < workers; ++w)
        procs.push_back(std::make_unique<worker_process>(
            "cluster_mix",
            std::vector<std::string>{
                "worker=" + std::to_string(w),
                "seed_port=" + std::to_string(c.nodes()[static_cast<std::size_t>(w % 3)]->port()),
                "res_port=" + std::to_string(res.port()), "coros=" + std::to_string(coros),
                "until_ns=" + std::to_string(until_ns),
                "history=" + dir.file("w" + std::to_string(w)),
                "seed=" + std::to_string(seed + static_cast<std::uint64_t>(w))}));
    faults.note("4 cluster_mix workers started");
    std::this_thread::sleep_for(2s); // the held leases are taken
    auto& a = c.master_of(0);
    auto& b = c.master_of(16383);
    // At least one round there and back, more while the workers run: a reshard of 2000 slots
    // takes 4 to 12 s here, with the machine's load.
    int moves = 0;
    do {
        faults.note("reshard 2000 slots " + std::to_string(a.port()) + " -> " +
                    std::to_string(b.port()));
        c.reshard(a, b, 2000);
        faults.note("reshard 2000 slots back");
        c.reshard(b, a, 2000);
        moves += 4000;
    } while (monotonic_ns() < until_ns - 5'000'000'000);
    faults.note("reshards done");
    for (auto& p : procs)
        BOOST_TEST(p->wait(60s) == 0);
    const auto end = faults.note("workers done");

    const auto text = dir.read_all();
    const auto history = parse_sections(text);
    const auto n = count(history);
    const auto overlaps = find_overlaps(history, false);
    std::size_t accepted = 0, problems = 0;
    for (int i = 0; i < names; ++i) {
        const auto mine = only_lock(history, lock_name(i));
        const auto fencing = check_fencing(mine, res.accepted(resource_name(i)));
        accepted += fencing.accepted;
        problems += fencing.problems.size();
        for (const auto& p : fencing.problems)
            BOOST_TEST_MESSAGE("  " << lock_name(i) << ": " << p);
        BOOST_TEST(fencing.refused == 0u);
        const auto wrote =
            std::count_if(mine.begin(), mine.end(), [](const section& s) { return s.wrote; });
        BOOST_TEST(res.counter(resource_name(i)) == wrote); // no lost update
    }
    // Progress: the longest time no section of any name began.
    std::vector<std::int64_t> enters;
    for (const auto& s : history)
        if (s.acquired())
            enters.push_back(s.enter_ns);
    std::sort(enters.begin(), enters.end());
    std::int64_t gap = 0;
    for (std::size_t i = 1; i < enters.size(); ++i)
        gap = std::max(gap, enters[i] - enters[i - 1]);
    std::vector<std::string> left;
    for (auto& node : c.nodes())
        for (const auto& k : orphan_keys(*node))
            left.push_back(std::to_string(node->port()) + " " + k);

    BOOST_TEST_MESSAGE("S15: " << n.acquired << " sections in " << ms_text(end - faults.start_ns())
                               << " ms while " << moves << " slot moves ran; overlaps "
                               << overlaps.overlaps << ", fenced writes accepted " << accepted
                               << ", longest time without a new section " << ms_text(gap)
                               << " ms, failed acquires " << n.failed_acquires << ", lost "
                               << n.lost);
    std::int64_t redirects = 0; // the moves reached the workers' requests
    for (const auto& r : parse_records(text))
        if (r.kind == "stats") {
            redirects += r.num("moved") + r.num("asks");
            BOOST_TEST_MESSAGE(
                "  worker " << r.text("w") << ": held leases lost " << r.text("held_lost")
                            << ", renewals " << r.text("renewals") << ", MOVED " << r.text("moved")
                            << ", ASK " << r.text("asks") << ", retries " << r.text("retries"));
            BOOST_TEST(r.num("held_failed") == 0);
            BOOST_TEST(r.num("held_lost") == 0);
            BOOST_TEST(r.num("leases_lost") == 0);
            BOOST_TEST(r.num("held") == 0);
            BOOST_TEST(r.num("waiting") == 0);
            BOOST_TEST(r.num("unexpected") == 0);
        }
    BOOST_TEST(redirects > 0); // (the loop always moves 4000 slots or more)
    BOOST_TEST(overlaps.overlaps == 0u);
    for (const auto& e : overlaps.examples)
        BOOST_TEST_MESSAGE("  " << e);
    BOOST_TEST(problems == 0u);
    BOOST_TEST(n.lost == 0u);
    BOOST_TEST(check_liveness(history, workers, 20).empty());
    BOOST_TEST(gap < 5'000'000'000); // the waiters kept progressing
    BOOST_TEST(left.empty());
    for (const auto& k : left)
        BOOST_TEST_MESSAGE("  left: " << k);
    if (current_test_failed())
        report_failure("S15 cluster reshard", seed, faults, history);
}

BOOST_AUTO_TEST_SUITE_END()
