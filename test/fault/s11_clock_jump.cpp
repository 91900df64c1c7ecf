// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S11 (issue 4): the client's wall clock steps by +1 h, then to -1 h, while it holds a lock.
//
// What the library promises: a step of the client's wall clock, of any size and either way,
// changes nothing. The library never reads the wall clock: every deadline it keeps (lease
// validity, renewal schedule, back-off, timeouts, health check) is on steady_clock, and every
// wait is an Asio steady_timer (a CLOCK_MONOTONIC timerfd). So a step causes no loss, no
// extension and no stall; the key's TTL is kept by the server's clock, which does not move.
//
// How the step is made: the holder is a worker process with wall_clock_shim preloaded, which
// shifts every reading of the wall clock (CLOCK_REALTIME, gettimeofday, time) by an offset the
// harness changes through a shared 8-byte file, and touches nothing else, as a real step would.
// libfaketime, used before, rewrites timer calls too and arms an already-due monotonic timerfd
// an hour late (or not at all) once the faked clock has moved: the worker stalled under load
// (issue 17, section 4.7; details in wall_clock_shim.cpp). The holder now arms an already-due
// timer at every tick, so a clock fake that moves timers fails every run, not one in many.
// The server is never shifted: its clock, and with it the key's TTL, stays true.
#include "common/redis_process.hpp"
#include "worker.hpp"
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s11_clock_jump {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using corolock::error_code;
using corolock::test::redis_process;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto lease = 1000ms;

long long ms_of(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// One line on stdout, flushed at once: the harness reads whatever a killed worker wrote.
void say(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stdout, fmt, ap);
    va_end(ap);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

} // namespace

// args: port, lock name, hold time in ms. Holds a watchdog lock (lease 1 s) for the hold time
// and prints a `tick` line every 100 ms with how far the steady and the wall clock moved since
// the acquisition, then releases. Exit status 0 when the acquire and the release succeeded
// and the lease was never reported lost.
COROLOCK_FAULT_WORKER(s11_holder) {
    if (args.size() != 3)
        return 2;
    const std::string name = args[1];
    const auto hold = std::chrono::milliseconds(std::stoll(args[2]));
    corolock::connection_config cfg;
    cfg.port = args[0];
    cfg.health_check_interval = 200ms;
    cfg.connect_timeout = 1s;
    cfg.reconnect_wait = 20ms;
    cfg.reconnect_wait_max = 200ms;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), cfg, {corolock::logger::level::off, {}});
    corolock::mutex_options opts;
    opts.lease = lease;
    corolock::mutex m(conn, name, opts);
    int status = 1;
    auto body = [&]() -> asio::awaitable<void> {
        auto [ec, l] = co_await m.async_acquire_for(5s, asio::as_tuple(asio::deferred));
        if (ec) {
            say("acquire_failed error=%s", ec.message().c_str());
            co_return;
        }
        // The lease's loss, should it come (it ends with operation_aborted at the release).
        l.async_wait_lost([](error_code lost) {
            if (lost != asio::error::operation_aborted)
                say("lost reason=%s", lost.message().c_str());
        });
        const auto steady0 = clock_type::now();
        const auto wall0 = std::chrono::system_clock::now();
        const auto renewals0 = corolock::get_lock_stats(conn).renewals;
        say("acquired token=%llu", static_cast<unsigned long long>(l.token().value()));
        bool lost = false;
        asio::steady_timer tick(co_await asio::this_coro::executor);
        asio::steady_timer due(co_await asio::this_coro::executor);
        while (clock_type::now() - steady0 < hold) {
            tick.expires_after(100ms);
            co_await tick.async_wait(asio::use_awaitable);
            // A timer that is already due when it is armed: Asio's reactor arms its timerfd
            // with an absolute time then (TFD_TIMER_ABSTIME, 1 ns) instead of a relative one.
            // The library's timers take that path only by chance (a late wake-up under load);
            // here it is taken at every tick, so a faked clock that moves it fails every run.
            const auto due0 = clock_type::now();
            due.expires_at(due0 - 1ms);
            co_await due.async_wait(asio::use_awaitable);
            const auto due_ms = ms_of(clock_type::now() - due0);
            const auto steady = clock_type::now() - steady0;
            const auto wall = std::chrono::system_clock::now() - wall0;
            lost = lost || l.lost();
            say("tick steady_ms=%lld wall_ms=%lld held=%d lost=%d renewals=%llu due_ms=%lld",
                ms_of(steady),
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(wall).count()),
                l.valid() ? 1 : 0, l.lost() ? 1 : 0,
                static_cast<unsigned long long>(corolock::get_lock_stats(conn).renewals -
                                                renewals0),
                due_ms);
        }
        auto [rec] = co_await l.async_release(asio::as_tuple(asio::deferred));
        say("released error=%s", rec ? rec.message().c_str() : "none");
        status = (!rec && !lost) ? 0 : 1;
    };
    conn.async_run(asio::detached);
    asio::co_spawn(ioc, body(), [&](std::exception_ptr e) {
        if (e) {
            say("exception");
            status = 3;
        }
        conn.cancel();
    });
    ioc.run();
    return status;
}

