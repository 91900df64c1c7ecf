// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/core/pg_session_fsm.hpp"

#include <boost/test/unit_test.hpp>

#include <ostream>

namespace corolock::detail {
std::ostream& operator<<(std::ostream& os, const pg_backend& b) {
    return os << b.pid << '@' << b.started;
}
std::ostream& operator<<(std::ostream& os, const std::optional<pg_backend>& b) {
    return b ? os << *b : os << "none";
}
} // namespace corolock::detail

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_postgres_pg_session_fsm {

namespace {

using corolock::detail::pg_backend;
using corolock::detail::pg_session_fsm;
namespace sql = corolock::detail::pg_session_sql;
using ending = pg_session_fsm::ending;
using ended = pg_session_fsm::ended;
using state = pg_session_fsm::state;
using namespace std::chrono_literals;

const pg_backend first{101, "1764150000.123456"};
const pg_backend second{202, "1764150009.5"};

// A session that opens (after ending its predecessor as `how` says) with identity `self`.
ending open(pg_session_fsm& f, pg_backend self, ending how = ending::already_gone) {
    f.on_connected();
    return f.on_opened(self, how);
}

// A connection whose first session dropped with a statement in flight.
pg_session_fsm after_a_drop() {
    pg_session_fsm f(1s);
    open(f, first);
    f.on_disconnect(1);
    return f;
}

} // namespace

BOOST_AUTO_TEST_SUITE(pg_session_fsm_suite)

BOOST_AUTO_TEST_CASE(the_first_session_ends_nobody_and_sends_only_after_its_answer) {
    pg_session_fsm f(300ms);
    BOOST_TEST(f.current() == state::closed);
    BOOST_TEST(!f.may_send());
    const auto o = f.on_connected();
    BOOST_TEST(!o.predecessor);
    BOOST_TEST((o.wait == 300ms));
    BOOST_TEST(f.current() == state::opening);
    BOOST_TEST(!f.may_send()); // the queue waits for the opening statement
    BOOST_TEST(f.on_opened(first, ending::none) == ending::none);
    BOOST_TEST(f.current() == state::open);
    BOOST_TEST(f.may_send());
    BOOST_TEST(f.self() == first);
}

BOOST_AUTO_TEST_CASE(a_session_dropped_with_statements_in_flight_is_ended_by_the_next) {
    pg_session_fsm f(1s);
    open(f, first);
    BOOST_TEST(f.on_disconnect(2) == ended::to_end);
    BOOST_TEST(f.current() == state::closed);
    const auto o = f.on_connected();
    BOOST_TEST(o.predecessor == first);
    BOOST_TEST(f.on_opened(second, ending::terminated) == ending::terminated);
    BOOST_TEST(!f.predecessor()); // done with: the next drop names only this session
    BOOST_TEST(f.on_disconnect(0) == ended::clean);
    BOOST_TEST(!f.on_connected().predecessor);
}

BOOST_AUTO_TEST_CASE(a_session_dropped_idle_leaves_nothing_to_end) {
    pg_session_fsm f(1s);
    open(f, first);
    BOOST_TEST(f.on_disconnect(0) == ended::clean);
    BOOST_TEST(!f.on_connected().predecessor);
}

// The race the opening statement exists for: the next session drops too before its answer. Only
// the opening statement was out, so that session is nobody's concern; the first still is.
BOOST_AUTO_TEST_CASE(a_drop_while_opening_keeps_the_predecessor_to_end) {
    auto f = after_a_drop();
    BOOST_TEST(f.on_connected().predecessor == first);
    BOOST_TEST(f.on_disconnect(1) == ended::clean);
    BOOST_TEST(f.on_connected().predecessor == first);
    BOOST_TEST(f.on_opened(second, ending::already_gone) == ending::already_gone);
    f.on_disconnect(1);
    BOOST_TEST(f.on_connected().predecessor == second);
}

// Whatever the terminate came to, the predecessor is forgotten: a warning is all that is left.
BOOST_AUTO_TEST_CASE(a_failed_or_late_terminate_is_reported_once) {
    for (auto how : {ending::still_running, ending::failed}) {
        auto f = after_a_drop();
        f.on_connected();
        BOOST_TEST(f.on_opened(second, how) == how);
        BOOST_TEST(!f.predecessor());
        BOOST_TEST(f.may_send());
    }
}

BOOST_AUTO_TEST_CASE(a_session_of_unknown_identity_cannot_be_ended) {
    pg_session_fsm f(1s);
    f.on_connected();
    f.on_opened(std::nullopt, ending::none);
    BOOST_TEST(f.may_send()); // the queue goes on: not knowing is no reason to stop
    BOOST_TEST(f.on_disconnect(3) == ended::identity_unknown);
    BOOST_TEST(!f.on_connected().predecessor);
}

BOOST_AUTO_TEST_CASE(an_answer_after_the_drop_changes_nothing) {
    auto f = after_a_drop();
    BOOST_TEST(f.on_opened(second, ending::terminated) == ending::none);
    BOOST_TEST(f.current() == state::closed);
    BOOST_TEST(f.predecessor() == first);
}

BOOST_AUTO_TEST_CASE(the_wait_is_at_least_a_millisecond) {
    BOOST_TEST((pg_session_fsm(0ms).wait() == 1ms));
}

BOOST_AUTO_TEST_CASE(answers_decode) {
    BOOST_TEST(sql::decode_identity("4242", "1764150000.123456") ==
               (pg_backend{4242, "1764150000.123456"}));
    BOOST_TEST(!sql::decode_identity("0", "1.5"));
    BOOST_TEST(!sql::decode_identity("x", "1.5"));
    BOOST_TEST(!sql::decode_identity("12", ""));
    BOOST_TEST(!sql::decode_identity("12", "2026-11-26 09:50"));
    BOOST_TEST(!sql::decode_identity("99999999999", "1.5"));
    BOOST_TEST(sql::decode_terminate(true, 0, "") == ending::failed);
    BOOST_TEST(sql::decode_terminate(false, 0, "") == ending::already_gone);
    BOOST_TEST(sql::decode_terminate(false, 1, "t") == ending::terminated);
    BOOST_TEST(sql::decode_terminate(false, 1, "f") == ending::still_running);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_postgres_pg_session_fsm
