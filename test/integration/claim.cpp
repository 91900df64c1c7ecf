// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/claim.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_claim {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::async_claim;
using corolock::error;
using corolock::error_code;
using corolock::test::bulk;
using corolock::test::config_for;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;

namespace {

using corolock::test::tuple_deferred;

// Two connections to one server, running for the length of a test body.
struct fixture : corolock::test::server_fixture {
    std::string get(const std::string& key) { return srv.command({"GET", key}); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(claim)

BOOST_FIXTURE_TEST_CASE(concurrent_claims_have_one_winner, fixture) {
    run([&]() -> awaitable<void> {
        using op_type = decltype(async_claim(conn, "k", 1s, tuple_deferred));
        std::vector<op_type> ops;
        for (int i = 0; i < 200; ++i)
            ops.push_back(async_claim(i % 2 ? conn : peer, "claim:race", 30s, tuple_deferred));
        auto [order, results] =
            co_await asio::experimental::make_parallel_group(std::move(ops))
                .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
        (void)order;
        int won = 0, refused = 0, failed = 0;
        std::string winner;
        for (auto& [ec, c] : results) {
            if (ec)
                ++failed;
            else if (c) {
                ++won;
                winner = c.owner();
                BOOST_TEST(c.key() == "claim:race");
                BOOST_TEST(c.owner().size() == 32u);
            } else {
                ++refused;
                BOOST_TEST(c.key().empty());
            }
        }
        BOOST_TEST(won == 1);
        BOOST_TEST(refused == 199);
        BOOST_TEST(failed == 0);
        BOOST_TEST(get("claim:race") == bulk(winner)); // the value is the winner's owner
        const auto pttl = srv.command({"PTTL", "claim:race"});
        BOOST_TEST(pttl.starts_with(":"));
        BOOST_TEST(std::stoll(pttl.substr(1)) > 20000);
    });
}

BOOST_FIXTURE_TEST_CASE(destroyed_claim_keeps_its_window, fixture) {
    run([&]() -> awaitable<void> {
        {
            auto c = co_await async_claim(conn, "claim:window", 30s);
            BOOST_TEST(static_cast<bool>(c));
            BOOST_TEST((c.valid_until() > std::chrono::steady_clock::now() + 25s));
        } // destroyed: nothing is sent
        BOOST_TEST(exists("claim:window"));
        auto again = co_await async_claim(peer, "claim:window", 30s);
        BOOST_TEST(!again); // still refused: the window, not the object, guards the key
        auto again2 = co_await async_claim(conn, "claim:window", 30s);
        BOOST_TEST(!again2);
    });
}

BOOST_FIXTURE_TEST_CASE(give_back_lets_a_retry_proceed, fixture) {
    run([&]() -> awaitable<void> {
        auto c = co_await async_claim(conn, "claim:retry", 30s);
        BOOST_REQUIRE(c);
        BOOST_TEST(!(co_await async_claim(peer, "claim:retry", 30s))); // in progress
        co_await c.async_give_back();
        BOOST_TEST(!c); // consumed
        BOOST_TEST(!exists("claim:retry"));
        auto [ec] = co_await c.async_give_back(tuple_deferred);
        BOOST_TEST(ec == error::not_owner); // an empty claim has nothing to give back

        auto retry = co_await async_claim(peer, "claim:retry", 30s);
        BOOST_TEST(static_cast<bool>(retry));
        BOOST_TEST(get("claim:retry") == bulk(retry.owner()));
        // Moving keeps the claim; the moved-from object is empty.
        corolock::claim moved = std::move(retry);
        BOOST_TEST(!retry);
        BOOST_TEST(static_cast<bool>(moved));
        co_await moved.async_give_back();
        BOOST_TEST(!exists("claim:retry"));
    });
}

BOOST_FIXTURE_TEST_CASE(give_back_after_the_window_is_not_owner, fixture) {
    run([&]() -> awaitable<void> {
        auto old = co_await async_claim(conn, "claim:expired", 50ms);
        BOOST_REQUIRE(old);
        co_await sleep_for(150ms);
        BOOST_TEST(!exists("claim:expired")); // the window passed
        auto newer = co_await async_claim(peer, "claim:expired", 30s);
        BOOST_REQUIRE(newer);
        auto [ec] = co_await old.async_give_back(tuple_deferred);
        BOOST_TEST(ec == error::not_owner);
        BOOST_TEST(ec == corolock::condition::lock_lost);
        BOOST_TEST(get("claim:expired") == bulk(newer.owner()));   // the newer claim is untouched
        auto [ec2] = co_await old.async_give_back(tuple_deferred); // and old is empty now
        BOOST_TEST(ec2 == error::not_owner);
    });
}

BOOST_FIXTURE_TEST_CASE(give_back_leaves_a_foreign_key_alone, fixture) {
    run([&]() -> awaitable<void> {
        auto c = co_await async_claim(conn, "claim:foreign", 50ms);
        BOOST_REQUIRE(c);
        co_await sleep_for(150ms);
        srv.command({"HSET", "claim:foreign", "a", "b"}); // someone else's key, of another type
        auto refused = co_await async_claim(conn, "claim:foreign", 1s);
        BOOST_TEST(!refused); // any existing key refuses a claim
        auto [ec] = co_await c.async_give_back(tuple_deferred);
        BOOST_TEST(ec == error::not_owner);
        BOOST_TEST(exists("claim:foreign"));
    });
}

BOOST_FIXTURE_TEST_CASE(invalid_arguments_fail_before_anything_is_sent, fixture) {
    run([&]() -> awaitable<void> {
        co_await async_claim(conn, "claim:warmup", 1s); // connected, HELLO counted
        const auto before = conn.stats().commands;
        auto [e1, c1] = co_await async_claim(conn, "", 1s, tuple_deferred);
        BOOST_TEST(e1 == error::invalid_name);
        BOOST_TEST(e1 == corolock::condition::invalid_argument);
        BOOST_TEST(!c1);
        for (auto r :
             {std::chrono::steady_clock::duration(0ms), std::chrono::steady_clock::duration(999us),
              std::chrono::steady_clock::duration(-1s),
              std::chrono::steady_clock::duration(std::chrono::hours(24 * 366))}) {
            auto [ec, c] = co_await async_claim(conn, "claim:bad", r, tuple_deferred);
            BOOST_TEST(ec == error::invalid_argument);
            BOOST_TEST(!c);
        }
        BOOST_TEST(conn.stats().commands == before);
        BOOST_TEST(!exists("claim:bad"));
        // The boundaries are accepted.
        BOOST_TEST(static_cast<bool>(co_await async_claim(conn, "claim:1ms", 1ms)));
        BOOST_TEST(static_cast<bool>(
            co_await async_claim(conn, "claim:365d", std::chrono::hours(24 * 365))));
    });
}

BOOST_FIXTURE_TEST_CASE(completes_on_the_handlers_executor_never_inline, fixture) {
    // A strand of its own stands for "the handler's executor": each completion must run on it
    // and never inside the initiating call, for every path (invalid, claimed, refused, given
    // back, given back empty).
    run([&]() -> awaitable<void> {
        auto strand = asio::make_strand(ioc);
        int done = 0;
        bool inline_call = false, wrong_executor = false;
        auto check = [&](bool* initiating) {
            return asio::bind_executor(strand, [&, initiating](auto&&...) {
                if (*initiating)
                    inline_call = true;
                if (!strand.running_in_this_thread())
                    wrong_executor = true;
                ++done;
            });
        };
        auto step = [&](auto start) -> awaitable<void> {
            bool initiating = true;
            const int before = done;
            start(check(&initiating));
            initiating = false;
            while (done == before)
                co_await sleep_for(1ms);
        };
        co_await step([&](auto h) { async_claim(conn, "", 1s, std::move(h)); });
        co_await step([&](auto h) { async_claim(conn, "claim:exec", 0s, std::move(h)); });
        corolock::claim kept;
        co_await step([&](auto h) {
            async_claim(conn, "claim:exec", 5s,
                        asio::bind_executor(strand, [&, h = std::move(h)](
                                                        error_code ec, corolock::claim c) mutable {
                            kept = std::move(c);
                            h(ec);
                        }));
        });
        BOOST_TEST(static_cast<bool>(kept));
        co_await step([&](auto h) { async_claim(peer, "claim:exec", 5s, std::move(h)); });
        co_await step([&](auto h) { kept.async_give_back(std::move(h)); });
        co_await step([&](auto h) { kept.async_give_back(std::move(h)); });
        BOOST_TEST(done == 6);
        BOOST_TEST(!inline_call);
        BOOST_TEST(!wrong_executor);
        BOOST_TEST(!exists("claim:exec"));
    });
}

BOOST_FIXTURE_TEST_CASE(a_cancelled_claim_does_not_block_the_key, fixture) {
    run([&]() -> awaitable<void> {
        co_await async_claim(conn, "claim:warm", 1s); // connected
        // Cancelled before it is written: never sent.
        {
            asio::cancellation_signal sig;
            auto ex = co_await asio::this_coro::executor;
            asio::post(ex, [&] { sig.emit(asio::cancellation_type::terminal); });
            auto [ec, c] = co_await async_claim(
                conn, "claim:cancel1", 30s,
                asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
            if (ec) {
                BOOST_TEST(ec == asio::error::operation_aborted);
                BOOST_TEST(!c);
            } else if (c) {
                co_await c.async_give_back(); // the reply won the race: not this case's point
            }
        }
        // Cancelled after it is written (the server is paused, so no reply yet): the caller
        // hears operation_aborted at once, and the claim the SET made is given back.
        {
            asio::cancellation_signal sig;
            error_code ec;
            corolock::claim c;
            bool done = false;
            // A connection of its own, whose log shows which path the claim took. The log may
            // be written after this block (the connection stops in the background): it owns
            // its lines.
            auto lines = std::make_shared<std::vector<std::string>>();
            corolock::logger log{
                corolock::logger::level::info,
                [lines](corolock::logger::level, std::string_view m) { lines->emplace_back(m); }};
            auto cfg3 = config_for(srv);
            cfg3.health_check_interval = 0s; // keeps the connection while the server is paused
            corolock::connection conn3(ioc.get_executor(), cfg3, log);
            conn3.async_run(asio::detached);
            co_await async_claim(conn3, "claim:warm3", 1s); // connected
            srv.pause();
            const auto written_before = conn3.stats().commands;
            async_claim(
                conn3, "claim:cancel2", 30s,
                asio::bind_cancellation_slot(sig.slot(), [&](error_code e, corolock::claim x) {
                    ec = e;
                    c = std::move(x);
                    done = true;
                }));
            BOOST_TEST_REQUIRE(co_await corolock::test::eventually(
                [&] { return conn3.stats().commands > written_before; }, 5s)); // written
            sig.emit(asio::cancellation_type::terminal);
            BOOST_TEST(co_await corolock::test::eventually([&] { return done; }, 5s));
            BOOST_TEST(ec == asio::error::operation_aborted);
            BOOST_TEST(!c);
            srv.resume();
            // The SET's reply arrives now and starts the give-back in the background; the line
            // is logged once its DEL is answered (the key can be gone a moment before).
            const std::string given_back =
                "claim claim:cancel2: cancelled after it was made; given back";
            const auto logged = [&] {
                return std::count(lines->begin(), lines->end(), given_back);
            };
            const auto deadline = std::chrono::steady_clock::now() + 5s;
            while (logged() == 0 && std::chrono::steady_clock::now() < deadline)
                co_await sleep_for(5ms);
            BOOST_TEST(logged() == 1);
            BOOST_TEST(!exists("claim:cancel2"));
            conn3.cancel();
        }
        BOOST_TEST(!exists("claim:cancel1"));
    });
}

// The race of the review: a claim granted to a caller that left before its completion ran (the
// timer of `co_await (async_claim(...) || timer)` won) was dropped, and its key stayed claimed
// for the whole window with nobody doing the work. The completion here is bound to an executor
// that does not run until after the cancellation: the grant has been read by then, and the
// caller must still hear operation_aborted, with the key given back.
BOOST_FIXTURE_TEST_CASE(a_claim_granted_to_a_caller_that_left_is_given_back, fixture) {
    run([&]() -> awaitable<void> {
        co_await async_claim(conn, "claim:warm", 1s); // connected
        asio::io_context later; // runs the caller's completion only when the test says so
        asio::cancellation_signal sig;
        error_code ec;
        corolock::claim c;
        bool done = false;
        async_claim(conn, "claim:left", 30s,
                    asio::bind_cancellation_slot(
                        sig.slot(), asio::bind_executor(later.get_executor(),
                                                        [&](error_code e, corolock::claim x) {
                                                            ec = e;
                                                            c = std::move(x);
                                                            done = true;
                                                        })));
        // The SET ran, and its reply is read by the connection (a PING behind it answered).
        BOOST_TEST_REQUIRE(
            co_await corolock::test::eventually([&] { return exists("claim:left"); }, 5s));
        corolock::request ping;
        ping.push("PING");
        co_await conn.async_exec(ping, corolock::ignore);
        BOOST_TEST(!done);
        sig.emit(asio::cancellation_type::terminal); // the caller leaves
        later.run();
        BOOST_TEST(done);
        BOOST_TEST(ec == asio::error::operation_aborted);
        BOOST_TEST(!c);
        BOOST_TEST(co_await corolock::test::eventually([&] { return !exists("claim:left"); }, 5s));
    });
}

// The same race as users write it, many times with timers around a round trip: whichever side
// wins, no key is left claimed by nobody.
BOOST_FIXTURE_TEST_CASE(a_claim_raced_against_a_timer_leaves_no_orphan, fixture) {
    using namespace asio::experimental::awaitable_operators;
    run([&]() -> awaitable<void> {
        co_await async_claim(conn, "claim:warm", 1s); // connected
        auto ex = co_await asio::this_coro::executor;
        int timer_won = 0, claim_won = 0;
        std::vector<std::string> left;
        for (int i = 0; i < 300; ++i) {
            const auto key = "claim:timer:" + std::to_string(i);
            asio::steady_timer t(ex, std::chrono::microseconds(i % 60 * 10));
            auto r = co_await (async_claim(conn, key, 30s, asio::use_awaitable) ||
                               t.async_wait(asio::use_awaitable));
            if (r.index() == 0) {
                ++claim_won;
                BOOST_TEST(static_cast<bool>(std::get<0>(r)));
            } else {
                ++timer_won;
                left.push_back(key);
            }
        }
        BOOST_TEST_MESSAGE("claim won " << claim_won << ", timer won " << timer_won);
        BOOST_TEST(timer_won > 0); // the race was run
        for (const auto& key : left)
            BOOST_TEST(co_await corolock::test::eventually([&] { return !exists(key); }, 5s),
                       key << " is claimed by nobody");
    });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_claim
