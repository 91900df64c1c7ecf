// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/resp3/parser.hpp>
#include <corolock/resp3/serializer.hpp>

#include <boost/test/unit_test.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_resp3_parser {

namespace resp3 = corolock::resp3;
using corolock::error;
using corolock::error_code;
using resp3::node;
using resp3::type;

namespace {

struct parse_result {
    std::vector<node> nodes;
    error_code ec;
    bool done = false;
    std::size_t consumed = 0;

    friend bool operator==(const parse_result&, const parse_result&) = default;
};

[[maybe_unused]] std::ostream& operator<<(std::ostream& os, const parse_result& r) {
    os << "{ec=" << r.ec.message() << " done=" << r.done << " consumed=" << r.consumed
       << " nodes=[";
    for (const auto& n : r.nodes)
        os << n << ' ';
    return os << "]}";
}

node to_node(const resp3::node_view& v) {
    return {v.data_type, v.aggregate_size, v.depth, std::string(v.value)};
}

node make(type t, std::size_t size, std::size_t depth, std::string value = {}) {
    return {t, size, depth, std::move(value)};
}
node leaf(type t, std::string value, std::size_t depth = 0) {
    return {t, 1, depth, std::move(value)};
}

// Prints an input with its control bytes escaped.
node shown(std::string_view input) {
    return leaf(type::blob_string, std::string(input));
}

// Parses one message from a complete buffer.
parse_result parse_all(std::string_view input, resp3::parser_limits limits = {}) {
    resp3::parser p(limits);
    parse_result r;
    while (!p.done()) {
        auto n = p.consume(input, r.ec);
        if (!n)
            break;
        r.nodes.push_back(to_node(*n));
    }
    r.done = p.done();
    r.consumed = p.consumed();
    return r;
}

// Parses one message that arrives in pieces: `next_chunk(offset)` says how many bytes the next
// read brings. The buffer grows (and may move) between calls, as a socket buffer would.
template <class NextChunk>
parse_result parse_pieces(std::string_view input, resp3::parser_limits limits,
                          NextChunk next_chunk) {
    resp3::parser p(limits);
    parse_result r;
    std::string buffer;
    std::size_t offset = 0;
    for (;;) {
        while (!p.done()) {
            auto n = p.consume(buffer, r.ec);
            if (!n)
                break;
            r.nodes.push_back(to_node(*n));
        }
        if (r.ec || p.done() || offset == input.size())
            break;
        const std::size_t n = std::min(next_chunk(offset), input.size() - offset);
        buffer.append(input.substr(offset, n));
        offset += n;
    }
    r.done = p.done();
    r.consumed = p.consumed();
    return r;
}

parse_result parse_chunked(std::string_view input, std::size_t chunk,
                           resp3::parser_limits limits = {}) {
    return parse_pieces(input, limits, [chunk](std::size_t) { return chunk; });
}

parse_result parse_two_parts(std::string_view input, std::size_t split,
                             resp3::parser_limits limits = {}) {
    return parse_pieces(input, limits, [split, first = true](std::size_t offset) mutable {
        if (first) {
            first = false;
            return split;
        }
        return std::numeric_limits<std::size_t>::max() - offset;
    });
}

// Every way of cutting the input must give what parsing it at once gives.
void check_splits(std::string_view input, const parse_result& expected,
                  resp3::parser_limits limits = {}) {
    std::size_t mismatches = 0;
    for (std::size_t chunk = 1; chunk <= input.size(); ++chunk) {
        const auto got = parse_chunked(input, chunk, limits);
        if (got != expected && mismatches++ < 3)
            BOOST_TEST(got == expected, "chunk size " << chunk);
    }
    for (std::size_t split = 0; split <= input.size(); ++split) {
        const auto got = parse_two_parts(input, split, limits);
        if (got != expected && mismatches++ < 6)
            BOOST_TEST(got == expected, "split at " << split);
    }
    BOOST_TEST(mismatches == 0u);
}

// A valid message: the nodes, complete, all of it consumed, under every split; no proper
// prefix is an error or complete.
void check_valid(const std::string& input, const std::vector<node>& expected,
                 resp3::parser_limits limits = {}) {
    BOOST_TEST_CONTEXT("input " << shown(input)) {
        const auto r = parse_all(input, limits);
        BOOST_TEST(!r.ec, r.ec.message());
        BOOST_TEST(r.done);
        BOOST_TEST(r.consumed == input.size());
        BOOST_TEST(r.nodes == expected, boost::test_tools::per_element());
        check_splits(input, r, limits);
        for (std::size_t len = 0; len < input.size(); ++len) {
            const auto partial = parse_all(std::string_view(input).substr(0, len), limits);
            if (partial.ec || partial.done) {
                BOOST_TEST(!partial.ec, "prefix " << len << ": " << partial.ec.message());
                BOOST_TEST(!partial.done, "prefix " << len);
                break;
            }
        }
    }
}

// An invalid message fails with `expected`, under every split.
void check_error(const std::string& input, error expected, resp3::parser_limits limits = {},
                 bool all_splits = true) {
    BOOST_TEST_CONTEXT("input " << shown(input)) {
        const auto r = parse_all(input, limits);
        BOOST_TEST(r.ec == corolock::make_error_code(expected), r.ec.message());
        BOOST_TEST(!r.done);
        if (all_splits) {
            check_splits(input, r, limits);
        } else {
            for (std::size_t chunk : {std::size_t(1), std::size_t(7), std::size_t(4096)})
                BOOST_TEST(parse_chunked(input, chunk, limits) == r);
        }
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(resp3_parser)

BOOST_AUTO_TEST_CASE(simple_types) {
    check_valid("+OK\r\n", {leaf(type::simple_string, "OK")});
    check_valid("+\r\n", {leaf(type::simple_string, "")});
    check_valid("+hello world\t\x01\r\n", {leaf(type::simple_string, "hello world\t\x01")});
    check_valid("-ERR wrong\r\n", {leaf(type::simple_error, "ERR wrong")});
    check_valid(":0\r\n", {leaf(type::number, "0")});
    check_valid(":-42\r\n", {leaf(type::number, "-42")});
    check_valid(":+42\r\n", {leaf(type::number, "+42")});
    check_valid(":9223372036854775807\r\n", {leaf(type::number, "9223372036854775807")});
    check_valid(":-9223372036854775808\r\n", {leaf(type::number, "-9223372036854775808")});
    check_valid(",1.5\r\n", {leaf(type::doublean, "1.5")});
    check_valid(",-0.25e-3\r\n", {leaf(type::doublean, "-0.25e-3")});
    check_valid(",1E+20\r\n", {leaf(type::doublean, "1E+20")});
    check_valid(",10\r\n", {leaf(type::doublean, "10")});
    check_valid(",inf\r\n", {leaf(type::doublean, "inf")});
    check_valid(",-inf\r\n", {leaf(type::doublean, "-inf")});
    check_valid(",nan\r\n", {leaf(type::doublean, "nan")});
    check_valid("#t\r\n", {leaf(type::boolean, "t")});
    check_valid("#f\r\n", {leaf(type::boolean, "f")});
    check_valid("_\r\n", {leaf(type::null, "")});
    check_valid("(3492890328409238509324850943850943825024385\r\n",
                {leaf(type::big_number, "3492890328409238509324850943850943825024385")});
    check_valid("(-12\r\n", {leaf(type::big_number, "-12")});
}

BOOST_AUTO_TEST_CASE(blob_types) {
    using namespace std::string_literals;
    check_valid("$0\r\n\r\n", {leaf(type::blob_string, "")});
    check_valid("$5\r\nhello\r\n", {leaf(type::blob_string, "hello")});
    check_valid("$6\r\na\0\r\nb\n\r\n"s, {leaf(type::blob_string, "a\0\r\nb\n"s)});
    check_valid("$3\r\n\r\n\r\r\n", {leaf(type::blob_string, "\r\n\r")});
    check_valid("!21\r\nSYNTAX invalid syntax\r\n",
                {leaf(type::blob_error, "SYNTAX invalid syntax")});
    check_valid("=15\r\ntxt:Some string\r\n", {leaf(type::verbatim_string, "txt:Some string")});
    // Leading zeros are a valid length, as strtoull would read it.
    check_valid("$003\r\nabc\r\n", {leaf(type::blob_string, "abc")});
}

BOOST_AUTO_TEST_CASE(aggregates) {
    check_valid("*0\r\n", {make(type::array, 0, 0)});
    check_valid("%0\r\n", {make(type::map, 0, 0)});
    check_valid("*3\r\n:1\r\n+two\r\n$5\r\nthree\r\n",
                {make(type::array, 3, 0), leaf(type::number, "1", 1),
                 leaf(type::simple_string, "two", 1), leaf(type::blob_string, "three", 1)});
    check_valid("%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
                {make(type::map, 2, 0), leaf(type::simple_string, "first", 1),
                 leaf(type::number, "1", 1), leaf(type::simple_string, "second", 1),
                 leaf(type::number, "2", 1)});
    check_valid("~2\r\n+a\r\n#t\r\n", {make(type::set, 2, 0), leaf(type::simple_string, "a", 1),
                                       leaf(type::boolean, "t", 1)});
    check_valid("*2\r\n*2\r\n:1\r\n*0\r\n%1\r\n+k\r\n~1\r\n_\r\n",
                {make(type::array, 2, 0), make(type::array, 2, 1), leaf(type::number, "1", 2),
                 make(type::array, 0, 2), make(type::map, 1, 1), leaf(type::simple_string, "k", 2),
                 make(type::set, 1, 2), leaf(type::null, "", 3)});
    // The empty aggregate closes its parent too.
    check_valid("*1\r\n*1\r\n*0\r\n",
                {make(type::array, 1, 0), make(type::array, 1, 1), make(type::array, 0, 2)});
}

BOOST_AUTO_TEST_CASE(attributes) {
    // At top level the attribute comes first; the message ends with the value.
    check_valid("|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
                "*2\r\n:2039123\r\n:9543892\r\n",
                {make(type::attribute, 1, 0), leaf(type::simple_string, "key-popularity", 1),
                 make(type::map, 2, 1), leaf(type::blob_string, "a", 2),
                 leaf(type::doublean, "0.1923", 2), leaf(type::blob_string, "b", 2),
                 leaf(type::doublean, "0.0012", 2), make(type::array, 2, 0),
                 leaf(type::number, "2039123", 1), leaf(type::number, "9543892", 1)});
    // Inside an array, the attribute is not one of its two elements.
    check_valid("*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n",
                {make(type::array, 2, 0), leaf(type::number, "1", 1), make(type::attribute, 1, 1),
                 leaf(type::simple_string, "ttl", 2), leaf(type::number, "3600", 2),
                 leaf(type::number, "2", 1)});
    // An attribute annotating a map value, and one before an aggregate.
    check_valid("%1\r\n+k\r\n|0\r\n|1\r\n+a\r\n+b\r\n*1\r\n+v\r\n",
                {make(type::map, 1, 0), leaf(type::simple_string, "k", 1),
                 make(type::attribute, 0, 1), make(type::attribute, 1, 1),
                 leaf(type::simple_string, "a", 2), leaf(type::simple_string, "b", 2),
                 make(type::array, 1, 1), leaf(type::simple_string, "v", 2)});
    // An attribute inside an attribute, at the end of its parent attribute.
    check_valid("|1\r\n+k\r\n|1\r\n+x\r\n+y\r\n+v\r\n+OK\r\n",
                {make(type::attribute, 1, 0), leaf(type::simple_string, "k", 1),
                 make(type::attribute, 1, 1), leaf(type::simple_string, "x", 2),
                 leaf(type::simple_string, "y", 2), leaf(type::simple_string, "v", 1),
                 leaf(type::simple_string, "OK", 0)});
    // Two attributes in a row, then the value.
    check_valid("|0\r\n|0\r\n:7\r\n", {make(type::attribute, 0, 0), make(type::attribute, 0, 0),
                                       leaf(type::number, "7")});
}

BOOST_AUTO_TEST_CASE(attribute_alone_is_not_a_message) {
    for (std::string input : {"|0\r\n", "|1\r\n+a\r\n+b\r\n"}) {
        const auto r = parse_all(input);
        BOOST_TEST(!r.ec);
        BOOST_TEST(!r.done);
        BOOST_TEST(r.consumed == input.size());
    }
}

BOOST_AUTO_TEST_CASE(pushes) {
    check_valid(">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n",
                {make(type::push, 3, 0), leaf(type::blob_string, "message", 1),
                 leaf(type::blob_string, "channel", 1), leaf(type::blob_string, "hello", 1)});
    check_valid(">2\r\n+invalidate\r\n*1\r\n$3\r\nkey\r\n",
                {make(type::push, 2, 0), leaf(type::simple_string, "invalidate", 1),
                 make(type::array, 1, 1), leaf(type::blob_string, "key", 2)});
}

BOOST_AUTO_TEST_CASE(resp2_replies) {
    check_valid("$-1\r\n", {leaf(type::null, "")});
    check_valid("*-1\r\n", {leaf(type::null, "")});
    check_valid("*3\r\n$3\r\nfoo\r\n$-1\r\n*-1\r\n",
                {make(type::array, 3, 0), leaf(type::blob_string, "foo", 1),
                 leaf(type::null, "", 1), leaf(type::null, "", 1)});
    check_valid("*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n$2\r\nab\r\n",
                {make(type::array, 2, 0), make(type::array, 2, 1), leaf(type::number, "1", 2),
                 leaf(type::number, "2", 2), make(type::array, 1, 1),
                 leaf(type::blob_string, "ab", 2)});
}

BOOST_AUTO_TEST_CASE(messages_back_to_back) {
    // A push, a reply and the start of the next reply arrive in one read.
    const std::string stream = ">2\r\n+pubsub\r\n:1\r\n|1\r\n+a\r\n+b\r\n$2\r\nok\r\n*2\r\n:1";
    resp3::parser p;
    std::string_view buffer = stream;
    error_code ec;
    std::vector<std::vector<node>> messages(1);
    for (;;) {
        auto n = p.consume(buffer, ec);
        BOOST_TEST_REQUIRE(!ec);
        if (!n)
            break;
        messages.back().push_back(to_node(*n));
        if (p.done()) {
            // Nothing past the message is touched until reset().
            BOOST_TEST(!p.consume(buffer, ec).has_value());
            BOOST_TEST(!ec);
            buffer.remove_prefix(p.consumed());
            p.reset();
            BOOST_TEST(!p.done());
            BOOST_TEST(p.consumed() == 0u);
            messages.emplace_back();
        }
    }
    BOOST_TEST_REQUIRE(messages.size() == 3u);
    BOOST_TEST(messages[0].size() == 3u);
    BOOST_TEST(messages[1].size() == 4u);
    BOOST_TEST(messages[1].back() == leaf(type::blob_string, "ok"));
    BOOST_TEST(messages[2].size() == 1u); // the array header
    BOOST_TEST(buffer == "*2\r\n:1");
    BOOST_TEST(p.consumed() == 4u); // the array header, waiting for ":1\r\n"
    BOOST_TEST(!p.done());
}

BOOST_AUTO_TEST_CASE(views_point_into_the_buffer) {
    const std::string input = "*2\r\n$3\r\nabc\r\n+de\r\n";
    resp3::parser p;
    error_code ec;
    p.consume(input, ec);
    const auto blob = p.consume(input, ec);
    BOOST_TEST_REQUIRE(blob.has_value());
    BOOST_TEST(blob->value.data() == input.data() + 8);
    const auto simple = p.consume(input, ec);
    BOOST_TEST_REQUIRE(simple.has_value());
    BOOST_TEST(simple->value.data() == input.data() + 14);
    BOOST_TEST(simple->value.size() == 2u);
}

BOOST_AUTO_TEST_CASE(incomplete_input_waits) {
    resp3::parser p;
    error_code ec = error::invalid_length;
    for (std::string_view partial :
         {"", "$", "$1", "$10\r", "$10\r\n", "$10\r\n0123456789", "$10\r\n0123456789\r"}) {
        BOOST_TEST(!p.consume(partial, ec).has_value());
        BOOST_TEST(!ec, "ec must be cleared for " << partial.size() << " bytes");
        BOOST_TEST(!p.done());
        BOOST_TEST(p.consumed() == 0u);
    }
    const auto n = p.consume("$10\r\n0123456789\r\n", ec);
    BOOST_TEST_REQUIRE(n.has_value());
    BOOST_TEST(n->value == "0123456789");
    BOOST_TEST(p.done());
}

BOOST_AUTO_TEST_CASE(reset_after_error) {
    resp3::parser p;
    error_code ec;
    BOOST_TEST(p.consume("*2\r\n:x\r\n", ec).has_value()); // the array header
    BOOST_TEST(!ec);
    BOOST_TEST(!p.consume("*2\r\n:x\r\n", ec).has_value());
    BOOST_TEST(ec == error::invalid_number);
    // The error is final: asking again gives it again.
    BOOST_TEST(!p.consume("*2\r\n:x\r\n", ec).has_value());
    BOOST_TEST(ec == error::invalid_number);
    p.reset();
    const auto n = p.consume("#t\r\n", ec);
    BOOST_TEST(!ec);
    BOOST_TEST_REQUIRE(n.has_value());
    BOOST_TEST(n->depth == 0u);
    BOOST_TEST(p.done());
}

BOOST_AUTO_TEST_CASE(malformed_input) {
    using namespace std::string_literals;
    // Type byte.
    check_error("x\r\n", error::invalid_type_byte);
    check_error("\0\r\n"s, error::invalid_type_byte);
    check_error("*1\r\n@\r\n", error::invalid_type_byte);
    check_error(" +OK\r\n", error::invalid_type_byte);
    // Lengths and counts.
    for (const char* input : {"$\r\n",
                              "$abc\r\n",
                              "$-2\r\n",
                              "$-0\r\n",
                              "$+5\r\n",
                              "$5 \r\n",
                              "$ 5\r\n",
                              "$0x5\r\n",
                              "$18446744073709551616\r\n",
                              "!-1\r\n",
                              "=-1\r\n",
                              "*\r\n",
                              "*-2\r\n",
                              "*1.5\r\n",
                              "%-1\r\n",
                              "~-1\r\n",
                              "|-1\r\n",
                              ">-1\r\n",
                              "*99999999999999999999999\r\n",
                              "!?\r\n",
                              ">?\r\n"})
        check_error(input, error::invalid_length);
    // Terminators.
    for (const char* input :
         {"+OK\n", "+OK\rX", "+O\nK\r\n", ":1\r\r\n", "$3\r\nabcXY", "$3\r\nabc\n\r", "$3\rX",
          "$3\r\nabcd\r\n", "$3\r\nab\r\nX", "*1\n", "_x\r\n", "_ \r\n", "_\n", ",1.5\n"})
        check_error(input, error::missing_crlf);
    // Bodies of numbers, doubles, booleans and big numbers.
    for (const char* input : {":\r\n",
                              ":abc\r\n",
                              ":1a\r\n",
                              ":-\r\n",
                              ":+\r\n",
                              ":+-1\r\n",
                              ":--1\r\n",
                              ": 1\r\n",
                              ":1.0\r\n",
                              ":9223372036854775808\r\n",
                              ":-9223372036854775809\r\n",
                              ",\r\n",
                              ",abc\r\n",
                              ",1.\r\n",
                              ",.5\r\n",
                              ",1e\r\n",
                              ",1e+\r\n",
                              ",infinity\r\n",
                              ",INF\r\n",
                              ",0x1p3\r\n",
                              ",1.5 \r\n",
                              ",--1\r\n",
                              "#\r\n",
                              "#x\r\n",
                              "#tt\r\n",
                              "#T\r\n",
                              "#1\r\n",
                              "(\r\n",
                              "(-\r\n",
                              "(12a\r\n",
                              "(1.5\r\n",
                              "*1\r\n#y\r\n"})
        check_error(input, error::invalid_number);
    // Streamed strings and aggregates.
    for (const char* input : {"$?\r\n;4\r\nHell\r\n;0\r\n", "*?\r\n:1\r\n.\r\n", "%?\r\n", "~?\r\n",
                              ";4\r\nabcd\r\n", ".\r\n", "*2\r\n:1\r\n;1\r\na\r\n"})
        check_error(input, error::streamed_not_supported);
}

BOOST_AUTO_TEST_CASE(depth_limit) {
    resp3::parser_limits limits;
    limits.max_depth = 2;
    check_valid("*1\r\n*1\r\n:1\r\n",
                {make(type::array, 1, 0), make(type::array, 1, 1), leaf(type::number, "1", 2)},
                limits);
    // An empty aggregate at the deepest level has no children, so it is allowed.
    check_valid("*1\r\n%1\r\n+k\r\n~0\r\n",
                {make(type::array, 1, 0), make(type::map, 1, 1), leaf(type::simple_string, "k", 2),
                 make(type::set, 0, 2)},
                limits);
    check_error("*1\r\n*1\r\n*1\r\n:1\r\n", error::nesting_too_deep, limits);
    check_error("*1\r\n*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", error::nesting_too_deep, limits);
    // Attribute children are one level below the attribute.
    check_error("|1\r\n|1\r\n|1\r\n", error::nesting_too_deep, limits);

    limits.max_depth = 0;
    check_valid(":1\r\n", {leaf(type::number, "1")}, limits);
    check_valid("*0\r\n", {make(type::array, 0, 0)}, limits);
    check_error("*1\r\n:1\r\n", error::nesting_too_deep, limits);
    check_error("|1\r\n", error::nesting_too_deep, limits);
}

BOOST_AUTO_TEST_CASE(depth_limit_is_capped) {
    resp3::parser_limits limits;
    limits.max_depth = 1000;
    resp3::parser p(limits);
    BOOST_TEST(p.limits().max_depth == resp3::parser_limits::max_depth_cap);

    const auto nested = [](std::size_t levels) {
        std::string s;
        for (std::size_t i = 0; i < levels; ++i)
            s += "*1\r\n";
        return s + ":1\r\n";
    };
    const auto deepest = parse_all(nested(resp3::parser_limits::max_depth_cap), limits);
    BOOST_TEST(!deepest.ec);
    BOOST_TEST(deepest.done);
    BOOST_TEST(deepest.nodes.back().depth == resp3::parser_limits::max_depth_cap);
    check_error(nested(resp3::parser_limits::max_depth_cap + 1), error::nesting_too_deep, limits);
}

BOOST_AUTO_TEST_CASE(bulk_limit) {
    resp3::parser_limits limits;
    limits.max_bulk_length = 10;
    check_valid("$10\r\n0123456789\r\n", {leaf(type::blob_string, "0123456789")}, limits);
    check_valid("=10\r\ntxt:456789\r\n", {leaf(type::verbatim_string, "txt:456789")}, limits);
    check_error("$11\r\n01234567890\r\n", error::bulk_too_long, limits);
    check_error("!11\r\n", error::bulk_too_long, limits);
    check_error("*2\r\n$1\r\na\r\n=11\r\n", error::bulk_too_long, limits);

    // Decided from the header alone: no body is awaited.
    resp3::parser p;
    error_code ec;
    BOOST_TEST(!p.consume("$999999999999\r\n", ec).has_value());
    BOOST_TEST(ec == error::bulk_too_long);
    p.reset();
    BOOST_TEST(!p.consume("$536870913\r\n", ec).has_value());
    BOOST_TEST(ec == error::bulk_too_long);
}

BOOST_AUTO_TEST_CASE(aggregate_limit) {
    resp3::parser_limits limits;
    limits.max_aggregate_size = 2;
    check_valid("%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n",
                {make(type::map, 2, 0), leaf(type::number, "1", 1), leaf(type::number, "2", 1),
                 leaf(type::number, "3", 1), leaf(type::number, "4", 1)},
                limits);
    for (const char* input : {"*3\r\n", "%3\r\n", "~3\r\n", ">3\r\n", "|3\r\n", "*1\r\n*3\r\n"})
        check_error(input, error::aggregate_too_large, limits);

    check_error("*99999999\r\n", error::aggregate_too_large);
    // Pairs that would overflow the child count, even with no configured limit.
    limits.max_aggregate_size = std::numeric_limits<std::size_t>::max();
    check_error("%18446744073709551615\r\n", error::aggregate_too_large, limits);
}

BOOST_AUTO_TEST_CASE(unterminated_lines_are_bounded) {
    // A header that never ends stops at 64 KiB rather than growing the caller's buffer.
    check_error("$" + std::string(64 * 1024 + 1, '1'), error::invalid_length, {}, false);
    check_error("*" + std::string(64 * 1024 + 1, '0'), error::invalid_length, {}, false);
    check_error(":" + std::string(64 * 1024 + 1, '1'), error::missing_crlf, {}, false);
    const auto waiting = parse_all("$" + std::string(64 * 1024, '0'));
    BOOST_TEST(!waiting.ec);
    BOOST_TEST(!waiting.done);

    // Simple strings are bounded by max_bulk_length, with or without their CRLF.
    resp3::parser_limits limits;
    limits.max_bulk_length = 8;
    check_valid("+12345678\r\n", {leaf(type::simple_string, "12345678")}, limits);
    check_valid("-12345678\r\n", {leaf(type::simple_error, "12345678")}, limits);
    check_error("+123456789", error::missing_crlf, limits);
    check_error("+123456789\r\n", error::missing_crlf, limits);
    check_error("-123456789\r\n", error::missing_crlf, limits);
    const auto at_limit = parse_all("+12345678", limits);
    BOOST_TEST(!at_limit.ec);
}

BOOST_AUTO_TEST_CASE(long_line_fed_byte_by_byte) {
    // The line scan resumes where it stopped, so this stays linear.
    const std::string input = "+" + std::string(200000, 'x') + "\r\n";
    const auto r = parse_chunked(input, 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.done);
    BOOST_TEST_REQUIRE(r.nodes.size() == 1u);
    BOOST_TEST(r.nodes[0].value.size() == 200000u);
}

// Random valid trees, serialised, then parsed in random pieces.
namespace {

struct tree_generator {
    std::mt19937_64 rng;
    std::string wire;
    std::vector<node> nodes;

    std::size_t below(std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    }

    std::string bytes(std::size_t max_len, bool line_safe) {
        std::string s(below(max_len + 1), '\0');
        for (auto& c : s) {
            do
                c = static_cast<char>(below(256));
            while (line_safe && (c == '\r' || c == '\n'));
        }
        return s;
    }

    std::string number() {
        const auto v = static_cast<std::int64_t>(rng());
        char buf[32];
        return std::string(buf, std::to_chars(buf, buf + sizeof(buf), below(2) ? v : v % 1000).ptr);
    }

    std::string doublean() {
        switch (below(6)) {
        case 0:
            return "inf";
        case 1:
            return "-inf";
        case 2:
            return "nan";
        default: {
            const double d = std::uniform_real_distribution<double>(-1e6, 1e6)(rng) *
                             std::pow(10.0, static_cast<double>(below(40)) - 20.0);
            char buf[64];
            return std::string(buf, std::to_chars(buf, buf + sizeof(buf), d).ptr);
        }
        }
    }

    void scalar(type t, std::string value, std::size_t depth) {
        resp3::add_value(wire, t, value);
        nodes.push_back(leaf(t, t == type::null ? std::string() : std::move(value), depth));
    }

    void value(std::size_t depth, std::size_t max_depth) {
        if (depth < max_depth && below(8) == 0)
            aggregate(type::attribute, depth, max_depth);
        const std::size_t kinds = depth < max_depth ? 17 : 13;
        switch (below(kinds)) {
        case 0:
            scalar(type::simple_string, bytes(12, true), depth);
            break;
        case 1:
            scalar(type::simple_error, "ERR " + bytes(12, true), depth);
            break;
        case 2:
            scalar(type::number, number(), depth);
            break;
        case 3:
            scalar(type::doublean, doublean(), depth);
            break;
        case 4:
            scalar(type::boolean, below(2) ? "t" : "f", depth);
            break;
        case 5:
            scalar(type::null, "", depth);
            break;
        case 6:
            scalar(type::big_number, (below(2) ? "-" : "") + std::string(1 + below(40), '7'),
                   depth);
            break;
        case 7:
            scalar(type::blob_error, bytes(20, false), depth);
            break;
        case 8:
            scalar(type::verbatim_string, "txt:" + bytes(20, false), depth);
            break;
        case 9: {
            // RESP2 nulls, as a RESP2 server sends them.
            wire += below(2) ? "$-1\r\n" : "*-1\r\n";
            nodes.push_back(leaf(type::null, "", depth));
            break;
        }
        case 10:
        case 11:
        case 12: {
            auto s = bytes(below(4) == 0 ? 300 : 20, false);
            resp3::add_blob(wire, s);
            nodes.push_back(leaf(type::blob_string, std::move(s), depth));
            break;
        }
        case 13:
            aggregate(type::array, depth, max_depth);
            break;
        case 14:
            aggregate(type::map, depth, max_depth);
            break;
        case 15:
            aggregate(type::set, depth, max_depth);
            break;
        default:
            aggregate(type::push, depth, max_depth);
            break;
        }
    }

    void aggregate(type t, std::size_t depth, std::size_t max_depth) {
        const std::size_t size = below(4);
        resp3::add_header(wire, t, size);
        nodes.push_back(make(t, size, depth));
        for (std::size_t i = 0; i < size * resp3::element_multiplicity(t); ++i)
            value(depth + 1, max_depth);
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(random_trees_any_split) {
    std::mt19937_64 split_rng(12345);
    std::size_t total_nodes = 0;
    for (std::uint64_t seed = 1; seed <= 400; ++seed) {
        tree_generator gen{std::mt19937_64(seed), {}, {}};
        const std::size_t max_depth = 1 + seed % 5;
        // Mostly aggregates at the top, where splits have the most to break.
        if (seed % 4 == 0)
            gen.value(0, max_depth);
        else
            gen.aggregate(seed % 3 ? type::array : type::map, 0, max_depth);
        total_nodes += gen.nodes.size();
        BOOST_TEST_CONTEXT("seed " << seed) {
            const auto whole = parse_all(gen.wire);
            BOOST_TEST_REQUIRE(!whole.ec, whole.ec.message());
            BOOST_TEST(whole.done);
            BOOST_TEST(whole.consumed == gen.wire.size());
            BOOST_TEST_REQUIRE(whole.nodes == gen.nodes, boost::test_tools::per_element());
            for (int round = 0; round < 8; ++round) {
                const std::size_t max_piece = 1 + split_rng() % (round < 4 ? 4 : 64);
                const auto pieces = parse_pieces(gen.wire, {}, [&](std::size_t) {
                    return 1 + static_cast<std::size_t>(split_rng() % max_piece);
                });
                BOOST_TEST_REQUIRE(pieces == whole);
            }
        }
    }
    // The generator must produce something worth testing.
    BOOST_TEST(total_nodes > 2000u);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_resp3_parser
