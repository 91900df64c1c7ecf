// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S17, the election and the scheduled job under SIGKILL, restarts and clock steps,
// history-checked (issue 29).
// - Three campaigner processes lead in turn (each term a fenced write on the resource, then a
//   resign, or now and then a term dropped without one); the leader of the moment is killed
//   three times and a new process takes its place. Never two valid leaders (no unreported
//   overlap), terms in grant order and every accepted write's term the newest (check_fencing),
//   and every process's observer sees (term, version) only grow.
// - Three runner processes run a job over 10,000 slots, at least once; one is killed every
//   1.5 s and restarted. Every slot is completed exactly once, runs never overlap unreported, and
//   their fenced writes are accepted in grant order.
// - The campaigners again: under two restarts of the lock server without persistence; over
//   Sentinel through a planned failover; with the leader of the moment partitioned from the
//   server (fault proxy) for three leases, twice.
// - Three runners on the server's 100 ms slots with their wall clocks stepped by hours: every
//   slot from the first to the last completed exactly once.
#include "common/fault_proxy.hpp"
#include "common/sentinel_set.hpp"
#include "common/test_config.hpp"
#include "harness.hpp"
#include <corolock/election.hpp>
#include <corolock/job.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s17_election_and_jobs {

namespace asio = boost::asio;
namespace utf = boost::unit_test;
using namespace std::chrono_literals;
using namespace corolock::fault;
using corolock::test::redis_process;

namespace {

constexpr auto lease = 600ms;
constexpr std::uint64_t slots = 10000;

// Watches `l` for a loss: the time it was reported (0: never), for the section's lost_ns.
std::shared_ptr<std::int64_t> watch_loss(asio::io_context& ioc, corolock::lease& l) {
    auto at = std::make_shared<std::int64_t>(0);
    l.async_wait_lost([at](corolock::error_code ec) {
        if (ec && ec != asio::error::operation_aborted && ec != corolock::error::not_owner)
            *at = monotonic_ns();
    });
    (void)ioc;
    return at;
}

// Writes that a section began (its token), before its fenced write: a worker killed inside it
// leaves this line only.
void began(history_writer& out, int worker, std::uint64_t token, std::int64_t at) {
    record r{"began", {}};
    r.fields["w"] = std::to_string(worker);
    r.fields["token"] = std::to_string(token);
    r.fields["enter"] = std::to_string(at);
    out.write(r);
}

// The history with a section for each one a killed worker was inside: from its `began` line to
// the kill, its write accepted if the resource logged its token.
std::vector<section> with_killed(const std::string& text, const std::string& lock,
                                 const std::map<int, std::int64_t>& killed_at,
                                 const std::vector<std::uint64_t>& log) {
    auto history = parse_sections(text);
    std::set<std::uint64_t> done;
    for (const auto& s : history)
        done.insert(s.token);
    const std::set<std::uint64_t> in_log(log.begin(), log.end());
    for (const auto& r : parse_records(text)) {
        const auto token = static_cast<std::uint64_t>(r.num("token"));
        if (r.kind != "began" || done.count(token))
            continue;
        const auto w = static_cast<int>(r.num("w"));
        const auto k = killed_at.find(w);
        BOOST_TEST((k != killed_at.end()), "worker " << w << " left a section open, not killed");
        section s;
        s.worker = w;
        s.lock = lock;
        s.token = token;
        s.enter_ns = r.num("enter");
        s.exit_ns = s.release_ns = k != killed_at.end() ? k->second : s.enter_ns;
        s.outcome = "killed";
        s.fenced = in_log.count(token) ? 1 : -1;
        history.push_back(s);
    }
    return history;
}

// The election's history checks, over the workers' files: no unreported overlap, fencing clean,
// and each observer's events only grow: a leader's (term, version) above every earlier
// leader's, and no event of an older term than one already seen ("no leader" names the last
// term begun: the one that ended, or the next one, not yet proclaimed).
void check_election_history(const std::string& scenario, const std::string& text,
                            const std::string& lock, const std::map<int, std::int64_t>& killed_at,
                            const fenced_resource& res, std::uint64_t seed, const schedule& faults,
                            std::size_t min_terms, bool server_restarts = false) {
    const auto history = with_killed(text, lock, killed_at, res.accepted());
    BOOST_TEST_MESSAGE(scenario << ": terms " << history.size());
    BOOST_TEST(history.size() >= min_terms);
    // A restart without persistence frees the term at once, before its leader can hear of it
    // (S4): the leader it caught must be reported lost, and only leases never reported lost
    // must not overlap. Otherwise a leader is told before anyone else leads.
    const auto unreported =
        server_restarts ? find_overlaps(history, true) : find_unreported_overlaps(history);
    BOOST_TEST(unreported.overlaps == 0u);
    for (const auto& e : unreported.examples)
        BOOST_TEST_MESSAGE(e);
    const auto fencing = check_fencing(history, res.accepted());
    BOOST_TEST(fencing.problems.empty());
    for (const auto& p : fencing.problems)
        BOOST_TEST_MESSAGE(p);
    std::map<int, std::pair<std::uint64_t, std::uint64_t>> last_leader;
    std::map<int, std::uint64_t> last_term;
    std::size_t events = 0;
    for (const auto& r : parse_records(text)) {
        if (r.kind != "obs")
            continue;
        ++events;
        const auto w = static_cast<int>(r.num("w"));
        const auto term = static_cast<std::uint64_t>(r.num("term"));
        BOOST_TEST(term >= last_term[w],
                   "worker " << w << " observed term " << term << " after " << last_term[w]);
        last_term[w] = term;
        if (r.num("present")) {
            const auto key = std::make_pair(term, static_cast<std::uint64_t>(r.num("version")));
            BOOST_TEST((key > last_leader[w]),
                       "worker " << w << " observed leader " << term << " again");
            last_leader[w] = key;
        }
    }
    BOOST_TEST(events >= history.size());
    if (current_test_failed())
        report_failure(scenario, seed, faults, history);
}

// A campaigner worker's arguments (s17_campaigner): worker `id` on `lock` through the lock
// server at `lock_port`, writing to `res`, for `ms`.
std::vector<std::string> campaigner_args(int id, std::uint16_t lock_port,
                                         const fenced_resource& res, const std::string& lock,
                                         const temp_dir& dir, std::uint64_t seed, int ms) {
    return {"worker=" + std::to_string(id),
            "lock_port=" + std::to_string(lock_port),
            "res_port=" + std::to_string(res.port()),
            "lock=" + lock,
            "resource=" + res.name(),
            "history=" + dir.file("w" + std::to_string(id)),
            "seed=" + std::to_string(seed + static_cast<std::uint64_t>(id)),
            "ms=" + std::to_string(ms)};
}

} // namespace

