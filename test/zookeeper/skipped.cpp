// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Stands in for the ZooKeeper tests when COROLOCK_WITH_ZOOKEEPER is off: CTest reports the test
// as skipped (SKIP_RETURN_CODE 77), not failed.
#include <cstdio>

int main() {
    std::puts("corolock::zookeeper is not built (COROLOCK_WITH_ZOOKEEPER=OFF): skipped");
    return 77;
}
