// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The scheduled job against a real server: one run per slot among competing runners, a slot
// done is never run again, skip-if-held, at-least-once and at-most-once after a runner that
// stopped mid-run, at_least_for on the server's clock, a lost lease cancels the body and marks
// nothing. doc/job.md states each of these.
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/job.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_job {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::job_mode;
using corolock::job_options;
using corolock::job_outcome;
using corolock::lease;
using corolock::run_once;
using corolock::test::config_for;
using corolock::test::quiet;
using corolock::test::sleep_for;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;

namespace {

// Counts the run of `slot` in the hash `runs`, fenced by the run's lease.
const corolock::fenced_script count_run("return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)");

awaitable<void> count(lease& l, std::uint64_t slot, std::string runs) {
    const std::string s = std::to_string(slot);
    const std::string_view keys[] = {runs};
    const std::string_view args[] = {s};
    corolock::generic_response r;
    co_await l.async_fenced_eval(count_run, keys, args, r);
}

job_options short_lease(clock_type::duration lease) {
    job_options o;
    o.lock.lease = lease;
    return o;
}

struct fixture : corolock::test::server_fixture {};

} // namespace

BOOST_AUTO_TEST_SUITE(job)

// Three runners on two connections race for each of 300 slots: each slot runs once.
BOOST_FIXTURE_TEST_CASE(each_slot_runs_once_among_competing_runners, fixture) {
    run(
        [&]() -> awaitable<void> {
            constexpr std::uint64_t slots = 300;
            corolock::job a(conn, "{job:race}"), b(peer, "{job:race}"), c(conn, "{job:race}");
            std::map<job_outcome, int> outcomes;
            auto runner = [&](corolock::job& j) -> awaitable<void> {
                for (std::uint64_t s = 1; s <= slots; ++s)
                    ++outcomes[co_await run_once(
                        j, s, [&](lease& l) { return count(l, s, "{job:race}:runs"); })];
            };
            auto ex = co_await asio::this_coro::executor;
            co_await asio::experimental::make_parallel_group(
                asio::co_spawn(ex, runner(a), asio::deferred),
                asio::co_spawn(ex, runner(b), asio::deferred),
                asio::co_spawn(ex, runner(c), asio::deferred))
                .async_wait(asio::experimental::wait_for_all(), asio::deferred);
            BOOST_TEST(outcomes[job_outcome::ran] == static_cast<int>(slots));
            BOOST_TEST(outcomes[job_outcome::done_already] == static_cast<int>(2 * slots));
            const auto runs = srv.command({"HVALS", "{job:race}:runs"});
            BOOST_TEST(runs.find("$1\r\n2") == std::string::npos); // no slot counted twice
            BOOST_TEST(srv.command({"HLEN", "{job:race}:runs"}) == ":300\r\n");
            auto done = co_await a.async_last_done();
            BOOST_TEST((done == std::optional<std::uint64_t>(slots)));
            // A slot done is not run again, nor an earlier one.
            BOOST_TEST((co_await run_once(b, 7, [](lease&) -> awaitable<void> {
                            BOOST_FAIL("ran a slot already done");
                            co_return;
                        }) == job_outcome::done_already));
            const auto pttl = srv.command({"PTTL", "{job:race}:job"});
            BOOST_TEST(std::stoll(pttl.substr(1)) > 6 * 24 * 3600 * 1000LL); // record_retention
        },
        60s);
}

BOOST_FIXTURE_TEST_CASE(a_zero_wait_skips_a_job_running_elsewhere, fixture) {
    run([&]() -> awaitable<void> {
        job_options skip;
        skip.wait = clock_type::duration::zero();
        corolock::job a(conn, "job:skip"), b(peer, "job:skip", skip);
        auto run = co_await a.async_begin(1);
        BOOST_REQUIRE(run.runs());
        auto other = co_await b.async_begin(1);
        BOOST_TEST(!other.runs());
        BOOST_TEST((other.outcome() == job_outcome::busy));
        auto [ec] = co_await run.async_complete(tuple_deferred);
        BOOST_TEST(!ec);
        BOOST_TEST(!run.runs());
        BOOST_TEST(!exists("job:skip")); // released
        auto again = co_await b.async_begin(1);
        BOOST_TEST((again.outcome() == job_outcome::done_already));
        BOOST_TEST(!exists("job:skip")); // nothing held for a slot done
    });
}

// A runner whose process stops mid-run: at least once, the slot runs again once its lease has
// run out; at most once, it is reported abandoned and never run again.
BOOST_FIXTURE_TEST_CASE(a_runner_that_stops_mid_run_is_rerun_or_abandoned_as_asked, fixture) {
    run([&]() -> awaitable<void> {
        for (const auto mode : {job_mode::at_least_once, job_mode::at_most_once}) {
            const std::string name = mode == job_mode::at_least_once ? "job:least" : "job:most";
            auto opts = short_lease(400ms);
            opts.mode = mode;
            auto cfg = config_for(srv);
            cfg.health_check_interval = clock_type::duration::zero();
            auto& doomed = add_connection(cfg, quiet());
            corolock::job a(doomed, name, opts), b(peer, name, opts);
            auto run = co_await a.async_begin(5);
            BOOST_REQUIRE(run.runs());
            doomed.cancel(); // the runner's process stops: no mark, no release
            const auto t0 = clock_type::now();
            auto next = co_await b.async_begin(5);
            const auto took = clock_type::now() - t0;
            if (mode == job_mode::at_least_once) {
                BOOST_TEST(next.runs());
                BOOST_TEST((took < 400ms + 1500ms));
                co_await next.async_complete();
                BOOST_TEST((co_await b.async_last_done() == std::optional<std::uint64_t>(5)));
            } else {
                BOOST_TEST(!next.runs());
                BOOST_TEST((next.outcome() == job_outcome::abandoned));
                BOOST_TEST(!(co_await b.async_last_done()).has_value());
                // The next slot runs as usual.
                auto six = co_await b.async_begin(6);
                BOOST_TEST(six.runs());
                co_await six.async_complete();
            }
        }
    });
}

BOOST_FIXTURE_TEST_CASE(at_least_for_holds_the_next_slot_back_on_the_server_clock, fixture) {
    run([&]() -> awaitable<void> {
        job_options opts;
        opts.at_least_for = 700ms;
        corolock::job a(conn, "job:least_for", opts), b(peer, "job:least_for", opts);
        BOOST_TEST((co_await run_once(a, 1, [](lease&) -> awaitable<void> { co_return; }) ==
                    job_outcome::ran));
        // A process whose clock runs ahead asks for slot 2 at once: too soon.
        BOOST_TEST((co_await run_once(b, 2, [](lease&) -> awaitable<void> { co_return; }) ==
                    job_outcome::too_soon));
        co_await sleep_for(800ms);
        BOOST_TEST((co_await run_once(b, 2, [](lease&) -> awaitable<void> { co_return; }) ==
                    job_outcome::ran));
    });
}

BOOST_FIXTURE_TEST_CASE(a_run_past_at_most_for_is_cancelled_and_not_marked, fixture) {
    run([&]() -> awaitable<void> {
        job_options opts;
        opts.at_most_for = 300ms;
        corolock::job a(conn, "job:most_for", opts);
        bool cancelled = false;
        try {
            co_await run_once(a, 1, [&](lease&) -> awaitable<void> {
                auto [ec] = co_await asio::steady_timer(co_await asio::this_coro::executor, 5s)
                                .async_wait(tuple_deferred);
                cancelled = ec == asio::error::operation_aborted;
            });
            BOOST_FAIL("the run outlived at_most_for");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == error::max_hold_reached);
        }
        BOOST_TEST(cancelled);
        BOOST_TEST(!(co_await a.async_last_done()).has_value());
    });
}

