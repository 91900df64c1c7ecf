// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/core/pg_statement_queue.hpp"

#include <boost/test/unit_test.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace corolock::detail {
using queue = pg_statement_queue<std::string>;
std::ostream& operator<<(std::ostream& os, queue::match m) {
    switch (m) {
    case queue::match::deliver:
        return os << "deliver";
    case queue::match::drop:
        return os << "drop";
    case queue::match::unexpected:
        return os << "unexpected";
    }
    return os << "?";
}
std::ostream& operator<<(std::ostream& os, queue::cancelled c) {
    switch (c) {
    case queue::cancelled::removed:
        return os << "removed";
    case queue::cancelled::abandoned:
        return os << "abandoned";
    case queue::cancelled::not_found:
        return os << "not_found";
    }
    return os << "?";
}
} // namespace corolock::detail

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_postgres_pg_statement_queue {

namespace {

using corolock::detail::queue;
using namespace std::chrono_literals;
const auto t0 = queue::clock::time_point() + 1h;

std::vector<std::string> send_all(queue& q) {
    std::vector<std::string> sent;
    q.send_queued([&](const std::string& s) {
        sent.push_back(s);
        return true;
    });
    return sent;
}

} // namespace

BOOST_AUTO_TEST_SUITE(pg_statement_queue)

BOOST_AUTO_TEST_CASE(results_go_to_the_oldest_statement_and_a_sync_ends_it) {
    queue q;
    q.push("a", t0);
    q.push("b", t0);
    BOOST_TEST((send_all(q) == std::vector<std::string>{"a", "b"}));
    BOOST_TEST(q.in_flight() == 2u);
    auto [m1, r1] = q.on_result();
    BOOST_TEST(m1 == queue::match::deliver);
    BOOST_TEST(*r1 == "a");
    auto [m2, s1] = q.on_sync();
    BOOST_TEST(m2 == queue::match::deliver);
    BOOST_TEST(*s1 == "a");
    auto [m3, r2] = q.on_result();
    BOOST_TEST(*r2 == "b");
    auto [m4, s2] = q.on_sync();
    BOOST_TEST(*s2 == "b");
    BOOST_TEST(q.empty());
}

// A new session's opening statement goes out alone, pushed before everything queued meanwhile.
BOOST_AUTO_TEST_CASE(a_statement_pushed_first_can_be_sent_alone) {
    queue q;
    q.push("undo", t0);
    q.push("opening", t0, true);
    std::vector<std::string> sent;
    BOOST_TEST(q.send_queued(
                   [&](const std::string& s) {
                       sent.push_back(s);
                       return true;
                   },
                   1) == 1u);
    BOOST_TEST((sent == std::vector<std::string>{"opening"}));
    BOOST_TEST(q.queued() == 1u);
    BOOST_TEST(*q.on_sync().second == "opening");
    BOOST_TEST((send_all(q) == std::vector<std::string>{"undo"}));
}

BOOST_AUTO_TEST_CASE(a_result_or_sync_with_nothing_sent_is_out_of_step) {
    queue q;
    q.push("queued", t0);
    BOOST_TEST(q.on_result().first == queue::match::unexpected);
    BOOST_TEST(q.on_sync().first == queue::match::unexpected);
    BOOST_TEST(q.queued() == 1u);
}

BOOST_AUTO_TEST_CASE(a_queued_statement_cancelled_is_never_sent) {
    queue q;
    const auto a = q.push("a", t0);
    q.push("b", t0);
    auto [what, item] = q.cancel(a);
    BOOST_TEST(what == queue::cancelled::removed);
    BOOST_TEST(*item == "a");
    BOOST_TEST((send_all(q) == std::vector<std::string>{"b"}));
    BOOST_TEST(q.cancel(a).first == queue::cancelled::not_found);
}

BOOST_AUTO_TEST_CASE(a_sent_statement_cancelled_has_its_results_dropped) {
    queue q;
    const auto a = q.push("a", t0);
    q.push("b", t0);
    send_all(q);
    auto [what, item] = q.cancel(a);
    BOOST_TEST(what == queue::cancelled::abandoned);
    BOOST_TEST(*item == "a");
    BOOST_TEST(!q.state_of(a).has_value());
    BOOST_TEST(q.on_result().first == queue::match::drop);
    BOOST_TEST(q.on_sync().first == queue::match::drop);
    // The next one still gets its own results.
    BOOST_TEST(*q.on_result().second == "b");
    BOOST_TEST(*q.on_sync().second == "b");
    BOOST_TEST(q.cancel(a).first == queue::cancelled::not_found);
}

BOOST_AUTO_TEST_CASE(a_disconnect_fails_the_sent_and_keeps_the_queued) {
    queue q;
    const auto a = q.push("a", t0);
    q.push("b", t0);
    send_all(q);
    q.push("c", t0);
    q.cancel(a); // abandoned: not reported again
    const auto lost = q.on_disconnect();
    BOOST_TEST((lost == std::vector<std::string>{"b"}));
    BOOST_TEST(q.in_flight() == 0u);
    BOOST_TEST(q.queued() == 1u);
    // Never sent again: only "c" goes out on the next connection.
    BOOST_TEST((send_all(q) == std::vector<std::string>{"c"}));
}

BOOST_AUTO_TEST_CASE(front_goes_after_the_sent_and_before_the_queued) {
    queue q;
    q.push("a", t0);
    send_all(q);
    q.push("b", t0);
    q.push("listen", t0, true);
    BOOST_TEST((send_all(q) == std::vector<std::string>{"listen", "b"}));
    BOOST_TEST(*q.on_sync().second == "a");
    BOOST_TEST(*q.on_sync().second == "listen");
}

BOOST_AUTO_TEST_CASE(a_failed_send_stops_and_counts_as_sent) {
    queue q;
    q.push("a", t0);
    q.push("b", t0);
    q.push("c", t0);
    int calls = 0;
    const auto n = q.send_queued([&](const std::string&) { return ++calls < 2; });
    BOOST_TEST(n == 2u);
    BOOST_TEST(q.in_flight() == 2u);
    BOOST_TEST(q.queued() == 1u);
    BOOST_TEST((q.on_disconnect() == std::vector<std::string>{"a", "b"}));
}

BOOST_AUTO_TEST_CASE(queued_statements_expire_after_the_wait_for_a_connection) {
    queue q;
    q.push("old", t0);
    q.push("new", t0 + 3s);
    BOOST_TEST((q.next_expiry(5s) == t0 + 5s));
    BOOST_TEST(q.expire(t0 + 4s, 5s).empty());
    BOOST_TEST((q.expire(t0 + 5s, 5s) == std::vector<std::string>{"old"}));
    BOOST_TEST((q.next_expiry(5s) == t0 + 8s));
    // A sent statement never expires: it waits for its answer or the connection's end.
    send_all(q);
    BOOST_TEST(q.expire(t0 + 1h, 5s).empty());
    BOOST_TEST((q.next_expiry(5s) == queue::clock::time_point::max()));
}

BOOST_AUTO_TEST_CASE(total_cancellation_sees_the_state) {
    queue q;
    const auto a = q.push("a", t0);
    BOOST_TEST((q.state_of(a) == queue::state::queued));
    send_all(q);
    BOOST_TEST((q.state_of(a) == queue::state::sent));
    q.on_sync();
    BOOST_TEST(!q.state_of(a).has_value());
}

BOOST_AUTO_TEST_CASE(take_all_empties_it) {
    queue q;
    q.push("a", t0);
    send_all(q);
    q.push("b", t0);
    BOOST_TEST((q.take_all() == std::vector<std::string>{"a", "b"}));
    BOOST_TEST(q.empty());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_postgres_pg_statement_queue