// Campaigns for `lock` until `ms` have passed, leading 5-40 ms each term; records each term as
// a section and each observed change as an `obs` line.
// Args: worker, lock_port, res_port, lock, resource, history, seed, ms.
COROLOCK_FAULT_WORKER(s17_campaigner) {
    auto a = parse_args(args);
    worker_io io(static_cast<std::uint16_t>(std::stoi(a["lock_port"])),
                 static_cast<std::uint16_t>(std::stoi(a["res_port"])));
    history_writer out(a["history"]);
    const int worker = std::stoi(a["worker"]);
    std::mt19937_64 rng(std::stoull(a["seed"]));
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(std::stoi(a["ms"]));
    // With `sentinels`: the election runs over a Sentinel-backed connection instead.
    std::optional<corolock::connection> via_sentinel;
    if (!a["sentinels"].empty())
        via_sentinel.emplace(io.ioc.get_executor(), sentinel_fault_config(a["sentinels"]),
                             corolock::test::quiet());
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        if (via_sentinel)
            via_sentinel->async_run(asio::detached);
        corolock::election_options opts;
        opts.lock.lease = lease;
        corolock::election el(via_sentinel ? *via_sentinel : io.locks, a["lock"], opts);
        auto obs = el.observe();
        bool stop = false;
        asio::co_spawn(
            io.ioc,
            [&]() -> asio::awaitable<void> {
                while (!stop) {
                    auto [ec, e] = co_await obs.async_next(asio::as_tuple(asio::use_awaitable));
                    if (ec)
                        co_return;
                    record r{"obs", {}};
                    r.fields["w"] = std::to_string(worker);
                    r.fields["term"] = std::to_string(e.term.value());
                    r.fields["version"] = std::to_string(e.version);
                    r.fields["present"] = e.present ? "1" : "0";
                    r.fields["skipped"] = e.skipped ? "1" : "0";
                    out.write(r);
                }
            },
            asio::detached);
        while (std::chrono::steady_clock::now() < until) {
            auto [ec, term] = co_await el.async_campaign_for(3s, "w" + std::to_string(worker),
                                                             asio::as_tuple(asio::use_awaitable));
            if (ec)
                continue;
            section s;
            s.worker = worker;
            s.lock = a["lock"];
            s.token = term.term().value();
            s.enter_ns = monotonic_ns();
            began(out, worker, s.token, s.enter_ns);
            auto lost_at = watch_loss(io.ioc, term.lease());
            s.fenced = co_await fenced_increment(io.res, a["resource"], term.lease());
            asio::steady_timer t(
                io.ioc, std::chrono::milliseconds(std::uniform_int_distribution<int>(5, 40)(rng)));
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            s.exit_ns = monotonic_ns();
            bool was_lost = term.lost() || !term.valid();
            if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) {
                term = corolock::leadership{}; // dropped: ends the term without waiting
                s.release = "dropped";
            } else {
                auto [rec] = co_await term.async_resign(asio::as_tuple(asio::use_awaitable));
                s.release = rec ? rec.message() : "ok";
                // The resign found the term gone: the leader was told (as S1's release).
                was_lost = was_lost || rec == corolock::condition::lock_lost;
            }
            s.release_ns = monotonic_ns();
            s.lost_ns = *lost_at;
            s.outcome = was_lost || s.lost_ns != 0 ? "lost" : "ok";
            out.write(s);
        }
        stop = true;
        obs = corolock::leader_observer{};
        if (via_sentinel)
            via_sentinel->cancel();
    });
    return ok ? 0 : 1;
}

