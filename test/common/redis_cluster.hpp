// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_REDIS_CLUSTER_HPP
#define COROLOCK_TEST_COMMON_REDIS_CLUSTER_HPP

#include "common/redis_process.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace corolock::test {

// A Redis Cluster of child processes: `masters` masters with `replicas` replicas each
// (redis-server --cluster-enabled yes --cluster-node-timeout 1000, persistence off), made with
// `redis-cli --cluster create` and ready when every node reports cluster_state:ok. The nodes are
// redis_process objects, so every pid is reaped whatever happens. Needs redis-cli on PATH (or
// COROLOCK_REDIS_CLI).
class redis_cluster {
public:
    explicit redis_cluster(std::size_t masters = 3, std::size_t replicas = 1);

    // Whether redis-server and redis-cli can be found.
    static bool available();

    std::vector<std::unique_ptr<redis_process>>& nodes() noexcept { return nodes_; }
    // CLUSTER MYID of a node.
    std::string id(const redis_process& node) const;
    // The running node that is master of `slot` now (by CLUSTER NODES on a running node that is
    // not paused);
    // throws when none is.
    redis_process& master_of(std::uint16_t slot);
    // Waits until every running node reports cluster_state:ok and every running replica has its
    // link to its master up; throws after `timeout`.
    void wait_ok(std::chrono::milliseconds timeout = std::chrono::seconds(15));
    // Starts a new empty node, not yet part of the cluster (from a thread that outlives it, as
    // redis_process says).
    redis_process& start_node();
    // Joins a node made by start_node as a master (redis-cli --cluster add-node); it serves no
    // slot until a reshard gives it some. Returns once every running node knows it.
    void add_master(redis_process& node);
    // Takes an empty node out (redis-cli --cluster del-node, which makes every other node forget
    // it and shuts it down) and reaps it.
    void remove_node(redis_process& node);
    // redis-cli --cluster reshard: moves `count` slots (the lowest ones of `from`) to `to`.
    void reshard(const redis_process& from, const redis_process& to, int count);

    // Runs redis-cli with `args`; returns its exit status, its output in `out`. Reaped always.
    static int cli(const std::vector<std::string>& args, std::string* out = nullptr,
                   std::chrono::seconds timeout = std::chrono::seconds(30));

private:
    std::vector<std::unique_ptr<redis_process>> nodes_;
};

} // namespace corolock::test

#endif
