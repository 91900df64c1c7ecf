// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// sync: the synchronizers under contention on one io_context, each beside a reference measured in
// the same run. 50 coroutines, each cycle an acquire, a 1 ms hold, a release:
//   - a semaphore of 5 permits on one connection, beside its ideal (5 permits / 1 ms) and a
//     mutex under the same load (ideal 1 / 1 ms);
//   - a fair_mutex with its waiters on two connections (two "processes"), beside a mutex under
//     the same load: cycles/s and the acquire wait's p99, against waiters × hold;
//   - 50 readers of a shared_mutex on one connection, beside a mutex under the same load.
// See bench/README.md.
#include "common.hpp"
#include <corolock/fair_mutex.hpp>
#include <corolock/semaphore.hpp>
#include <corolock/shared_mutex.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <functional>
#include <iostream>
#include <vector>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

inline constexpr auto tuple_use_awaitable = asio::as_tuple(asio::use_awaitable);

constexpr auto warmup = 500ms;
constexpr double default_seconds = 3;
constexpr int coroutines = 50;
constexpr int permits = 5;
constexpr auto hold = 1ms;

struct figures {
    double rate = missing, cpu_us = missing, p99_ms = missing;
};

struct sample {
    std::uint64_t cycles = 0;
    bool measuring = false;
    std::vector<double> waits_ms;
};

template <class Acquire>
asio::awaitable<void> worker(Acquire acquire, crew& c, sample& s) {
    while (!c.stop) {
        const auto asked = clock_type::now();
        auto [ec, l] = co_await acquire();
        if (s.measuring)
            s.waits_ms.push_back(
                std::chrono::duration<double, std::milli>(clock_type::now() - asked).count());
        if (!ec) {
            co_await sleep_for(hold);
            std::tie(ec) = co_await l.async_release(tuple_deferred);
        }
        if (ec) {
            c.note(ec, "cycle");
            co_await sleep_for(10ms);
            continue;
        }
        ++s.cycles;
    }
}

// Runs `coroutines` workers, worker i acquiring through acquires[i % size], and measures.
template <class Acquire>
asio::awaitable<figures> measure(std::vector<Acquire> acquires, double seconds) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    sample s;
    for (int i = 0; i < coroutines; ++i)
        c.spawn(ex, worker(acquires[static_cast<std::size_t>(i) % acquires.size()], c, s));
    co_await sleep_for(warmup);
    s.measuring = true;
    const auto c0 = s.cycles;
    const auto cpu0 = process_cpu_us();
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(seconds));
    const auto t1 = clock_type::now();
    const auto cpu1 = process_cpu_us();
    const auto c1 = s.cycles;
    s.measuring = false;
    co_await c.finish();
    figures f;
    const double n = double(c1 - c0);
    f.rate = n / seconds_between(t0, t1);
    if (n > 0)
        f.cpu_us = (cpu1 - cpu0) / n;
    if (!s.waits_ms.empty()) {
        std::sort(s.waits_ms.begin(), s.waits_ms.end());
        f.p99_ms = s.waits_ms[s.waits_ms.size() * 99 / 100];
    }
    co_return f;
}

using acquire_fn = std::function<asio::awaitable<std::tuple<error_code, lease>>()>;

// Not a braced list inside a coroutine: g++ 12 cannot keep its array in the frame.
std::vector<acquire_fn> fns(acquire_fn a, acquire_fn b = nullptr) {
    std::vector<acquire_fn> v;
    v.push_back(std::move(a));
    if (b)
        v.push_back(std::move(b));
    return v;
}

std::string line(const char* what, const figures& f) {
    return std::string(what) + ": " + show(f.rate, 0) + " cycles/s, wait p99 " + show(f.p99_ms, 1) +
           " ms, " + show(f.cpu_us, 1) + " us client CPU per cycle";
}

} // namespace

