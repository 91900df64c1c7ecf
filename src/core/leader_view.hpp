// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What every backend's election shares (doc/election.md, "Observing"): the view of the election
// a message or a read gives, and the observer's order over those views. Pure.
#ifndef COROLOCK_SRC_CORE_LEADER_VIEW_HPP
#define COROLOCK_SRC_CORE_LEADER_VIEW_HPP

#include <corolock/capabilities.hpp>
#include <corolock/leadership_base.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corolock::detail {

// The longest lock-delay (election_options::lock_delay, zk_election_options::lock_delay).
inline constexpr std::chrono::hours max_lock_delay{1};

// What the election looks like at one instant, as a message or a read says.
struct leader_view {
    bool present = false;      // a proclaimed leader holds the term
    std::uint64_t term = 0;    // its term; else the last term known to have begun (0: none)
    std::uint64_t version = 0; // proclamations in the term (1: the campaign's value)
    std::string value;
    // Present, Redis: the leader's lock key's remaining TTL in ms when the message or read was
    // made (-1: not known).
    std::int64_t ttl_ms = -1;
    // A read or a message that closes `term` (resigned, expired, or a newer term started but
    // not yet proclaimed: `starting`).
    bool ended = false;
};

// Messages on an election's channel (Redis; PostgreSQL after the name's line): "leader <term>
// <version> <ttl ms> <value>" and "ended <term>". Anything else: nullopt (not ours, ignored).
std::optional<leader_view> parse_leader_message(std::string_view payload);
std::string leader_message(std::uint64_t term, std::uint64_t version, std::int64_t ttl_ms,
                           std::string_view value);
// When an observer reads next, as a delay from the view it just took: when the leader's lock
// would expire unless renewed (it is then read again, and the time pushed on; a dead leader's
// end is seen so), and at the latest after `poll` (duration::max(): no polling; a follower
// without news on a channel polls).
std::chrono::steady_clock::duration next_read_in(const leader_view& v,
                                                 std::chrono::steady_clock::duration poll);

// What a leader read gives the caller: the view, its term tagged with `backend`.
leader_info info_of(const leader_view& v, lock_backend backend);

// An observer's state: the newest view delivered, and whether something may have been missed
// since. Views are ordered by (term, version), a term's end after all its versions; an older
// view than the one delivered (a read that raced a message) is dropped, and "no leader" after
// "no leader" is not delivered twice.
class observe_core {
public:
    explicit observe_core(lock_backend backend) noexcept : backend_(backend) {}
    // A view from a message or a read: the event to deliver, if it changes what the observer
    // last delivered.
    std::optional<leader_event> on_view(const leader_view& v);
    // The subscription was re-established, or messages were dropped: what comes next may skip.
    void on_gap() noexcept { gap_ = true; }
    const leader_info& last() const noexcept { return last_; }

private:
    lock_backend backend_;
    leader_info last_;
    std::uint64_t last_version_ = 0;
    bool last_ended_ = false; // the last view closed last_.term
    bool gap_ = false;
    bool delivered_ = false; // the first view is always delivered
};

} // namespace corolock::detail

#endif
