// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S15, the lock over a Redis Cluster while its slots move (issue 8): 4 worker processes, each
// with one `corolock::cluster` client, hold 50 watchdog leases apiece (200 in all) and run the
// counter loop on 20 contended names (2 coroutines per name per worker), while the scenario
// reshards 2,000 slots from one master to another and back, again and again. Every held lease
// survives, no two critical sections of a name overlap, every fenced write is accepted in token
// order, each name's plain counter is exact, the waiters keep making progress, and no lock key
// is left on any node. A second case kills a master under that load with multi_lock workers
// beside it (scale-out review K2, K3), and bounds the longest wait of every live waiter.
#include "common/redis_cluster.hpp"
#include "common/test_config.hpp"
#include "core/slot_table.hpp"
#include "harness.hpp"
#include <corolock/cluster.hpp>
#include <corolock/multi_lock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s15_cluster_reshard {

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

// What both cluster workers share: their arguments, the worker's connections (the lock
// connection goes to the seed node and stays unused: the locks go through the cluster client) and
// a cluster client whose nodes tolerate a PONG delayed by the load, and the history file.
struct cluster_worker {
    std::map<std::string, std::string> a;
    int worker, coros;
    std::int64_t until_ns;
    worker_io io;
    corolock::cluster cl;
    history_writer out;

    explicit cluster_worker(const std::vector<std::string>& args)
        : a(parse_args(args)), worker(std::stoi(a.at("worker"))), coros(std::stoi(a.at("coros"))),
          until_ns(std::stoll(a.at("until_ns"))), io(port("seed_port"), port("res_port"), 2s),
          cl(io.ioc.get_executor(), config(port("seed_port")), corolock::test::quiet()),
          out(a.at("history")) {}

private:
    std::uint16_t port(const char* key) const {
        return static_cast<std::uint16_t>(std::stoi(a.at(key)));
    }
    static corolock::cluster_config config(std::uint16_t seed_port) {
        corolock::cluster_config cfg;
        cfg.seeds.push_back({"127.0.0.1", std::to_string(seed_port)});
        cfg.node = fault_config(seed_port);
        cfg.node.health_check_interval = 2s;
        cfg.refresh_interval = 1s;
        return cfg;
    }
};

// Starts a cluster worker of `kind` (cluster_mix, cluster_multi) from `seed_node`.
std::unique_ptr<worker_process> start_cluster_worker(const char* kind, int worker,
                                                     const redis_process& seed_node, int coros,
                                                     const fenced_resource& res,
                                                     std::int64_t until_ns, temp_dir& dir,
                                                     std::uint64_t seed) {
    return std::make_unique<worker_process>(
        kind,
        std::vector<std::string>{
            "worker=" + std::to_string(worker), "seed_port=" + std::to_string(seed_node.port()),
            "res_port=" + std::to_string(res.port()), "coros=" + std::to_string(coros),
            "until_ns=" + std::to_string(until_ns),
            "history=" + dir.file("w" + std::to_string(worker)),
            "seed=" + std::to_string(seed + static_cast<std::uint64_t>(worker))});
}

} // namespace

