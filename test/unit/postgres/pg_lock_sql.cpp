// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/core/pg_lock_sql.hpp"

#include <corolock/postgres/config.hpp>
#include <corolock/postgres/xact_mutex.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_postgres_pg_lock_sql {

namespace sql = corolock::detail::pg_sql;
using corolock::error;
using corolock::error_code;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(pg_lock_sql)

BOOST_AUTO_TEST_CASE(names) {
    BOOST_TEST(!sql::check_name("orders:42"));
    BOOST_TEST(!sql::check_name("z\xc3\xa9ro"));      // é
    BOOST_TEST(!sql::check_name("\xf0\x9f\x94\x92")); // a 4-byte sequence
    BOOST_TEST(sql::check_name("") == error::invalid_name);
    BOOST_TEST(sql::check_name(std::string("a\0b", 3)) == error::invalid_name);
    BOOST_TEST(sql::check_name("\xff") == error::invalid_name);
    BOOST_TEST(sql::check_name("\xc3") == error::invalid_name);         // truncated
    BOOST_TEST(sql::check_name("\xc0\xaf") == error::invalid_name);     // overlong
    BOOST_TEST(sql::check_name("\xed\xa0\x80") == error::invalid_name); // a surrogate
    BOOST_TEST(!sql::check_name(std::string(sql::max_name_bytes, 'x')));
    BOOST_TEST(sql::check_name(std::string(sql::max_name_bytes + 1, 'x')) == error::invalid_name);
}

BOOST_AUTO_TEST_CASE(options) {
    corolock::pg_mutex_options o;
    BOOST_TEST(!sql::check_options(o));
    o.lease = 99ms;
    BOOST_TEST(sql::check_options(o) == error::invalid_lease);
    o.lease = std::chrono::hours(24 * 366);
    BOOST_TEST(sql::check_options(o) == error::invalid_lease);
    o = {};
    o.retry_base = 0ms;
    BOOST_TEST(sql::check_options(o) == error::invalid_argument);
    o = {};
    o.retry_max = o.retry_base - 1ms;
    BOOST_TEST(sql::check_options(o) == error::invalid_argument);
    o = {};
    o.max_hold = -1ms;
    BOOST_TEST(sql::check_options(o) == error::invalid_argument);
}

BOOST_AUTO_TEST_CASE(arrays_and_numbers) {
    std::array<std::string_view, 3> v{"a", "b\"c", "d\\e"};
    BOOST_TEST(sql::text_array(v) == R"({"a","b\"c","d\\e"})");
    BOOST_TEST(sql::text_array({}) == "{}");
    BOOST_TEST(sql::to_ms(1500us) == "2");
    BOOST_TEST(sql::to_ms(30s) == "30000");
    BOOST_TEST(*sql::parse_int("-12") == -12);
    BOOST_TEST(!sql::parse_int(""));
    BOOST_TEST(!sql::parse_int("1x"));
}

BOOST_AUTO_TEST_CASE(acquire_replies) {
    sql::acquire_reply r;
    BOOST_TEST(!sql::decode_acquire(1, "17", std::nullopt, r));
    BOOST_TEST(r.granted);
    BOOST_TEST(r.token == 17u);
    BOOST_TEST(!sql::decode_acquire(1, std::nullopt, "250", r));
    BOOST_TEST(!r.granted);
    BOOST_TEST(r.holder_ms == 250);
    BOOST_TEST(!sql::decode_acquire(0, std::nullopt, std::nullopt, r));
    BOOST_TEST(!r.granted);
    BOOST_TEST(r.holder_ms == -1);
    BOOST_TEST(sql::decode_acquire(2, "1", std::nullopt, r) == error::unexpected_reply);
    BOOST_TEST(sql::decode_acquire(1, "x", std::nullopt, r) == error::unexpected_reply);
    BOOST_TEST(sql::decode_acquire(1, "0", std::nullopt, r) == error::unexpected_reply);
    BOOST_TEST(sql::decode_acquire(1, std::nullopt, std::nullopt, r) == error::unexpected_reply);
    BOOST_TEST(sql::decode_acquire(1, "3", "4", r) == error::unexpected_reply);
}

// The rule behind the token order: a token is drawn at the grant, after the row is won and
// under its lock. So the client's statement draws none (its parameters and VALUES are evaluated
// before any wait on the row), and corolock_acquire draws it in the one UPDATE that follows a
// won INSERT ... ON CONFLICT, never in that statement (scale-out review K1).
BOOST_AUTO_TEST_CASE(a_token_is_drawn_only_after_the_row_is_won) {
    const std::string_view acquire = sql::acquire;
    BOOST_TEST(acquire.find("nextval") == std::string_view::npos);
    BOOST_TEST(acquire.find("corolock_acquire($1, $2, $3::bigint)") != std::string_view::npos);
    const std::string_view install = sql::install;
    const auto fn = install.find("FUNCTION corolock_acquire(");
    BOOST_REQUIRE(fn != std::string_view::npos);
    const auto body = install.substr(fn);
    const auto insert = body.find("INSERT INTO corolock_locks");
    const auto won = body.find("IF FOUND THEN");
    const auto update = body.find("UPDATE corolock_locks l SET token = nextval(");
    BOOST_REQUIRE(insert != std::string_view::npos);
    BOOST_REQUIRE(won != std::string_view::npos);
    BOOST_REQUIRE(update != std::string_view::npos);
    BOOST_TEST(insert < won);
    BOOST_TEST(won < update);
    // The one draw of the whole install text is that UPDATE's.
    const auto draw = install.find("nextval");
    BOOST_TEST(draw > fn + update);
    BOOST_TEST(install.find("nextval", draw + 1) == std::string_view::npos);
    // The INSERT (its VALUES and its ON CONFLICT's SET) writes a placeholder, never a token.
    const auto ins = body.substr(insert, won - insert);
    BOOST_TEST(ins.find("VALUES (p_name, p_owner, 0,") != std::string_view::npos);
    BOOST_TEST(ins.find("token = 0") != std::string_view::npos);
    // The granted row is the caller's own: name and owner.
    BOOST_TEST(body.find("WHERE l.name = p_name AND l.owner = p_owner", update) !=
               std::string_view::npos);
}

