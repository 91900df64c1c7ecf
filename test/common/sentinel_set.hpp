// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_SENTINEL_SET_HPP
#define COROLOCK_TEST_COMMON_SENTINEL_SET_HPP

#include "redis_process.hpp"
#include <corolock/config.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace corolock::test {

// A master, its replica (--replicaof) and three Sentinels (`redis-server <conf> --sentinel`,
// the same binary as redis-sentinel) monitoring it as "m1" with quorum 2,
// down-after-milliseconds 1000, failover-timeout 3000 and parallel-syncs 1, all child processes
// on free loopback ports. The constructor returns once every Sentinel sees the two others and
// the replica (about 2 s).
class sentinel_set {
public:
    sentinel_set();

    redis_process& node(std::size_t i) { return *nodes_.at(i); } // 0: first master, 1: replica
    redis_process& sentinel(std::size_t i) { return *sentinels_.at(i); }
    // The Sentinel addresses for sentinel_config::addresses.
    std::vector<address> addresses() const;
    // The data node on `port`.
    redis_process& by_port(std::uint16_t port);
    // The port Sentinel 0..2 (the first that answers) names as master now (0 if none answers).
    std::uint16_t master_port();
    // Waits until every live Sentinel names `port` as the master and that node's ROLE says
    // master; throws after `timeout`.
    void wait_master(std::uint16_t port, std::chrono::milliseconds timeout);
    // Waits until the node on `port` is a replica with its link up; throws after `timeout`.
    void wait_replica_synced(std::uint16_t port, std::chrono::milliseconds timeout);

private:
    std::vector<std::unique_ptr<redis_process>> nodes_;
    std::vector<std::unique_ptr<redis_process>> sentinels_;
};

} // namespace corolock::test

#endif