// One slot of `j`, run once (run_once) with a fenced increment as its body: the run as a
// section when this process ran it, its `began` line before the write and its `completing`
// line before the done mark (what a killed runner leaves), and a `done` line once marked.
asio::awaitable<void> run_slot(worker_io& io, corolock::job& j, std::uint64_t slot, int worker,
                               const std::string& lock, const std::string& resource,
                               history_writer& out) {
    section s;
    s.worker = worker;
    s.coro = static_cast<int>(slot % 1000000);
    s.lock = lock;
    std::shared_ptr<std::int64_t> lost_at;
    corolock::job_outcome o{};
    try {
        o = co_await corolock::run_once(j, slot, [&](corolock::lease& l) -> asio::awaitable<void> {
            s.token = l.token().value();
            s.enter_ns = monotonic_ns();
            began(out, worker, s.token, s.enter_ns);
            lost_at = watch_loss(io.ioc, l);
            s.fenced = co_await fenced_increment(io.res, resource, l);
            s.exit_ns = monotonic_ns();
            // The body is done: the mark goes out next. A kill after this line may or may not
            // have let the mark land.
            record r{"completing", {}};
            r.fields["w"] = std::to_string(worker);
            r.fields["slot"] = std::to_string(slot);
            out.write(r);
        });
    } catch (const boost::system::system_error& e) {
        s.outcome = "error:" + e.code().message();
    }
    if (s.enter_ns == 0)
        co_return; // not this process's run
    if (s.outcome.empty())
        s.outcome = (lost_at && *lost_at) ? "lost" : "ok";
    s.release_ns = monotonic_ns();
    s.lost_ns = lost_at ? *lost_at : 0;
    out.write(s);
    if (o == corolock::job_outcome::ran) {
        record r{"done", {}};
        r.fields["w"] = std::to_string(worker);
        r.fields["slot"] = std::to_string(slot);
        out.write(r);
    }
}

