// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S16, a planned `SENTINEL FAILOVER` under load (issue 17 §4b.1): 3 worker processes, each with
// one Sentinel-backed connection, run the counter loop on 3 names with sections of up to 200 ms,
// and worker 0 holds one more lease that the promoted replica does not have (deleted on the
// replica just before the failover: an unreplicated grant). Between the promotion and
// `+switch-master` (about 1 s) the old master is still writable; a grant made there is dropped
// when it resyncs. Checked: no two sections of a name overlap unless the earlier holder had
// been told of its loss before the later one entered, fencing tokens and the fenced resource
// stay in order, no plain update is lost, and the unreplicated lease is reported lost within
// 1 s of `+switch-master`.
#include "common/sentinel_set.hpp"
#include "common/test_config.hpp"
#include "harness.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <deque>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s16_sentinel_failover {

namespace asio = boost::asio;
namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using namespace corolock::fault;
using corolock::test::sentinel_set;
using corolock::test::tuple_deferred;

namespace {

constexpr int names = 3;
const std::string held_name = "s16:held";

std::string lock_name(int i) {
    return "s16:lock:" + std::to_string(i);
}
std::string resource_name(int i) {
    return "s16:res:" + std::to_string(i);
}

} // namespace

// One worker: `coros` counter loops per name on a Sentinel-backed connection until `until_ns`;
// worker 0 also holds `s16:held` (lease 9 s: its first renewal is due 3 s after the grant) and
// writes a `held` record with its grant and loss times.
COROLOCK_FAULT_WORKER(sentinel_mix) {
    const auto a = parse_args(args);
    const int worker = std::stoi(a.at("worker"));
    const int coros = std::stoi(a.at("coros"));
    const std::int64_t until_ns = std::stoll(a.at("until_ns"));
    const auto res_port = static_cast<std::uint16_t>(std::stoi(a.at("res_port")));
    const auto cfg = sentinel_fault_config(a.at("sentinels"));
    // worker_io's lock connection (to the first master) stays unused: the locks go through the
    // Sentinel-backed connection below.
    worker_io io(static_cast<std::uint16_t>(std::stoi(a.at("master_port"))), res_port);
    corolock::connection conn(io.ioc.get_executor(), cfg, corolock::test::quiet());
    history_writer out(a.at("history"));
    std::deque<counter_context> cxs;
    record held{"held", {}};
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        conn.async_run(asio::detached);
        corolock::mutex_options hold;
        hold.lease = 9s;
        corolock::mutex hm(conn, held_name, hold);
        corolock::lease hl;
        auto lost_at = std::make_shared<std::int64_t>(0);
        if (worker == 0) {
            auto [ec, l] = co_await hm.async_acquire_for(5s, tuple_deferred);
            held.fields["grant_ns"] = std::to_string(monotonic_ns());
            held.fields["error"] = ec ? ec.message() : "ok";
            hl = std::move(l);
            if (hl)
                hl.async_wait_lost([lost_at](corolock::error_code lost) {
                    if (lost && lost != asio::error::operation_aborted)
                        *lost_at = monotonic_ns();
                });
        }
        std::vector<std::unique_ptr<corolock::mutex>> ms;
        int running = 0;
        // Short leases: a key the promoted replica got before the promotion, whose release the old
        // master did not replicate, expires there within the promotion-to-switch window.
        corolock::mutex_options lopts;
        lopts.lease = 500ms;
        for (int i = 0; i < names; ++i) {
            counter_options o;
            o.worker = worker;
            o.lock = lock_name(i);
            o.resource = resource_name(i);
            o.iterations = 0;
            o.until_ns = until_ns;
            o.lease = 500ms;
            o.acquire_wait = 10000ms;
            o.pause = 200000us; // sections of up to 200 ms: a holder is inside at the switch
            o.seed = std::stoull(a.at("seed"));
            cxs.push_back(counter_context{o, until_ns, io.res, out});
            ms.push_back(std::make_unique<corolock::mutex>(conn, o.lock, lopts));
            for (int k = 0; k < coros; ++k) {
                ++running;
                asio::co_spawn(io.ioc, counter_loop(cxs.back(), *ms.back(), i * 100 + k),
                               [&](std::exception_ptr) { --running; });
            }
        }
        asio::steady_timer t(io.ioc);
        while (running > 0) {
            t.expires_after(20ms);
            co_await t.async_wait(tuple_deferred);
        }
        if (worker == 0) {
            held.fields["lost_ns"] = std::to_string(*lost_at);
            co_await hl.async_release(tuple_deferred);
        }
        held.fields["switches"] = std::to_string(conn.stats().master_switches);
        conn.cancel();
    });
    int unexpected = 0;
    for (const auto& cx : cxs)
        unexpected += cx.unexpected;
    held.fields["w"] = std::to_string(worker);
    held.fields["unexpected"] = std::to_string(unexpected);
    out.write(held);
    return ok && unexpected == 0 ? 0 : 1;
}

