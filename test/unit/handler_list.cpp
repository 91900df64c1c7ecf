// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/handler_list.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_handler_list {

namespace asio = boost::asio;

using handler = asio::any_completion_handler<void(int)>;

BOOST_AUTO_TEST_SUITE(handler_list)

// Boost 1.81's any_completion_handler recurses without end when move-assigned: taking a handler
// out of the middle of a vector (erase) crashed the process. Every position, in lists of 1 to 5
// handlers, is taken out, and the others still run, once, in their order.
BOOST_AUTO_TEST_CASE(take_any_position_and_run_the_rest) {
    for (std::uint64_t n = 1; n <= 5; ++n) {
        for (std::uint64_t taken = 0; taken < n; ++taken) {
            corolock::detail::handler_list<handler> list;
            auto calls = std::make_shared<std::vector<int>>();
            for (std::uint64_t i = 0; i < n; ++i)
                list.add(i, [calls](int v) { calls->push_back(v); });
            auto h = list.take(taken);
            BOOST_REQUIRE(h.has_value());
            BOOST_TEST(!list.take(taken).has_value()); // taken once only
            BOOST_TEST(list.size() == n - 1);
            (*h)(static_cast<int>(100 + taken));
            for (auto& [key, rest] : list.take_all())
                rest(static_cast<int>(key));
            BOOST_TEST(list.empty());
            std::vector<int> expected{static_cast<int>(100 + taken)};
            for (std::uint64_t i = 0; i < n; ++i)
                if (i != taken)
                    expected.push_back(static_cast<int>(i));
            BOOST_TEST(*calls == expected, boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_CASE(take_of_an_unknown_key_leaves_the_list_alone) {
    corolock::detail::handler_list<handler> list;
    int ran = 0;
    list.add(7, [&ran](int) { ++ran; });
    BOOST_TEST(!list.take(8).has_value());
    BOOST_TEST(list.size() == 1u);
    auto all = list.take_all();
    BOOST_TEST(all.size() == 1u);
    all.front().second(0);
    BOOST_TEST(ran == 1);
}

// Handlers destroyed uncalled (an io_context's shutdown) release what they own.
BOOST_AUTO_TEST_CASE(destroyed_uncalled_frees_their_state) {
    auto token = std::make_shared<int>(0);
    std::weak_ptr<int> watch = token;
    {
        corolock::detail::handler_list<handler> list;
        for (std::uint64_t i = 0; i < 3; ++i)
            list.add(i, [token](int) {});
        token.reset();
        BOOST_TEST(!watch.expired());
        (void)list.take(1);
    }
    BOOST_TEST(watch.expired());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_handler_list