// Runs the job `lock` at least once: over slots 1..N, or, with `period_ms`, on the server's
// slots of that period until `ms` have passed (polling the server's slot every 5 ms and running
// each new one). Its wall clock may be stepped meanwhile (wall_clock_shim): nothing it does may
// depend on it. Args: worker, lock_port, res_port, lock, resource, history[, period_ms, ms].
COROLOCK_FAULT_WORKER(s17_runner) {
    auto a = parse_args(args);
    worker_io io(static_cast<std::uint16_t>(std::stoi(a["lock_port"])),
                 static_cast<std::uint16_t>(std::stoi(a["res_port"])));
    history_writer out(a["history"]);
    const int worker = std::stoi(a["worker"]);
    const bool server_slots = !a["period_ms"].empty();
    const auto period = std::chrono::milliseconds(server_slots ? std::stoi(a["period_ms"]) : 0);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(server_slots ? std::stoi(a["ms"]) : 0);
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        corolock::job_options opts;
        opts.lock.lease = lease;
        corolock::job j(io.locks, a["lock"], opts);
        if (!server_slots) {
            for (std::uint64_t slot = 1; slot <= slots; ++slot)
                co_await run_slot(io, j, slot, worker, a["lock"], a["resource"], out);
            co_return;
        }
        std::uint64_t last = 0;
        while (std::chrono::steady_clock::now() < until) {
            auto [sec, slot] =
                co_await j.async_server_slot(period, asio::as_tuple(asio::use_awaitable));
            if (sec || slot <= last) {
                asio::steady_timer t(io.ioc, 5ms);
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                continue;
            }
            last = slot;
            co_await run_slot(io, j, slot, worker, a["lock"], a["resource"], out);
        }
    });
    return ok ? 0 : 1;
}

BOOST_AUTO_TEST_SUITE(s17_election_and_jobs)

BOOST_AUTO_TEST_CASE(leaders_killed_never_overlap_and_terms_grow, *utf::timeout(120)) {
    const auto seed = pick_seed();
    std::mt19937_64 rng(seed);
    fenced_resource res;
    redis_process locks;
    temp_dir dir;
    schedule faults;
    const std::string lock = "el:s17";
    std::vector<std::unique_ptr<worker_process>> workers;
    std::map<int, std::int64_t> killed_at;
    int next_id = 0;
    auto start = [&](int ms) {
        const int id = next_id++;
        workers.push_back(std::make_unique<worker_process>(
            "s17_campaigner", campaigner_args(id, locks.port(), res, lock, dir, seed, ms)));
    };
    for (int i = 0; i < 3; ++i)
        start(9000);
    for (int k = 0; k < 3; ++k) {
        std::this_thread::sleep_for(2s);
        // The leader of the moment: its owner id is in the lock hash; kill any live worker
        // (the leader most of the time, since each leads in turn) at a random moment.
        const auto i = std::uniform_int_distribution<std::size_t>(0, workers.size() - 1)(rng);
        auto& victim = workers[i];
        if (!victim->running())
            continue;
        killed_at[static_cast<int>(i)] =
            faults.note("SIGKILL campaigner pid " + std::to_string(victim->pid()));
        victim->kill();
        start(9000 - 2000 * (k + 1));
    }
    for (auto& w : workers)
        if (w->running())
            BOOST_TEST(w->wait(30s) == 0);
    check_election_history("s17 election", dir.read_all(), lock, killed_at, res, seed, faults, 50);
}

// The lock server is SIGKILLed and restarted empty (no persistence) twice under the three
// campaigners, whose wall clocks are stepped by an hour either way meanwhile: a restart frees
// the term at once, so the leader it catches may overlap the next one (as S4's holders); it
// must be told (its lease reported lost), and the fence (tokens grow across restarts) refuses
// its late writes. Observers reconnect, read again and go on in order.
BOOST_AUTO_TEST_CASE(redis_restarts_end_terms_reported_and_fenced, *utf::timeout(120)) {
    const auto seed = pick_seed();
    fenced_resource res;
    redis_process locks;
    temp_dir dir;
    schedule faults;
    const std::string lock = "el:s17:restart";
    // Their wall clocks are stepped too (+1 h, -1 h, then swapped): nothing reads them.
    std::vector<std::unique_ptr<wall_clock_offset>> clocks;
    std::vector<std::unique_ptr<worker_process>> workers;
    for (int id = 0; id < 3; ++id) {
        clocks.push_back(std::make_unique<wall_clock_offset>());
        workers.push_back(std::make_unique<worker_process>(
            "s17_campaigner", campaigner_args(id, locks.port(), res, lock, dir, seed, 7000),
            clocks.back()->env()));
    }
    for (int k = 0; k < 2; ++k) {
        std::this_thread::sleep_for(1s);
        faults.note(k == 0 ? "wall clocks: worker 0 +1 h, worker 1 -1 h"
                           : "wall clocks: worker 0 -1 h, worker 1 +1 h");
        clocks[0]->set(std::chrono::hours(k == 0 ? 1 : -1));
        clocks[1]->set(std::chrono::hours(k == 0 ? -1 : 1));
        std::this_thread::sleep_for(1s);
        // Strike while a term is held (it is, most of the time).
        for (int i = 0; i < 100 && locks.command({"EXISTS", lock}) != ":1\r\n"; ++i)
            std::this_thread::sleep_for(1ms);
        faults.note("SIGKILL redis (lock server)");
        locks.kill();
        locks.start();
        faults.note("redis restarted, empty, answering PING");
    }
    for (auto& w : workers)
        BOOST_TEST(w->wait(30s) == 0);
    check_election_history("s17 election restart", dir.read_all(), lock, {}, res, seed, faults, 30,
                           true);
}

