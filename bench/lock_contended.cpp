// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Contended: 50 coroutines sharing one mutex (one name), holding 0 and 1 ms, awaited release:
// cycles/s against the ideal 1/hold, the acquire wait, the hand-off from one holder to the next
// and the lock layer's own counters (pub/sub and timer wake-ups, scripts per acquisition).
#include "lock.hpp"
#include <corolock/lease.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iomanip>
#include <iostream>

namespace corolock::bench {

namespace {

struct contended_state {
    bool measuring = false;
    std::vector<double> waits_us, handoffs_us, idle_us;
    double hold_us = 0;
    std::uint64_t acquisitions = 0, cycles = 0, to_other = 0, to_same = 0, unordered = 0;
    clock_type::time_point last_release{}, last_release_call{};
    bool free_since_release = false;
    int last_holder = -1;
};

asio::awaitable<void> contended_worker(corolock::mutex& m, int id, clock_type::duration hold,
                                       crew& c, contended_state& s) {
    asio::steady_timer holding(co_await asio::this_coro::executor);
    while (!c.stop) {
        const auto t0 = clock_type::now();
        auto [ec, l] = co_await m.async_acquire(tuple_deferred);
        const auto t1 = clock_type::now();
        if (ec) {
            c.note(ec, "acquire");
            co_await sleep_for(10ms);
            continue;
        }
        if (s.measuring) {
            s.waits_us.push_back(us_between(t0, t1));
            ++s.acquisitions;
            if (s.free_since_release) {
                s.handoffs_us.push_back(us_between(s.last_release, t1));
                s.idle_us.push_back(us_between(s.last_release_call, t1));
                ++(id != s.last_holder ? s.to_other : s.to_same);
            } else if (s.last_holder >= 0) {
                ++s.unordered;
            }
        }
        s.free_since_release = false;
        if (hold > clock_type::duration::zero()) {
            holding.expires_after(hold);
            co_await holding.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        const auto t2 = clock_type::now();
        auto [ec2] = co_await l.async_release(tuple_deferred);
        if (ec2) {
            c.note(ec2, "release");
            co_await sleep_for(10ms);
            continue;
        }
        s.last_release_call = t2;
        s.last_release = clock_type::now();
        s.free_since_release = true;
        s.last_holder = id;
        if (s.measuring) {
            ++s.cycles;
            s.hold_us += us_between(t1, t2);
        }
    }
}

// A hand-off costs at least one acquire round trip after the hold.
double contended_bound(const contended_result& c, const depth_reference& r) {
    return 1.0 / (c.mean_hold_us * 1e-6 + 1.0 / r.acquire.rps);
}

} // namespace

asio::awaitable<contended_result> run_contended(corolock::connection& conn, int hold_ms,
                                                double seconds) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    contended_state s;
    // One shared handle, as the API intends (mutex.hpp); the waiters queue per name anyway.
    corolock::mutex m(conn, "bench:contended:hold" + std::to_string(hold_ms));
    for (int i = 0; i < contended_coroutines; ++i)
        c.spawn(ex, contended_worker(m, i, std::chrono::milliseconds(hold_ms), c, s));

    co_await sleep_for(lock_warmup);
    const auto ls0 = corolock::get_lock_stats(conn);
    const auto t0 = clock_type::now();
    s.measuring = true;
    co_await sleep_for(seconds_of(seconds));
    s.measuring = false;
    const auto t1 = clock_type::now();
    const auto ls1 = corolock::get_lock_stats(conn);
    co_await c.finish();

