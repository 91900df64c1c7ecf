// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/backoff.hpp"

#include <boost/test/unit_test.hpp>

#include <random>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_backoff {

using namespace std::chrono_literals;
using corolock::detail::backoff;

BOOST_AUTO_TEST_SUITE(backoff_suite)

BOOST_AUTO_TEST_CASE(ceiling_doubles_up_to_the_cap) {
    backoff b(100ms, 1s);
    std::minstd_rand rng(1);
    BOOST_TEST((b.ceiling() == std::chrono::steady_clock::duration(100ms)));
    b.next(rng);
    BOOST_TEST((b.ceiling() == std::chrono::steady_clock::duration(200ms)));
    for (int i = 0; i < 20; ++i)
        b.next(rng);
    BOOST_TEST((b.ceiling() == std::chrono::steady_clock::duration(1s)));
    b.reset();
    BOOST_TEST((b.ceiling() == std::chrono::steady_clock::duration(100ms)));
}

BOOST_AUTO_TEST_CASE(draws_stay_within_jitter_bounds) {
    std::minstd_rand rng(7);
    for (double jitter : {0.0, 0.5, 1.0}) {
        backoff b(10ms, 80ms, jitter);
        for (int i = 0; i < 50; ++i) {
            const auto c = b.ceiling();
            const auto d = b.next(rng);
            BOOST_TEST(d.count() <= c.count());
            BOOST_TEST(d.count() >=
                       static_cast<long>(static_cast<double>(c.count()) * (1 - jitter)) - 1);
        }
    }
}

BOOST_AUTO_TEST_CASE(full_jitter_spreads_the_draws) {
    std::minstd_rand rng(3);
    backoff b(1s, 1s, 1.0);
    auto lo = std::chrono::steady_clock::duration::max(),
         hi = std::chrono::steady_clock::duration::zero();
    for (int i = 0; i < 200; ++i) {
        auto d = b.next(rng);
        lo = std::min(lo, d);
        hi = std::max(hi, d);
    }
    BOOST_TEST((lo < 200ms));
    BOOST_TEST((hi > 800ms));
}

BOOST_AUTO_TEST_CASE(zero_base_means_no_wait) {
    std::minstd_rand rng(3);
    backoff b(0ms, 0ms);
    BOOST_TEST(b.next(rng).count() == 0);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_backoff
