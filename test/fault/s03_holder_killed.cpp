// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S3, the holder is SIGKILLed in its critical section: its watchdog dies with it, the key runs
// out, and a waiting worker gets the lock within lease + 250 ms of the kill. The key's TTL never
// exceeds the lease. Three times, at a random point of the renewal cycle.
#include "harness.hpp"
#include <corolock/mutex.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <random>
#include <thread>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s03_holder_killed {

namespace asio = boost::asio;
namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using namespace corolock::fault;
using corolock::test::redis_process;

namespace {

constexpr auto lease = 1000ms;

} // namespace

// The holder: acquires, records its section's start, then stays inside until killed (or 30 s).
// Args: worker, lock_port, res_port, lock, history.
COROLOCK_FAULT_WORKER(s03_holder) {
    auto a = parse_args(args);
    worker_io io(static_cast<std::uint16_t>(std::stoi(a["lock_port"])),
                 static_cast<std::uint16_t>(std::stoi(a["res_port"])));
    history_writer out(a["history"]);
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        corolock::mutex_options opts;
        opts.lease = lease;
        corolock::mutex m(io.locks, a["lock"], opts);
        const corolock::lease l = co_await m.async_acquire_for(10s, asio::use_awaitable);
        record r{"holding", {}};
        r.fields["w"] = a["worker"];
        r.fields["token"] = std::to_string(l.token().value());
        r.fields["enter"] = std::to_string(monotonic_ns());
        out.write(r);
        asio::steady_timer t(io.ioc, 30s);
        co_await t.async_wait(asio::use_awaitable);
    });
    return ok ? 0 : 1;
}

BOOST_AUTO_TEST_SUITE(s03_holder_killed)

BOOST_AUTO_TEST_CASE(killed_holder_frees_the_lock_within_the_lease, *utf::timeout(90)) {
    constexpr int rounds = 3;
    const auto seed = pick_seed();
    std::mt19937_64 rng(seed);
    fenced_resource res;
    redis_process locks;
    temp_dir dir;
    schedule faults;
    const std::string lock = "lock:killed";
    const auto bound = lease + 250ms;
    std::vector<section> all;
    for (int round = 0; round < rounds; ++round) {
        const std::string tag = "r" + std::to_string(round);
        worker_process holder("s03_holder",
                              {"worker=0", "lock_port=" + std::to_string(locks.port()),
                               "res_port=" + std::to_string(res.port()), "lock=" + lock,
                               "history=" + dir.file(tag + "-holder")});
        for (int i = 0; i < 500 && locks.command({"EXISTS", lock}) != ":1\r\n"; ++i)
            std::this_thread::sleep_for(10ms);
        BOOST_REQUIRE(locks.command({"EXISTS", lock}) == ":1\r\n");
        faults.note(tag + ": holder (pid " + std::to_string(holder.pid()) + ") holds " + lock);
        counter_options o;
        o.worker = 1;
        o.lock_port = locks.port();
        o.res_port = res.port();
        o.lock = lock;
        o.resource = res.name();
        o.history = dir.file(tag + "-next");
        o.coros = 1;
        o.iterations = 1;
        o.acquire_wait = 15s;
        o.seed = seed + static_cast<std::uint64_t>(round);
        worker_process next("counter", o.args());
        // Kill at a random point of the renewal cycle, after at least one renewal.
        const auto wait_ms = std::uniform_int_distribution<int>(400, 900)(rng);
        std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
        const auto ttl = reply_values(locks.command({"PTTL", lock}));
        BOOST_TEST((!ttl.empty() && std::stoll(ttl[0]) > 0 && std::stoll(ttl[0]) <= 1000));
        // Still the holder's: the waiter has written nothing.
        BOOST_TEST(parse_sections(read_file(dir.file(tag + "-next"))).empty());
        const auto killed =
            faults.note(tag + ": SIGKILL holder (TTL " + (ttl.empty() ? "?" : ttl[0]) + " ms)");
        holder.kill();
        BOOST_TEST(next.wait(30s) == 0);
        faults.note(tag + ": waiter exited");

        const auto recs = parse_records(read_file(dir.file(tag + "-holder")));
        const auto secs = parse_sections(read_file(dir.file(tag + "-next")));
        BOOST_REQUIRE(recs.size() == 1u);
        BOOST_REQUIRE(secs.size() == 1u);
        section h;
        h.worker = 0;
        h.lock = lock;
        h.token = static_cast<std::uint64_t>(recs[0].num("token"));
        h.enter_ns = recs[0].num("enter");
        h.exit_ns = killed;
        h.outcome = "killed";
        all.push_back(h);
        const auto& n = secs[0];
        all.push_back(n);
        BOOST_TEST(n.outcome == "ok");
        BOOST_TEST(n.token > h.token);
        BOOST_TEST(n.enter_ns > killed);
        const auto free_after = std::chrono::nanoseconds(n.enter_ns - killed);
        BOOST_TEST(free_after <= bound);
        BOOST_TEST_MESSAGE("S3 " << tag << ": killed with TTL " << (ttl.empty() ? "?" : ttl[0])
                                 << " ms left; next holder in " << ms_text(n.enter_ns - killed)
                                 << " ms (bound " << (bound / 1ms) << " ms)");
    }
    const auto overlaps = find_overlaps(all, false);
    const auto fencing = check_fencing(all, res.accepted());
    BOOST_TEST_MESSAGE("S3: overlaps " << overlaps.overlaps << ", tokens checked "
                                       << fencing.tokens_checked << ", accepted "
                                       << fencing.accepted);
    BOOST_TEST(overlaps.overlaps == 0u);
    BOOST_TEST(fencing.problems.empty());
    for (const auto& p : fencing.problems)
        BOOST_TEST_MESSAGE("  " << p);
    BOOST_TEST(orphan_keys(locks).empty());
    if (current_test_failed())
        report_failure("S3 holder killed", seed, faults, all);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s03_holder_killed