int run_sync(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_seconds;
    target t;
    open_target(o, t);
    figures sem, sem_mutex, fair_f, fair_mutex_f, readers, readers_mutex;
    std::string first_error;
    try {
        run_with_connection(t, 1, [&](corolock::connection& conn) -> asio::awaitable<void> {
            if (!co_await first_ping(conn, first_error))
                co_return;
            corolock::connection other(co_await asio::this_coro::executor, bench_config(t));
            other.async_run(asio::detached);
            {
                corolock::semaphore s(conn, "bench:sync:sem", permits);
                sem = co_await measure(fns([&] { return s.async_acquire(1, tuple_use_awaitable); }),
                                       o.seconds);
                corolock::mutex m(conn, "bench:sync:sem-mutex");
                sem_mutex = co_await measure(
                    fns([&] { return m.async_acquire(tuple_use_awaitable); }), o.seconds);
            }
            {
                corolock::fair_mutex a(conn, "bench:sync:fair"), b(other, "bench:sync:fair");
                fair_f = co_await measure(fns([&] { return a.async_acquire(tuple_use_awaitable); },
                                              [&] { return b.async_acquire(tuple_use_awaitable); }),
                                          o.seconds);
                corolock::mutex ma(conn, "bench:sync:fair-mutex"),
                    mb(other, "bench:sync:fair-mutex");
                fair_mutex_f =
                    co_await measure(fns([&] { return ma.async_acquire(tuple_use_awaitable); },
                                         [&] { return mb.async_acquire(tuple_use_awaitable); }),
                                     o.seconds);
            }
            {
                corolock::shared_mutex rw(conn, "bench:sync:rw");
                readers = co_await measure(
                    fns([&] { return rw.async_acquire_shared(tuple_use_awaitable); }), o.seconds);
                corolock::mutex m(conn, "bench:sync:rw-mutex");
                readers_mutex = co_await measure(
                    fns([&] { return m.async_acquire(tuple_use_awaitable); }), o.seconds);
            }
            other.cancel();
        });
    } catch (...) {
        t.stop();
        throw;
    }
    t.stop();
    const double per_s = 1 / std::chrono::duration<double>(hold).count();
    const double hold_ms = std::chrono::duration<double, std::milli>(hold).count();
    std::cout << "\nsync: server " << t.host << ":" << t.port << (t.own ? " (own)" : "") << ", "
              << o.seconds << " s per figure after " << warmup.count() << " ms warm-up; " << cores()
              << " cores shared\n"
              << "  " << coroutines << " coroutines, each cycle: acquire, hold " << hold_ms
              << " ms, release\n";
    if (!first_error.empty())
        std::cout << "  error: " << first_error << "\n";
    std::cout << "  " << line("semaphore of 5", sem) << " ("
              << show(sem.rate / (permits * per_s), 2) << " of " << show(permits * per_s, 0)
              << " = permits/hold)\n"
              << "  " << line("  mutex, same load", sem_mutex) << " ("
              << show(sem_mutex.rate / per_s, 2) << " of " << show(per_s, 0) << " = 1/hold)\n"
              << "  " << line("fair_mutex, 2 connections", fair_f) << " (p99 "
              << show(fair_f.p99_ms / (coroutines * hold_ms), 2)
              << " of waiters x hold = " << show(coroutines * hold_ms, 0) << " ms)\n"
              << "  " << line("  mutex, same load", fair_mutex_f) << " (p99 "
              << show(fair_mutex_f.p99_ms / (coroutines * hold_ms), 2) << " of waiters x hold)\n"
              << "  " << line("shared_mutex, 50 readers", readers) << "\n"
              << "  " << line("  mutex, same load", readers_mutex) << " (readers/mutex "
              << show(readers.rate / readers_mutex.rate, 1) << "x)\n";
    if (o.json)
        json_line()
            .num("semaphore_cycles_per_s", sem.rate)
            .num("semaphore_mutex_cycles_per_s", sem_mutex.rate)
            .num("fair_cycles_per_s", fair_f.rate)
            .num("fair_wait_p99_ms", fair_f.p99_ms)
            .num("fair_mutex_cycles_per_s", fair_mutex_f.rate)
            .num("fair_mutex_wait_p99_ms", fair_mutex_f.p99_ms)
            .num("readers_cycles_per_s", readers.rate)
            .num("readers_mutex_cycles_per_s", readers_mutex.rate)
            .print(std::cout);
    return first_error.empty() ? 0 : 1;
}

} // namespace corolock::bench