// One worker: holds `held` leases for its whole run, and runs `coros` counter loops per name
// until `until_ns`. Its last line is a `stats` record.
COROLOCK_FAULT_WORKER(cluster_mix) {
    cluster_worker cw(args);
    auto& [a, worker, coros, until_ns, io, cl, out] = cw;
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

constexpr int multi_names = 6;

// One multi_lock worker (scale-out review K3): `coros` coroutines each take a set of 2 or 3 of
// `multi_names` names (random, in random order) over the cluster and add one to each name's
// plain counter (GET, then SET: not atomic). Its last line is a `multi` record: grants, failed
// acquires, lost leases, the longest wait of a coroutine between two grants, and how many
// increments it made per name.
COROLOCK_FAULT_WORKER(cluster_multi) {
    cluster_worker cw(args);
    auto& [a, worker, coros, until_ns, io, cl, out] = cw;
    std::int64_t grants = 0, timeouts = 0, errors = 0, lost = 0, longest = 0, timed_out_at = 0,
                 timed_out_after = 0;
    std::vector<std::int64_t> increments(multi_names, 0);
    std::mt19937_64 rng(std::stoull(a.at("seed")));
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        cl.async_run(asio::detached);
        corolock::mutex_options o;
        o.lease = 900ms;
        int running = 0;
        auto loop = [&]() -> asio::awaitable<void> {
            auto last = monotonic_ns();
            while (monotonic_ns() < until_ns) {
                std::vector<int> pick(multi_names);
                std::iota(pick.begin(), pick.end(), 0);
                std::shuffle(pick.begin(), pick.end(), rng);
                pick.resize(2 + rng() % 2);
                std::vector<std::string> set;
                for (int i : pick)
                    set.push_back("s15:ml:" + std::to_string(i));
                corolock::multi_lock ml(cl, set, o);
                const auto asked = monotonic_ns();
                auto [ec, l] = co_await ml.async_acquire_for(10s, tuple_deferred);
                if (ec || !l.owns()) {
                    ++(ec == corolock::error::acquire_timeout ? timeouts : errors);
                    if (ec == corolock::error::acquire_timeout) {
                        timed_out_at = monotonic_ns();
                        timed_out_after = timed_out_at - asked;
                    }
                    continue;
                }
                ++grants;
                longest = std::max(longest, monotonic_ns() - last);
                for (int i : pick) {
                    const auto key = "s15:mlres:" + std::to_string(i) + ":counter";
                    corolock::request get;
                    get.push("GET", key);
                    corolock::generic_response resp;
                    auto [gec, gn] = co_await io.res.async_exec(get, resp, tuple_deferred);
                    std::int64_t v = 0;
                    if (!gec && !resp.empty() &&
                        resp.front().data_type != corolock::resp3::type::null)
                        v = std::stoll(resp.front().value);
                    corolock::request set_req;
                    set_req.push("SET", key, v + 1);
                    auto [sec, sn] =
                        co_await io.res.async_exec(set_req, corolock::ignore, tuple_deferred);
                    if (!gec && !sec)
                        ++increments[static_cast<std::size_t>(i)];
                }
                auto [rec] = co_await l.async_release(tuple_deferred);
                lost += rec ? 1 : 0;
                last = monotonic_ns();
            }
        };
        for (int k = 0; k < coros; ++k) {
            ++running;
            asio::co_spawn(io.ioc, loop(), [&](std::exception_ptr) { --running; });
        }
        asio::steady_timer t(io.ioc);
        while (running > 0) {
            t.expires_after(20ms);
            co_await t.async_wait(tuple_deferred);
        }
        cl.cancel();
    });
    record r{"multi", {}};
    r.fields["w"] = std::to_string(worker);
    r.fields["grants"] = std::to_string(grants);
    r.fields["timeouts"] = std::to_string(timeouts);
    r.fields["errors"] = std::to_string(errors);
    r.fields["lost"] = std::to_string(lost);
    r.fields["longest_ns"] = std::to_string(longest);
    r.fields["timed_out_ns"] = std::to_string(timed_out_at);
    r.fields["timed_out_after_ns"] = std::to_string(timed_out_after);
    for (int i = 0; i < multi_names; ++i)
        r.fields["n" + std::to_string(i)] = std::to_string(increments[static_cast<std::size_t>(i)]);
    out.write(r);
    return ok ? 0 : 1;
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
        procs.push_back(start_cluster_worker("cluster_mix", w,
                                             *c.nodes()[static_cast<std::size_t>(w % 3)], coros,
                                             res, until_ns, dir, seed));
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

// The longest wait of a live waiter: for each coroutine, the time from one section's release
// to its next section's grant, failed acquires between them included.
std::int64_t longest_wait(const std::vector<section>& history, std::string* where) {
    std::map<std::pair<int, int>, std::int64_t> last_release;
    std::int64_t longest = 0;
    for (const auto& s : history) {
        if (!s.acquired())
            continue;
        const auto key = std::pair{s.worker, s.coro};
        if (auto it = last_release.find(key); it != last_release.end()) {
            if (s.enter_ns - it->second > longest) {
                longest = s.enter_ns - it->second;
                *where = "worker " + std::to_string(s.worker) + " coroutine " +
                         std::to_string(s.coro) + " on " + s.lock;
            }
        }
        last_release[key] = s.release_ns;
    }
    return longest;
}

