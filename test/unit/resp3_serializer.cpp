// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/resp3/parser.hpp>
#include <corolock/resp3/serializer.hpp>

#include <boost/test/unit_test.hpp>

#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_resp3_serializer {

namespace resp3 = corolock::resp3;
using corolock::error_code;
using resp3::node;
using resp3::type;
using namespace std::string_literals;

namespace {

// Parses one complete message, `chunk` bytes at a time (0: all at once).
std::vector<node> parse(std::string_view input, std::size_t chunk = 0) {
    resp3::parser p;
    std::vector<node> nodes;
    std::string buffer;
    std::size_t offset = 0;
    error_code ec;
    while (!p.done()) {
        const std::size_t n = chunk == 0 ? input.size() : chunk;
        buffer.append(input.substr(offset, n));
        offset += std::min(n, input.size() - offset);
        while (auto v = p.consume(buffer, ec))
            nodes.push_back({v->data_type, v->aggregate_size, v->depth, std::string(v->value)});
        BOOST_TEST_REQUIRE(!ec, ec.message());
        if (offset == input.size())
            break;
    }
    BOOST_TEST(p.done());
    BOOST_TEST(p.consumed() == input.size());
    return nodes;
}

std::string header(type t, std::size_t n) {
    std::string s;
    resp3::add_header(s, t, n);
    return s;
}

std::string value(type t, std::string_view v) {
    std::string s;
    resp3::add_value(s, t, v);
    return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(resp3_serializer)

BOOST_AUTO_TEST_CASE(headers) {
    BOOST_TEST(header(type::array, 0) == "*0\r\n");
    BOOST_TEST(header(type::array, 3) == "*3\r\n");
    BOOST_TEST(header(type::map, 12) == "%12\r\n");
    BOOST_TEST(header(type::set, 7) == "~7\r\n");
    BOOST_TEST(header(type::attribute, 1) == "|1\r\n");
    BOOST_TEST(header(type::push, 1000000) == ">1000000\r\n");
    BOOST_TEST(header(type::array, std::numeric_limits<std::size_t>::max()) ==
               "*18446744073709551615\r\n");
}

BOOST_AUTO_TEST_CASE(blobs_are_binary_safe) {
    std::string out = "prefix";
    resp3::add_blob(out, "");
    BOOST_TEST(out == "prefix$0\r\n\r\n");
    out.clear();
    resp3::add_blob(out, "a\0b\r\nc"s);
    BOOST_TEST(out == "$6\r\na\0b\r\nc\r\n"s);
    out.clear();
    resp3::add_blob(out, std::string(1234, 'z'));
    BOOST_TEST(out.substr(0, 7) == "$1234\r\n");
    BOOST_TEST(out.size() == 7u + 1234u + 2u);
    BOOST_TEST(out.substr(out.size() - 3) == "z\r\n");
}

BOOST_AUTO_TEST_CASE(values) {
    BOOST_TEST(value(type::simple_string, "OK") == "+OK\r\n");
    BOOST_TEST(value(type::simple_error, "ERR no") == "-ERR no\r\n");
    BOOST_TEST(value(type::number, "-12") == ":-12\r\n");
    BOOST_TEST(value(type::doublean, "1.5") == ",1.5\r\n");
    BOOST_TEST(value(type::boolean, "t") == "#t\r\n");
    BOOST_TEST(value(type::null, "ignored") == "_\r\n");
    BOOST_TEST(value(type::big_number, "123456789012345678901234") ==
               "(123456789012345678901234\r\n");
    BOOST_TEST(value(type::blob_string, "a\r\nb") == "$4\r\na\r\nb\r\n");
    BOOST_TEST(value(type::blob_error, "ERR x") == "!5\r\nERR x\r\n");
    BOOST_TEST(value(type::verbatim_string, "txt:hi") == "=6\r\ntxt:hi\r\n");
    for (type t : {type::array, type::map, type::set, type::attribute, type::push})
        BOOST_CHECK_THROW(value(t, "1"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(type_codes_and_printing) {
    const std::string codes = "+-:,#_($!=*%~|>";
    for (std::size_t i = 0; i < codes.size(); ++i)
        BOOST_TEST(resp3::to_code(static_cast<type>(i)) == codes[i]);
    std::ostringstream os;
    os << type::verbatim_string << ' ' << node{type::blob_string, 1, 2, "a\0\r\"\xff"s} << ' '
       << node{type::blob_string, 1, 0, std::string(100, 'x')};
    BOOST_TEST(os.str() == "verbatim_string {blob_string depth=2 size=1 \"a\\x00\\r\\\"\\xff\"} "
                           "{blob_string depth=0 size=1 \"" +
                               std::string(64, 'x') + "\"...(100 bytes)}");
}

BOOST_AUTO_TEST_CASE(command_round_trip) {
    // Keys and values carrying NUL and CRLF, as lock names and tokens may.
    const std::vector<std::string> args = {"SET", "lock:\0name"s, "tok\r\nen\r\n",
                                           "PX",  "30000",        ""};
    std::string wire;
    resp3::add_header(wire, type::array, args.size());
    for (const auto& a : args)
        resp3::add_blob(wire, a);

    std::vector<node> expected = {{type::array, args.size(), 0, ""}};
    for (const auto& a : args)
        expected.push_back({type::blob_string, 1, 1, a});
    for (std::size_t chunk : {0, 1, 2, 3, 5, 8, 13})
        BOOST_TEST(parse(wire, chunk) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(every_type_round_trips) {
    std::string wire;
    resp3::add_header(wire, type::map, 2);
    resp3::add_value(wire, type::simple_string, "k1");
    resp3::add_header(wire, type::set, 3);
    resp3::add_value(wire, type::number, "9223372036854775807");
    resp3::add_value(wire, type::doublean, "-inf");
    resp3::add_value(wire, type::null, "");
    resp3::add_value(wire, type::big_number, "-1");
    resp3::add_header(wire, type::attribute, 1);
    resp3::add_value(wire, type::boolean, "f");
    resp3::add_value(wire, type::blob_error, "ERR\0"s);
    resp3::add_header(wire, type::push, 2);
    resp3::add_value(wire, type::verbatim_string, "mkd:# x");
    resp3::add_value(wire, type::simple_error, "WRONGTYPE");

    const std::vector<node> expected = {
        {type::map, 2, 0, ""},
        {type::simple_string, 1, 1, "k1"},
        {type::set, 3, 1, ""},
        {type::number, 1, 2, "9223372036854775807"},
        {type::doublean, 1, 2, "-inf"},
        {type::null, 1, 2, ""},
        {type::big_number, 1, 1, "-1"},
        {type::attribute, 1, 1, ""},
        {type::boolean, 1, 2, "f"},
        {type::blob_error, 1, 2, "ERR\0"s},
        {type::push, 2, 1, ""},
        {type::verbatim_string, 1, 2, "mkd:# x"},
        {type::simple_error, 1, 2, "WRONGTYPE"},
    };
    BOOST_TEST(parse(wire) == expected, boost::test_tools::per_element());
    BOOST_TEST(parse(wire, 1) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(one_mebibyte_value) {
    std::string big(1024 * 1024, '\0');
    for (std::size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
    std::string wire;
    resp3::add_header(wire, type::array, 2);
    resp3::add_blob(wire, "key");
    resp3::add_blob(wire, big);
    BOOST_TEST(wire.size() == 4u + 9u + 10u + big.size() + 2u);

    for (std::size_t chunk : {0, 1, 1000, 65536}) {
        const auto nodes = parse(wire, chunk);
        BOOST_TEST_REQUIRE(nodes.size() == 3u);
        BOOST_TEST(nodes[2].value.size() == big.size());
        BOOST_TEST((nodes[2].value == big));
    }
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_resp3_serializer