BOOST_AUTO_TEST_CASE(jobs_complete_every_slot_once_across_kills, *utf::timeout(240)) {
    const auto seed = pick_seed();
    std::mt19937_64 rng(seed);
    fenced_resource res;
    redis_process locks;
    temp_dir dir;
    schedule faults;
    const std::string lock = "job:s17";
    std::vector<std::unique_ptr<worker_process>> workers;
    std::map<int, std::int64_t> killed_at;
    int next_id = 0;
    auto start = [&] {
        const int id = next_id++;
        workers.push_back(std::make_unique<worker_process>(
            "s17_runner",
            std::vector<std::string>{
                "worker=" + std::to_string(id), "lock_port=" + std::to_string(locks.port()),
                "res_port=" + std::to_string(res.port()), "lock=" + lock, "resource=" + res.name(),
                "history=" + dir.file("r" + std::to_string(id))}));
    };
    for (int i = 0; i < 3; ++i)
        start();
    for (int k = 0; k < 4; ++k) {
        std::this_thread::sleep_for(1500ms);
        std::vector<std::size_t> live;
        for (std::size_t i = 0; i < workers.size(); ++i)
            if (workers[i]->running())
                live.push_back(i);
        if (live.empty())
            break;
        const auto i = live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng)];
        auto& victim = workers[i];
        killed_at[static_cast<int>(i)] =
            faults.note("SIGKILL runner pid " + std::to_string(victim->pid()));
        victim->kill();
        start();
    }
    for (auto& w : workers)
        if (w->running())
            BOOST_TEST(w->wait(180s) == 0);
    const auto text = dir.read_all();
    const auto history = with_killed(text, lock, killed_at, res.accepted());
    std::map<std::uint64_t, int> done;
    std::set<std::uint64_t> completing; // bodies that ended (their mark was sent next)
    for (const auto& r : parse_records(text)) {
        if (r.kind == "done")
            ++done[static_cast<std::uint64_t>(r.num("slot"))];
        if (r.kind == "completing")
            completing.insert(static_cast<std::uint64_t>(r.num("slot")));
    }
    // A slot with no `done` line: its runner was killed after the body ended, while the mark
    // was on its way (it landed: nobody ran the slot again). Killed before that, the slot must
    // have been run again by another runner, which then wrote `done`.
    for (std::uint64_t slot = 1; slot <= slots; ++slot)
        if (!done.count(slot)) {
            BOOST_TEST(completing.count(slot) == 1u,
                       "slot " << slot << " never completed and was not run again");
            done[slot] = 1;
        }
    std::size_t killed_runs = 0;
    for (const auto& h : history)
        killed_runs += h.outcome == "killed" ? 1 : 0;
    BOOST_TEST_MESSAGE("runs: " << history.size() << " (" << killed_runs
                                << " cut by a kill), slots done: " << done.size()
                                << ", kills: " << killed_at.size());
    BOOST_TEST(killed_at.size() >= 3u);
    BOOST_TEST(done.size() == slots); // every slot completed (at least once) ...
    std::size_t twice = 0;
    for (const auto& [slot, n] : done)
        twice += n > 1 ? 1 : 0;
    BOOST_TEST(twice == 0u); // ... and marked done once
    const auto unreported = find_unreported_overlaps(history);
    BOOST_TEST(unreported.overlaps == 0u);
    for (const auto& e : unreported.examples)
        BOOST_TEST_MESSAGE(e);
    const auto fencing = check_fencing(history, res.accepted());
    BOOST_TEST(fencing.problems.empty());
    for (std::size_t i = 0; i < fencing.problems.size() && i < 10; ++i)
        BOOST_TEST_MESSAGE(fencing.problems[i]);
    if (current_test_failed())
        report_failure("s17 jobs", seed, faults, history);
}

