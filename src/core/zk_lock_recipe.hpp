// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock recipe's decisions, pure: which lock paths are valid, how a contender's node is
// named, and, from the children of the lock node, whether a contender holds or which single
// node it must watch (no herd). The driver (io/zk_lock_op.cpp) only sequences the requests.
#ifndef COROLOCK_SRC_CORE_ZK_LOCK_RECIPE_HPP
#define COROLOCK_SRC_CORE_ZK_LOCK_RECIPE_HPP

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace corolock::detail {

// A contender's kind: a mutex's nodes are all `lock`; a read-write lock has both.
enum class zk_node_kind { lock, read, write };

// Checks a lock path before anything is sent: absolute, no trailing or doubled '/', no "." or
// ".." component, no control or non-ASCII characters, not under the reserved "/zookeeper",
// at most 900 bytes (room for the node name below it). False if any fails.
bool valid_lock_path(std::string_view path) noexcept;

// "<owner>-lock-", "<owner>-read-" or "<owner>-write-": what create's path ends with; the
// server appends ten digits of sequence.
std::string node_prefix(std::string_view owner, zk_node_kind kind);

// A child of the lock node, parsed: "<owner>-<kind>-<10 digits>". Nothing for a name of
// another shape (a stranger's node is ignored, never waited for).
struct zk_node_name {
    std::string_view owner;
    zk_node_kind kind = zk_node_kind::lock;
    std::uint32_t sequence = 0;
};
std::optional<zk_node_name> parse_node_name(std::string_view name) noexcept;

// What a contender does after listing the children.
struct zk_lock_decision {
    enum class verdict {
        holds, // no earlier node it must wait for: the grant is ours
        wait,  // watch `predecessor` (the nearest earlier node it conflicts with), then list again
        gone,  // its own node is not among the children: deleted, or its session expired
    } what = verdict::gone;
    std::string predecessor; // the child's name, for `wait`
};
std::ostream& operator<<(std::ostream& os, zk_lock_decision::verdict v);

// `mine` is the contender's own child name. A lock or write node conflicts with every earlier
// node; a read node only with earlier write nodes.
zk_lock_decision decide(std::span<const std::string> children, std::string_view mine);

// The child whose owner is `owner` (an acquisition whose create reply was lost), if any.
std::optional<std::string> find_own(std::span<const std::string> children, std::string_view owner);

} // namespace corolock::detail

#endif
