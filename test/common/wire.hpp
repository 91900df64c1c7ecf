// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Replies for unit tests: RESP3 wire text parsed with the real parser, so the nodes have the
// shapes the connection stores (types, depths, aggregate sizes).
#ifndef COROLOCK_TEST_COMMON_WIRE_HPP
#define COROLOCK_TEST_COMMON_WIRE_HPP

#include <corolock/resp3/parser.hpp>
#include <corolock/response.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>

namespace corolock::test {

inline generic_response wire(std::string_view text) {
    generic_response out;
    std::size_t offset = 0;
    while (offset < text.size()) {
        resp3::parser p;
        const auto msg = text.substr(offset);
        while (!p.done()) {
            error_code ec;
            auto n = p.consume(msg, ec);
            BOOST_REQUIRE_MESSAGE(!ec, "bad test input: " << ec.message());
            BOOST_REQUIRE_MESSAGE(n, "incomplete test input");
            out.push_back({n->data_type, n->aggregate_size, n->depth, std::string(n->value)});
        }
        offset += p.consumed();
    }
    return out;
}

} // namespace corolock::test

#endif
