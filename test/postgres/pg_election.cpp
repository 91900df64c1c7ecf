// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL election against a throw-away server: the promises every backend keeps
// (common/election_check.hpp), the row doc/election.md describes, a lost leader replaced and
// fenced out, lock-delay after a lost leader only, and bad arguments refused before anything is
// sent.
#include "common/election_check.hpp"
#include "pg_test.hpp"
#include <corolock/postgres.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace postgres_pg_election {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::pg_election;
using corolock::pg_election_options;
using corolock::test::pg_config_for;
using corolock::test::quiet;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;

static_assert(corolock::leader_election<pg_election>);

namespace {

constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

pg_election_options short_lease() {
    pg_election_options o;
    o.lock.lease = 600ms;
    o.lock.retry_max = 200ms;
    return o;
}

struct fixture : corolock::test::pg_fixture {
    corolock::pg_connection a{ioc.get_executor(), config(), quiet()};
    corolock::pg_connection b{ioc.get_executor(), config(), quiet()};
    fixture() {
        a.async_run(asio::detached);
        b.async_run(asio::detached);
    }
    void stop() {
        a.cancel();
        b.cancel();
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(pg_election_suite)

BOOST_FIXTURE_TEST_CASE(keeps_every_backends_promises_and_the_row, fixture) {
    run([&]() -> awaitable<void> {
        pg_election ea(a, "el:generic", short_lease()), eb(b, "el:generic", short_lease());
        co_await ea.async_install();
        co_await ea.async_install(); // idempotent
        const auto bad = co_await corolock::test::check_election(ea, eb);
        for (const auto& line : bad)
            BOOST_ERROR(line);
        // The row: the last term, ended; no lock row.
        auto [ec0, l] = co_await ea.async_campaign("row value", tuple);
        BOOST_REQUIRE_MESSAGE(!ec0, ec0.message());
        const auto term = std::to_string(l.term().value());
        BOOST_TEST((l.term().backend() == corolock::lock_backend::postgres));
        BOOST_TEST(srv.sql("SELECT term || ' ' || version || ' ' || live || ' ' || value FROM "
                           "corolock_leaders WHERE name = 'el:generic'") ==
                   term + " 1 true row value");
        auto [ec1] = co_await l.async_proclaim("second", tuple);
        BOOST_REQUIRE_MESSAGE(!ec1, ec1.message());
        BOOST_TEST(srv.sql("SELECT version || ' ' || value FROM corolock_leaders") == "2 second");
        auto [ec2] = co_await l.async_resign(tuple);
        BOOST_REQUIRE_MESSAGE(!ec2, ec2.message());
        BOOST_TEST(srv.sql("SELECT term || ' ' || live FROM corolock_leaders") == term + " false");
        BOOST_TEST(srv.sql("SELECT count(*) FROM corolock_locks") == "0");
        stop();
    }());
}

// A leader whose connection stops (its process died): nothing resigns, the lock row expires
// with the lease; the observer's read at that expiry reports the end, the waiting campaigner
// takes the next term, and the old lease's fenced statement is refused.
BOOST_FIXTURE_TEST_CASE(a_lost_leader_is_replaced_within_its_lease_and_fenced_out, fixture) {
    run([&]() -> awaitable<void> {
        pg_election ea(a, "el:lost", short_lease()), eb(b, "el:lost", short_lease());
        co_await ea.async_install();
        auto doomed =
            std::make_unique<corolock::pg_connection>(ioc.get_executor(), config(), quiet());
        doomed->async_run(asio::detached);
        {
            pg_election ed(*doomed, "el:lost", short_lease());
            auto obs = eb.observe();
            co_await obs.async_next(); // nobody
            auto ld = co_await ed.async_campaign("d");
            auto ev1 = co_await obs.async_next();
            BOOST_TEST(ev1.value == "d");
            doomed->cancel(); // the leader's process dies: nothing resigns, nothing renews
            const auto t0 = clock_type::now();
            auto lb = co_await eb.async_campaign("b");
            BOOST_TEST((clock_type::now() - t0 < 600ms + 2s));
            BOOST_TEST(lb.term() > ld.term());
            auto ev2 = co_await obs.async_next();
            if (!ev2.present) {
                BOOST_TEST(ev2.term == ld.term());
                ev2 = co_await obs.async_next();
            }
            BOOST_TEST(ev2.present);
            BOOST_TEST(ev2.value == "b");
            corolock::pg_result r;
            const corolock::pg_param ps[] = {std::string_view("x")};
            auto [ew] = co_await lb.lease().async_fenced_query("SELECT $1::text", ps, r, tuple);
            BOOST_TEST(!ew);
            co_await lb.async_resign();
            ld = corolock::pg_leadership{};
        }
        doomed.reset();
        stop();
    }());
}

BOOST_FIXTURE_TEST_CASE(lock_delay_after_a_lost_leader_only_and_bad_arguments, fixture) {
    run([&]() -> awaitable<void> {
        auto opts = short_lease();
        opts.lock_delay = 800ms;
        pg_election ea(a, "el:delay", opts), eb(b, "el:delay", opts);
        co_await ea.async_install();
        auto la = co_await ea.async_campaign("a");
        co_await la.async_resign();
        auto t0 = clock_type::now();
        auto lb = co_await eb.async_campaign("b");
        BOOST_TEST((clock_type::now() - t0 < 600ms));
        co_await lb.async_resign();
        {
            corolock::pg_connection doomed(ioc.get_executor(), config(), quiet());
            doomed.async_run(asio::detached);
            pg_election ed(doomed, "el:delay", opts);
            auto ld = co_await ed.async_campaign("d");
            doomed.cancel(); // lost, not resigned
            t0 = clock_type::now();
            auto la2 = co_await ea.async_campaign("a again");
            BOOST_TEST((clock_type::now() - t0 >= 800ms));
            BOOST_TEST(la2.term() > ld.term());
            co_await la2.async_resign();
            ld = corolock::pg_leadership{};
        }
        opts.lock_delay = std::chrono::hours(2);
        pg_election bad(a, "el:bad", opts);
        auto [ec, l] = co_await bad.async_campaign("x", tuple);
        BOOST_TEST(ec == error::invalid_argument);
        BOOST_TEST(srv.sql("SELECT count(*) FROM corolock_locks WHERE name = 'el:bad'") == "0");
        pg_election empty(a, "");
        auto [ec2, l2] = co_await empty.async_campaign("x", tuple);
        BOOST_TEST(ec2 == error::invalid_name);
        auto [ec3, info] = co_await empty.async_leader(tuple);
        BOOST_TEST(ec3 == error::invalid_name);
        stop();
    }());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace postgres_pg_election
