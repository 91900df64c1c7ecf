// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// semaphore: a semaphore of 5 permits shared by 50 coroutines on ONE connection, each holding
// its permit for 1 ms, next to the ideal in the same run (5 permits / 1 ms hold = 5,000
// cycles/s, less what one cycle's round trips cost) and a mutex under the same load (ideal
// 1 / hold). See bench/README.md.
#include "common.hpp"
#include <corolock/semaphore.hpp>

#include <iostream>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto warmup = 500ms;
constexpr double default_seconds = 3;
constexpr int coroutines = 50;
constexpr int permits = 5;
constexpr auto hold = 1ms;

struct figures {
    double rate = missing, cpu_us = missing, writes = missing;
};

template <class Acquire>
asio::awaitable<void> worker(Acquire acquire, crew& c, std::uint64_t& cycles) {
    while (!c.stop) {
        auto [ec, l] = co_await acquire();
        if (!ec) {
            co_await sleep_for(hold);
            std::tie(ec) = co_await l.async_release(tuple_deferred);
        }
        if (ec) {
            c.note(ec, "cycle");
            co_await sleep_for(10ms);
            continue;
        }
        ++cycles;
    }
}

template <class Acquire>
asio::awaitable<figures> measure(corolock::connection& conn, Acquire acquire, double seconds) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    std::uint64_t cycles = 0;
    for (int i = 0; i < coroutines; ++i)
        c.spawn(ex, worker(acquire, c, cycles));
    co_await sleep_for(warmup);
    const auto w0 = conn.stats().writes;
    const auto c0 = cycles;
    const auto cpu0 = process_cpu_us();
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(seconds));
    const auto t1 = clock_type::now();
    const auto cpu1 = process_cpu_us();
    const auto c1 = cycles;
    const auto w1 = conn.stats().writes;
    co_await c.finish();
    figures f;
    const double n = double(c1 - c0);
    f.rate = n / seconds_between(t0, t1);
    if (n > 0) {
        f.cpu_us = (cpu1 - cpu0) / n;
        f.writes = double(w1 - w0) / n;
    }
    co_return f;
}

} // namespace

int run_semaphore(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_seconds;
    target t;
    open_target(o, t);
    figures sem, mtx;
    std::string first_error;
    try {
        run_with_connection(t, 1, [&](corolock::connection& conn) -> asio::awaitable<void> {
            if (!co_await first_ping(conn, first_error))
                co_return;
            corolock::semaphore s(conn, "bench:semaphore", permits);
            sem = co_await measure(
                conn, [&] { return s.async_acquire(1, tuple_deferred); }, o.seconds);
            corolock::mutex m(conn, "bench:semaphore-mutex");
            mtx = co_await measure(
                conn, [&] { return m.async_acquire(tuple_deferred); }, o.seconds);
        });
    } catch (...) {
        t.stop();
        throw;
    }
    t.stop();
    const double ideal_sem = permits / std::chrono::duration<double>(hold).count();
    const double ideal_mtx = 1 / std::chrono::duration<double>(hold).count();
    std::cout << "\nsemaphore: one connection, one thread, server " << t.host << ":" << t.port
              << (t.own ? " (own)" : "") << ", " << o.seconds << " s per figure after "
              << warmup.count() << " ms warm-up; " << cores() << " cores shared\n"
              << "  " << coroutines << " coroutines, each cycle: acquire, hold "
              << std::chrono::duration<double, std::milli>(hold).count() << " ms, release\n";
    if (!first_error.empty())
        std::cout << "  error: " << first_error << "\n";
    std::cout << "  semaphore of " << permits << ": " << show(sem.rate, 0) << " cycles/s ("
              << show(sem.rate / ideal_sem, 2) << " of " << show(ideal_sem, 0)
              << " = permits/hold; " << show(sem.writes, 2) << " writes, " << show(sem.cpu_us, 1)
              << " us client CPU per cycle)\n"
              << "  mutex: " << show(mtx.rate, 0) << " cycles/s (" << show(mtx.rate / ideal_mtx, 2)
              << " of " << show(ideal_mtx, 0) << " = 1/hold; " << show(mtx.writes, 2) << " writes, "
              << show(mtx.cpu_us, 1) << " us)\n";
    if (o.json)
        json_line()
            .num("semaphore_cycles_per_s", sem.rate)
            .num("semaphore_of_ideal", sem.rate / ideal_sem)
            .num("mutex_cycles_per_s", mtx.rate)
            .num("mutex_of_ideal", mtx.rate / ideal_mtx)
            .print(std::cout);
    return first_error.empty() ? 0 : 1;
}

} // namespace corolock::bench
