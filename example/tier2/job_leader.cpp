// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A scheduled job that must run exactly once per tick although three processes could run it,
// and that keeps running when the process running it is killed.
//
// The schedule: 10 ticks, one every 300 ms from a start time the parent picks (wall clock, so the
// three processes agree). Each worker process has one `corolock::mutex` on `job:<run>:leader`
// (1 s lease, watchdog) and waits for a lease on it. The leader reads the last tick done
// (`job:<run>:last`) and runs every tick after it as it falls due (at once if it is already
// late), each run a fenced write through its lease: it sets `last`, counts the run in the hash
// `job:<run>:runs` and appends to `job:<run>:log`, and is refused if a newer leader exists. While
// it waits for a tick it also watches its lease (`async_wait_lost`). A leader that is deposed
// (lease lost, or a write refused) drops its lease and waits for a new one like everybody else:
// a new acquisition with a new token, never a hold that keeps the old key alive. After the last
// tick it releases the lease and exits; a worker that gets the lock after that finds nothing left
// to do and exits too.
//
// After tick 4 the parent kills the leader with SIGKILL. Nothing releases its lock, so the others
// get it when its lease runs out: the gap is at most one lease (1 s; the watchdog renewed the
// lease up to a third of a lease before the kill). The new leader runs the ticks that fell due
// meanwhile, late, then the rest on time. The parent checks in Redis that every tick ran exactly
// once, and that the job moved to another process within the lease.
//
//   corolock_job_leader [--host H] [--port P]
//
// Exits 0 only if every check passes. Every worker is reaped on every path.
#include "common.hpp"
#include "workers.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
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
constexpr auto margin = 250ms; // for the new leader's attempt after the key expires
constexpr int kill_after_tick = 4;
constexpr auto tuple = asio::as_tuple(asio::deferred);

struct keys {
    explicit keys(const std::string& run)
        : leader("job:" + run + ":leader"), fence("{" + leader + "}:fence"),
          last("job:" + run + ":last"), runs("job:" + run + ":runs"), log("job:" + run + ":log") {}
    std::string leader, fence, last, runs, log;
};

wall::time_point due(wall::time_point start, int tick) {
    return start + tick * std::chrono::duration_cast<wall::duration>(period);
}

// KEYS[1] = last tick done, KEYS[2] = runs per tick, KEYS[3] = run log; ARGV[1] = tick,
// ARGV[2] = worker. Runs only while the caller is the newest leader.
const corolock::fenced_script& run_script() {
    static const corolock::fenced_script s(R"lua(
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('RPUSH', KEYS[3], ARGV[1] .. ':' .. ARGV[2])
return 1
)lua");
    return s;
}

// ------------------------------------------------------------------------------------ worker

// Waits until `at`, or until `l` is lost. True if the tick fell due with the lease still valid.
asio::awaitable<bool> wait_for_tick(corolock::lease& l, wall::time_point at) {
    using namespace asio::experimental::awaitable_operators;
    asio::system_timer timer(co_await asio::this_coro::executor, at);
    // Both branches report errors as values, so || ends with whichever finishes first and
    // cancels the other.
    const auto first = co_await (timer.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                                 l.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
    co_return first.index() == 0 && l.valid();
}

// Runs the ticks not done yet while `l` leads. Returns false if deposed.
asio::awaitable<bool> lead(corolock::connection& conn, corolock::lease& l, int index, const keys& k,
                           wall::time_point start) {
    corolock::request get;
    get.push("GET", k.last);
    corolock::generic_response resp;
    co_await conn.async_exec(get, resp);
    const int last = resp.empty() || resp[0].data_type == corolock::resp3::type::null
                         ? 0
                         : std::atoi(resp[0].value.c_str());
    const std::string me = std::to_string(index);
    for (int tick = last + 1; tick <= ticks; ++tick) {
        if (!co_await wait_for_tick(l, due(start, tick))) {
            ex::tell_parent("deposed " + me + " lease lost while waiting");
            co_return false;
        }
        const auto late = wall::now() - due(start, tick);
        const std::string tick_text = std::to_string(tick);
        const std::string_view keys[] = {k.last, k.runs, k.log};
        const std::string_view args[] = {tick_text, me};
        corolock::generic_response run_resp;
        auto [ec] = co_await l.async_fenced_eval(run_script(), keys, args, run_resp, tuple);
        if (ec == corolock::condition::lock_lost) {
            // lease_lost (known locally, nothing sent) or stale_token (a newer leader exists).
            ex::tell_parent("deposed " + me + " " + ec.message());
            co_return false;
        }
        if (ec)
            throw boost::system::system_error(ec, "tick " + tick_text);
        ex::tell_parent(
            "run " + tick_text + " " + me + " " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(late).count()));
    }
    co_return true;
}

