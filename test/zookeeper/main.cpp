// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper backend's tests: the pure session state machine and lock recipe (no server), and
// the connection and the lock against ZooKeeper 3.8 servers the tests start
// (common/zk_process.hpp).
#define BOOST_TEST_MODULE corolock_zookeeper_tests
#include <boost/test/unit_test.hpp>
