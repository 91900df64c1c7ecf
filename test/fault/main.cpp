// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The fault suite's entry point: either a worker process (re-executed by the harness) or the
// Boost.Test runner.
#include "worker.hpp"

#include <boost/test/unit_test.hpp>

namespace {

bool init_unit_test() {
    boost::unit_test::framework::master_test_suite().p_name.value = "corolock_fault";
    return true;
}

} // namespace

int main(int argc, char** argv) {
    if (const int status = corolock::fault::run_worker_if_requested(argc, argv); status >= 0)
        return status;
    return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