BOOST_FIXTURE_TEST_CASE(server_slots_agree_and_bad_arguments_fail_first, fixture) {
    run([&]() -> awaitable<void> {
        corolock::job a(conn, "job:slots"), b(peer, "job:slots");
        const auto s1 = co_await a.async_server_slot(std::chrono::hours(1));
        const auto s2 = co_await b.async_server_slot(std::chrono::hours(1));
        BOOST_TEST((s2 == s1 || s2 == s1 + 1));
        BOOST_TEST(s1 > 400000u); // hours since 1970
        auto [ec, s] = co_await a.async_server_slot(0ms, tuple_deferred);
        BOOST_TEST(ec == error::invalid_argument);
        job_options bad;
        bad.at_least_for = -1ms;
        corolock::job c(conn, "job:bad", bad);
        auto [ec2, r] = co_await c.async_begin(1, tuple_deferred);
        BOOST_TEST(ec2 == error::invalid_argument);
        BOOST_TEST(!exists("job:bad"));
        // A foreign key at the record.
        BOOST_TEST(srv.command({"SET", "{job:foreign}:job", "x"}) == "+OK\r\n");
        corolock::job f(conn, "job:foreign");
        auto [ec3, r3] = co_await f.async_begin(1, tuple_deferred);
        BOOST_TEST(ec3 == error::wrong_type);
        BOOST_TEST(!exists("job:foreign")); // the lock was released
    });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_job
