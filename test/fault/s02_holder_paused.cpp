// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S2, the holder is SIGSTOPped for 2.5 s, past its 1 s lease (the GC-pause case). Another
// worker takes the lock once the lease runs out; when the holder runs again it learns that it
// lost the lease before its next library call returns, its fenced write is refused as stale and
// its release answers lease_lost (sending nothing). Repeated a few times on one lock and one
// fenced resource.
#include "harness.hpp"
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <thread>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s02_holder_paused {

namespace asio = boost::asio;
namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using namespace corolock::fault;
using corolock::error;
using corolock::error_code;
using corolock::test::redis_process;

namespace {

constexpr auto lease = 1000ms;
constexpr auto renewal_period = lease / 3;
constexpr auto pause_for = 2500ms;

std::int64_t ns(std::chrono::nanoseconds d) {
    return d.count();
}

} // namespace

// The holder: acquires, then idles in its critical section (10 ms ticks) until a tick comes
// much later than planned, i.e. the process was stopped. Its very next library call is the
// fenced write, made through a nested hold of its lease with the hold's token (the GC-pause
// case: the pause may fall between a validity check and the write, so it writes regardless and
// the fence must refuse it); it records whether it knew about the loss before and after that
// call.
// Args: worker, lock_port, res_port, lock, resource, history, gap_ms (a tick later than this
// is a pause), max_ms (give up waiting for a pause).
COROLOCK_FAULT_WORKER(s02_holder) {
    auto a = parse_args(args);
    const int worker = std::stoi(a["worker"]);
    worker_io io(static_cast<std::uint16_t>(std::stoi(a["lock_port"])),
                 static_cast<std::uint16_t>(std::stoi(a["res_port"])));
    history_writer out(a["history"]);
    const auto gap = std::chrono::milliseconds(std::stoi(a["gap_ms"]));
    const auto max = std::chrono::milliseconds(std::stoi(a["max_ms"]));
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        corolock::mutex_options opts;
        opts.lease = lease;
        corolock::mutex m(io.locks, a["lock"], opts);
        corolock::lease l = co_await m.async_acquire_for(10s, asio::use_awaitable);
        section s;
        s.worker = worker;
        s.lock = a["lock"];
        s.token = l.token().value();
        s.enter_ns = monotonic_ns();
        auto lost_at = std::make_shared<std::int64_t>(0);
        l.async_wait_lost([lost_at](error_code ec) {
            if (ec == error::lease_lost)
                *lost_at = monotonic_ns();
        });
        asio::steady_timer tick(io.ioc);
        std::int64_t prev = s.enter_ns, resumed = 0;
        while (monotonic_ns() - s.enter_ns < ns(max)) {
            tick.expires_after(10ms);
            co_await tick.async_wait(asio::use_awaitable);
            const auto now = monotonic_ns();
            if (now - prev > ns(gap)) {
                resumed = now;
                break;
            }
            prev = now;
        }
        const bool lost_before = l.lost();
        const bool valid_before = l.valid(); // checks the clock: false at once after the pause
        std::uint64_t hold_token = 0;
        {
            const auto hold = l.hold();
            hold_token = hold.token().value();
            s.fenced = co_await fenced_write(io.res, a["resource"], hold.token().value(), 1);
        }
        const auto returned = monotonic_ns();
        const bool lost_after = l.lost();
        s.exit_ns = returned;
        auto [rec] = co_await l.async_release(asio::as_tuple(asio::deferred));
        s.release_ns = monotonic_ns();
        s.release = rec == error::lease_lost ? "lease_lost" : rec ? rec.message() : "ok";
        s.lost_ns = *lost_at;
        s.outcome =
            (lost_after || s.lost_ns || rec == corolock::condition::lock_lost) ? "lost" : "ok";
        auto r = s.to_record();
        r.fields["resumed"] = std::to_string(resumed);
        r.fields["call_returned"] = std::to_string(returned);
        r.fields["lost_before_call"] = lost_before ? "1" : "0";
        r.fields["valid_before_call"] = valid_before ? "1" : "0";
        r.fields["lost_after_call"] = lost_after ? "1" : "0";
        r.fields["hold_token"] = std::to_string(hold_token);
        out.write(r);
    });
    return ok ? 0 : 1;
}

BOOST_AUTO_TEST_SUITE(s02_holder_paused)