BOOST_AUTO_TEST_SUITE(s16_sentinel_failover)

BOOST_AUTO_TEST_CASE(planned_failover_no_unreported_overlap, *utf::timeout(120)) {
    constexpr int workers = 3, coros = 2;
    const auto seed = pick_seed();
    BOOST_TEST_MESSAGE("seed " << seed);
    sentinel_set set;
    fenced_resource res;
    temp_dir dir;
    schedule faults;
    const auto replica = set.node(1).port();
    const auto until_ns = faults.start_ns() + 9'000'000'000;
    // Each worker lists the Sentinels in another order, as processes that resolved at other
    // times do: a watch of one Sentinel per process hears the switch at different times.
    const auto addrs = set.addresses();
    std::vector<std::unique_ptr<worker_process>> procs;
    for (int w = 0; w < workers; ++w) {
        std::string sentinels;
        for (std::size_t i = 0; i < addrs.size(); ++i)
            sentinels +=
                (i ? "," : "") + addrs[(i + static_cast<std::size_t>(w)) % addrs.size()].port;
        procs.push_back(std::make_unique<worker_process>(
            "sentinel_mix",
            std::vector<std::string>{
                "worker=" + std::to_string(w), "sentinels=" + sentinels,
                "master_port=" + std::to_string(set.node(0).port()),
                "res_port=" + std::to_string(res.port()), "coros=" + std::to_string(coros),
                "until_ns=" + std::to_string(until_ns),
                "history=" + dir.file("w" + std::to_string(w)),
                "seed=" + std::to_string(seed + static_cast<std::uint64_t>(w))}));
    }
    faults.note("3 sentinel_mix workers started");
    std::this_thread::sleep_for(2500ms);
    // An unreplicated grant: the replica forgets worker 0's held lease.
    set.node(1).command({"CONFIG", "SET", "replica-read-only", "no"});
    const auto del = set.node(1).command({"DEL", held_name});
    BOOST_TEST(del == ":1\r\n", del);
    faults.note("held lease deleted on the replica");
    // Through Sentinel 1, which leads the failover: the others hear of it only at the switch.
    const auto reply = set.sentinel(1).command({"SENTINEL", "FAILOVER", "m1"});
    BOOST_TEST(reply == "+OK\r\n", reply);
    faults.note("SENTINEL FAILOVER (Sentinel 1)");
    // Sentinel 1's answer changes when it switches (and publishes +switch-master).
    std::int64_t switch_ns = 0;
    while (monotonic_ns() < until_ns && switch_ns == 0) {
        if (set.sentinel(1)
                .command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m1"})
                .ends_with("\r\n" + std::to_string(replica) + "\r\n"))
            switch_ns = faults.note("+switch-master (Sentinel 1 names the replica)");
        else
            std::this_thread::sleep_for(10ms);
    }
    BOOST_TEST_REQUIRE(switch_ns != 0);
    for (auto& p : procs)
        BOOST_TEST(p->wait(60s) == 0);
    faults.note("workers done");

    const auto text = dir.read_all();
    const auto history = parse_sections(text);
    const auto n = count(history);
    const auto unreported = find_unreported_overlaps(history);
    const auto all = find_overlaps(history, false);
    std::size_t problems = 0, after_switch = 0;
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
        after_switch += s.acquired() && s.enter_ns > switch_ns ? 1 : 0;
    std::int64_t held_grant = 0, held_lost = 0;
    for (const auto& r : parse_records(text))
        if (r.kind == "held" && r.text("w") == "0") {
            held_grant = r.num("grant_ns");
            held_lost = r.num("lost_ns");
            BOOST_TEST(r.text("error") == "ok");
        }
    BOOST_TEST_MESSAGE(
        "S16: " << n.acquired << " sections, " << after_switch << " after the switch; overlaps "
                << all.overlaps << ", unreported " << unreported.overlaps << ", lost " << n.lost
                << ", failed acquires " << n.failed_acquires
                << "; the unreplicated lease reported lost "
                << (held_lost ? ms_text(held_lost - switch_ns) : std::string("never"))
                << " ms after +switch-master");
    BOOST_TEST(unreported.overlaps == 0u);
    for (const auto& e : unreported.examples)
        BOOST_TEST_MESSAGE("  " << e);
    BOOST_TEST(problems == 0u);
    BOOST_TEST(after_switch > 10u); // the loops went on at the new master
    BOOST_TEST(held_grant != 0);
    BOOST_TEST(held_lost != 0);
    BOOST_TEST(held_lost - switch_ns < 1'000'000'000); // not at its next lease/3 tick
    if (current_test_failed())
        report_failure("S16 Sentinel failover", seed, faults, history);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s16_sentinel_failover
