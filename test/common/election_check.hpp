// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// An election's promises that every backend keeps (doc/election.md), written once over the
// `leader_election` concept and run over each: integration/election.cpp (Redis),
// zookeeper/zk_election.cpp. The observer sees nobody, then the leader, each proclamation, the
// resign at once and the next leader; a bounded campaign times out while another leads; the
// next term is larger; a dropped leadership ends its term for observers; an empty leadership
// proclaims nothing.
#ifndef COROLOCK_TEST_COMMON_ELECTION_CHECK_HPP
#define COROLOCK_TEST_COMMON_ELECTION_CHECK_HPP

#include <corolock/error.hpp>
#include <corolock/lock_concepts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace corolock::test {

// What broke the promises, one line each; empty when they held. `a` and `b` are two handles of
// one free election name (two connections).
template <leader_election E>
boost::asio::awaitable<std::vector<std::string>> check_election(E& a, E& b) {
    namespace asio = boost::asio;
    using namespace std::chrono_literals;
    constexpr auto as_tuple = asio::as_tuple(asio::use_awaitable);
    std::vector<std::string> bad;
    auto expect = [&](bool ok, std::string what) {
        if (!ok)
            bad.push_back(std::move(what));
    };
    auto next = [](leader_observer& o) -> asio::awaitable<leader_event> {
        // Bounded: an observer that misses an event fails the check rather than hangs.
        asio::steady_timer t(co_await asio::this_coro::executor, 5s);
        auto timed_out = std::make_shared<bool>(false);
        t.async_wait([timed_out, &o](error_code ec) {
            if (!ec) {
                *timed_out = true;
                o = leader_observer{}; // stops it: the wait completes with operation_aborted
            }
        });
        auto [ec, e] = co_await o.async_next(asio::as_tuple(asio::use_awaitable));
        t.cancel();
        if (ec || *timed_out)
            e.value = "<no event: " + ec.message() + ">";
        co_return e;
    };

    auto obs = a.observe();
    auto first = co_await next(obs);
    expect(!first.present, "the first event of a free election is nobody");

    auto [ea, la] = co_await a.async_campaign("node-a", as_tuple);
    expect(!ea && la.valid() && la.value() == "node-a" && la.version() == 1u,
           "a campaign on a free election wins with version 1 (got: " + ea.message() + ")");
    if (ea)
        co_return bad;
    const auto term_a = la.term();
    auto e1 = co_await next(obs);
    expect(e1.present && e1.value == "node-a" && e1.term == term_a && !e1.skipped,
           "the observer sees the leader and its term (got: " + e1.value + ")");
    auto [el, info] = co_await b.async_leader(as_tuple);
    expect(!el && info.present && info.value == "node-a" && info.term == term_a,
           "another handle reads the leader (got: " + el.message() + ")");

    auto [eb0, none] = co_await b.async_campaign_for(200ms, "node-b", as_tuple);
    expect(eb0 == error::acquire_timeout && !none.owns(),
           "a bounded campaign times out while another leads (got: " + eb0.message() + ")");

    auto [ep] = co_await la.async_proclaim("v2 with spaces\nand a line", as_tuple);
    expect(!ep && la.version() == 2u && la.term() == term_a,
           "a proclamation keeps the term (got: " + ep.message() + ")");
    auto e2 = co_await next(obs);
    expect(e2.present && e2.version == 2u && e2.value == "v2 with spaces\nand a line",
           "the observer sees the proclamation (got: " + e2.value + ")");

    // b waits for the term (woken, not polling); a resigns meanwhile.
    auto resign = [](typename E::leadership_type& l) -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor, 100ms);
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        co_await l.async_resign(asio::as_tuple(asio::use_awaitable));
    };
    asio::co_spawn(co_await asio::this_coro::executor, resign(la), asio::detached);
    auto [eb, lb] = co_await b.async_campaign("node-b", as_tuple);
    expect(!eb && !la.owns() && lb.term() > term_a && lb.value() == "node-b",
           "the next campaigner takes a larger term after a resign (got: " + eb.message() + ")");
    // The resign's end of term, then the next leader (a backend whose watches fire once may
    // read the next leader before it reads the end: the end is then implied).
    auto e3 = co_await next(obs);
    if (!e3.present) {
        expect(e3.term == term_a, "the observer sees the resign as the term's end");
        e3 = co_await next(obs);
    }
    expect(e3.present && e3.value == "node-b" && e3.term == lb.term(),
           "the observer sees the next leader (got: " + e3.value + ")");

    // Dropped without a resign: observers see the term end.
    const auto term_b = lb.term();
    lb = typename E::leadership_type{};
    auto e5 = co_await next(obs);
    expect(!e5.present && e5.term == term_b, "a dropped leadership ends its term for observers");
    auto [epn] = co_await lb.async_proclaim("v3", as_tuple);
    expect(epn == error::not_owner, "an empty leadership proclaims nothing");
    auto [ern] = co_await lb.async_resign(as_tuple);
    expect(ern == error::not_owner, "an empty leadership resigns nothing");

    // Free again once the dropped term's lock is released (right after its end is written).
    auto [ec, lc] = co_await a.async_campaign_for(5s, "node-c", as_tuple);
    expect(!ec && lc.term() > term_b,
           "a campaign after a dropped leadership wins (got: " + ec.message() + ")");
    if (lc.owns())
        co_await lc.async_resign(as_tuple);
    co_return bad;
}

} // namespace corolock::test

#endif
