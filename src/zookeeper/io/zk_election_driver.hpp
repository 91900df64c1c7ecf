// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper election's driver (io/zk_election_driver.cpp): what an election shares between
// its public body (zk_election.cpp), the campaign coroutine and the observers. Decisions are in
// zookeeper/core/zk_election_core.hpp (pure).
#ifndef COROLOCK_SRC_ZOOKEEPER_IO_ZK_ELECTION_DRIVER_HPP
#define COROLOCK_SRC_ZOOKEEPER_IO_ZK_ELECTION_DRIVER_HPP

#include "io/observer_state.hpp"
#include "zookeeper/core/zk_election_core.hpp"
#include <corolock/zookeeper/election.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace corolock::detail {

class zk_session;

struct zk_election_core {
    zk_election_core(zk_connection& conn, std::shared_ptr<zk_session> s, std::string p,
                     zk_election_options o);

    std::shared_ptr<zk_session> session;
    std::string path;
    std::string record; // path/leader
    zk_election_options opts;
    zk_mutex lock;
    std::string invalid; // which field or rule is wrong (empty: valid)
};

// Any thread: runs one campaign (waiting at most `wait` for the lock), its result to `h`.
void spawn_zk_campaign(std::shared_ptr<zk_election_core> core,
                       std::chrono::steady_clock::duration wait, std::string value,
                       boost::asio::any_completion_handler<void(error_code, zk_leadership)> h);
// Any thread: one read of the record and the leader's node.
void read_zk_leader(std::shared_ptr<zk_election_core> core,
                    boost::asio::any_completion_handler<void(error_code, leader_info)> h);
// Makes an observer of `core` and starts it (the first read, with its watches).
std::shared_ptr<observer_state> start_zk_observer(std::shared_ptr<zk_election_core> core);

} // namespace corolock::detail

#endif