// A master killed (SIGKILL) under the same load, and 2 multi_lock workers beside it (scale-out
// review K2, K3): its replica takes over. No unreported overlap, tokens in grant order, no lost
// update, no lock key left, and no live waiter of any process, a multi_lock's included, waits
// longer than the lease plus the failover plus 2 s while the others are granted the name
// (before: 10-15 s for a mutex, 20 s and acquire_timeouts for a multi_lock).
BOOST_AUTO_TEST_CASE(waiters_keep_going_when_a_master_is_killed, *utf::timeout(240)) {
    if (!redis_cluster::available())
        return;
    constexpr int workers = 3, coros = 2;
    constexpr auto run_for = 20s;
    const auto seed = pick_seed();
    BOOST_TEST_MESSAGE("seed " << seed);
    redis_cluster c;
    fenced_resource res;
    temp_dir dir;
    schedule faults;
    const auto until_ns =
        faults.start_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(run_for).count();
    auto& victim = c.master_of(corolock::detail::key_slot(lock_name(0)));
    std::vector<redis_process*> seeds; // every worker starts from a node that stays up
    for (auto& n : c.nodes())
        if (n.get() != &victim)
            seeds.push_back(n.get());
    std::vector<std::unique_ptr<worker_process>> procs;
    for (int w = 0; w < workers; ++w)
        procs.push_back(start_cluster_worker("cluster_mix", w, *seeds[static_cast<std::size_t>(w)],
                                             coros, res, until_ns, dir, seed));
    for (int w = 0; w < 2; ++w)
        procs.push_back(start_cluster_worker("cluster_multi", 10 + w,
                                             *seeds[static_cast<std::size_t>(w)], 8, res, until_ns,
                                             dir, seed));
    faults.note("3 cluster_mix and 2 cluster_multi workers started");
    std::this_thread::sleep_for(6s);
    const auto killed = faults.note("SIGKILL the master of " + lock_name(0) + "'s slot, port " +
                                    std::to_string(victim.port()));
    victim.kill();
    c.wait_ok(std::chrono::seconds(30));
    const auto promoted = faults.note("cluster_state:ok again (a replica promoted)");
    for (auto& p : procs)
        BOOST_TEST(p->wait(60s) == 0);
    faults.note("workers done");

    const auto text = dir.read_all();
    const auto history = parse_sections(text);
    const auto n = count(history);
    const auto unreported = find_overlaps(history, true);
    std::size_t problems = 0, after = 0;
    for (int i = 0; i < names; ++i) {
        const auto mine = only_lock(history, lock_name(i));
        const auto fencing = check_fencing(mine, res.accepted(resource_name(i)));
        problems += fencing.problems.size();
        for (const auto& p : fencing.problems)
            BOOST_TEST_MESSAGE("  " << lock_name(i) << ": " << p);
        const auto wrote =
            std::count_if(mine.begin(), mine.end(), [](const section& s) { return s.wrote; });
        BOOST_TEST(res.counter(resource_name(i)) == wrote); // no lost update
    }
    for (const auto& s : history)
        after += s.acquired() && s.enter_ns > promoted && s.lock == lock_name(0) ? 1 : 0;
    std::string where;
    const auto longest = longest_wait(history, &where);
    const auto failover = promoted - killed;
    const std::int64_t bound = 900'000'000 + failover + 2'000'000'000;
    std::vector<std::string> left;
    for (auto& node : c.nodes())
        if (node->running())
            for (const auto& k : orphan_keys(*node))
                left.push_back(std::to_string(node->port()) + " " + k);
    BOOST_TEST_MESSAGE("S15 master killed: "
                       << n.acquired << " sections, " << after << " on " << lock_name(0)
                       << " after the promotion; failover " << ms_text(failover)
                       << " ms; longest wait of a "
                       << "live waiter " << ms_text(longest) << " ms (" << where << "), bound "
                       << ms_text(bound) << " ms; unreported overlaps " << unreported.overlaps
                       << ", lost " << n.lost << ", failed acquires " << n.failed_acquires);
    BOOST_TEST(unreported.overlaps == 0u);
    for (const auto& e : unreported.examples)
        BOOST_TEST_MESSAGE("  " << e);
    BOOST_TEST(problems == 0u);
    BOOST_TEST(after > 10u); // the name of the killed master's slot goes on at the new one
    BOOST_TEST(longest < bound, where);
    // The multi_lock workers: each coroutine kept being granted, no increment was lost.
    std::vector<std::int64_t> increments(multi_names, 0);
    std::int64_t multi_lost = 0, multi_records = 0;
    for (const auto& r : parse_records(text))
        if (r.kind == "multi") {
            ++multi_records;
            multi_lost += r.num("lost");
            for (int i = 0; i < multi_names; ++i)
                increments[static_cast<std::size_t>(i)] += r.num("n" + std::to_string(i));
            BOOST_TEST_MESSAGE(
                "  multi_lock worker "
                << r.text("w") << ": " << r.text("grants") << " grants, " << r.text("timeouts")
                << " acquire_timeouts, " << r.text("errors") << " other errors, " << r.text("lost")
                << " lost; longest wait " << ms_text(r.num("longest_ns")) << " ms; last timeout at "
                << (r.num("timed_out_ns") ? ms_text(r.num("timed_out_ns") - killed) + " ms"
                                          : std::string("-"))
                << " from the kill, after " << ms_text(r.num("timed_out_after_ns"))
                << " ms of its 10 s wait");
            BOOST_TEST(r.num("grants") > 100);
            BOOST_TEST(r.num("timeouts") == 0);
            BOOST_TEST(r.num("longest_ns") < bound);
        }
    BOOST_TEST(multi_records == 2);
    if (multi_lost == 0) // a lost lease may have overlapped, and been told so
        for (int i = 0; i < multi_names; ++i)
            BOOST_TEST(res.counter("s15:mlres:" + std::to_string(i)) ==
                           increments[static_cast<std::size_t>(i)],
                       "s15:mlres:" << i);
    BOOST_TEST(left.empty());
    for (const auto& k : left)
        BOOST_TEST_MESSAGE("  left: " << k);
    if (current_test_failed())
        report_failure("S15 cluster master killed", seed, faults, history);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s15_cluster_reshard
