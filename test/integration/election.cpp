// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The election against a real server: the term passes on resign and on a leader's death, the
// observer sees every change in order, a proclamation changes the value in the term, the term
// fences a deposed leader's writes, lock-delay holds a new term back after a lost leader only,
// and cancellation leaves nothing behind. doc/election.md states each of these.
#include "common/coro_test.hpp"
#include "common/election_check.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/election.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_election {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using asio::awaitable;
using corolock::election_options;
using corolock::error;
using corolock::leader_event;
using corolock::leadership;
using corolock::test::config_for;
using corolock::test::eventually;
using corolock::test::quiet;
using corolock::test::sleep_for;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;

namespace {

election_options with_lease(clock_type::duration lease) {
    election_options o;
    o.lock.lease = lease;
    return o;
}

struct fixture : corolock::test::server_fixture {};

} // namespace

static_assert(corolock::leader_election<corolock::election>);

BOOST_AUTO_TEST_SUITE(election)

BOOST_FIXTURE_TEST_CASE(keeps_every_backends_promises, fixture) {
    run([&]() -> awaitable<void> {
        corolock::election a(conn, "el:generic"), b(peer, "el:generic");
        const auto bad = co_await corolock::test::check_election(a, b);
        for (const auto& line : bad)
            BOOST_ERROR(line);
        BOOST_TEST(!exists("el:generic"));
    });
}

BOOST_FIXTURE_TEST_CASE(the_term_passes_on_resign_and_observers_see_each_change, fixture) {
    run([&]() -> awaitable<void> {
        corolock::election a(conn, "el:resign"), b(peer, "el:resign");
        auto obs = a.observe();
        auto [e0, first] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e0);
        BOOST_TEST(!first.present); // nobody yet
        auto [ea, la] = co_await a.async_campaign("node-a", tuple_deferred);
        BOOST_REQUIRE(!ea);
        BOOST_TEST(la.valid());
        BOOST_TEST(la.value() == "node-a");
        BOOST_TEST(la.version() == 1u);
        auto [e1, ev1] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e1);
        BOOST_TEST(ev1.present);
        BOOST_TEST(ev1.value == "node-a");
        BOOST_TEST(ev1.term == la.term());
        BOOST_TEST(!ev1.skipped);
        auto [el, info] = co_await b.async_leader(tuple_deferred);
        BOOST_REQUIRE(!el);
        BOOST_TEST(info.present);
        BOOST_TEST(info.value == "node-a");
        BOOST_TEST(info.term == la.term());
        // b waits (no polling: it is woken by the release) while a leads.
        auto [eb0, none] = co_await b.async_campaign_for(200ms, "node-b", tuple_deferred);
        BOOST_TEST(eb0 == error::acquire_timeout);
        BOOST_TEST(!none.owns());
        const auto term_a = la.term();
        auto resign = [&]() -> awaitable<void> {
            co_await sleep_for(100ms);
            auto [er] = co_await la.async_resign(tuple_deferred);
            BOOST_TEST(!er);
        };
        asio::co_spawn(co_await asio::this_coro::executor, resign(), asio::detached);
        auto [eb, lb] = co_await b.async_campaign("node-b", tuple_deferred);
        BOOST_REQUIRE(!eb);
        BOOST_TEST(!la.owns());
        BOOST_TEST(lb.term() > term_a);
        BOOST_TEST(lb.value() == "node-b");
        auto [e2, ev2] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e2);
        BOOST_TEST(!ev2.present); // the resign, at once
        BOOST_TEST(ev2.term == term_a);
        auto [e3, ev3] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e3);
        BOOST_TEST(ev3.present);
        BOOST_TEST(ev3.value == "node-b");
        BOOST_TEST(ev3.term == lb.term());
        co_await lb.async_resign(tuple_deferred);
        BOOST_TEST(!exists("el:resign"));
        BOOST_TEST(srv.command({"GET", "{el:resign}:leader"}).find(" ended") != std::string::npos);
    });
}

