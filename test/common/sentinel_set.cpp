// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "sentinel_set.hpp"

#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace corolock::test {

using namespace std::chrono_literals;

namespace {

// The port of a RESP2 reply to SENTINEL GET-MASTER-ADDR-BY-NAME: "*2 $ip $port".
std::uint16_t port_of(const std::string& reply) {
    const auto last = reply.rfind("\r\n", reply.size() - 3);
    if (!reply.starts_with("*2") || last == std::string::npos)
        return 0;
    return static_cast<std::uint16_t>(std::stoi(reply.substr(last + 2)));
}

template <class Pred>
void wait_until(Pred pred, std::chrono::milliseconds timeout, const std::string& what) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= end)
            throw std::runtime_error("sentinel_set: timed out waiting for " + what);
        std::this_thread::sleep_for(50ms);
    }
}

} // namespace

sentinel_set::sentinel_set() {
    nodes_.push_back(std::make_unique<redis_process>());
    const auto m = std::to_string(nodes_[0]->port());
    nodes_.push_back(
        std::make_unique<redis_process>(std::vector<std::string>{"--replicaof", "127.0.0.1", m}));
    for (int i = 0; i < 3; ++i) {
        auto s = std::make_unique<redis_process>(std::vector<std::string>{"--sentinel"},
                                                 redis_process::start_mode::later);
        // The conf lives next to the replica's data (a directory that outlives the Sentinel).
        const auto conf = nodes_[1]->dir() + "/sentinel" + std::to_string(i) + ".conf";
        std::ofstream(conf) << "sentinel monitor m1 127.0.0.1 " << m << " 2\n"
                            << "sentinel down-after-milliseconds m1 1000\n"
                            << "sentinel failover-timeout m1 3000\n"
                            << "sentinel parallel-syncs m1 1\n";
        s->set_config_file(conf);
        s->start();
        sentinels_.push_back(std::move(s));
    }
    wait_until(
        [&] {
            for (auto& s : sentinels_) {
                const auto r = s->command({"SENTINEL", "MASTER", "m1"}, 1s);
                if (r.find("num-other-sentinels\r\n$1\r\n2\r\n") == std::string::npos ||
                    r.find("num-slaves\r\n$1\r\n1\r\n") == std::string::npos)
                    return false;
            }
            return true;
        },
        15s, "the Sentinels to see each other and the replica");
    wait_replica_synced(nodes_[1]->port(), 10s);
}

std::vector<address> sentinel_set::addresses() const {
    std::vector<address> out;
    for (auto& s : sentinels_)
        out.push_back({s->host(), std::to_string(s->port())});
    return out;
}

redis_process& sentinel_set::by_port(std::uint16_t port) {
    for (auto& n : nodes_)
        if (n->port() == port)
            return *n;
    throw std::runtime_error("sentinel_set: no node on port " + std::to_string(port));
}

std::uint16_t sentinel_set::master_port() {
    for (auto& s : sentinels_) {
        if (!s->running() || s->paused())
            continue;
        try {
            if (auto p = port_of(s->command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m1"}, 1s)))
                return p;
        } catch (const std::exception&) {
        }
    }
    return 0;
}

void sentinel_set::wait_master(std::uint16_t port, std::chrono::milliseconds timeout) {
    wait_until(
        [&] {
            for (auto& s : sentinels_)
                if (s->running() && !s->paused() &&
                    port_of(s->command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m1"}, 1s)) != port)
                    return false;
            try {
                return by_port(port).command({"ROLE"}, 1s).find("master") != std::string::npos;
            } catch (const std::exception&) {
                return false;
            }
        },
        timeout, "port " + std::to_string(port) + " to be the master");
}

void sentinel_set::wait_replica_synced(std::uint16_t port, std::chrono::milliseconds timeout) {
    wait_until(
        [&] {
            try {
                return by_port(port)
                           .command({"INFO", "replication"}, 1s)
                           .find("master_link_status:up") != std::string::npos;
            } catch (const std::exception&) {
                return false;
            }
        },
        timeout, "the replica on port " + std::to_string(port) + " to sync");
}

} // namespace corolock::test
