// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#define BOOST_TEST_MODULE corolock_integration
#include <boost/test/unit_test.hpp>
