// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S13: a random nemesis (Jepsen-style, scaled down). Counter workers run the S1 workload through
// a fault proxy for COROLOCK_NEMESIS_SECONDS (default 60) while, every 2 to 4 s, the nemesis
// picks one fault at random: pause redis, kill and restart redis, blackhole the proxy, delay it,
// SIGSTOP a worker, or CLIENT KILL every client. The seed is printed; COROLOCK_FAULT_SEED=<seed>
// replays the same schedule of faults (timing on a busy machine still varies).
//
// Pass: no crash and no hang (every worker exits 0 by itself), fencing clean, lost updates no
// more than the writes of leases the library reported lost, every worker makes progress, no
// orphan lock keys.
#include "common/fault_proxy.hpp"
#include "harness.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <memory>
#include <random>
#include <thread>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s13_nemesis {

namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using namespace corolock::fault;
using corolock::test::direction;
using corolock::test::fault_proxy;
using corolock::test::redis_process;

namespace {

constexpr auto lease = 1000ms;

std::chrono::seconds nemesis_seconds() {
    const char* v = std::getenv("COROLOCK_NEMESIS_SECONDS");
    const int s = v ? std::atoi(v) : 0;
    return std::chrono::seconds(s > 0 ? s : 60);
}

} // namespace

BOOST_AUTO_TEST_SUITE(s13_nemesis)

BOOST_AUTO_TEST_CASE(random_faults_keep_fencing_clean, *utf::timeout(280)) {
    constexpr int workers = 4, coros = 8;
    const auto seed = pick_seed();
    const auto run_for = nemesis_seconds();
    BOOST_TEST_MESSAGE("S13: seed " << seed << " (replay with COROLOCK_FAULT_SEED=" << seed << "), "
                                    << run_for.count() << " s");
    std::mt19937_64 rng(seed);
    fenced_resource res;
    redis_process locks;
    fault_proxy proxy(locks.port());
    temp_dir dir;
    schedule faults;
    const auto start = faults.start_ns();
    const auto end_ns = start + std::chrono::nanoseconds(run_for).count();

    std::vector<std::unique_ptr<worker_process>> procs;
    for (int w = 0; w < workers; ++w) {
        counter_options o;
        o.worker = w;
        o.lock_port = proxy.port(); // every fault of the network hits the lock traffic only
        o.res_port = res.port();
        o.history = dir.file("w" + std::to_string(w));
        o.coros = coros;
        o.iterations = 0;
        o.until_ns = end_ns;
        o.lease = lease;
        o.acquire_wait = 5s;
        o.seed = seed + static_cast<std::uint64_t>(w);
        procs.push_back(std::make_unique<worker_process>("counter", o.args()));
    }
    faults.note(std::to_string(workers) + " counter workers started");

    std::map<std::string, int> fault_counts;
    auto pause_for = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
    while (monotonic_ns() + 4'000'000'000LL < end_ns) {
        pause_for(std::chrono::milliseconds(2000 + rng() % 2000));
        switch (rng() % 6) {
        case 0:
            faults.note("SIGSTOP redis 1.5 s");
            locks.pause();
            pause_for(1500ms);
            locks.resume();
            faults.note("SIGCONT redis");
            ++fault_counts["pause redis"];
            break;
        case 1:
            faults.note("SIGKILL redis");
            locks.kill();
            locks.start();
            faults.note("redis restarted, empty");
            ++fault_counts["restart redis"];
            break;
        case 2:
            faults.note("proxy blackhole 1.5 s");
            proxy.blackhole();
            pause_for(1500ms);
            proxy.heal();
            faults.note("proxy healed");
            ++fault_counts["blackhole"];
            break;
        case 3:
            faults.note("proxy delay 300 ms each way, 3 s");
            proxy.delay(direction::client_to_server, 150ms, 50ms);
            proxy.delay(direction::server_to_client, 150ms, 50ms);
            pause_for(3000ms);
            proxy.heal();
            faults.note("proxy healed");
            ++fault_counts["delay"];
            break;
        case 4: {
            auto& victim = *procs[rng() % procs.size()];
            faults.note("SIGSTOP worker pid " + std::to_string(victim.pid()) + " 2 s");
            victim.pause();
            pause_for(2000ms);
            victim.resume();
            faults.note("SIGCONT worker");
            ++fault_counts["pause worker"];
            break;
        }
        default:
            faults.note("CLIENT KILL TYPE normal");
            locks.command({"CLIENT", "KILL", "TYPE", "normal"});
            ++fault_counts["client kill"];
            break;
        }
    }
    proxy.heal();

    std::vector<int> statuses;
    for (auto& p : procs)
        statuses.push_back(p->wait(90s));
    const auto end = faults.note("workers done");
    std::this_thread::sleep_for(lease + 200ms);
    const auto orphans = orphan_keys(locks);

    const auto history = parse_sections(dir.read_all());
    const auto c = count(history);
    const auto overlaps_all = find_overlaps(history, false);
    const auto overlaps = find_overlaps(history, true);
    const auto fencing = check_fencing(history, res.accepted());
    std::int64_t wrote = 0, lost_wrote = 0;
    for (const auto& s : history) {
        wrote += s.wrote;
        lost_wrote += s.wrote && s.lost();
    }
    const auto lost_updates = wrote - res.counter();
    std::string kinds;
    for (const auto& [k, n] : fault_counts)
        kinds += k + " x" + std::to_string(n) + ", ";
    BOOST_TEST_MESSAGE("S13: faults "
                       << kinds << "in " << ms_text(end - start) << " ms; " << c.acquired
                       << " sections: ok " << c.ok << ", lost " << c.lost << ", failed acquires "
                       << c.failed_acquires << ", errors " << c.errors << "; overlaps counted "
                       << overlaps_all.overlaps << ", " << overlaps.overlaps
                       << " among leases never lost; tokens checked " << fencing.tokens_checked
                       << ", accepted " << fencing.accepted << ", refused " << fencing.refused
                       << "; lost updates " << lost_updates << " (writes by leases reported lost "
                       << lost_wrote << ")");

    for (std::size_t w = 0; w < statuses.size(); ++w)
        BOOST_TEST(statuses[w] == 0, "worker " << w << " exit status " << statuses[w]);
    BOOST_TEST(fencing.problems.empty());
    for (const auto& p : fencing.problems)
        BOOST_TEST_MESSAGE("  " << p);
    BOOST_TEST(lost_updates >= 0);
    // Lost updates come only from writers whose lease was reported lost: one stale GET-then-SET
    // (a worker paused between the two) can erase any number of updates, so they are not
    // counted one for one; the fence refused exactly those writers (check_fencing).
    BOOST_TEST((lost_updates == 0 || lost_wrote > 0));
    for (const auto& p : check_liveness(history, workers, 10))
        BOOST_TEST(false, p);
    BOOST_TEST(orphans.empty());
    for (const auto& k : orphans)
        BOOST_TEST_MESSAGE("  orphan key " << k);
    if (current_test_failed())
        report_failure("S13 nemesis", seed, faults, history);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s13_nemesis