BOOST_FIXTURE_TEST_CASE(a_proclamation_changes_the_value_within_the_term, fixture) {
    run([&]() -> awaitable<void> {
        corolock::election a(conn, "el:proclaim");
        auto obs = a.observe();
        co_await obs.async_next(tuple_deferred); // nobody
        auto l = co_await a.async_campaign("v1");
        co_await obs.async_next(tuple_deferred); // v1
        const auto term = l.term();
        auto [ep] = co_await l.async_proclaim("v2 with spaces", tuple_deferred);
        BOOST_REQUIRE(!ep);
        BOOST_TEST(l.version() == 2u);
        BOOST_TEST(l.value() == "v2 with spaces");
        BOOST_TEST(l.term() == term);
        auto [e, ev] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e);
        BOOST_TEST(ev.present);
        BOOST_TEST(ev.term == term);
        BOOST_TEST(ev.version == 2u);
        BOOST_TEST(ev.value == "v2 with spaces");
        auto info = co_await a.async_leader();
        BOOST_TEST(info.value == "v2 with spaces");
        BOOST_TEST(info.version == 2u);
        co_await l.async_resign(tuple_deferred);
        // An empty leadership proclaims nothing.
        auto [en] = co_await l.async_proclaim("v3", tuple_deferred);
        BOOST_TEST(en == error::not_owner);
    });
}

// A leader whose process stops answering: nothing resigns, the lease expires, the observer's
// read at the expiry reports the end, and the waiting campaigner takes the next term; the
// deposed leader's fenced write is refused.
BOOST_FIXTURE_TEST_CASE(a_dead_leader_is_replaced_within_its_lease_and_fenced_out, fixture) {
    run([&]() -> awaitable<void> {
        auto cfg = config_for(srv);
        cfg.health_check_interval = clock_type::duration::zero();
        auto& doomed = add_connection(cfg, quiet());
        corolock::election a(doomed, "el:dead", with_lease(600ms)),
            b(peer, "el:dead", with_lease(600ms)), watch(conn, "el:dead");
        auto obs = watch.observe();
        co_await obs.async_next(tuple_deferred);
        auto la = co_await a.async_campaign("a");
        auto [e1, ev1] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e1);
        BOOST_TEST(ev1.value == "a");
        // The leader's process stops: nothing is renewed, nothing resigns.
        doomed.cancel();
        const auto t0 = clock_type::now();
        auto lb = co_await b.async_campaign("b");
        const auto took = clock_type::now() - t0;
        BOOST_TEST(lb.term() > la.term());
        BOOST_TEST((took < 600ms + 1500ms));
        auto [e2, ev2] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e2);
        if (ev2.present) { // the read at a's expiry may come after b's proclamation
            BOOST_TEST(ev2.value == "b");
        } else {
            // No leader: a's term ended, or b's has begun and is not proclaimed yet (a read
            // between b's grant and its value), which names b's term.
            BOOST_TEST(ev2.term >= la.term());
            BOOST_TEST(ev2.term <= lb.term());
            auto [e3, ev3] = co_await obs.async_next(tuple_deferred);
            BOOST_REQUIRE(!e3);
            BOOST_TEST(ev3.value == "b");
        }
        // The old term's fenced write is refused by the store (here: Redis itself).
        const corolock::fenced_script write("return redis.call('SET', KEYS[1], ARGV[1])");
        const std::string_view keys[] = {"el:dead:data"};
        const std::string_view args[] = {"from b"};
        corolock::generic_response r;
        auto [ew] = co_await lb.lease().async_fenced_eval(write, keys, args, r, tuple_deferred);
        BOOST_TEST(!ew);
        co_await lb.async_resign(tuple_deferred);
    });
}