BOOST_AUTO_TEST_CASE(paused_holder_is_told_and_fenced_out, *utf::timeout(120)) {
    constexpr int rounds = 3;
    const auto seed = pick_seed();
    fenced_resource res;
    redis_process locks;
    temp_dir dir;
    schedule faults;
    const std::string lock = "lock:paused";
    // The research target: the next holder gets in within lease + one renewal period + 200 ms
    // of the stop (the lease was renewed at most a period before the stop). Asserted with a
    // margin of half a lease for a loaded machine; the measured figures are printed.
    const auto target = lease + renewal_period + 200ms;
    const auto bound = lease + renewal_period + lease / 2;
    std::vector<section> all;
    for (int round = 0; round < rounds; ++round) {
        const std::string tag = "r" + std::to_string(round);
        worker_process holder("s02_holder",
                              {"worker=0", "lock_port=" + std::to_string(locks.port()),
                               "res_port=" + std::to_string(res.port()), "lock=" + lock,
                               "resource=" + res.name(), "history=" + dir.file(tag + "-holder"),
                               "gap_ms=1500", "max_ms=20000"});
        // Wait until it holds the lock (nobody else runs yet).
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
        std::this_thread::sleep_for(lease / 2); // the next one waits; the holder renews
        const auto ttl = reply_values(locks.command({"PTTL", lock}));
        BOOST_TEST((!ttl.empty() && std::stoll(ttl[0]) <= 1000));
        const auto stopped = faults.note(tag + ": SIGSTOP holder");
        holder.pause();
        std::this_thread::sleep_for(pause_for);
        const auto resumed = faults.note(tag + ": SIGCONT holder");
        holder.resume();
        BOOST_TEST(next.wait(30s) == 0);
        BOOST_TEST(holder.wait(30s) == 0);
        faults.note(tag + ": both exited");

        const auto hold_recs = parse_records(read_file(dir.file(tag + "-holder")));
        const auto next_secs = parse_sections(read_file(dir.file(tag + "-next")));
        BOOST_REQUIRE(hold_recs.size() == 1u);
        BOOST_REQUIRE(next_secs.size() == 1u);
        const auto& h = hold_recs[0];
        const auto held = section::from_record(h);
        const auto& n = next_secs[0];
        all.push_back(held);
        all.push_back(n);

        // The next holder got in after the lease ran out, within the bound.
        BOOST_TEST(n.outcome == "ok");
        BOOST_TEST(n.fenced == 1);
        BOOST_TEST(n.token > held.token);
        const auto taken_after = std::chrono::nanoseconds(n.enter_ns - stopped);
        BOOST_TEST(n.enter_ns > stopped);
        BOOST_TEST(taken_after <= bound);
        // The paused holder noticed its pause, knew about the loss before its next call
        // returned, was fenced out and its release touched nothing.
        BOOST_TEST(h.num("resumed") >= resumed);
        BOOST_TEST(h.text("lost_after_call") == "1");
        BOOST_TEST(h.text("valid_before_call") == "0"); // valid() looks at the clock itself
        BOOST_TEST(static_cast<std::uint64_t>(h.num("hold_token")) == held.token);
        BOOST_TEST(held.lost_ns != 0);
        BOOST_TEST(held.lost_ns >= resumed);
        BOOST_TEST(held.lost_ns <= h.num("call_returned"));
        BOOST_TEST(held.outcome == "lost");
        BOOST_TEST(held.fenced == 0);
        BOOST_TEST(held.release == "lease_lost"); // lost before the release: nothing sent
        BOOST_TEST_MESSAGE("S2 " << tag << ": next holder in " << ms_text(n.enter_ns - stopped)
                                 << " ms after SIGSTOP (target " << (target / 1ms) << " ms, bound "
                                 << (bound / 1ms) << " ms); loss signalled "
                                 << ms_text(held.lost_ns - resumed)
                                 << " ms after SIGCONT (known before the "
                                 << "call: " << h.text("lost_before_call")
                                 << ", valid() before: " << h.text("valid_before_call")
                                 << ", after: " << h.text("lost_after_call") << "); stale write "
                                 << held.token << " refused after " << n.token << " accepted");
        if (taken_after > target)
            BOOST_TEST_MESSAGE("  note: over the " << (target / 1ms) << " ms target");
    }
    const auto overlaps = find_overlaps(all, false);
    const auto safe = find_overlaps(all, true);
    const auto fencing = check_fencing(all, res.accepted());
    BOOST_TEST_MESSAGE("S2: overlaps counted "
                       << overlaps.overlaps << " (all with a holder told "
                       << "it lost), " << safe.overlaps
                       << " among leases never lost; tokens checked " << fencing.tokens_checked
                       << ", accepted " << fencing.accepted << ", refused " << fencing.refused);
    BOOST_TEST(overlaps.overlaps == static_cast<std::size_t>(rounds)); // the pauses, as expected
    BOOST_TEST(safe.overlaps == 0u);
    BOOST_TEST(fencing.refused == static_cast<std::size_t>(rounds));
    BOOST_TEST(fencing.accepted == static_cast<std::size_t>(rounds));
    BOOST_TEST(fencing.problems.empty());
    for (const auto& p : fencing.problems)
        BOOST_TEST_MESSAGE("  " << p);
    BOOST_TEST(orphan_keys(locks).empty());
    if (current_test_failed())
        report_failure("S2 holder paused", seed, faults, all);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s02_holder_paused
