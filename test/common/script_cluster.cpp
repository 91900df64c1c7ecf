// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The process kit's Redis Cluster for one program (the cluster example's CTest entry): starts a
// cluster of 3 masters and no replica on free loopback ports, runs `program args...` with
// COROLOCK_CLUSTER_HOST / COROLOCK_CLUSTER_PORT naming one of its nodes, stops the cluster and
// exits with the program's status. Exits 77 (skipped) when redis-server or redis-cli cannot be
// found, 1 when the cluster would not start.
//
//   corolock_script_cluster PROGRAM [ARGS...]
#include "common/child_process.hpp"
#include "common/redis_cluster.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: corolock_script_cluster PROGRAM [ARGS...]\n");
        return 2;
    }
    if (!corolock::test::redis_cluster::available()) {
        std::printf("redis-server or redis-cli not found: skipped\n");
        return 77;
    }
    try {
        corolock::test::redis_cluster cluster(3, 0);
        const auto& seed = *cluster.nodes().front();
        corolock::test::child_options options;
        options.env = {"COROLOCK_CLUSTER_HOST=127.0.0.1",
                       "COROLOCK_CLUSTER_PORT=" + std::to_string(seed.port())};
        corolock::test::child_process program(std::vector<std::string>(argv + 1, argv + argc),
                                              options);
        return program.wait(std::chrono::minutes(5));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corolock_script_cluster: %s\n", e.what());
        return 1;
    }
}
