// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A scheduled job that must run exactly once per tick although three processes could run it,
// and that still runs every tick when the process running one is killed in the middle of it.
//
// The schedule: 10 ticks, one every 300 ms from a start time the parent picks (wall clock, so the
// three processes agree on when a tick falls due; the tick's number is the job's slot). Each
// worker process has one `corolock::job` named `job:<run>:report` (1 s lease, watchdog, at least
// once) and calls `corolock::run_once(job, tick, body)` as each tick falls due: one process runs
// the body, the others wait for its run and find the slot done. The body works for 100 ms, then
// records the run with a fenced write through the run's lease (it counts the run in the hash
// `job:<run>:runs` and appends to `job:<run>:log`).
//
// During tick 4 the parent kills the process running it with SIGKILL. Nothing marks the tick
// done or releases the job's lock, so another process gets the lock when the killed run's lease
// runs out (at most one lease, 1 s) and runs tick 4 again: its write was never made, so it is
// recorded once. The parent checks in Redis that every tick ran exactly once, and that tick 4
// moved to another process within the lease.
//
//   corolock_job_leader [--host H] [--port P]
//
// Exits 0 only if every check passes. Every worker is reaped on every path.
#include "common.hpp"
#include "workers.hpp"
#include <corolock/connection.hpp>
#include <corolock/job.hpp>
#include <corolock/lease.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using wall = std::chrono::system_clock;

constexpr int workers = 3;
constexpr int ticks = 10;
constexpr auto period = 300ms;
constexpr auto startup = 1s; // from spawning the workers to the schedule's start
constexpr auto lease_time = 1s;
constexpr auto margin = 250ms; // for the next attempt after the key expires
constexpr auto work = 100ms;   // what a run of the job takes
constexpr int killed_tick = 4;
constexpr auto tuple = asio::as_tuple(asio::deferred);

struct keys {
    explicit keys(const std::string& run)
        : job("job:" + run + ":report"), fence("{" + job + "}:fence"), record("{" + job + "}:job"),
          runs("job:" + run + ":runs"), log("job:" + run + ":log") {}
    std::string job, fence, record, runs, log;
};

wall::time_point due(wall::time_point start, int tick) {
    return start + tick * std::chrono::duration_cast<wall::duration>(period);
}

// KEYS[1] = runs per tick, KEYS[2] = run log; ARGV[1] = tick, ARGV[2] = worker. Runs only while
// the caller's lease is the job's newest.
const corolock::fenced_script& run_script() {
    static const corolock::fenced_script s(R"lua(
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('RPUSH', KEYS[2], ARGV[1] .. ':' .. ARGV[2])
return 1
)lua");
    return s;
}

// ------------------------------------------------------------------------------------ worker

asio::awaitable<void> worker_main(corolock::connection& conn, int index, const keys& k,
                                  wall::time_point start) {
    corolock::job_options opts;
    opts.lock.lease = lease_time; // watchdog on: renewed every lease/3 while a run lasts
    corolock::job report(conn, k.job, opts);
    const std::string me = std::to_string(index);
    for (int tick = 1; tick <= ticks; ++tick) {
        asio::system_timer timer(co_await asio::this_coro::executor, due(start, tick));
        co_await timer.async_wait(asio::use_awaitable);
        const std::string tick_text = std::to_string(tick);
        co_await corolock::run_once(
            report, static_cast<std::uint64_t>(tick),
            [&](corolock::lease& l) -> asio::awaitable<void> {
                ex::tell_parent("start " + tick_text + " " + me);
                asio::steady_timer busy(co_await asio::this_coro::executor, work);
                co_await busy.async_wait(asio::use_awaitable);
                const auto late = wall::now() - due(start, tick);
                const std::string_view keys[] = {k.runs, k.log};
                const std::string_view args[] = {tick_text, me};
                corolock::generic_response resp;
                co_await l.async_fenced_eval(run_script(), keys, args, resp);
                ex::tell_parent(
                    "run " + tick_text + " " + me + " " +
                    std::to_string(
                        std::chrono::duration_cast<std::chrono::milliseconds>(late).count()));
            });
    }
    ex::tell_parent("done " + me);
}

