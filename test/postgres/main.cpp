// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL backend's tests: the pure statement queue and lock statements (no server), and
// the connection and the lock against throw-away PostgreSQL 15 clusters (common/pg_process.hpp).
#define BOOST_TEST_MODULE corolock_postgres_tests
#include <boost/test/unit_test.hpp>
