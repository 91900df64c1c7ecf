// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper election against a real server: the promises every backend keeps
// (common/election_check.hpp), the record node doc/election.md describes, a leader whose
// session ends is replaced and fenced out, lock-delay after a lost leader only, bad arguments
// refused before anything is sent, and a cancelled campaign leaves no node.
#include "common/election_check.hpp"
#include "zk_test.hpp"
#include <corolock/zookeeper.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace zookeeper_zk_election {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using asio::awaitable;
using corolock::error;
using corolock::zk_election;
using corolock::zk_election_options;
using corolock::test::running_zk;
using corolock::test::shared_zk;
using corolock::test::wait_ephemerals;
using corolock::test::zk_test_config;
using clock_type = std::chrono::steady_clock;

static_assert(corolock::leader_election<zk_election>);

namespace {

struct zk_fixture {
    asio::io_context ioc;
    template <class F>
    void run(F body, std::chrono::seconds limit = 60s) {
        shared_zk(); // started outside the timed body
        corolock::test::run_coroutine_test(ioc, body(), limit);
    }
};

constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

} // namespace

BOOST_AUTO_TEST_SUITE(zk_election_suite)

BOOST_FIXTURE_TEST_CASE(keeps_every_backends_promises, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config()), d(ex, zk_test_config());
        zk_election a(*c, "/corolock/test/el/generic"), b(*d, "/corolock/test/el/generic");
        const auto bad = co_await corolock::test::check_election(a, b);
        for (const auto& line : bad)
            BOOST_ERROR(line);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(the_record_says_live_then_ended, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        zk_election a(*c, "/corolock/test/el/record");
        auto l = co_await a.async_campaign("the value");
        const auto token = l.term();
        const auto term = std::to_string(token.value());
        BOOST_TEST((l.term().backend() == corolock::lock_backend::zookeeper));
        auto data = co_await c->async_get("/corolock/test/el/record/leader", asio::use_awaitable);
        BOOST_TEST(data == "live " + term + " 1\n" + l.lease().name() + "\nthe value");
        co_await l.async_proclaim("second", asio::use_awaitable);
        data = co_await c->async_get("/corolock/test/el/record/leader", asio::use_awaitable);
        BOOST_TEST(data == "live " + term + " 2\n" + l.lease().name() + "\nsecond");
        co_await l.async_resign(asio::use_awaitable);
        data = co_await c->async_get("/corolock/test/el/record/leader", asio::use_awaitable);
        BOOST_TEST(data == "ended " + term + " 2");
        auto info = co_await a.async_leader(asio::use_awaitable);
        BOOST_TEST(!info.present);
        BOOST_TEST(!l.owns());
        BOOST_TEST(info.term == token);
    });
}

// A leader whose session ends without a resign (its connection stops: the session is closed
// and its node goes): the observer sees the end, the waiting campaigner takes the next term, and
// the old lease's fenced write is refused.
BOOST_FIXTURE_TEST_CASE(a_lost_leader_is_replaced_and_fenced_out, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto doomed = std::make_unique<running_zk>(ex, zk_test_config());
        running_zk d(ex, zk_test_config()), w(ex, zk_test_config());
        zk_election a(**doomed, "/corolock/test/el/lost"), b(*d, "/corolock/test/el/lost"),
            watch(*w, "/corolock/test/el/lost");
        auto obs = watch.observe();
        co_await obs.async_next(asio::use_awaitable); // nobody
        auto la = co_await a.async_campaign("a");
        auto ev1 = co_await obs.async_next(asio::use_awaitable);
        BOOST_TEST(ev1.value == "a");
        (*doomed)->cancel();
        auto lb = co_await b.async_campaign("b");
        BOOST_TEST(lb.term() > la.term());
        BOOST_TEST(!la.valid());
        // The end (the node's deletion) and then b, or b at once (the end implied).
        auto ev2 = co_await obs.async_next(asio::use_awaitable);
        if (!ev2.present) {
            BOOST_TEST(ev2.term == la.term());
            ev2 = co_await obs.async_next(asio::use_awaitable);
        }
        BOOST_TEST(ev2.present);
        BOOST_TEST(ev2.value == "b");
        BOOST_TEST(ev2.term == lb.term());
        auto [ew] =
            co_await la.lease().async_fenced_write("/corolock/test/el/lost-data", "a", tuple);
        BOOST_TEST(!!ew);
        co_await lb.lease().async_fenced_write("/corolock/test/el/lost-data", "b",
                                               asio::use_awaitable);
        co_await lb.async_resign(asio::use_awaitable);
        la = corolock::zk_leadership{};
        doomed.reset();
    });
}