// A refused acquire's log line keeps the server's words and, for a schema that is missing or
// older than this corolock (no corolock_acquire), says to run async_install.
BOOST_AUTO_TEST_CASE(acquire_failures) {
    const auto old = sql::acquire_failure(
        "orders", "42883",
        "ERROR:  function corolock_acquire(unknown, unknown, bigint) does not exist");
    BOOST_TEST(old.find("orders") != std::string::npos);
    BOOST_TEST(old.find("function corolock_acquire(unknown, unknown, bigint) does not exist") !=
               std::string::npos);
    BOOST_TEST(old.find("SQLSTATE 42883") != std::string::npos);
    BOOST_TEST(old.find("async_install") != std::string::npos);
    BOOST_TEST(sql::acquire_failure("o", "42P01", "no table").find("async_install") !=
               std::string::npos);
    const auto other = sql::acquire_failure("o", "53300", "too many connections");
    BOOST_TEST(other.find("too many connections (SQLSTATE 53300)") != std::string::npos);
    BOOST_TEST(other.find("async_install") == std::string::npos);
    BOOST_TEST(sql::acquire_failure("o", "", "lost").find("SQLSTATE") == std::string::npos);
}

// The advisory lock key is FNV-1a 64 of the name's bytes (published test vectors), as a bigint.
BOOST_AUTO_TEST_CASE(xact_key_is_fnv1a_64) {
    BOOST_TEST(sql::xact_key("") == static_cast<std::int64_t>(0xcbf29ce484222325u));
    BOOST_TEST(sql::xact_key("a") == static_cast<std::int64_t>(0xaf63dc4c8601ec8cu));
    BOOST_TEST(sql::xact_key("foobar") == static_cast<std::int64_t>(0x85944171f73967e8u));
    BOOST_TEST(sql::xact_key("orders:1") != sql::xact_key("orders:2"));
}

BOOST_AUTO_TEST_CASE(xact_options) {
    corolock::pg_xact_options o;
    BOOST_TEST(!sql::check_xact_options(o));
    o.attempt_wait = 0ms;
    BOOST_TEST(sql::check_xact_options(o) == error::invalid_argument);
    o = {};
    o.retry_base = 0ms;
    BOOST_TEST(sql::check_xact_options(o) == error::invalid_argument);
    o = {};
    o.retry_max = o.retry_base - 1ms;
    BOOST_TEST(sql::check_xact_options(o) == error::invalid_argument);
}

// Only the lock's own lock_timeout failure means "busy, try again": the same SQLSTATE from a
// caller's query, or any other failure, ends the transaction.
BOOST_AUTO_TEST_CASE(xact_outcomes) {
    using sql::xact_outcome;
    BOOST_TEST((sql::decide_xact({}, "") == xact_outcome::committed));
    BOOST_TEST((sql::decide_xact(error::server_error, "55P03") == xact_outcome::busy));
    BOOST_TEST((sql::decide_xact(error::server_error, "") == xact_outcome::failed));
    BOOST_TEST((sql::decide_xact(error::server_error, "40P01") == xact_outcome::failed));
    BOOST_TEST((sql::decide_xact(error::connection_lost, "") == xact_outcome::failed));
    BOOST_TEST((sql::decide_xact(error::readonly, "") == xact_outcome::failed));
}

// What each call asks of the lock core: a zero wait (or a deadline past) is one attempt that
// reports a held lock as acquire_timeout, for a lease and for a locked transaction alike; a try
// reports it as an empty success; a transaction's attempt is binding, a lease's is not.
BOOST_AUTO_TEST_CASE(acquisition_parameters) {
    using namespace std::chrono_literals;
    using corolock::detail::pg_sql::acquire_params_of;
    using corolock::detail::pg_sql::xact_params_of;
    const auto now = std::chrono::steady_clock::time_point(1h);
    const auto never = std::chrono::steady_clock::time_point::max();
    corolock::pg_mutex_options m;
    m.lease = 10s;
    const auto wait = acquire_params_of(m, now + 1s, false, now);
    BOOST_TEST(!wait.once);
    BOOST_TEST((wait.deadline == now + 1s));
    BOOST_TEST((wait.drift == 100ms + 2ms)); // the shared drift: 1 % + 2 ms
    BOOST_TEST(!wait.binding);
    const auto zero = acquire_params_of(m, now, false, now);
    BOOST_TEST((zero.once && zero.held_is_timeout));
    BOOST_TEST((zero.deadline == never)); // its one reply is waited for
    const auto tried = acquire_params_of(m, never, true, now);
    BOOST_TEST((tried.once && !tried.held_is_timeout));
    corolock::pg_xact_options x;
    const auto tx = xact_params_of(x, now + 1s, now);
    BOOST_TEST((tx.binding && !tx.once));
    BOOST_TEST((tx.retry_base == x.retry_base && tx.retry_max == x.retry_max));
    const auto tx0 = xact_params_of(x, now - 1ms, now);
    BOOST_TEST((tx0.binding && tx0.once && tx0.held_is_timeout));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_postgres_pg_lock_sql
