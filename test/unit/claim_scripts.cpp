// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/claim_scripts.hpp"

#include "io/owner_id.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <set>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_claim_scripts {

using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::resp3::node;
using corolock::resp3::type;
namespace d = corolock::detail;
using namespace std::chrono_literals;

namespace {

generic_response one(type t, std::string value) {
    return {node{t, 0, 0, std::move(value)}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(claim_scripts)

BOOST_AUTO_TEST_CASE(arguments_are_checked) {
    BOOST_TEST(d::validate_claim("", 1s) == error::invalid_name);
    BOOST_TEST(d::validate_claim("k", 1ms) == error_code{});
    BOOST_TEST(d::validate_claim("k", 999us) == error::invalid_argument);
    BOOST_TEST(d::validate_claim("k", 0s) == error::invalid_argument);
    BOOST_TEST(d::validate_claim("k", -5s) == error::invalid_argument);
    BOOST_TEST(d::validate_claim("k", std::chrono::hours(24 * 365)) == error_code{});
    BOOST_TEST(d::validate_claim("k", std::chrono::hours(24 * 365) + 1ns) ==
               error::invalid_argument);
    BOOST_TEST(d::validate_claim("k", std::chrono::steady_clock::duration::max()) ==
               error::invalid_argument);
}

BOOST_AUTO_TEST_CASE(retention_rounds_up_to_whole_milliseconds) {
    BOOST_TEST(d::retention_ms(1ms) == 1);
    BOOST_TEST(d::retention_ms(1500us) == 2);
    BOOST_TEST(d::retention_ms(10min) == 600000);
}

BOOST_AUTO_TEST_CASE(claim_request_is_set_nx_px) {
    const auto r = d::make_claim_request("order:1", "abc", 250);
    BOOST_TEST(
        r.payload() ==
        "*6\r\n$3\r\nSET\r\n$7\r\norder:1\r\n$3\r\nabc\r\n$2\r\nNX\r\n$2\r\nPX\r\n$3\r\n250\r\n");
}

BOOST_AUTO_TEST_CASE(claim_replies) {
    bool claimed = false;
    BOOST_TEST(d::decode_claim(one(type::simple_string, "OK"), claimed) == error_code{});
    BOOST_TEST(claimed);
    BOOST_TEST(d::decode_claim(one(type::null, ""), claimed) == error_code{});
    BOOST_TEST(!claimed);
    BOOST_TEST(d::decode_claim(one(type::simple_error, "OOM command not allowed"), claimed) ==
               error::server_error);
    BOOST_TEST(d::decode_claim(one(type::number, "1"), claimed) == error::unexpected_reply);
    BOOST_TEST(d::decode_claim(one(type::simple_string, "QUEUED"), claimed) ==
               error::unexpected_reply);
    BOOST_TEST(d::decode_claim({}, claimed) == error::unexpected_reply);
}

BOOST_AUTO_TEST_CASE(give_back_replies) {
    bool given_back = false;
    BOOST_TEST(d::decode_give_back(one(type::number, "1"), given_back) == error_code{});
    BOOST_TEST(given_back);
    BOOST_TEST(d::decode_give_back(one(type::number, "0"), given_back) == error_code{});
    BOOST_TEST(!given_back);
    BOOST_TEST(d::decode_give_back(one(type::number, "2"), given_back) == error::unexpected_reply);
    BOOST_TEST(d::decode_give_back(one(type::simple_error, "ERR x"), given_back) ==
               error::server_error);
    BOOST_TEST(d::decode_give_back(one(type::null, ""), given_back) == error::unexpected_reply);
}

BOOST_AUTO_TEST_CASE(owners_are_32_hex_digits_and_distinct) {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        auto o = std::string(d::view(d::random_owner_id()));
        BOOST_TEST(o.size() == 32u);
        BOOST_TEST(o.find_first_not_of("0123456789abcdef") == std::string::npos);
        seen.insert(std::move(o));
    }
    BOOST_TEST(seen.size() == 1000u);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_claim_scripts
