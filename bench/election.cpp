// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// corolock-bench election: the election and the scheduled job (doc/election.md, doc/job.md).
//   - hand-over after a resign: from the leader's async_resign to the waiting campaigner's term
//     (p50, p99), two connections;
//   - hand-over after a leader's death: its connection stops, nothing resigns, the waiting
//     campaigner's term begins once the lease has run out (lease 300 ms);
//   - jobs: slots claimed, run (an empty body) and marked done per second, by one runner, and by
//     three runners on three connections racing for every slot;
//   - with corolock::zookeeper built, on a private ZooKeeper server in the same run: the same
//     hand-over after a resign over corolock's zk_election, and python3-kazoo's Election
//     recipe's hand-over after its leader's function returns.
// A benchmark: nothing here fails because something is slow.
#include "common.hpp"
#include <corolock/election.hpp>
#include <corolock/job.hpp>
#include <corolock/lock_concepts.hpp>
#ifdef COROLOCK_BENCH_ZOOKEEPER
#include "common/zk_process.hpp"
#include <corolock/zookeeper.hpp>
#endif

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace corolock::bench {

namespace {

using namespace std::chrono_literals;
using asio::awaitable;

constexpr int resign_rounds = 300;
constexpr int death_rounds = 8;
constexpr auto death_lease = 300ms;

struct handover {
    double p50_ms = missing, p99_ms = missing;
};

handover summarize(std::vector<double> ms) {
    if (ms.empty())
        return {};
    return {percentile(ms, 0.5), percentile(ms, 0.99)};
}

// Waits for the campaign of `e`, then returns when it completed.
template <leader_election E>
awaitable<std::pair<typename E::leadership_type, clock_type::time_point>>
campaign_in_background(E& e, std::string v) {
    auto term = co_await e.async_campaign(std::move(v), asio::use_awaitable);
    co_return std::make_pair(std::move(term), clock_type::now());
}

// Alternates the term between two handles (on two connections) `rounds` times: each round the
// other side campaigns, the leader resigns, and the time from the resign to the new term is a
// sample. Any backend's election.
template <leader_election E>
awaitable<handover> after_resign(E& ea, E& eb) {
    using term_at = std::pair<typename E::leadership_type, clock_type::time_point>;
    E* side[] = {&ea, &eb};
    auto ex = co_await asio::this_coro::executor;
    auto term = co_await ea.async_campaign("a", asio::use_awaitable);
    std::vector<double> ms;
    int cur = 0;
    for (int r = 0; r < resign_rounds; ++r) {
        const int other = 1 - cur;
        std::optional<term_at> next;
        asio::steady_timer done(ex, clock_type::time_point::max());
        asio::co_spawn(ex, campaign_in_background(*side[other], other ? "b" : "a"),
                       [&](std::exception_ptr e, term_at r) {
                           if (!e)
                               next = std::move(r);
                           done.cancel();
                       });
        co_await sleep_for(2ms); // the other side is waiting
        const auto resigned = clock_type::now();
        co_await term.async_resign(asio::use_awaitable);
        if (!next)
            co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
        if (!next)
            break;
        ms.push_back(std::chrono::duration<double, std::milli>(next->second - resigned).count());
        term = std::move(next->first);
        cur = other;
    }
    co_await term.async_resign(asio::use_awaitable);
    co_return summarize(std::move(ms));
}

#ifdef COROLOCK_BENCH_ZOOKEEPER
// The same hand-over over corolock's ZooKeeper election, two sessions on `hosts`.
handover zk_after_resign(const std::string& hosts) {
    asio::io_context ioc;
    zk_config cfg;
    cfg.hosts = hosts;
    cfg.session_timeout = std::chrono::seconds(10);
    zk_connection a(ioc.get_executor(), cfg), b(ioc.get_executor(), cfg);
    a.async_run(asio::detached);
    b.async_run(asio::detached);
    zk_election ea(a, "/bench/election/resign"), eb(b, "/bench/election/resign");
    handover out;
    asio::co_spawn(ioc, after_resign(ea, eb), [&](std::exception_ptr e, handover h) {
        if (!e)
            out = h;
        a.cancel();
        b.cancel();
    });
    ioc.run();
    return out;
}
#endif

// A leader on its own connection, which stops (the process died): the waiting campaigner's
// term begins once the lease has run out.
awaitable<handover> after_death(const target& t, connection& b) {
    election_options o;
    o.lock.lease = death_lease;
    election eb(b, "bench:election:death", o);
    auto ex = co_await asio::this_coro::executor;
    std::vector<double> ms;
    for (int r = 0; r < death_rounds; ++r) {
        connection doomed(ex, bench_config(t));
        doomed.async_run(asio::detached);
        election ea(doomed, "bench:election:death", o);
        auto term = co_await ea.async_campaign("a", asio::use_awaitable);
        std::optional<std::pair<leadership, clock_type::time_point>> next;
        asio::steady_timer done(ex, clock_type::time_point::max());
        asio::co_spawn(ex, campaign_in_background(eb, std::string("b")),
                       [&](std::exception_ptr e, std::pair<leadership, clock_type::time_point> r) {
                           if (!e)
                               next = std::move(r);
                           done.cancel();
                       });
        co_await sleep_for(2ms);
        const auto died = clock_type::now();
        doomed.cancel();
        if (!next)
            co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
        if (!next)
            break;
        ms.push_back(std::chrono::duration<double, std::milli>(next->second - died).count());
        co_await next->first.async_resign(asio::use_awaitable);
        term = leadership{};
    }
    co_return summarize(std::move(ms));
}

// One runner: every slot in order, as a scheduled process would take them, until `c` stops.
awaitable<void> run_slots(job& j, crew& c, std::uint64_t& done) {
    for (std::uint64_t slot = 1; !c.stop; ++slot)
        if (co_await run_once(j, slot, [](lease&) -> awaitable<void> { co_return; }) ==
            job_outcome::ran)
            ++done;
}

// Slots per second run to done by `runners` racing for each slot (one per connection).
awaitable<double> job_slots(std::vector<connection*> conns, const std::string& name,
                            double seconds) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    std::uint64_t done = 0;
    std::vector<std::unique_ptr<job>> jobs;
    for (auto* conn : conns)
        jobs.push_back(std::make_unique<job>(*conn, name));
    for (auto& j : jobs)
        c.spawn(ex, run_slots(*j, c, done));
    co_await sleep_for(500ms); // warm-up
    const auto from = done;
    const auto start = clock_type::now();
    co_await sleep_for(seconds_of(seconds));
    const auto n = done - from;
    const auto took = seconds_between(start, clock_type::now());
    co_await c.finish();
    co_return static_cast<double>(n) / took;
}

#ifdef COROLOCK_BENCH_ZOOKEEPER
// kazoo's Election: two clients take turns; the sample is from the leader's function returning
// (its resign) to the other's function starting.
handover kazoo_handover(const std::string& hosts, int rounds) {
    const std::string script = R"(
import sys, threading, time
from kazoo.client import KazooClient
hosts, n = sys.argv[1], int(sys.argv[2])
ks = [KazooClient(hosts=hosts, timeout=10) for _ in range(2)]
for k in ks: k.start()
samples, t0 = [], [0.0]
leads = [threading.Event(), threading.Event()]
stops = [threading.Event(), threading.Event()]
def lead(i):
    if t0[0]: samples.append(time.monotonic() - t0[0])
    leads[i].set()
    stops[i].wait()
def campaign(i):
    ks[i].Election("/bench/election", "c%d" % i).run(lead, i)
cur = 0
th = threading.Thread(target=campaign, args=(0,)); th.start(); leads[0].wait()
for r in range(n):
    other = 1 - cur
    leads[other].clear(); stops[other].clear()
    nxt = threading.Thread(target=campaign, args=(other,)); nxt.start()
    time.sleep(0.005)
    t0[0] = time.monotonic(); stops[cur].set()
    leads[other].wait(); th.join(); th, cur = nxt, other
stops[cur].set(); th.join()
for k in ks: k.stop()
samples.sort()
print(samples[len(samples) // 2] * 1000, samples[max(0, int(len(samples) * 0.99) - 1)] * 1000)
)";
    const auto r =
        test::run_program({"/usr/bin/python3", "-c", script, hosts, std::to_string(rounds)},
                          std::chrono::seconds(120));
    if (r.exit_code != 0) {
        std::cerr << "corolock-bench election: kazoo failed: " << r.output << "\n";
        return {};
    }
    try {
        const auto last = r.output.substr(r.output.find_last_of('\n', r.output.size() - 2) + 1);
        const auto sp = last.find(' ');
        return {std::stod(last.substr(0, sp)), std::stod(last.substr(sp + 1))};
    } catch (const std::exception&) {
        return {};
    }
}
#endif

} // namespace

int run_election(const options& in) {
    options o = in;
    if (o.seconds <= 0)
        o.seconds = 3;
    target t;
    open_target(o, t);
    handover resign, death, kazoo, zk_resign;
    double slots_1 = missing, slots_3 = missing;
    std::string first_error;
    run_with_connection(t, 1, [&](connection& a) -> awaitable<void> {
        if (!co_await first_ping(a, first_error))
            co_return;
        auto ex = co_await asio::this_coro::executor;
        connection b(ex, bench_config(t)), c(ex, bench_config(t));
        b.async_run(asio::detached);
        c.async_run(asio::detached);
        election ea(a, "bench:election:resign"), eb(b, "bench:election:resign");
        resign = co_await after_resign(ea, eb);
        death = co_await after_death(t, b);
        // Named, not braced in the call: g++ 12 cannot pass an initializer list into a coroutine.
        std::vector<connection*> one, three;
        one.push_back(&a);
        three.push_back(&a);
        three.push_back(&b);
        three.push_back(&c);
        slots_1 = co_await job_slots(one, "bench:job:one", o.seconds);
        slots_3 = co_await job_slots(three, "bench:job:three", o.seconds);
        b.cancel();
        c.cancel();
    });
    t.stop();
#ifdef COROLOCK_BENCH_ZOOKEEPER
    {
        test::zk_options zo;
        zo.force_sync = true;
        zo.heap_mib = 128;
        test::zk_ensemble zk(1, zo);
        kazoo = kazoo_handover(zk.connect_string(), resign_rounds);
        zk_resign = zk_after_resign(zk.connect_string());
    }
#endif
    if (!first_error.empty())
        std::cerr << "corolock-bench election: " << first_error << "\n";
    std::cout << "election and jobs, load " << loadavg() << "\n"
              << "  hand-over after resign (Redis), " << resign_rounds << " rounds: p50 "
              << show(resign.p50_ms, 2) << " ms, p99 " << show(resign.p99_ms, 2) << " ms\n"
              << "  hand-over after resign (corolock zk_election, ZooKeeper fsync on): p50 "
              << show(zk_resign.p50_ms, 2) << " ms, p99 " << show(zk_resign.p99_ms, 2) << " ms\n"
              << "  hand-over after resign (kazoo Election, ZooKeeper fsync on): p50 "
              << show(kazoo.p50_ms, 2) << " ms, p99 " << show(kazoo.p99_ms, 2) << " ms\n"
              << "  hand-over after a leader's death (Redis, lease "
              << std::chrono::milliseconds(death_lease).count() << " ms), " << death_rounds
              << " rounds: p50 " << show(death.p50_ms, 1) << " ms, p99 " << show(death.p99_ms, 1)
              << " ms\n"
              << "  job slots run to done per second: 1 runner " << show(slots_1, 0)
              << ", 3 runners racing " << show(slots_3, 0) << "\n";
    if (o.json) {
        json_line j;
        j.num("resign_p50_ms", resign.p50_ms)
            .num("resign_p99_ms", resign.p99_ms)
            .num("zk_resign_p50_ms", zk_resign.p50_ms)
            .num("zk_resign_p99_ms", zk_resign.p99_ms)
            .num("kazoo_resign_p50_ms", kazoo.p50_ms)
            .num("kazoo_resign_p99_ms", kazoo.p99_ms)
            .num("death_p50_ms", death.p50_ms)
            .num("death_p99_ms", death.p99_ms)
            .num("job_slots_1", slots_1)
            .num("job_slots_3", slots_3);
        j.print(std::cout);
    }
    return 0;
}

} // namespace corolock::bench
