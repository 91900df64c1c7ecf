// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The multi-lock's decisions with no server: the global order of the names, and what follows
// the round that tries every name at once, for every mix of grants, holds and errors.
#include "core/multi_plan.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_multi_plan {

using corolock::error;
using corolock::error_code;
using corolock::detail::after_try_all;
using corolock::detail::order_names;
using corolock::detail::try_all_outcome;
using next = try_all_outcome::next;

namespace {

const error_code ok{};
const error_code aborted = boost::asio::error::operation_aborted;

} // namespace

BOOST_AUTO_TEST_SUITE(multi_plan)

BOOST_AUTO_TEST_CASE(names_are_sorted_bytewise_and_checked) {
    std::vector<std::string> names{"b", "a:2", "a:10", std::string("\xff", 1), "B"};
    BOOST_TEST(!order_names(names));
    const std::vector<std::string> expected{"B", "a:10", "a:2", "b", std::string("\xff", 1)};
    BOOST_TEST(names == expected, boost::test_tools::per_element());

    std::vector<std::string> empty;
    BOOST_TEST(order_names(empty) == error::invalid_argument);
    std::vector<std::string> dup{"x", "y", "x"};
    BOOST_TEST(order_names(dup) == error::invalid_argument);
    std::vector<std::string> one{"only"};
    BOOST_TEST(!order_names(one));

    // Two sets given in opposite orders wait in the same order.
    std::vector<std::string> a{"acct:1", "acct:2", "acct:3"}, b{"acct:3", "acct:2"};
    BOOST_TEST(!order_names(a));
    BOOST_TEST(!order_names(b));
    BOOST_TEST(b.front() == "acct:2");
}

BOOST_AUTO_TEST_CASE(every_name_granted_completes_with_all) {
    const std::vector<error_code> ecs{ok, ok, ok};
    for (bool once : {true, false})
        BOOST_TEST((after_try_all(ecs, {true, true, true}, once) ==
                    try_all_outcome{next::complete, ok, 3}));
}

BOOST_AUTO_TEST_CASE(a_try_with_a_held_name_keeps_nothing) {
    const std::vector<error_code> ecs{ok, ok, ok};
    for (const std::vector<bool>& g :
         {std::vector<bool>{false, true, true}, std::vector<bool>{true, false, true},
          std::vector<bool>{true, true, false}, std::vector<bool>{false, false, false}})
        BOOST_TEST((after_try_all(ecs, g, true) == try_all_outcome{next::complete, ok, 0}));
}

BOOST_AUTO_TEST_CASE(a_waiting_acquire_keeps_only_the_granted_prefix) {
    const std::vector<error_code> ecs{ok, ok, ok, ok};
    BOOST_TEST((after_try_all(ecs, {false, true, true, true}, false) ==
                try_all_outcome{next::wait, ok, 0}));
    // Name 3 was granted but comes after the held name 1: it is given back (holding it while
    // waiting for name 1 could close a cycle with a multi-lock that holds 1 and waits for 3).
    BOOST_TEST((after_try_all(ecs, {true, false, true, true}, false) ==
                try_all_outcome{next::wait, ok, 1}));
    BOOST_TEST((after_try_all(ecs, {true, true, true, false}, false) ==
                try_all_outcome{next::wait, ok, 3}));
}

BOOST_AUTO_TEST_CASE(a_deadline_passed_during_the_round_times_out_unless_all_granted) {
    const std::vector<error_code> ecs{ok, ok, ok};
    BOOST_TEST((after_try_all(ecs, {true, false, true}, false, true) ==
                try_all_outcome{next::complete, error::acquire_timeout, 0}));
    BOOST_TEST((after_try_all(ecs, {true, true, true}, false, true) ==
                try_all_outcome{next::complete, ok, 3}));
    // A try has no deadline: held is an empty result, not a timeout.
    BOOST_TEST((after_try_all(ecs, {true, false, true}, true, true) ==
                try_all_outcome{next::complete, ok, 0}));
}

BOOST_AUTO_TEST_CASE(errors_end_it_with_the_first_in_name_order) {
    const std::vector<error_code> ecs{ok, error::wrong_type, error::not_connected};
    for (bool once : {true, false})
        BOOST_TEST((after_try_all(ecs, {true, false, false}, once) ==
                    try_all_outcome{next::complete, error::wrong_type, 0}));
}

BOOST_AUTO_TEST_CASE(a_cancellation_wins_over_any_other_outcome) {
    const std::vector<error_code> ecs{error::wrong_type, ok, aborted};
    for (bool once : {true, false})
        BOOST_TEST((after_try_all(ecs, {false, true, false}, once) ==
                    try_all_outcome{next::complete, aborted, 0}));
}

BOOST_AUTO_TEST_CASE(unknown_outcomes_are_ridden_out_by_a_waiting_acquire_only) {
    // server_timeout: a member's try got no reply within its try_timeout (a stalled server, a
    // master failing over: lock_core's liveness is per slot on a cluster); a waiting multi-lock
    // retries within its own deadline instead of failing at once (scale-out K3).
    // acquire_timeout: the same try, while the slot's new master answered other scripts (S15,
    // seen once in CI: the multi-lock gave up after 1 s of its 10 s wait).
    for (error_code e : {error_code(error::connection_lost), error_code(error::lease_lost),
                         error_code(error::server_timeout), error_code(error::acquire_timeout)}) {
        const std::vector<error_code> ecs{ok, e, ok};
        BOOST_TEST(
            (after_try_all(ecs, {true, false, true}, false) == try_all_outcome{next::wait, ok, 1}));
        BOOST_TEST((after_try_all(ecs, {true, false, true}, true) ==
                    try_all_outcome{next::complete, e, 0}));
    }
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_multi_plan
