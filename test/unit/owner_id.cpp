// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Owner ids (src/detail/owner_id): 32 lowercase hex digits from a CSPRNG, never repeated.
#include "io/owner_id.hpp"

#include <boost/test/unit_test.hpp>

#include <array>
#include <set>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_owner_id {

using corolock::detail::random_owner_id;
using corolock::detail::view;

BOOST_AUTO_TEST_SUITE(owner_id_suite)

BOOST_AUTO_TEST_CASE(ids_are_hex_distinct_and_use_every_digit) {
    constexpr int n = 20000;
    std::set<std::string> seen;
    std::array<int, 16> digits{};
    for (int i = 0; i < n; ++i) {
        const auto id = random_owner_id();
        for (char ch : id) {
            const bool hex = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
            BOOST_TEST_REQUIRE(hex, "not a lowercase hex digit: " << int(ch));
            ++digits[static_cast<std::size_t>(ch <= '9' ? ch - '0' : ch - 'a' + 10)];
        }
        seen.emplace(view(id));
    }
    BOOST_TEST(seen.size() == static_cast<std::size_t>(n)); // 128 random bits: no collision
    // 640,000 digits, 40,000 expected per value: a generator stuck on a few values, or a
    // counter printed in hex, falls far outside +-5 %.
    for (int count : digits) {
        BOOST_TEST(count > 38000);
        BOOST_TEST(count < 42000);
    }
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_owner_id
