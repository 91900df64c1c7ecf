// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S1, no faults (strict): 4 worker processes x 16 coroutines x 50 non-atomic GET/SET increments
// under one lock, each with a fenced write. The counter is exact, no two critical sections
// overlap, every fenced write is accepted with a strictly increasing token, no lock is left.
#include "harness.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s01_no_faults {

namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using namespace corolock::fault;
using corolock::test::redis_process;

BOOST_AUTO_TEST_SUITE(s01_no_faults)

BOOST_AUTO_TEST_CASE(counter_is_exact_and_sections_never_overlap, *utf::timeout(150)) {
    constexpr int workers = 4, coros = 16, iterations = 50;
    constexpr auto total = workers * coros * iterations;
    const auto seed = pick_seed();
    fenced_resource res;
    redis_process locks;
    temp_dir dir;
    schedule faults;

    std::vector<std::unique_ptr<worker_process>> procs;
    for (int w = 0; w < workers; ++w) {
        counter_options o;
        o.worker = w;
        o.lock_port = locks.port();
        o.res_port = res.port();
        o.history = dir.file("w" + std::to_string(w));
        o.coros = coros;
        o.iterations = iterations;
        o.until_ns = faults.start_ns() + 100'000'000'000; // a cap, not a goal
        o.acquire_wait = 60s;
        o.seed = seed;
        procs.push_back(std::make_unique<worker_process>("counter", o.args()));
    }
    faults.note("4 counter workers started (no faults)");
    for (auto& p : procs)
        BOOST_TEST(p->wait(120s) == 0);
    const auto end = faults.note("workers done");

    const auto text = dir.read_all();
    const auto history = parse_sections(text);
    const auto c = count(history);
    const auto overlaps = find_overlaps(history, false);
    const auto fencing = check_fencing(history, res.accepted());
    const auto orphans = orphan_keys(locks);
    const auto counter = res.counter();

    BOOST_TEST_MESSAGE("S1: " << c.acquired << " sections in " << ms_text(end - faults.start_ns())
                              << " ms, counter " << counter << ", overlaps " << overlaps.overlaps
                              << " among " << overlaps.sections << ", tokens checked "
                              << fencing.tokens_checked << ", accepted " << fencing.accepted
                              << ", refused " << fencing.refused);
    for (const auto& r : parse_records(text))
        if (r.kind == "stats") {
            BOOST_TEST_MESSAGE("  worker " << r.text("w") << ": attempts " << r.text("attempts")
                                           << ", pub/sub wake-ups " << r.text("pubsub_wakeups")
                                           << ", timer wake-ups " << r.text("timer_wakeups")
                                           << ", renewals " << r.text("renewals"));
            BOOST_TEST(r.num("held") == 0);
            BOOST_TEST(r.num("leases_lost") == 0);
        }

    BOOST_TEST(c.acquired == static_cast<std::size_t>(total));
    BOOST_TEST(c.ok == static_cast<std::size_t>(total));
    BOOST_TEST(c.failed_acquires == 0u);
    BOOST_TEST(c.released_ok == static_cast<std::size_t>(total));
    BOOST_TEST(counter == total);
    BOOST_TEST(res.value() == total);
    BOOST_TEST(overlaps.overlaps == 0u);
    for (const auto& e : overlaps.examples)
        BOOST_TEST_MESSAGE("  " << e);
    BOOST_TEST(fencing.accepted == static_cast<std::size_t>(total)); // every write accepted
    BOOST_TEST(fencing.refused == 0u);
    BOOST_TEST(fencing.problems.empty());
    for (const auto& p : fencing.problems)
        BOOST_TEST_MESSAGE("  " << p);
    const auto liveness = check_liveness(history, workers, coros * iterations);
    BOOST_TEST(liveness.empty());
    BOOST_TEST(orphans.empty());
    if (current_test_failed())
        report_failure("S1 no faults", seed, faults, history);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s01_no_faults