namespace {

struct tick {
    long long steady_ms = 0, wall_ms = 0, renewals = 0, due_ms = 0;
    bool held = false, lost = false;
    long long skew_ms() const { return wall_ms - steady_ms; }
};

std::vector<tick> parse_ticks(const std::string& out) {
    std::vector<tick> ticks;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        tick t;
        int held = 0, lost = 0;
        if (std::sscanf(line.c_str(),
                        "tick steady_ms=%lld wall_ms=%lld held=%d lost=%d renewals=%lld "
                        "due_ms=%lld",
                        &t.steady_ms, &t.wall_ms, &held, &lost, &t.renewals, &t.due_ms) == 6) {
            t.held = held != 0;
            t.lost = lost != 0;
            ticks.push_back(t);
        }
    }
    return ticks;
}

bool near(long long value, long long target, long long tolerance) {
    return value >= target - tolerance && value <= target + tolerance;
}

// Waits until `key` exists (the worker holds the lock); false after `limit`.
bool wait_for_key(const redis_process& srv, const std::string& key,
                  clock_type::duration limit = 10s) {
    const auto until = clock_type::now() + limit;
    while (clock_type::now() < until) {
        if (srv.command({"EXISTS", key}) == ":1\r\n")
            return true;
        std::this_thread::sleep_for(5ms);
    }
    return false;
}

long long pttl(const redis_process& srv, const std::string& key) {
    const auto r = srv.command({"PTTL", key});
    BOOST_REQUIRE(!r.empty() && r[0] == ':');
    return std::stoll(r.substr(1));
}

} // namespace

BOOST_AUTO_TEST_SUITE(s11_clock_jump)

