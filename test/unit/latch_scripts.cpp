// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/latch_scripts.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_latch_scripts {

using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::resp3::node;
using corolock::resp3::type;
namespace d = corolock::detail;

namespace {

// A flat array reply of integers, as the scripts return.
generic_response ints(std::vector<std::string> values) {
    generic_response r{node{type::array, values.size(), 0, ""}};
    for (auto& v : values)
        r.push_back(node{type::number, 0, 1, std::move(v)});
    return r;
}

generic_response one(type t, std::string value) {
    return {node{t, 0, 0, std::move(value)}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(latch_scripts)

BOOST_AUTO_TEST_CASE(keys_share_the_name_slot) {
    const auto k = d::make_latch_keys("batch");
    BOOST_TEST(k.name == "batch");
    BOOST_TEST(k.done == "{batch}:d");
    BOOST_TEST(k.channel == "{batch}:released");
    const auto t = d::make_latch_keys("{job}:7");
    BOOST_TEST(t.done == "{job}:7:d");
    BOOST_TEST(t.channel == "{job}:7:released");
}

BOOST_AUTO_TEST_CASE(names) {
    BOOST_TEST(d::latch_name("batch"));
    BOOST_TEST(d::latch_name("{job}:7"));
    BOOST_TEST(!d::latch_name(""));
    BOOST_TEST(!d::latch_name("a}b"));
    BOOST_TEST(!d::latch_name("{job}:d"));        // another latch's participant set
    BOOST_TEST(!d::latch_name("{job}:released")); // another name's channel
    BOOST_TEST(d::latch_name("job:d"));           // untagged: its keys are {job:d}...
}

BOOST_AUTO_TEST_CASE(create_replies) {
    d::latch_created c;
    BOOST_TEST(d::decode_latch_create(ints({"0", "1764120000000001", "3", "1"}), c) ==
               error_code{});
    BOOST_TEST(c.generation == 1764120000000001u);
    BOOST_TEST(c.target == 3u);
    BOOST_TEST(c.created == 1);
    BOOST_TEST(d::decode_latch_create(ints({"0", "5", "3", "0"}), c) == error_code{});
    BOOST_TEST(c.created == 0);
    BOOST_TEST(d::decode_latch_create(ints({"0", "6", "4", "2"}), c) == error_code{});
    BOOST_TEST(c.created == 2);
    // Another target: the one in place is reported.
    c = {};
    BOOST_TEST(d::decode_latch_create(ints({"1", "5", "7", "0"}), c) == error::target_mismatch);
    BOOST_TEST(c.target == 7u);
    BOOST_TEST(c.generation == 5u);
}

BOOST_AUTO_TEST_CASE(count_down_replies) {
    d::latch_count c;
    BOOST_TEST(d::decode_latch_count_down(ints({"0", "0", "2", "9"}), c) == error_code{});
    BOOST_TEST(!c.open);
    BOOST_TEST(c.remaining == 2u);
    BOOST_TEST(c.generation == 9u);
    BOOST_TEST(d::decode_latch_count_down(ints({"0", "1", "0", "9"}), c) == error_code{});
    BOOST_TEST(c.open);
    BOOST_TEST(d::decode_latch_count_down(ints({"1", "0", "0", "0"}), c) == error::no_latch);
    BOOST_TEST(d::decode_latch_count_down(ints({"2", "0", "0", "10"}), c) ==
               error::stale_generation);
    BOOST_TEST(c.generation == 10u);
}

BOOST_AUTO_TEST_CASE(read_replies) {
    d::latch_snapshot s;
    BOOST_TEST(d::decode_latch_read(ints({"0", "0", "3", "9", "4"}), s) == error_code{});
    BOOST_TEST(!s.open);
    BOOST_TEST(s.remaining == 3u);
    BOOST_TEST(s.generation == 9u);
    BOOST_TEST(s.previous == 4u);
    BOOST_TEST(d::decode_latch_read(ints({"0", "1", "0", "9", "0"}), s) == error_code{});
    BOOST_TEST(s.open);
    BOOST_TEST(d::decode_latch_read(ints({"1", "0", "0", "0", "0"}), s) == error::no_latch);
}

BOOST_AUTO_TEST_CASE(server_errors) {
    d::latch_created c;
    d::latch_count n;
    d::latch_snapshot s;
    const auto wrong = one(type::simple_error, "WRONGTYPE the key at the latch name is not ...");
    BOOST_TEST(d::decode_latch_create(wrong, c) == error::wrong_type);
    BOOST_TEST(d::decode_latch_count_down(wrong, n) == error::wrong_type);
    BOOST_TEST(d::decode_latch_read(wrong, s) == error::wrong_type);
    const auto other = one(type::simple_error, "ERR user_script:1: Script attempted ...");
    BOOST_TEST(d::decode_latch_create(other, c) == error::server_error);
    BOOST_TEST(d::decode_latch_count_down(other, n) == error::server_error);
    BOOST_TEST(d::decode_latch_read(other, s) == error::server_error);
    // An error nested in an array counts too.
    auto nested = ints({"0", "0", "3", "9"});
    nested[2] = node{type::simple_error, 0, 1, "WRONGTYPE x"};
    BOOST_TEST(d::decode_latch_count_down(nested, n) == error::wrong_type);
}

BOOST_AUTO_TEST_CASE(hostile_shapes_are_unexpected) {
    d::latch_created c;
    d::latch_count n;
    d::latch_snapshot s;
    const std::vector<generic_response> hostile = {
        {},
        one(type::number, "0"),
        one(type::null, ""),
        one(type::simple_string, "OK"),
        ints({}),
        ints({"0"}),
        ints({"0", "1", "2"}),
        ints({"0", "1", "2", "3", "4", "5", "6"}),
        ints({"0", "-1", "2", "3"}),
        ints({"0", "1", "2", "x"}),
        ints({"0", "1", "2", ""}),
        ints({"0", "1", "2", " 3"}),
        ints({"0", "1", "2", "99999999999999999999999"}),
        ints({"7", "1", "1", "1", "1"}),
    };
    for (const auto& r : hostile) {
        BOOST_TEST(d::decode_latch_create(r, c) == error::unexpected_reply);
        BOOST_TEST(d::decode_latch_count_down(r, n) == error::unexpected_reply);
        BOOST_TEST(d::decode_latch_read(r, s) == error::unexpected_reply);
    }
    // Wrong node types and depths in an array of the right size.
    auto strings = ints({"0", "1", "0", "3"});
    strings[4].data_type = type::blob_string;
    BOOST_TEST(d::decode_latch_count_down(strings, n) == error::unexpected_reply);
    auto deep = ints({"0", "1", "0", "3"});
    deep[2].depth = 2;
    BOOST_TEST(d::decode_latch_count_down(deep, n) == error::unexpected_reply);
    auto lying = ints({"0", "1", "0", "3"});
    lying[0].aggregate_size = 9;
    BOOST_TEST(d::decode_latch_count_down(lying, n) == error::unexpected_reply);
    auto map = ints({"0", "1", "0", "3"});
    map[0].data_type = type::map;
    BOOST_TEST(d::decode_latch_count_down(map, n) == error::unexpected_reply);
    // Values a script cannot return: an open latch with participants missing, flags above 1,
    // generation 0, target 0, a mismatch that claims to have created.
    BOOST_TEST(d::decode_latch_count_down(ints({"0", "1", "2", "3"}), n) ==
               error::unexpected_reply);
    BOOST_TEST(d::decode_latch_count_down(ints({"0", "2", "0", "3"}), n) ==
               error::unexpected_reply);
    BOOST_TEST(d::decode_latch_count_down(ints({"0", "0", "2", "0"}), n) ==
               error::unexpected_reply);
    BOOST_TEST(d::decode_latch_count_down(ints({"3", "0", "0", "1"}), n) ==
               error::unexpected_reply);
    BOOST_TEST(d::decode_latch_read(ints({"0", "1", "5", "3", "0"}), s) == error::unexpected_reply);
    BOOST_TEST(d::decode_latch_read(ints({"0", "0", "5", "0", "0"}), s) == error::unexpected_reply);
    BOOST_TEST(d::decode_latch_create(ints({"0", "0", "3", "1"}), c) == error::unexpected_reply);
    BOOST_TEST(d::decode_latch_create(ints({"0", "5", "0", "1"}), c) == error::unexpected_reply);
    BOOST_TEST(d::decode_latch_create(ints({"0", "5", "3", "3"}), c) == error::unexpected_reply);
    BOOST_TEST(d::decode_latch_create(ints({"1", "5", "3", "1"}), c) == error::unexpected_reply);
}

BOOST_AUTO_TEST_CASE(open_messages) {
    BOOST_TEST(d::make_open_message(1764120000000001u) == "open 1764120000000001");
    BOOST_TEST(d::parse_open_message("open 1764120000000001").value() == 1764120000000001u);
    BOOST_TEST(!d::parse_open_message("open "));
    BOOST_TEST(!d::parse_open_message("open 0"));
    BOOST_TEST(!d::parse_open_message("open -1"));
    BOOST_TEST(!d::parse_open_message("open 12x"));
    BOOST_TEST(!d::parse_open_message("open 99999999999999999999999"));
    BOOST_TEST(!d::parse_open_message("released"));
    BOOST_TEST(!d::parse_open_message("OPEN 5"));
    BOOST_TEST(!d::parse_open_message(""));
}

BOOST_AUTO_TEST_CASE(scripts_read_time_from_the_server_only) {
    // Server TIME only: no script takes a client time, and each refreshes (or only reads) TTLs.
    const auto& create = d::latch_create_script().source();
    BOOST_TEST(create.find("'TIME'") != std::string::npos);
    BOOST_TEST(create.find("PEXPIRE") != std::string::npos);
    BOOST_TEST(d::latch_count_down_script().source().find("PEXPIRE") != std::string::npos);
    BOOST_TEST(d::latch_count_down_script().source().find("SADD") != std::string::npos);
    BOOST_TEST(d::latch_read_script().source().find("PEXPIRE") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_latch_scripts
