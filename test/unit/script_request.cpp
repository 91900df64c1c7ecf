// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// How a script call is written on the wire: byte-exact, with no server.
#include "core/script_request.hpp"

#include "core/lock_scripts.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_script_request {

using corolock::request;
using corolock::script;
using namespace std::string_literals;
namespace detail = corolock::detail;

BOOST_AUTO_TEST_SUITE(script_request)

BOOST_AUTO_TEST_CASE(evalsha_and_eval_are_built_from_their_inputs) {
    const script s("return KEYS[1]");
    const std::string_view keys[] = {"k"};
    const std::string_view args[] = {"a1", "x"};
    const auto sha = detail::make_evalsha(s, keys, args);
    BOOST_TEST(sha.payload() == "*6\r\n$7\r\nEVALSHA\r\n$40\r\n"s + std::string(s.sha1()) +
                                    "\r\n$1\r\n1\r\n$1\r\nk\r\n$2\r\na1\r\n$1\r\nx\r\n");
    BOOST_TEST(sha.size() == 1u);
    BOOST_TEST(sha.expected_responses() == 1u);
    const auto eval = detail::make_eval(s, keys, args);
    BOOST_TEST(eval.payload() == "*6\r\n$4\r\nEVAL\r\n$14\r\nreturn KEYS[1]\r\n$1\r\n1\r\n$1\r\n"
                                 "k\r\n$2\r\na1\r\n$1\r\nx\r\n");
    BOOST_TEST(detail::starts_with_evalsha(sha));
    BOOST_TEST(!detail::starts_with_evalsha(eval));
}

// The NOSCRIPT retry: the EVAL form of an EVALSHA request keeps every command after the script
// (a WAIT), and its reply count.
BOOST_AUTO_TEST_CASE(the_eval_form_keeps_what_follows_the_script) {
    const script s("return 1");
    const std::string_view keys[] = {"{a}b", "{a}:fence"};
    const std::string_view args[] = {"owner", "30000"};
    auto sha = detail::make_evalsha(s, keys, args);
    detail::add_wait(sha, "1", "100");
    const auto eval = detail::evalsha_to_eval(sha, s);
    auto expected = detail::make_eval(s, keys, args);
    detail::add_wait(expected, "1", "100");
    BOOST_TEST(eval.payload() == expected.payload());
    BOOST_TEST(eval.size() == sha.size());
    BOOST_TEST(eval.expected_responses() == sha.expected_responses());
}

BOOST_AUTO_TEST_CASE(a_request_that_is_not_an_evalsha_has_no_eval_form) {
    const script s("return 1");
    request get;
    get.push("GET", "k");
    BOOST_TEST(detail::evalsha_to_eval(get, s).empty());
    BOOST_TEST(!detail::starts_with_evalsha(get));
    request broken;
    broken.push("EVALSHA"); // too short to be a script call
    BOOST_TEST(detail::evalsha_to_eval(broken, s).empty());
    BOOST_TEST(detail::evalsha_to_eval(request{}, s).empty());
}

BOOST_AUTO_TEST_CASE(asking_goes_first_in_the_same_request) {
    request r;
    r.push("GET", "k");
    const auto a = detail::with_asking(r);
    BOOST_TEST(a.payload() == "*1\r\n$6\r\nASKING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    BOOST_TEST(a.size() == 2u);
    BOOST_TEST(a.expected_responses() == 2u);
}

BOOST_AUTO_TEST_CASE(noscript_is_recognised_by_its_first_word) {
    corolock::generic_response r;
    r.push_back({corolock::resp3::type::simple_error, 0, 0, "NOSCRIPT No matching script."});
    BOOST_TEST(detail::is_noscript(r));
    r.front().value = "ERR NOSCRIPT";
    BOOST_TEST(!detail::is_noscript(r));
    BOOST_TEST(!detail::is_noscript({}));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_script_request
