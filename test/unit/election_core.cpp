// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The election's pure core: its messages, its replies and what an observer delivers, with the
// races (a read that answers after a message, a gap, a lost leader) fed in order.
#include "core/election_core.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace unit_election_core {

using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::detail::decode_begin;
using corolock::detail::decode_leader_read;
using corolock::detail::leader_message;
using corolock::detail::leader_view;
using corolock::detail::observe_core;
using corolock::detail::parse_leader_message;
namespace resp3 = corolock::resp3;

namespace {

resp3::node scalar(resp3::type t, std::string v, std::size_t depth = 0) {
    return {t, 1, depth, std::move(v)};
}
resp3::node array(std::size_t n) {
    return {resp3::type::array, n, 0, {}};
}

leader_view present(std::uint64_t term, std::uint64_t version, std::string value,
                    std::int64_t ttl = 1000) {
    leader_view v;
    v.present = true;
    v.term = term;
    v.version = version;
    v.value = std::move(value);
    v.ttl_ms = ttl;
    return v;
}
leader_view ended(std::uint64_t term) {
    leader_view v;
    v.term = term;
    v.ended = true;
    return v;
}
leader_view starting(std::uint64_t term) {
    leader_view v;
    v.term = term;
    return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(election_core)

BOOST_AUTO_TEST_CASE(messages_round_trip_and_foreign_ones_are_ignored) {
    const auto m = parse_leader_message(leader_message(17, 3, 2500, "node a: port 80"));
    BOOST_REQUIRE(m);
    BOOST_TEST(m->present);
    BOOST_TEST(m->term == 17u);
    BOOST_TEST(m->version == 3u);
    BOOST_TEST(m->ttl_ms == 2500);
    BOOST_TEST(m->value == "node a: port 80"); // spaces in a value survive
    const auto empty = parse_leader_message(leader_message(1, 1, 0, ""));
    BOOST_REQUIRE(empty);
    BOOST_TEST(empty->value.empty());
    const auto e = parse_leader_message("ended 17");
    BOOST_REQUIRE(e);
    BOOST_TEST(!e->present);
    BOOST_TEST(e->ended);
    BOOST_TEST(e->term == 17u);
    for (const char* bad : {"", "released", "leader", "leader 1 2", "leader x 1 1 v",
                            "leader 1 1 -x v", "ended", "ended 1 2", "ended -1", "head abc"})
        BOOST_TEST(!parse_leader_message(bad), bad);
}

BOOST_AUTO_TEST_CASE(begin_replies_decode_and_others_are_refused) {
    corolock::detail::begin_reply r{};
    BOOST_TEST(!decode_begin({scalar(resp3::type::number, "1")}, r));
    BOOST_TEST((r == corolock::detail::begin_reply::begun));
    BOOST_TEST(!decode_begin({scalar(resp3::type::number, "2")}, r));
    BOOST_TEST((r == corolock::detail::begin_reply::delayed));
    BOOST_TEST(!decode_begin({scalar(resp3::type::number, "0")}, r));
    BOOST_TEST((r == corolock::detail::begin_reply::lost));
    BOOST_TEST(decode_begin({scalar(resp3::type::number, "3")}, r) == error::unexpected_reply);
    BOOST_TEST(decode_begin({}, r) == error::unexpected_reply);
    // The server's error keeps its class (and the response its text).
    const auto ec =
        decode_begin({scalar(resp3::type::simple_error, "NOPERM no EVALSHA for you")}, r);
    BOOST_TEST(ec);
    BOOST_TEST(ec != error::unexpected_reply);
}

BOOST_AUTO_TEST_CASE(reads_decode_each_shape) {
    leader_view v;
    using resp3::type;
    generic_response leader{array(5),
                            scalar(type::number, "1", 1),
                            scalar(type::blob_string, "42", 1),
                            scalar(type::blob_string, "3", 1),
                            scalar(type::blob_string, "900", 1),
                            scalar(type::blob_string, "v", 1)};
    BOOST_TEST(!decode_leader_read(leader, v));
    BOOST_TEST(v.present);
    BOOST_TEST(v.term == 42u);
    BOOST_TEST(v.version == 3u);
    BOOST_TEST(v.ttl_ms == 900);
    BOOST_TEST(v.value == "v");
    generic_response begun{array(2), scalar(type::number, "0", 1),
                           scalar(type::blob_string, "43", 1)};
    BOOST_TEST(!decode_leader_read(begun, v));
    BOOST_TEST(!v.present);
    BOOST_TEST(!v.ended);
    BOOST_TEST(v.term == 43u);
    generic_response none{array(2), scalar(type::number, "-1", 1),
                          scalar(type::blob_string, "43", 1)};
    BOOST_TEST(!decode_leader_read(none, v));
    BOOST_TEST(v.ended);
    // Malformed: wrong sizes, a nested array, a count that lies, text where a number goes.
    const generic_response bad[] = {
        {},
        {scalar(type::number, "1")},
        {array(2), scalar(type::number, "1", 1), scalar(type::blob_string, "42", 1)},
        {array(5), scalar(type::number, "0", 1), scalar(type::blob_string, "42", 1),
         scalar(type::blob_string, "3", 1), scalar(type::blob_string, "9", 1),
         scalar(type::blob_string, "v", 1)},
        {array(2), scalar(type::number, "1", 1)},
        {array(2), scalar(type::number, "7", 1), scalar(type::blob_string, "42", 1)},
        {array(2), scalar(type::number, "-1", 1), scalar(type::blob_string, "x", 1)},
        {array(2), scalar(type::number, "-1", 1), array(0)},
    };
    for (const auto& r : bad)
        BOOST_TEST(decode_leader_read(r, v) == error::unexpected_reply);
    const auto ec = decode_leader_read({scalar(type::simple_error, "WRONGTYPE not a lock")}, v);
    BOOST_TEST(ec == error::wrong_type);
}

BOOST_AUTO_TEST_CASE(first_view_is_delivered_even_without_a_leader) {
    observe_core o(corolock::lock_backend::redis);
    const auto e = o.on_view(ended(0));
    BOOST_REQUIRE(e);
    BOOST_TEST(!e->present);
    BOOST_TEST(!e->skipped);
    BOOST_TEST(!o.on_view(ended(0))); // still nobody: nothing more
}

BOOST_AUTO_TEST_CASE(changes_come_in_order_and_stale_reads_are_dropped) {
    observe_core o(corolock::lock_backend::redis);
    BOOST_REQUIRE(o.on_view(ended(0)));
    auto e = o.on_view(present(10, 1, "a"));
    BOOST_REQUIRE(e);
    BOOST_TEST(e->present);
    BOOST_TEST(e->term.value() == 10u);
    BOOST_TEST(e->version == 1u);
    BOOST_TEST(e->value == "a");
    BOOST_TEST(!e->skipped);
    // A read that answers with what the message already said: nothing new.
    BOOST_TEST(!o.on_view(present(10, 1, "a", 700)));
    e = o.on_view(present(10, 2, "b"));
    BOOST_REQUIRE(e);
    BOOST_TEST(e->value == "b");
    BOOST_TEST(!e->skipped);
    // A read made before the proclamation of version 2, answered after it: dropped.
    BOOST_TEST(!o.on_view(present(10, 1, "a")));
    e = o.on_view(ended(10));
    BOOST_REQUIRE(e);
    BOOST_TEST(!e->present);
    BOOST_TEST(e->term.value() == 10u);
    // The next term begins (a read finds it held, not proclaimed): still no leader.
    BOOST_TEST(!o.on_view(starting(11)));
    e = o.on_view(present(11, 1, "c"));
    BOOST_REQUIRE(e);
    BOOST_TEST(e->term.value() == 11u);
    BOOST_TEST(!e->skipped);
    // An older term's message can never bring it back.
    BOOST_TEST(!o.on_view(present(10, 5, "z")));
    BOOST_TEST(o.last().value == "c");
}

BOOST_AUTO_TEST_CASE(a_lost_leader_ends_with_the_read_at_its_expiry) {
    observe_core o(corolock::lock_backend::redis);
    BOOST_REQUIRE(o.on_view(present(10, 1, "a")));
    // No message comes when a lease expires: the read at its expiry finds the key gone, the
    // fence key naming term 10 as the last one issued.
    const auto e = o.on_view(ended(10));
    BOOST_REQUIRE(e);
    BOOST_TEST(!e->present);
    BOOST_TEST(!e->skipped);
    // The fence key expired too (fence_retention): the end is still the delivered term's.
    observe_core p(corolock::lock_backend::redis);
    BOOST_REQUIRE(p.on_view(present(10, 1, "a")));
    const auto f = p.on_view(ended(0));
    BOOST_REQUIRE(f);
    BOOST_TEST(!f->present);
    BOOST_TEST(f->term.value() == 10u);
}

BOOST_AUTO_TEST_CASE(a_gap_marks_the_next_change_skipped) {
    observe_core o(corolock::lock_backend::redis);
    BOOST_REQUIRE(o.on_view(present(10, 1, "a")));
    o.on_gap();
    // Nothing changed across the gap: nothing to deliver, and the mark waits for a change.
    BOOST_TEST(!o.on_view(present(10, 1, "a")));
    const auto e = o.on_view(present(12, 1, "c"));
    BOOST_REQUIRE(e);
    BOOST_TEST(e->skipped);
    const auto f = o.on_view(present(12, 2, "d"));
    BOOST_REQUIRE(f);
    BOOST_TEST(!f->skipped);
    // A version jump within a term: a proclamation was missed.
    const auto g = o.on_view(present(12, 4, "f"));
    BOOST_REQUIRE(g);
    BOOST_TEST(g->skipped);
}

BOOST_AUTO_TEST_CASE(the_next_read_is_at_the_leaders_expiry_or_the_poll) {
    using namespace std::chrono_literals;
    using corolock::detail::next_read_in;
    leader_view present;
    present.present = true;
    present.term = 5;
    present.version = 1;
    present.ttl_ms = 700;
    const auto never = std::chrono::steady_clock::duration::max();
    BOOST_TEST((next_read_in(present, never) == 701ms));
    BOOST_TEST((next_read_in(present, 200ms) == 200ms));
    present.ttl_ms = -1; // a message without the TTL (PostgreSQL): the poll only
    BOOST_TEST((next_read_in(present, 2s) == 2s));
    leader_view none;
    BOOST_TEST((next_read_in(none, never) == never));
    BOOST_TEST((next_read_in(none, 2s) == 2s));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_election_core