BOOST_FIXTURE_TEST_CASE(lock_delay_holds_a_term_back_after_a_lost_leader_only, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config()), d(ex, zk_test_config());
        zk_election_options opts;
        opts.lock_delay = 800ms;
        zk_election a(*c, "/corolock/test/el/delay", opts), b(*d, "/corolock/test/el/delay", opts);
        // After a resign: no delay.
        auto la = co_await a.async_campaign("a");
        co_await la.async_resign(asio::use_awaitable);
        auto t0 = clock_type::now();
        auto lb = co_await b.async_campaign("b");
        BOOST_TEST((clock_type::now() - t0 < 600ms));
        co_await lb.async_resign(asio::use_awaitable);
        // After a lost leader (its session closed without a resign): the next term waits.
        auto doomed = std::make_unique<running_zk>(ex, zk_test_config());
        zk_election e(**doomed, "/corolock/test/el/delay", opts);
        auto le = co_await e.async_campaign("e");
        (*doomed)->cancel();
        t0 = clock_type::now();
        auto la2 = co_await a.async_campaign("a again");
        const auto took = clock_type::now() - t0;
        BOOST_TEST((took >= 800ms));
        BOOST_TEST(la2.term() > le.term());
        co_await la2.async_resign(asio::use_awaitable);
        le = corolock::zk_leadership{};
    });
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_fail_before_anything_is_sent, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        zk_election_options opts;
        opts.lock_delay = std::chrono::hours(2);
        zk_election bad(*c, "/corolock/test/el/bad", opts);
        auto [ec, l] = co_await bad.async_campaign("x", tuple);
        BOOST_TEST(ec == error::invalid_argument);
        opts.lock_delay = -1ms;
        zk_election negative(*c, "/corolock/test/el/bad", opts);
        auto [ec2, l2] = co_await negative.async_campaign("x", tuple);
        BOOST_TEST(ec2 == error::invalid_argument);
        auto [eg, data] = co_await c->async_get("/corolock/test/el/bad", tuple);
        BOOST_TEST(!!eg); // nothing was created
        zk_election no_path(*c, "relative/path");
        auto [ec3, l3] = co_await no_path.async_campaign("x", tuple);
        BOOST_TEST(ec3 == error::invalid_name);
        auto [ec4, info] = co_await no_path.async_leader(tuple);
        BOOST_TEST(ec4 == error::invalid_name);
    });
}

BOOST_FIXTURE_TEST_CASE(a_cancelled_campaign_leaves_no_node, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config()), d(ex, zk_test_config());
        zk_election a(*c, "/corolock/test/el/cancel"), b(*d, "/corolock/test/el/cancel");
        auto la = co_await a.async_campaign("a");
        asio::steady_timer t(ex, 150ms);
        auto r = co_await (b.async_campaign("b", tuple) || t.async_wait(tuple));
        BOOST_TEST(r.index() == 1u); // the timer won
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1);
        co_await la.async_resign(asio::use_awaitable);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
        auto info = co_await a.async_leader(asio::use_awaitable);
        BOOST_TEST(!info.present);
    });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace zookeeper_zk_election