BOOST_AUTO_TEST_CASE(wall_clock_jumps_cause_no_loss_and_no_extension) {
    redis_process srv;
    corolock::fault::wall_clock_offset wall_clock;
    const std::string key = "lock:s11";
    corolock::fault::worker_process w("s11_holder", {std::to_string(srv.port()), key, "5000"},
                                      wall_clock.env());
    BOOST_REQUIRE(wait_for_key(srv, key));
    const auto t0 = clock_type::now();
    // PTTL from the server's (true) clock, every 50 ms while the worker holds: each sample
    // must lie in (0, lease]. The jumps come at 1.5 s (+1 h) and 3 s (to -1 h).
    long long min_ttl = lease.count(), max_ttl = 0;
    int samples = 0, out_of_range = 0;
    bool forward = false, backward = false;
    while (clock_type::now() - t0 < 4500ms) {
        if (!forward && clock_type::now() - t0 >= 1500ms) {
            wall_clock.set(1h);
            forward = true;
        }
        if (!backward && clock_type::now() - t0 >= 3000ms) {
            wall_clock.set(-1h);
            backward = true;
        }
        const auto ttl = pttl(srv, key);
        ++samples;
        min_ttl = std::min(min_ttl, ttl);
        max_ttl = std::max(max_ttl, ttl);
        if (ttl <= 0 || ttl > lease.count()) {
            ++out_of_range;
            BOOST_ERROR("PTTL " << ttl << " ms at " << ms_of(clock_type::now() - t0) << " ms");
        }
        std::this_thread::sleep_for(50ms);
    }
    const int status = w.wait(20s);
    const auto& out = w.output();
    BOOST_TEST_MESSAGE("PTTL samples " << samples << ", min " << min_ttl << " ms, max " << max_ttl
                                       << " ms, out of (0, 1000]: " << out_of_range);
    BOOST_TEST(status == 0, "worker exit status " << status << ", output:\n" << out);
    // Released: the key is gone, not kept alive by a lease computed from the wrong clock.
    BOOST_TEST(srv.command({"EXISTS", key}) == ":0\r\n");
    BOOST_TEST(out.find("released error=none") != std::string::npos);
    BOOST_TEST(out.find("lost reason") == std::string::npos);

    const auto ticks = parse_ticks(out);
    BOOST_REQUIRE_GE(ticks.size(), 40u);
    // The worker's wall clock really jumped: skew 0, then about +1 h, then about -1 h.
    std::size_t first_forward = ticks.size(), first_backward = ticks.size();
    long long max_due_ms = 0;
    for (std::size_t i = 0; i < ticks.size(); ++i) {
        BOOST_TEST(ticks[i].held);
        BOOST_TEST(!ticks[i].lost);
        max_due_ms = std::max(max_due_ms, ticks[i].due_ms);
        if (first_forward == ticks.size() && near(ticks[i].skew_ms(), 3'600'000, 5'000))
            first_forward = i;
        if (first_backward == ticks.size() && near(ticks[i].skew_ms(), -3'600'000, 5'000))
            first_backward = i;
    }
    BOOST_TEST(near(ticks.front().skew_ms(), 0, 1'000));
    BOOST_REQUIRE_MESSAGE(first_forward < first_backward && first_backward < ticks.size(),
                          "the worker's wall clock did not jump +1 h then -1 h:\n"
                              << out);
    BOOST_TEST_MESSAGE("worker saw wall - steady = "
                       << ticks[first_forward].skew_ms() << " ms at steady "
                       << ticks[first_forward].steady_ms << " ms, "
                       << ticks[first_backward].skew_ms() << " ms at steady "
                       << ticks[first_backward].steady_ms << " ms");
    // A wall-clock step leaves steady timers alone: one already due fires at once. (Under
    // libfaketime, after +1 h it waited for the next timer of the process, up to 200 ms, its
    // timerfd arm refused; after -1 h it stalled the worker until 3,600 s of uptime.)
    BOOST_TEST_MESSAGE("already-due timer fired after at most " << max_due_ms << " ms");
    BOOST_TEST(max_due_ms <= 100);
    // Renewals went on at their steady pace (lease/3 = 333 ms) through both jumps.
    const auto& last = ticks.back();
    BOOST_TEST_MESSAGE("renewals: " << last.renewals << " in " << last.steady_ms << " ms, "
                                    << last.renewals - ticks[first_backward].renewals
                                    << " after the backward jump");
    BOOST_TEST(last.renewals >= last.steady_ms / 333 - 2);
    BOOST_TEST(last.renewals <= last.steady_ms / 333 + 3); // no burst of renewals either
    BOOST_TEST(ticks[first_backward].renewals - ticks[first_forward].renewals >= 3);
    BOOST_TEST(last.renewals - ticks[first_backward].renewals >= 3);
}

BOOST_AUTO_TEST_CASE(killed_holder_with_jumped_clock_expires_within_the_lease) {
    redis_process srv;
    corolock::fault::wall_clock_offset wall_clock;
    const std::string key = "lock:s11:killed";
    corolock::fault::worker_process w("s11_holder", {std::to_string(srv.port()), key, "30000"},
                                      wall_clock.env());
    BOOST_REQUIRE(wait_for_key(srv, key));
    std::this_thread::sleep_for(300ms);
    wall_clock.set(1h);
    std::this_thread::sleep_for(500ms);
    wall_clock.set(-1h);
    long long max_ttl = 0;
    for (int i = 0; i < 10; ++i) {
        const auto ttl = pttl(srv, key);
        max_ttl = std::max(max_ttl, ttl);
        BOOST_TEST(ttl > 0);
        BOOST_TEST(ttl <= lease.count());
        std::this_thread::sleep_for(50ms);
    }
    const auto ttl_at_kill = pttl(srv, key);
    w.kill();
    const auto killed = clock_type::now();
    while (srv.command({"EXISTS", key}) == ":1\r\n" && clock_type::now() - killed < 5s)
        std::this_thread::sleep_for(5ms);
    const auto freed = ms_of(clock_type::now() - killed);
    BOOST_TEST_MESSAGE("holder SIGKILLed with its wall clock at -1 h: key gone "
                       << freed << " ms later (PTTL at kill " << ttl_at_kill
                       << " ms, lease 1000 ms)");
    BOOST_TEST(max_ttl <= lease.count());
    BOOST_TEST(freed <= lease.count() + 250);
    const auto& out = w.output();
    BOOST_TEST(out.find("lost reason") == std::string::npos, out);
    BOOST_TEST(out.find("acquired token=") != std::string::npos, out);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s11_clock_jump
