// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// corolock-bench zk: the ZooKeeper lock (corolock::zookeeper) against a private ZooKeeper 3.8
// server (fsync on, as ZooKeeper's default), next to python3-kazoo's Lock on the same server in
// the same run. Uncontended cycles/s at 1 and 50 coroutines (kazoo: threads) on one session,
// each on its own lock, and the contended hand-off: the time from a holder's release to its
// waiter's grant, on two sessions. A benchmark: nothing here fails because something is slow.
#include "common.hpp"
#include "common/zk_process.hpp"
#include <corolock/zookeeper/mutex.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace corolock::bench {

namespace {

using asio::awaitable;

struct zk_figures {
    double cycles_1 = missing, cycles_50 = missing, handoff_ms = missing;
};

zk_config bench_config(const std::string& hosts) {
    zk_config c;
    c.hosts = hosts;
    c.session_timeout = std::chrono::seconds(10);
    return c;
}

// `coroutines` loops of acquire + release over one session, each on its own lock.
double corolock_cycles(const std::string& hosts, int coroutines, double seconds) {
    asio::io_context ioc;
    zk_connection conn(ioc.get_executor(), bench_config(hosts));
    conn.async_run(asio::detached);
    long cycles = 0;
    int left = coroutines;
    bool failed = false;
    const auto start = clock_type::now();
    const auto end = start + std::chrono::duration_cast<clock_type::duration>(
                                 std::chrono::duration<double>(seconds + 0.5));
    const auto count_from = start + std::chrono::milliseconds(500); // warm-up
    for (int i = 0; i < coroutines; ++i) {
        asio::co_spawn(
            ioc,
            [&, i]() -> awaitable<void> {
                zk_mutex m(conn, "/bench/uncontended/" + std::to_string(i));
                while (clock_type::now() < end) {
                    auto l = co_await m.async_acquire(asio::use_awaitable);
                    co_await l.async_release(asio::use_awaitable);
                    if (clock_type::now() >= count_from)
                        ++cycles;
                }
            },
            [&](std::exception_ptr e) {
                failed = failed || e;
                if (--left == 0)
                    conn.cancel();
            });
    }
    ioc.run();
    return failed ? missing : static_cast<double>(cycles) / seconds;
}

// Two sessions take one lock in turn; each grant is timed from the holder's release call.
double corolock_handoff_ms(const std::string& hosts, int rounds) {
    asio::io_context ioc;
    zk_connection a(ioc.get_executor(), bench_config(hosts));
    zk_connection b(ioc.get_executor(), bench_config(hosts));
    a.async_run(asio::detached);
    b.async_run(asio::detached);
    std::vector<double> ms;
    clock_type::time_point released{};
    int left = 2;
    auto side = [&](zk_connection& c) -> awaitable<void> {
        zk_mutex m(c, "/bench/handoff");
        for (int i = 0; i < rounds; ++i) {
            auto l = co_await m.async_acquire(asio::use_awaitable);
            if (released != clock_type::time_point{})
                ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - released)
                                 .count());
            asio::steady_timer t(c.get_executor(), std::chrono::milliseconds(2));
            co_await t.async_wait(asio::use_awaitable); // the other side waits meanwhile
            released = clock_type::now();
            co_await l.async_release(asio::use_awaitable);
        }
    };
    for (auto* c : {&a, &b})
        asio::co_spawn(ioc, side(*c), [&](std::exception_ptr) {
            if (--left == 0) {
                a.cancel();
                b.cancel();
            }
        });
    ioc.run();
    return ms.empty() ? missing : percentile(ms, 0.5);
}

// python3-kazoo's Lock, `threads` threads on one client, each its own lock.
double kazoo_cycles(const std::string& hosts, int threads, double seconds) {
    const std::string script = R"(
import sys, threading, time
from kazoo.client import KazooClient
hosts, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
k = KazooClient(hosts=hosts, timeout=10)
k.start()
counts = [0] * threads
start = time.monotonic()
count_from, end = start + 0.5, start + 0.5 + seconds
def loop(i):
    lock = k.Lock("/bench/kazoo/%d" % i)
    while time.monotonic() < end:
        lock.acquire()
        lock.release()
        if time.monotonic() >= count_from:
            counts[i] += 1
ts = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
k.stop()
print(sum(counts) / seconds)
)";
    const auto r = test::run_program(
        {"/usr/bin/python3", "-c", script, hosts, std::to_string(threads), std::to_string(seconds)},
        std::chrono::seconds(120));
    if (r.exit_code != 0) {
        std::cerr << "corolock-bench zk: kazoo failed: " << r.output << "\n";
        return missing;
    }
    try {
        return std::stod(r.output.substr(r.output.find_last_of('\n', r.output.size() - 2) + 1));
    } catch (const std::exception&) {
        return missing;
    }
}

} // namespace

int run_zk(const options& o) {
    const double seconds = o.seconds > 0 ? o.seconds : 3;
    test::zk_options zo;
    zo.force_sync = true;
    zo.heap_mib = 128;
    test::zk_ensemble zk(1, zo);
    const auto hosts = zk.connect_string();
    zk_figures ours, kazoo;
    ours.cycles_1 = corolock_cycles(hosts, 1, seconds);
    kazoo.cycles_1 = kazoo_cycles(hosts, 1, seconds);
    ours.cycles_50 = corolock_cycles(hosts, 50, seconds);
    kazoo.cycles_50 = kazoo_cycles(hosts, 50, seconds);
    ours.handoff_ms = corolock_handoff_ms(hosts, 200);
    std::cout << "ZooKeeper 3.8 lock, one server (fsync on), " << seconds << " s per figure\n"
              << "                          corolock zk_mutex   kazoo Lock   ratio\n";
    auto row = [](const char* name, double a, double b) {
        std::cout << "  " << name << "  " << show(a, 0) << "   " << show(b, 0) << "   "
                  << show(a / b, 2) << "\n";
    };
    row("uncontended, 1 (cycles/s) ", ours.cycles_1, kazoo.cycles_1);
    row("uncontended, 50 (cycles/s)", ours.cycles_50, kazoo.cycles_50);
    std::cout << "  contended hand-off, median: " << show(ours.handoff_ms, 2) << " ms\n"
              << "  ratio at 50: " << against(ours.cycles_50 / kazoo.cycles_50, 2, ">=", 1.5)
              << "\n";
    if (o.json) {
        json_line j;
        j.num("zk_cycles_1", ours.cycles_1)
            .num("zk_cycles_50", ours.cycles_50)
            .num("kazoo_cycles_1", kazoo.cycles_1)
            .num("kazoo_cycles_50", kazoo.cycles_50)
            .num("zk_handoff_ms", ours.handoff_ms);
        j.print(std::cout);
    }
    return 0;
}

} // namespace corolock::bench