asio::awaitable<void> worker_main(corolock::connection& conn, int index, const keys& k,
                                  wall::time_point start, bool& ok) {
    corolock::mutex_options opts;
    opts.lease = lease_time; // watchdog on: renewed every lease/3 while this process lives
    corolock::mutex leader(conn, k.leader, opts);
    const auto give_up = due(start, ticks) + 10s;
    for (;;) {
        const auto wait = std::chrono::duration_cast<steady::duration>(give_up - wall::now());
        auto [ec, l] = co_await leader.async_acquire_for(std::max(wait, steady::duration{}), tuple);
        if (ec) {
            ex::tell_parent("error " + std::to_string(index) + " acquire: " + ec.message());
            ok = false;
            co_return;
        }
        ex::tell_parent("lead " + std::to_string(index) + " " + std::to_string(l.token().value()));
        if (!co_await lead(conn, l, index, k, start)) {
            // Deposed: drop this lease (a release of a lost lease sends nothing; one refused
            // as stale is owner-checked, so it cannot delete the new leader's key) and wait for
            // a fresh one.
            l = {};
            continue;
        }
        co_await l.async_release();
        ex::tell_parent("done " + std::to_string(index));
        co_return;
    }
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
    asio::co_spawn(ioc, worker_main(conn, index, k, start, ok), [&](std::exception_ptr e) {
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
            r.push("DEL", k.leader, k.fence, k.last, k.runs, k.log);
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

    // Follow the workers' events; kill the leader after tick 4.
    const auto since_start = [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(wall::now() - start).count();
    };
    std::map<int, int> ran_by;   // tick -> worker, as the workers report
    std::map<int, long> late_ms; // tick -> how late it ran
    int victim = -1, successor = -1;
    steady::time_point killed_at{};
    double gap_ms = -1, job_gap_ms = -1;
    std::cout << "timeline (ms from the schedule's start; a tick every " << period.count()
              << " ms)\n";
    const auto deadline = steady::now() + startup + ticks * period + 30s;
    while (const auto ev = procs.next_line(deadline)) {
        const auto w = ex::words(ev->line);
        if (w.empty())
            continue; // a worker's end: its exit status is checked below
        const int who = static_cast<int>(ev->worker);
        std::cout << std::setw(7) << since_start() << "  ";
        if (w[0] == "lead" && w.size() >= 3) {
            std::cout << "worker " << who << " is the leader (fencing token " << w[2] << ")";
            if (victim >= 0 && successor < 0 && who != victim) {
                successor = who;
                gap_ms = ex::to_ms(steady::now() - killed_at);
                std::cout << ", " << static_cast<long>(gap_ms) << " ms after the kill";
            }
        } else if (w[0] == "run" && w.size() >= 4) {
            const int tick = std::atoi(w[1].c_str());
            ran_by[tick] = who;
            late_ms[tick] = std::atol(w[3].c_str());
            std::cout << "tick " << tick << " run by worker " << who << " (" << w[3] << " ms late)";
            if (victim >= 0 && job_gap_ms < 0 && who != victim)
                job_gap_ms = ex::to_ms(steady::now() - killed_at);
            if (tick == kill_after_tick && victim < 0) {
                procs.kill(ev->worker, SIGKILL);
                killed_at = steady::now();
                victim = who;
                std::cout << "\n" << std::setw(7) << since_start() << "  SIGKILL worker " << who;
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
            cleanup.push("DEL", k.leader, k.fence, k.last, k.runs, k.log);
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
        problems.push_back("tick " + std::to_string(kill_after_tick) + " never ran: no kill");
    } else {
        if (!procs.killed_by(victim, SIGKILL))
            problems.push_back("the killed leader ended with " + procs.describe(victim));
        if (successor < 0)
            problems.push_back("no other worker became leader after the kill");
        else if (gap_ms > ex::to_ms(lease_time + margin))
            problems.push_back("the job moved after " + std::to_string(int(gap_ms)) +
                               " ms, more than the lease");
        for (const auto& [tick, who] : ran_by)
            if ((tick <= kill_after_tick) != (who == victim))
                problems.push_back("tick " + std::to_string(tick) + " run by worker " +
                                   std::to_string(who) + " (killed: " + std::to_string(victim) +
                                   ")");
    }
    for (int n = 0; n < workers; ++n)
        if (n != victim && !procs.exited_ok(n))
            problems.push_back("worker " + std::to_string(n) + " ended with " + procs.describe(n));

    long max_late = 0;
    for (const auto& [tick, late] : late_ms)
        if (tick > kill_after_tick)
            max_late = std::max(max_late, late);
    std::cout << "server              " << server.host << ":" << server.port << "\n"
              << "processes           " << workers << ", leader lease "
              << std::chrono::milliseconds(lease_time).count() << " ms (watchdog)\n"
              << "ticks run once      " << exactly_once << " of " << ticks << "\n"
              << "killed leader       worker " << victim << " after tick " << kill_after_tick
              << " (" << (victim >= 0 ? procs.describe(victim) : "-") << ")\n"
              << "new leader          worker " << successor << ", " << static_cast<long>(gap_ms)
              << " ms after the kill (lease " << std::chrono::milliseconds(lease_time).count()
              << " ms)\n"
              << "job ran again       " << static_cast<long>(job_gap_ms)
              << " ms after the kill; latest catch-up tick " << max_late << " ms late\n";
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