BOOST_FIXTURE_TEST_CASE(lock_delay_holds_a_term_back_after_a_lost_leader_only, fixture) {
    run([&]() -> awaitable<void> {
        auto opts = with_lease(400ms);
        opts.lock_delay = 800ms;
        {
            // After a resign: no delay.
            corolock::election a(conn, "el:delay", opts), b(peer, "el:delay", opts);
            auto la = co_await a.async_campaign("a");
            co_await la.async_resign(tuple_deferred);
            const auto t0 = clock_type::now();
            auto lb = co_await b.async_campaign("b");
            BOOST_TEST((clock_type::now() - t0 < 600ms));
            // After a lost leader: the next term begins lock_delay after it was found lost.
            auto cfg = config_for(srv);
            cfg.health_check_interval = clock_type::duration::zero();
            auto& doomed = add_connection(cfg, quiet());
            corolock::election c(doomed, "el:delay", opts);
            co_await lb.async_resign(tuple_deferred);
            auto lc = co_await c.async_campaign("c");
            doomed.cancel(); // c dies holding the term
            const auto t1 = clock_type::now();
            auto la2 = co_await a.async_campaign("a again");
            const auto took = clock_type::now() - t1;
            BOOST_TEST((took >= 800ms));
            BOOST_TEST((took < 400ms + 800ms + 1500ms));
            BOOST_TEST(la2.term() > lc.term());
            co_await la2.async_resign(tuple_deferred);
        }
        // Out of range: refused before anything is sent.
        opts.lock_delay = std::chrono::hours(2);
        corolock::election bad(conn, "el:bad", opts);
        auto [ec, l] = co_await bad.async_campaign("x", tuple_deferred);
        BOOST_TEST(ec == error::invalid_argument);
        BOOST_TEST(!exists("el:bad"));
    });
}

BOOST_FIXTURE_TEST_CASE(a_cancelled_campaign_leaves_nothing_behind, fixture) {
    run([&]() -> awaitable<void> {
        corolock::election a(conn, "el:cancel"), b(peer, "el:cancel");
        auto la = co_await a.async_campaign("a");
        asio::steady_timer t(co_await asio::this_coro::executor, 150ms);
        auto r = co_await (b.async_campaign("b", asio::as_tuple(asio::use_awaitable)) ||
                           t.async_wait(asio::as_tuple(asio::use_awaitable)));
        BOOST_TEST(r.index() == 1u); // the timer won
        co_await la.async_resign(tuple_deferred);
        BOOST_TEST(co_await eventually([&] { return !exists("el:cancel"); }, 2s));
        // b never leads: nobody else campaigns, the name stays free.
        co_await sleep_for(200ms);
        BOOST_TEST(!exists("el:cancel"));
        auto info = co_await a.async_leader();
        BOOST_TEST(!info.present);
    });
}

BOOST_FIXTURE_TEST_CASE(dropping_a_leadership_ends_the_term_for_observers, fixture) {
    run([&]() -> awaitable<void> {
        corolock::election a(conn, "el:drop");
        auto obs = a.observe();
        co_await obs.async_next(tuple_deferred);
        {
            auto l = co_await a.async_campaign("a");
            co_await obs.async_next(tuple_deferred);
        } // destroyed: the term ends (owner-checked) and the lock is released
        const auto t0 = clock_type::now();
        auto [e, ev] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e);
        BOOST_TEST(!ev.present);
        // Told by the term's end, not by a read at the lease's expiry (30 s): the release waits
        // for the end to be written (it went first once, and the end was never published).
        BOOST_TEST((clock_type::now() - t0 < 10s));
        BOOST_TEST(co_await eventually([&] { return !exists("el:drop"); }, 2s));
        // Assigning over a held leadership ends its term the same way.
        auto l = co_await a.async_campaign("b");
        auto [e2, ev2] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e2);
        BOOST_TEST(ev2.value == "b");
        l = corolock::leadership{};
        BOOST_TEST(!l.owns());
        auto [e3, ev3] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e3);
        BOOST_TEST(!ev3.present);
        BOOST_TEST(ev3.term == ev2.term);
        BOOST_TEST(co_await eventually([&] { return !exists("el:drop"); }, 2s));
    });
}

