// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/slot_table.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_slot_table {

namespace cl = corolock;
using cl::detail::cluster_node;
using cl::detail::common_slot;
using cl::detail::crc16;
using cl::detail::key_slot;
using cl::detail::parse_cluster_shards;
using cl::detail::slot_table;
using cl::resp3::type;

namespace {

// A hand-built reply: (type, size, depth, value) in pre-order.
struct builder {
    cl::generic_response r;
    builder& agg(type t, std::size_t n, std::size_t d) {
        r.push_back({t, n, d, ""});
        return *this;
    }
    builder& str(std::string v, std::size_t d) {
        r.push_back({type::blob_string, 1, d, std::move(v)});
        return *this;
    }
    builder& num(std::string v, std::size_t d) {
        r.push_back({type::number, 1, d, std::move(v)});
        return *this;
    }
    // One node map at depth d (7 fields, as Redis 7.0 sends them).
    builder& node(const std::string& id, const std::string& port, const std::string& role,
                  const std::string& health, std::size_t d) {
        agg(type::map, 7, d);
        str("id", d + 1).str(id, d + 1);
        str("port", d + 1).num(port, d + 1);
        str("ip", d + 1).str("127.0.0.1", d + 1);
        str("endpoint", d + 1).str("127.0.0.1", d + 1);
        str("role", d + 1).str(role, d + 1);
        str("replication-offset", d + 1).num("42", d + 1);
        str("health", d + 1).str(health, d + 1);
        return *this;
    }
};

// Two shards: [0, 8191] on 7001 (replica 7003 still loading), [8192, 16383] on 7002 whose
// master is failed (its replica is online but not yet promoted).
cl::generic_response two_shards() {
    builder b;
    b.agg(type::array, 2, 0);
    b.agg(type::map, 2, 1).str("slots", 2).agg(type::array, 2, 2).num("0", 3).num("8191", 3);
    b.str("nodes", 2).agg(type::array, 2, 2);
    b.node("a1", "7001", "master", "online", 3).node("r1", "7003", "replica", "loading", 3);
    b.agg(type::map, 2, 1).str("slots", 2).agg(type::array, 2, 2).num("8192", 3).num("16383", 3);
    b.str("nodes", 2).agg(type::array, 2, 2);
    b.node("a2", "7002", "master", "failed", 3).node("r2", "7004", "replica", "online", 3);
    return b.r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(slot_table_suite)

BOOST_AUTO_TEST_CASE(crc16_matches_the_cluster_spec) {
    // The reference value of the spec's crc16.c: "123456789" -> 0x31C3.
    BOOST_TEST(crc16("123456789") == 0x31C3);
    BOOST_TEST(crc16("") == 0);
}

BOOST_AUTO_TEST_CASE(key_slot_matches_redis) {
    // Values of CLUSTER KEYSLOT on redis 7.0.
    BOOST_TEST(key_slot("foo") == 12182);
    BOOST_TEST(key_slot("bar") == 5061);
    BOOST_TEST(key_slot("123456789") == 12739);
    BOOST_TEST(key_slot("") == 0);
}

BOOST_AUTO_TEST_CASE(hash_tags_follow_the_spec) {
    // The spec's examples: the tag is between the first { and the first } after it.
    BOOST_TEST(key_slot("{user1000}.following") == key_slot("user1000"));
    BOOST_TEST(key_slot("{user1000}.followers") == key_slot("user1000"));
    BOOST_TEST(key_slot("foo{}{bar}") == key_slot("foo{}{bar}")); // empty tag: whole key
    BOOST_TEST(key_slot("foo{}{bar}") != key_slot("bar"));
    BOOST_TEST(key_slot("foo{{bar}}zap") == key_slot("{bar"));
    BOOST_TEST(key_slot("foo{bar}{zap}") == key_slot("bar"));
    BOOST_TEST(key_slot("{bar") == crc16("{bar") % 16384); // no closing brace: whole key
    BOOST_TEST(key_slot("lock:{order-7}:fence") == key_slot("order-7"));
}

BOOST_AUTO_TEST_CASE(common_slot_of_keys) {
    std::vector<std::string_view> same{"{a}x", "{a}y", "a"};
    BOOST_TEST(common_slot(same).value() == key_slot("a"));
    std::vector<std::string_view> differ{"foo", "bar"};
    BOOST_TEST(!common_slot(differ).has_value());
    BOOST_TEST(common_slot({}).value() == 0);
}

BOOST_AUTO_TEST_CASE(table_assigns_and_prunes) {
    slot_table t;
    BOOST_TEST(t.covered() == 0u);
    BOOST_TEST(t.owner(5) == nullptr);
    cluster_node a{"ida", "127.0.0.1", "7001"}, b{"", "127.0.0.1", "7002"};
    t.assign(0, 16383, a);
    t.assign(100, 199, b);
    BOOST_TEST(t.covered() == 16384u);
    BOOST_TEST(*t.owner(150) == b);
    BOOST_TEST(*t.owner(99) == a);
    t.assign(0, 16383, b);
    BOOST_TEST(t.nodes().size() == 2u);
    t.prune();
    BOOST_TEST(t.nodes().size() == 1u);
    BOOST_TEST(*t.owner(0) == b);
}

BOOST_AUTO_TEST_CASE(parses_online_masters_only) {
    slot_table t;
    BOOST_TEST(!parse_cluster_shards(two_shards(), t));
    BOOST_TEST(t.covered() == 8192u);
    BOOST_REQUIRE(t.owner(0) != nullptr);
    BOOST_TEST(t.owner(8191)->id == "a1");
    BOOST_TEST(t.owner(8191)->port == "7001");
    BOOST_TEST(t.owner(8191)->host == "127.0.0.1");
    BOOST_TEST(t.owner(8192) == nullptr); // failed master: uncovered, not its replica
    BOOST_TEST(t.nodes().size() == 1u);
}

BOOST_AUTO_TEST_CASE(an_error_reply_keeps_its_code) {
    cl::generic_response r{
        {type::simple_error, 1, 0, "ERR This instance has cluster support disabled"}};
    slot_table t;
    t.assign(0, 0, {"x", "h", "1"});
    BOOST_TEST(parse_cluster_shards(r, t) == cl::error::server_error);
    BOOST_TEST(t.covered() == 1u); // untouched on failure
    r.front().value = "LOADING Redis is loading the dataset in memory";
    BOOST_TEST(parse_cluster_shards(r, t) == cl::error::loading);
}

BOOST_AUTO_TEST_CASE(hostile_replies_fail_cleanly) {
    const auto good = two_shards();
    slot_table t;
    // Every truncation of a valid reply is an error, never a read past the end.
    for (std::size_t n = 0; n < good.size(); ++n) {
        cl::generic_response cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
        BOOST_TEST(parse_cluster_shards(cut, t) == cl::error::unexpected_reply, "cut at " << n);
    }
    // Every single node with a wrong type or an absurd size or value.
    for (std::size_t i = 0; i < good.size(); ++i) {
        for (auto mutate : {0, 1, 2}) {
            auto bad = good;
            if (mutate == 0)
                bad[i].aggregate_size = std::size_t(-1);
            else if (mutate == 1)
                bad[i].data_type = bad[i].data_type == type::map ? type::set : type::map;
            else
                bad[i].value = "99999";
            slot_table out;
            auto ec = parse_cluster_shards(bad, out); // any outcome but a crash
            if (!ec)
                BOOST_TEST(out.covered() <= 16384u);
        }
    }
    // Slot ranges out of order or out of range.
    for (auto [a, b] : {std::pair{"10", "5"}, std::pair{"0", "16384"}, std::pair{"-1", "3"},
                        std::pair{"x", "3"}}) {
        auto bad = good;
        bad[4].value = a;
        bad[5].value = b;
        BOOST_TEST(parse_cluster_shards(bad, t) == cl::error::unexpected_reply);
    }
    // Trailing nodes after the reply.
    auto extra = good;
    extra.push_back({type::number, 1, 0, "1"});
    BOOST_TEST(parse_cluster_shards(extra, t) == cl::error::unexpected_reply);
    // Not an array.
    BOOST_TEST(parse_cluster_shards({{type::number, 1, 0, "1"}}, t) == cl::error::unexpected_reply);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_slot_table