int run_worker(const ex::server_options& server, int index, const std::string& run,
               wall::time_point start) {
    asio::io_context ioc;
    corolock::connection conn(
        ioc.get_executor(),
        ex::make_config(server, "corolock-job-leader-worker-" + std::to_string(index)));
    const keys k(run);
    bool ok = true;
    asio::steady_timer limit(ioc, startup + ticks * period + 20s);
    limit.async_wait([&](corolock::error_code ec) {
        if (!ec) {
            std::cerr << "job_leader worker " << index << ": gave up\n";
            std::_Exit(3);
        }
    });
    conn.async_run(asio::detached);
    asio::co_spawn(ioc, worker_main(conn, index, k, start), [&](std::exception_ptr e) {
        if (e) {
            ok = false;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::cerr << "job_leader worker " << index << ": " << x.what() << "\n";
            }
        }
        limit.cancel();
        conn.cancel();
    });
    ioc.run();
    return ok ? 0 : 1;
}

// ------------------------------------------------------------------------------------ parent

int run_schedule(const ex::server_options& server) {
    const std::string run = ex::make_run_tag();
    const keys k(run);
    std::vector<std::string> problems;
    ex::run_with_connection(
        server, "corolock-job-leader",
        [&](corolock::connection& conn) -> asio::awaitable<void> {
            corolock::request r;
            r.push("DEL", k.job, k.fence, k.record, k.runs, k.log);
            co_await conn.async_exec(r, corolock::ignore);
        },
        10s);

    const auto start = wall::now() + std::chrono::duration_cast<wall::duration>(startup);
    const auto start_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(start.time_since_epoch()).count();
    ex::worker_processes procs;
    for (int n = 0; n < workers; ++n)
        procs.spawn({"--host", server.host, "--port", server.port, "--worker", std::to_string(n),
                     "--run", run, "--start", std::to_string(start_ms)});

    // Follow the workers' events; kill the process running tick 4, in the middle of its run.
    const auto since_start = [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(wall::now() - start).count();
    };
    std::map<int, int> ran_by;   // tick -> worker, as the workers report
    std::map<int, long> late_ms; // tick -> how late it ran
    int victim = -1;
    steady::time_point killed_at{};
    double gap_ms = -1;
    std::cout << "timeline (ms from the schedule's start; a tick every " << period.count()
              << " ms)\n";
    const auto deadline = steady::now() + startup + ticks * period + 30s;
    while (const auto ev = procs.next_line(deadline)) {
        const auto w = ex::words(ev->line);
        if (w.empty())
            continue; // a worker's end: its exit status is checked below
        const int who = static_cast<int>(ev->worker);
        std::cout << std::setw(7) << since_start() << "  ";
        if (w[0] == "start" && w.size() >= 3) {
            const int tick = std::atoi(w[1].c_str());
            std::cout << "worker " << who << " runs tick " << tick;
            if (tick == killed_tick && victim < 0) {
                procs.kill(ev->worker, SIGKILL);
                killed_at = steady::now();
                victim = who;
                std::cout << "\n"
                          << std::setw(7) << since_start() << "  SIGKILL worker " << who
                          << " in the middle of its run";
            }
        } else if (w[0] == "run" && w.size() >= 4) {
            const int tick = std::atoi(w[1].c_str());
            ran_by[tick] = who;
            late_ms[tick] = std::atol(w[3].c_str());
            std::cout << "tick " << tick << " run by worker " << who << " (" << w[3] << " ms late)";
            if (tick == killed_tick && victim >= 0) {
                gap_ms = ex::to_ms(steady::now() - killed_at);
                std::cout << ", " << static_cast<long>(gap_ms) << " ms after the kill";
            }
        } else {
            std::cout << "worker " << who << ": " << ev->line;
        }
        std::cout << "\n";
    }
    if (procs.timed_out())
        problems.push_back("workers still running at the deadline: killed");
    procs.reap_all(steady::now() + 5s);

    // What Redis recorded, then clean up.
    std::map<int, int> runs_per_tick;
    std::size_t logged = 0;
    ex::run_with_connection(
        server, "corolock-job-leader",
        [&](corolock::connection& conn) -> asio::awaitable<void> {
            corolock::request r;
            r.push("HGETALL", k.runs);
            r.push("LLEN", k.log);
            corolock::generic_response resp;
            co_await conn.async_exec(r, resp);
            // A map node, then key/value pairs at depth 1, then LLEN's integer at depth 0.
            std::size_t at = 1;
            for (; at + 1 < resp.size() && resp[at].depth == 1; at += 2)
                runs_per_tick[std::atoi(resp[at].value.c_str())] =
                    std::atoi(resp[at + 1].value.c_str());
            if (at < resp.size())
                logged = std::strtoul(resp[at].value.c_str(), nullptr, 10);
            corolock::request cleanup;
            cleanup.push("DEL", k.job, k.fence, k.record, k.runs, k.log);
            co_await conn.async_exec(cleanup, corolock::ignore);
        },
        10s);

    // Checks.
    int exactly_once = 0;
    for (int t = 1; t <= ticks; ++t) {
        const auto it = runs_per_tick.find(t);
        const int n = it == runs_per_tick.end() ? 0 : it->second;
        if (n == 1)
            ++exactly_once;
        else
            problems.push_back("tick " + std::to_string(t) + " ran " + std::to_string(n) +
                               " times");
    }
    if (runs_per_tick.size() != static_cast<std::size_t>(ticks) || logged != ticks)
        problems.push_back("unexpected runs recorded: " + std::to_string(logged) + " in the log");
    if (victim < 0) {
        problems.push_back("tick " + std::to_string(killed_tick) + " never started: no kill");
    } else {
        if (!procs.killed_by(victim, SIGKILL))
            problems.push_back("the killed worker ended with " + procs.describe(victim));
        if (gap_ms < 0)
            problems.push_back("tick " + std::to_string(killed_tick) + " was not run again");
        else if (gap_ms > ex::to_ms(lease_time + margin + work))
            problems.push_back("the job moved after " + std::to_string(int(gap_ms)) +
                               " ms, more than the lease and a run");
        if (ran_by.count(killed_tick) && ran_by[killed_tick] == victim)
            problems.push_back("tick " + std::to_string(killed_tick) +
                               " recorded by the killed worker");
    }
    for (int n = 0; n < workers; ++n)
        if (n != victim && !procs.exited_ok(n))
            problems.push_back("worker " + std::to_string(n) + " ended with " + procs.describe(n));

    std::cout << "server              " << server.host << ":" << server.port << "\n"
              << "processes           " << workers << ", run lease "
              << std::chrono::milliseconds(lease_time).count() << " ms (watchdog)\n"
              << "ticks run once      " << exactly_once << " of " << ticks << "\n"
              << "killed runner       worker " << victim << " in tick " << killed_tick << " ("
              << (victim >= 0 ? procs.describe(victim) : "-") << ")\n"
              << "tick run again      " << static_cast<long>(gap_ms) << " ms after the kill (lease "
              << std::chrono::milliseconds(lease_time).count() << " ms + a run of "
              << std::chrono::milliseconds(work).count() << " ms)\n";
    for (const auto& p : problems)
        std::cout << "problem             " << p << "\n";
    std::cout << (problems.empty() ? "OK" : "FAILED") << "\n";
    return problems.empty() ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    std::string worker, run, start;
    const auto server = ex::parse_server_options(argc, argv, exit_code,
                                                 {{"--worker", &worker, "", true},
                                                  {"--run", &run, "", true},
                                                  {"--start", &start, "", true}});
    if (!server)
        return exit_code;
    try {
        if (!worker.empty()) {
            const auto index = ex::parse_number(worker, 0);
            const auto start_ms = ex::parse_number(start, -1);
            if (!index || *index < 0 || *index >= workers || run.empty() || !start_ms ||
                *start_ms < 0) {
                std::cerr << "job_leader: bad --worker/--run/--start\n";
                return 2;
            }
            const auto at = wall::time_point(
                std::chrono::duration_cast<wall::duration>(std::chrono::milliseconds(*start_ms)));
            return run_worker(*server, static_cast<int>(*index), run, at);
        }
        return run_schedule(*server);
    } catch (const std::exception& e) {
        std::cerr << "job_leader: " << e.what() << "\n";
        return 1;
    }
}