// An observer whose user may not subscribe (no channel rights, doc/keys.md's least rights for a
// reader): it says so in the log and reads every retry_max instead, still in order.
BOOST_FIXTURE_TEST_CASE(an_observer_without_channel_rights_reads_every_retry_max, fixture) {
    run([&]() -> awaitable<void> {
        BOOST_TEST(srv.command({"ACL", "SETUSER", "nochan", "on", ">pw", "~*", "resetchannels",
                                "+@all"}) == "+OK\r\n");
        corolock::test::log_capture log;
        auto cfg = config_for(srv);
        cfg.username = "nochan";
        cfg.password = "pw";
        auto& reader = add_connection(cfg, log.make(corolock::logger::level::warning));
        election_options slow;
        slow.lock.retry_max = 100ms;
        corolock::election watch(reader, "el:nochan", slow), a(conn, "el:nochan");
        auto obs = watch.observe();
        auto [e0, first] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e0);
        BOOST_TEST(!first.present);
        auto l = co_await a.async_campaign("a");
        auto [e1, ev1] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e1);
        BOOST_TEST(ev1.present);
        BOOST_TEST(ev1.value == "a");
        BOOST_TEST(ev1.term == l.term());
        co_await l.async_proclaim("a2");
        auto [e2, ev2] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e2);
        BOOST_TEST(ev2.value == "a2");
        BOOST_TEST(ev2.version == 2u);
        co_await l.async_resign(tuple_deferred);
        auto [e3, ev3] = co_await obs.async_next(tuple_deferred);
        BOOST_REQUIRE(!e3);
        BOOST_TEST(!ev3.present);
        BOOST_TEST(log.contains("the observer's subscription to {el:nochan}:leader was refused"));
    });
}

// Changes that nobody takes are kept up to 64; past that the oldest go and the next event says
// `skipped`. The newest is never lost.
BOOST_FIXTURE_TEST_CASE(past_64_unread_events_the_next_says_skipped, fixture) {
    run([&]() -> awaitable<void> {
        corolock::election a(conn, "el:overflow");
        auto obs = a.observe();
        co_await obs.async_next(tuple_deferred); // nobody
        auto l = co_await a.async_campaign("v1");
        for (int i = 2; i <= 80; ++i)
            co_await l.async_proclaim("v" + std::to_string(i));
        // Every proclamation's message has come once a read shows the last one.
        co_await sleep_for(200ms);
        std::vector<leader_event> got;
        for (;;) {
            auto [ec, e] = co_await obs.async_next(tuple_deferred);
            BOOST_REQUIRE(!ec);
            got.push_back(e);
            if (e.version == 80u)
                break;
        }
        BOOST_TEST(got.size() == 64u);
        BOOST_TEST(got.front().skipped);
        BOOST_TEST(got.front().version == 17u); // versions 1..16 were dropped
        for (std::size_t i = 1; i < got.size(); ++i) {
            BOOST_TEST(!got[i].skipped);
            BOOST_TEST(got[i].version == got[i - 1].version + 1);
        }
        co_await l.async_resign(tuple_deferred);
    });
}

// A connection that stops for good ends its observers: a waiting async_next completes with
// operation_aborted (two observers, so that each one's end runs while the other is listed).
BOOST_FIXTURE_TEST_CASE(an_observer_ends_when_its_connection_stops, fixture) {
    run([&]() -> awaitable<void> {
        auto& c = add_connection(config_for(srv), quiet());
        corolock::election a(c, "el:stop");
        auto o1 = a.observe(), o2 = a.observe();
        co_await o1.async_next(tuple_deferred);
        co_await o2.async_next(tuple_deferred);
        asio::steady_timer t(co_await asio::this_coro::executor, 100ms);
        t.async_wait([&](corolock::error_code) { c.cancel(); });
        auto [e1, ev1] = co_await o1.async_next(tuple_deferred);
        BOOST_TEST(e1 == asio::error::operation_aborted);
        auto [e2, ev2] = co_await o2.async_next(tuple_deferred);
        BOOST_TEST(e2 == asio::error::operation_aborted);
    });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_election