    contended_result r;
    r.hold_ms = hold_ms;
    r.elapsed_s = seconds_between(t0, t1);
    r.cycles = s.cycles;
    r.acquisitions = s.acquisitions;
    r.errors = c.errors;
    r.first_error = c.first_error;
    r.handoffs_to_other = s.to_other;
    r.handoffs_to_same = s.to_same;
    r.unordered = s.unordered;
    r.stats = ls1 - ls0;
    r.wait_p50_us = percentile(s.waits_us, 0.50);
    r.wait_p99_us = percentile(s.waits_us, 0.99);
    r.wait_max_us = s.waits_us.empty() ? missing : s.waits_us.back();
    r.handoff_p50_us = percentile(s.handoffs_us, 0.50);
    r.handoff_p99_us = percentile(s.handoffs_us, 0.99);
    r.idle_p50_us = percentile(s.idle_us, 0.50);
    r.idle_p99_us = percentile(s.idle_us, 0.99);
    r.mean_hold_us = s.cycles ? s.hold_us / double(s.cycles) : missing;
    co_return r;
}

void print_contended(std::ostream& os, const lock_figures& f, std::uint64_t& errors) {
    os << "\n5. contended: " << contended_coroutines
       << " coroutines sharing one mutex (one name), awaited release\n"
       << "  hold  cycles/s  ideal  wait p50/p99/max us      handoff p50/p99 us  "
          "to other  pubsub  timer  attempts/acq\n"
       << "  (handoff: from the release's completion to the next holder's acquire "
          "completing)\n";
    for (const auto& c : f.contended) {
        errors += c.errors;
        os << "  " << std::setw(2) << c.hold_ms << "ms  " << std::setw(8)
           << show(c.cycles_per_s(), 0) << "  " << std::setw(5) << show(c.ideal_per_s(), 0) << "  "
           << std::setw(23)
           << (show(c.wait_p50_us, 0) + "/" + show(c.wait_p99_us, 0) + "/" + show(c.wait_max_us, 0))
           << "  " << std::setw(18) << (show(c.handoff_p50_us, 0) + "/" + show(c.handoff_p99_us, 0))
           << "  " << std::setw(8) << show(c.other_share() * 100, 1) << "%  " << std::setw(6)
           << c.stats.pubsub_wakeups << "  " << std::setw(5) << c.stats.timer_wakeups << "  "
           << std::setw(12) << show(c.attempts_per_acquire(), 3) << "\n";
        os << "        release call -> next acquire done p50/p99 us " << show(c.idle_p50_us, 0)
           << "/" << show(c.idle_p99_us, 0) << "; mean hold as measured " << show(c.mean_hold_us, 0)
           << " us\n";
        if (c.hold_ms == 1)
            os << "  hold 1 ms cycles/s        "
               << against(c.cycles_per_s(), 0, ">=", target_contended_share * c.ideal_per_s())
               << "  (ideal 1/hold = " << show(c.ideal_per_s(), 0) << "/s, ratio "
               << show(c.cycles_per_s() / c.ideal_per_s(), 3) << ")\n";
        if (c.hold_ms == 1)
            if (const auto* r = f.ref_for(1))
                os << "  bound 1/(hold as measured + one acquire round trip at -P 1) "
                   << show(contended_bound(c, *r), 0) << "/s; cycles/s / bound "
                   << show(c.cycles_per_s() / contended_bound(c, *r), 3) << "\n";
        if (c.unordered)
            os << "    " << c.unordered
               << " acquisitions completed before the previous release had\n";
        if (!c.first_error.empty())
            os << "    first error: " << c.first_error << "\n";
    }
}

void json_contended(json_line& j, const lock_figures& f) {
    for (const auto& c : f.contended) {
        const std::string p = "contended_hold" + std::to_string(c.hold_ms) + "ms";
        j.num(p + "_cycles_per_s", c.cycles_per_s())
            .num(p + "_ideal_per_s", c.ideal_per_s())
            .num(p + "_efficiency", c.cycles_per_s() / c.ideal_per_s())
            .num(p + "_round_trip_bound_per_s",
                 f.ref_for(1) ? contended_bound(c, *f.ref_for(1)) : missing)
            .num(p + "_wait_p50_us", c.wait_p50_us)
            .num(p + "_wait_p99_us", c.wait_p99_us)
            .num(p + "_wait_max_us", c.wait_max_us)
            .num(p + "_handoff_p50_us", c.handoff_p50_us)
            .num(p + "_handoff_p99_us", c.handoff_p99_us)
            .num(p + "_handoff_to_other_share", c.other_share())
            .num(p + "_release_call_to_next_acquire_p50_us", c.idle_p50_us)
            .num(p + "_release_call_to_next_acquire_p99_us", c.idle_p99_us)
            .num(p + "_mean_hold_us", c.mean_hold_us)
            .num(p + "_pubsub_wakeups", double(c.stats.pubsub_wakeups))
            .num(p + "_timer_wakeups", double(c.stats.timer_wakeups))
            .num(p + "_attempts_per_acquire", c.attempts_per_acquire())
            .num(p + "_unordered", double(c.unordered))
            .num(p + "_errors", double(c.errors));
    }
}

} // namespace corolock::bench
