// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock recipe's decisions, pure: which lock paths are valid, how a contender's node is
// named, and, from the children of the lock node, whether a contender holds or which single
// node it must watch (no herd). The driver (io/zk_lock_op.cpp) only sequences the requests.
#ifndef COROLOCK_SRC_CORE_ZK_LOCK_RECIPE_HPP
#define COROLOCK_SRC_CORE_ZK_LOCK_RECIPE_HPP

#include <corolock/error.hpp>

#include <chrono>
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
// at most `max_lock_path` bytes (room for the node name below it). False if any fails.
inline constexpr std::size_t max_lock_path = 900;
bool valid_lock_path(std::string_view path) noexcept;
// What is wrong with a lock path ("is not absolute", "has ..."), for the log (invalid_name's text
// covers every backend); empty when it is valid.
std::string_view zk_path_problem(std::string_view path) noexcept;

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

// Whether an acquisition stops waiting (for a reply, a reconnect, its predecessor), and with
// what: a cancel first (operation_aborted), then its deadline. A bounded wait ends with
// acquire_timeout; one attempt (a try, a zero wait), whose deadline is the session timeout from
// its start, with connection_lost: no server answered it in that time. None: wait on. Nothing
// it created is left behind (the driver deletes it, now or after a reconnect).
corolock::error_code zk_stop_waiting(bool cancelled, bool once,
                                     std::chrono::steady_clock::time_point deadline,
                                     std::chrono::steady_clock::time_point now) noexcept;

// What an acquisition that stopped waiting does with the late reply to its create: delete the
// node it made, look for it by owner id after the reconnect (the reply was lost), or nothing
// (refused, or the session is gone and the node with it).
enum class zk_orphan_step { none, remove_node, find_by_owner };
std::ostream& operator<<(std::ostream& os, zk_orphan_step s);
zk_orphan_step orphan_step(bool created, bool outcome_unknown) noexcept;

// The child whose owner is `owner` (an acquisition whose create reply was lost), if any.
std::optional<std::string> find_own(std::span<const std::string> children, std::string_view owner);

} // namespace corolock::detail

#endif
