// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper election's decisions (doc/election.md, "ZooKeeper"): the record node, what a
// campaign does once its lock is granted, and what an observer's reads say. Pure: the driver
// (io/zk_election_driver.cpp) sequences the requests and watches.
#ifndef COROLOCK_SRC_ZOOKEEPER_CORE_ZK_ELECTION_CORE_HPP
#define COROLOCK_SRC_ZOOKEEPER_CORE_ZK_ELECTION_CORE_HPP

#include "core/leader_view.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corolock::detail {

// The record of the last term, a persistent child of the election's path (the lock recipe
// ignores a child of another shape than its own nodes).
std::string zk_record_path(std::string_view election_path);

// The record's data: "live <term> <version>\n<leader's node>\n<value>" while a leader holds
// the term, "ended <term> <version>" once it resigned. The term is the leader's lock node's
// czxid (its lease's token).
struct zk_record {
    bool live = false;
    std::uint64_t term = 0;
    std::uint64_t version = 0;
    std::string node; // live: the leader's lock node, full path
    std::string value;
};
std::string format_record(const zk_record& r);
// Nothing for data of another shape (not an election's record).
std::optional<zk_record> parse_record(std::string_view data);

// What a campaign that holds the lock (term `mine`) does, from the record it read (none: no
// record yet): begin the term, or wait the lock-delay first, because the last leader was lost
// (its record still says live, for another term), not resigned.
enum class zk_begin { begin, delay };
zk_begin begin_step(const std::optional<zk_record>& last, std::uint64_t mine,
                    bool lock_delay_on) noexcept;

// What an observer's read says: from the record (none: no record) and, for a live one, whether
// the leader's node still exists (a leader whose node is gone was lost: its term has ended).
leader_view view_of(const std::optional<zk_record>& r, bool leader_node_exists);

} // namespace corolock::detail

#endif