// Three runners on the server's 100 ms slots, their wall clocks stepped (+1 h, -1 h, +30 min,
// back) while they run: the slot is the server's, at_least_for and the lease are on the server's
// clock and steady_clock, so every slot from the first to the last is completed exactly once and
// no runs overlap.
BOOST_AUTO_TEST_CASE(stepped_client_clocks_run_every_server_slot_once, *utf::timeout(120)) {
    const auto seed = pick_seed();
    fenced_resource res;
    redis_process locks;
    temp_dir dir;
    schedule faults;
    const std::string lock = "job:s17:clock";
    std::vector<std::unique_ptr<wall_clock_offset>> clocks;
    std::vector<std::unique_ptr<worker_process>> runners;
    for (int id = 0; id < 3; ++id) {
        clocks.push_back(std::make_unique<wall_clock_offset>());
        runners.push_back(std::make_unique<worker_process>(
            "s17_runner",
            std::vector<std::string>{
                "worker=" + std::to_string(id), "lock_port=" + std::to_string(locks.port()),
                "res_port=" + std::to_string(res.port()), "lock=" + lock, "resource=" + res.name(),
                "history=" + dir.file("r" + std::to_string(id)), "ms=6000", "period_ms=100"},
            clocks.back()->env()));
    }
    using std::chrono::hours;
    using std::chrono::minutes;
    std::this_thread::sleep_for(1500ms);
    faults.note("runner 0 wall clock +1 h, runner 1 -1 h");
    clocks[0]->set(hours(1));
    clocks[1]->set(-hours(1));
    std::this_thread::sleep_for(1500ms);
    faults.note("runner 0 -1 h, runner 2 +30 min");
    clocks[0]->set(-hours(1));
    clocks[2]->set(minutes(30));
    std::this_thread::sleep_for(1500ms);
    faults.note("every wall clock back");
    for (auto& c : clocks)
        c->set(std::chrono::seconds(0));
    for (auto& r : runners)
        BOOST_TEST(r->wait(30s) == 0);
    const auto text = dir.read_all();
    const auto history = parse_sections(text);
    std::map<std::uint64_t, int> done;
    for (const auto& r : parse_records(text))
        if (r.kind == "done")
            ++done[static_cast<std::uint64_t>(r.num("slot"))];
    BOOST_REQUIRE(!done.empty());
    const auto first = done.begin()->first, last = done.rbegin()->first;
    BOOST_TEST_MESSAGE("s17 clock: slots " << done.size() << " (" << first << ".." << last
                                           << "), runs " << history.size());
    BOOST_TEST(done.size() >= 40u);
    BOOST_TEST(done.size() == last - first + 1); // none skipped
    for (const auto& [slot, n] : done)
        BOOST_TEST(n == 1, "slot " << slot << " completed " << n << " times");
    const auto unreported = find_unreported_overlaps(history);
    BOOST_TEST(unreported.overlaps == 0u);
    const auto fencing = check_fencing(history, res.accepted());
    BOOST_TEST(fencing.problems.empty());
    if (current_test_failed())
        report_failure("s17 clock", seed, faults, history);
}

