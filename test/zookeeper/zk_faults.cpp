// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper lock under faults: several processes, a killed holder, a paused server, a killed
// leader.
#include "zk_test.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(zk_faults)
BOOST_AUTO_TEST_SUITE_END()
