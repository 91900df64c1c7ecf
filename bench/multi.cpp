// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// multi: the multi-lock of 3 names over ONE connection and one thread, next to its reference in
// the same run: the same coroutines taking the same 3 names one after the other with 3
// single-name acquire + release cycles. At 1 and 50 coroutines, each on its own names
// (uncontended), watchdog leases (the defaults). See bench/README.md.
#include "common.hpp"
#include <corolock/multi_lock.hpp>

#include <iostream>
#include <memory>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto multi_warmup = 500ms;
constexpr double default_seconds = 3;
constexpr int multi_counts[] = {1, 50};
constexpr int set_size = 3;

std::vector<std::string> names_of(std::string_view prefix, int coroutine) {
    std::vector<std::string> out;
    for (int i = 0; i < set_size; ++i)
        out.push_back(std::string(prefix) + std::to_string(coroutine) + ":" + std::to_string(i));
    return out;
}

asio::awaitable<void> multi_worker(corolock::multi_lock& m, crew& c, std::uint64_t& cycles) {
    while (!c.stop) {
        auto [ec, l] = co_await m.async_acquire(tuple_deferred);
        if (!ec)
            std::tie(ec) = co_await l.async_release(tuple_deferred);
        if (ec) {
            c.note(ec, "multi-lock");
            co_await sleep_for(10ms);
            continue;
        }
        ++cycles;
    }
}

// One cycle here is the reference for one multi-lock cycle: the 3 names, one after the other.
asio::awaitable<void> single_worker(std::vector<std::unique_ptr<corolock::mutex>>& ms, crew& c,
                                    std::uint64_t& cycles) {
    while (!c.stop) {
        error_code ec;
        for (auto& m : ms) {
            auto [aec, l] = co_await m->async_acquire(tuple_deferred);
            ec = aec;
            if (!ec)
                std::tie(ec) = co_await l.async_release(tuple_deferred);
            if (ec)
                break;
        }
        if (ec) {
            c.note(ec, "single-name lock");
            co_await sleep_for(10ms);
            continue;
        }
        ++cycles;
    }
}

struct multi_result {
    int coroutines = 0;
    double multi_rate = missing, single_rate = missing; // 3-name cycles/s
    double multi_writes = missing, single_writes = missing;
    double multi_cpu_us = missing, single_cpu_us = missing; // client CPU per 3-name cycle
    std::uint64_t errors = 0;
    std::string first_error;
};

struct figures {
    double rate = missing, writes = missing, cpu_us = missing; // per 3-name cycle
};

// Measures the workers already started in `c` (counting `cycles`) over `seconds`, then stops
// them.
asio::awaitable<figures> measure(corolock::connection& conn, crew& c, std::uint64_t& cycles,
                                 double seconds) {
    co_await sleep_for(multi_warmup);
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
    const double n = double(c1 - c0);
    figures f;
    f.rate = n / seconds_between(t0, t1);
    if (n > 0) {
        f.writes = double(w1 - w0) / n;
        f.cpu_us = (cpu1 - cpu0) / n;
    }
    co_return f;
}

asio::awaitable<multi_result> run_pair(corolock::connection& conn, int coroutines, double seconds) {
    auto ex = co_await asio::this_coro::executor;
    multi_result r;
    r.coroutines = coroutines;
    {
        crew c;
        std::uint64_t cycles = 0;
        std::vector<std::unique_ptr<corolock::multi_lock>> locks;
        for (int i = 0; i < coroutines; ++i) {
            locks.push_back(
                std::make_unique<corolock::multi_lock>(conn, names_of("bench:multi:", i)));
            c.spawn(ex, multi_worker(*locks.back(), c, cycles));
        }
        const auto f = co_await measure(conn, c, cycles, seconds);
        r.multi_rate = f.rate;
        r.multi_writes = f.writes;
        r.multi_cpu_us = f.cpu_us;
        r.errors += c.errors;
        r.first_error = c.first_error;
    }
    {
        crew c;
        std::uint64_t cycles = 0;
        std::vector<std::vector<std::unique_ptr<corolock::mutex>>> locks(coroutines);
        for (int i = 0; i < coroutines; ++i) {
            for (const auto& n : names_of("bench:single:", i))
                locks[i].push_back(std::make_unique<corolock::mutex>(conn, n));
            c.spawn(ex, single_worker(locks[i], c, cycles));
        }
        const auto f = co_await measure(conn, c, cycles, seconds);
        r.single_rate = f.rate;
        r.single_writes = f.writes;
        r.single_cpu_us = f.cpu_us;
        r.errors += c.errors;
        if (r.first_error.empty())
            r.first_error = c.first_error;
    }
    co_return r;
}

} // namespace

int run_multi(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = default_seconds;
    if (o.threads != 1) {
        std::cerr << "corolock-bench: multi runs on one thread (--threads 1)\n";
        return 2;
    }
    target t;
    open_target(o, t);
    std::vector<multi_result> results;
    std::string first_error;
    try {
        run_with_connection(t, 1, [&](corolock::connection& conn) -> asio::awaitable<void> {
            if (!co_await first_ping(conn, first_error))
                co_return;
            for (int n : multi_counts)
                results.push_back(co_await run_pair(conn, n, o.seconds));
        });
    } catch (...) {
        t.stop();
        throw;
    }
    t.stop();

    std::cout << "\nmulti: one connection, one thread, server " << t.host << ":" << t.port
              << (t.own ? " (own)" : "") << ", " << o.seconds << " s per figure after "
              << multi_warmup.count() << " ms warm-up; " << cores() << " cores shared\n"
              << "  a cycle: acquire + release of " << set_size
              << " names (multi-lock: one multi_lease; reference: 3 single-name cycles in a "
                 "row)\n";
    if (!first_error.empty())
        std::cout << "  error: " << first_error << "\n";
    std::uint64_t errors = 0;
    json_line j;
    for (const auto& r : results) {
        const double ratio = r.multi_rate / r.single_rate;
        std::cout << "  " << r.coroutines << " coroutine(s): multi-lock " << show(r.multi_rate, 0)
                  << " cycles/s (" << show(r.multi_writes, 2) << " writes, "
                  << show(r.multi_cpu_us, 1) << " us client CPU per cycle), 3 single "
                  << show(r.single_rate, 0) << " cycles/s (" << show(r.single_writes, 2)
                  << " writes, " << show(r.single_cpu_us, 1) << " us): ratio " << show(ratio, 2)
                  << "\n";
        if (!r.first_error.empty())
            std::cout << "    error: " << r.first_error << "\n";
        errors += r.errors;
        const std::string k = "c" + std::to_string(r.coroutines) + "_";
        j.num(k + "multi_cycles_per_s", r.multi_rate)
            .num(k + "single3_cycles_per_s", r.single_rate)
            .num(k + "ratio", ratio)
            .num(k + "multi_cpu_us_per_cycle", r.multi_cpu_us)
            .num(k + "single3_cpu_us_per_cycle", r.single_cpu_us);
    }
    if (o.json)
        j.print(std::cout);
    return errors == 0 && first_error.empty() ? 0 : 1;
}

} // namespace corolock::bench