// The three campaigners over Sentinel-backed connections through a planned `SENTINEL FAILOVER`
// (as S16): between the promotion and the switch the old master still takes writes, and a term
// granted there is dropped when it resyncs. No overlap unless the earlier leader was told first,
// terms and fenced writes in order, observers forward.
BOOST_AUTO_TEST_CASE(a_sentinel_failover_keeps_terms_apart, *utf::timeout(120)) {
    const auto seed = pick_seed();
    corolock::test::sentinel_set set;
    fenced_resource res;
    temp_dir dir;
    schedule faults;
    const std::string lock = "el:s17:sentinel";
    const auto replica = set.node(1).port();
    std::string sentinels;
    for (const auto& addr : set.addresses())
        sentinels += (sentinels.empty() ? "" : ",") + addr.port;
    std::vector<std::unique_ptr<worker_process>> workers;
    for (int id = 0; id < 3; ++id)
        workers.push_back(std::make_unique<worker_process>("s17_campaigner", [&] {
            auto args = campaigner_args(id, set.node(0).port(), res, lock, dir, seed, 8000);
            args.push_back("sentinels=" + sentinels);
            return args;
        }()));
    std::this_thread::sleep_for(2500ms);
    const auto reply = set.sentinel(1).command({"SENTINEL", "FAILOVER", "m1"});
    BOOST_TEST(reply == "+OK\r\n", reply);
    faults.note("SENTINEL FAILOVER (Sentinel 1)");
    bool switched = false;
    for (int i = 0; i < 1000 && !switched; ++i) {
        switched = set.sentinel(1)
                       .command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m1"})
                       .ends_with("\r\n" + std::to_string(replica) + "\r\n");
        if (switched)
            faults.note("+switch-master (Sentinel 1 names the replica)");
        else
            std::this_thread::sleep_for(10ms);
    }
    BOOST_TEST(switched);
    for (auto& w : workers)
        BOOST_TEST(w->wait(30s) == 0);
    check_election_history("s17 election sentinel", dir.read_all(), lock, {}, res, seed, faults,
                           30);
}

// The leader of the moment is cut off from the lock server (the fault proxy of its connection
// blackholes both ways for three leases, then heals): it must be told its term is lost, by its
// own steady clock, before another campaigner leads; after the heal its queued bytes must not
// touch the new term. Twice, each time whoever leads.
BOOST_AUTO_TEST_CASE(a_partitioned_leader_is_told_before_the_next_term, *utf::timeout(120)) {
    const auto seed = pick_seed();
    fenced_resource res;
    redis_process locks;
    temp_dir dir;
    schedule faults;
    const std::string lock = "el:s17:partition";
    std::vector<std::unique_ptr<corolock::test::fault_proxy>> proxies;
    std::vector<std::unique_ptr<worker_process>> workers;
    for (int id = 0; id < 3; ++id) {
        proxies.push_back(std::make_unique<corolock::test::fault_proxy>(locks.port()));
        workers.push_back(std::make_unique<worker_process>(
            "s17_campaigner",
            campaigner_args(id, proxies.back()->port(), res, lock, dir, seed, 9000)));
    }
    int cuts = 0;
    for (int k = 0; k < 2; ++k) {
        std::this_thread::sleep_for(2s);
        // The leader's campaign value is "w<id>" (its record is the lock hash's `value`).
        int leader = -1;
        for (int i = 0; i < 200 && leader < 0; ++i) {
            const auto v = locks.command({"HGET", lock, "value"});
            if (v.size() > 4 && v[0] == '$' && v.find("\r\nw") != std::string::npos)
                leader = v[v.find("\r\nw") + 3] - '0';
            else
                std::this_thread::sleep_for(1ms);
        }
        if (leader < 0 || leader > 2)
            continue;
        faults.note("blackhole worker " + std::to_string(leader) + "'s connection");
        proxies[static_cast<std::size_t>(leader)]->blackhole();
        ++cuts;
        std::this_thread::sleep_for(3 * lease);
        proxies[static_cast<std::size_t>(leader)]->heal();
        faults.note("healed");
    }
    BOOST_TEST(cuts >= 1);
    for (auto& w : workers)
        BOOST_TEST(w->wait(30s) == 0);
    const auto text = dir.read_all();
    std::size_t lost = 0;
    for (const auto& s : parse_sections(text))
        lost += s.lost() ? 1 : 0;
    BOOST_TEST_MESSAGE("s17 election partition: " << cuts << " cuts, " << lost
                                                  << " terms reported lost");
    check_election_history("s17 election partition", text, lock, {}, res, seed, faults, 30);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s17_election_and_jobs
