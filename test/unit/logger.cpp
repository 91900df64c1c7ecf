// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The default sink (std::clog) names corolock once, whatever the line's own prefix.
#include <corolock/logger.hpp>

#include <boost/test/unit_test.hpp>

#include <iostream>
#include <sstream>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_logger {

BOOST_AUTO_TEST_SUITE(logger)

BOOST_AUTO_TEST_CASE(default_sink_says_corolock_once) {
    std::ostringstream captured;
    auto* const saved = std::clog.rdbuf(captured.rdbuf());
    const corolock::logger log{corolock::logger::level::info, {}};
    log.log(corolock::logger::level::warning, "corolock: lock 'x': lease lost, token 7");
    log.log(corolock::logger::level::info, "connected to 127.0.0.1:6379");
    log.log(corolock::logger::level::debug, "below the level: not written");
    std::clog.rdbuf(saved);
    BOOST_TEST(captured.str() == "corolock warning: lock 'x': lease lost, token 7\n"
                                 "corolock info: connected to 127.0.0.1:6379\n");
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_logger
