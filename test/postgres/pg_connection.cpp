// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <boost/test/unit_test.hpp>
BOOST_AUTO_TEST_SUITE(pg_connection)
BOOST_AUTO_TEST_SUITE_END()
