// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL election's decisions: what a read's row says (a live row whose lock holds its
// term leads; otherwise the term has ended), rows of another shape refused, when a campaign
// waits the lock-delay, and which notifications are an election's.
#include "postgres/core/pg_election_sql.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_postgres_pg_election_sql {

using namespace corolock::detail;
using namespace corolock::detail::pg_election_sql;

BOOST_AUTO_TEST_SUITE(pg_election_sql_suite)

BOOST_AUTO_TEST_CASE(a_read_says_who_leads) {
    leader_view v;
    BOOST_TEST(decode_read(std::nullopt, v));
    BOOST_TEST(!v.present);
    BOOST_TEST(v.term == 0u);
    BOOST_TEST(decode_read(record_cells{"42", "3", "t", "the value", "1200"}, v));
    BOOST_TEST(v.present);
    BOOST_TEST(v.term == 42u);
    BOOST_TEST(v.version == 3u);
    BOOST_TEST(v.value == "the value");
    BOOST_TEST(v.ttl_ms == 1200);
    // Live, but the lock no longer holds this term (expired, or another's): lost, ended.
    BOOST_TEST(decode_read(record_cells{"42", "3", "t", "the value", std::nullopt}, v));
    BOOST_TEST(!v.present);
    BOOST_TEST(v.ended);
    BOOST_TEST(v.term == 42u);
    BOOST_TEST(decode_read(record_cells{"42", "3", "f", "", std::nullopt}, v));
    BOOST_TEST(!v.present);
    BOOST_TEST(v.ended);
}

BOOST_AUTO_TEST_CASE(rows_of_another_shape_are_refused) {
    leader_view v;
    const std::optional<std::string_view> none;
    for (const auto& bad :
         {record_cells{none, "1", "t", "v", "1"}, record_cells{"x", "1", "t", "v", "1"},
          record_cells{"0", "1", "t", "v", "1"}, record_cells{"1", "0", "t", "v", "1"},
          record_cells{"1", "1", "yes", "v", "1"}, record_cells{"1", "1", "t", none, "1"},
          record_cells{"1", "1", "t", "v", "-5"}, record_cells{"1", "1", "t", "v", "soon"},
          record_cells{"-1", "1", "t", "v", "1"}})
        BOOST_TEST(!decode_read(bad, v));
}

BOOST_AUTO_TEST_CASE(the_lock_delay_is_waited_after_a_lost_leader_only) {
    BOOST_TEST(!must_delay(std::nullopt, 9));
    BOOST_TEST(!must_delay(record_cells{"5", "1", "f", "", std::nullopt}, 9)); // resigned
    BOOST_TEST(must_delay(record_cells{"5", "2", "t", "v", std::nullopt}, 9)); // lost
    BOOST_TEST(!must_delay(record_cells{"9", "1", "t", "v", "100"}, 9));       // this very term
}

BOOST_AUTO_TEST_CASE(notifications_of_other_names_are_ignored) {
    BOOST_TEST((message_for("4:el:aleader 1 1 -1 v", "el:a") == "leader 1 1 -1 v"));
    BOOST_TEST(!message_for("5:el:ableader 1 1 -1 v", "el:a").has_value());
    BOOST_TEST(!message_for("4:el:b", "el:a").has_value());
    BOOST_TEST(!message_for("el:a\nleader 1 1 -1 v", "el:a").has_value());
    BOOST_TEST(!message_for("x:el:a", "el:a").has_value());
    // A name with a newline and a message inside cannot pass for another election's.
    const std::string spoof = "a\nleader 99 1 -1 x";
    const std::string payload = std::to_string(spoof.size()) + ":" + spoof + "ended 3";
    BOOST_TEST(!message_for(payload, "a").has_value());
    BOOST_TEST((message_for(payload, spoof) == "ended 3"));
    const auto v = parse_leader_message(*message_for("4:el:aleader 7 2 -1 x y", "el:a"));
    BOOST_REQUIRE(v.has_value());
    BOOST_TEST(v->term == 7u);
    BOOST_TEST(v->version == 2u);
    BOOST_TEST(v->ttl_ms == -1);
    BOOST_TEST(v->value == "x y");
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_postgres_pg_election_sql
