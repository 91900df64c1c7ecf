// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The election's decisions (doc/election.md): what a campaign does after its lock is granted,
// and what an observer delivers from the messages and reads it gets. Pure: no socket, timer or
// clock; the driver (io/election_driver.cpp) feeds it replies and messages.
#ifndef COROLOCK_SRC_CORE_ELECTION_CORE_HPP
#define COROLOCK_SRC_CORE_ELECTION_CORE_HPP

#include <corolock/election.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corolock::detail {

// The longest lock-delay (election_options::lock_delay).
inline constexpr std::chrono::hours max_lock_delay{1};

// The scripts (doc/design.md, "Election"). KEYS of the first three: name, record ({N}:leader).
// KEYS: name, record; ARGV: owner, value, record ms, publish ('S' | 'P'), channel, check the
// lock-delay ('1' | '0'). Replies begin_reply (0, 1, 2).
const script& begin_script();
// KEYS: name, record; ARGV: owner, value, record ms, publish, channel. Replies the new version,
// or 0 (not the holder).
const script& proclaim_script();
// KEYS: name, record; ARGV: owner, record ms, publish, channel. Replies 1, or 0 (not the holder).
const script& resign_script();
// KEYS: name, fence key. Replies as decode_leader_read says.
const script& leader_read_script();

// The begin script's answer to a campaign that holds the election's lock.
enum class begin_reply {
    lost,    // the lock is no longer this campaign's: its lease is gone
    begun,   // the term has begun: the value is proclaimed
    delayed, // the previous leader was lost, not resigned: wait the lock-delay, then begin again
};
error_code decode_begin(const generic_response& r, begin_reply& out);

// What the election looks like at one instant, as a message or a read says.
struct leader_view {
    bool present = false;      // a proclaimed leader holds the term
    std::uint64_t term = 0;    // its term; else the last term known to have begun (0: none)
    std::uint64_t version = 0; // proclamations in the term (1: the campaign's value)
    std::string value;
    // Present: the leader's lock key's remaining TTL in ms when the message or read was made.
    std::int64_t ttl_ms = -1;
    // A read or a message that closes `term` (resigned, expired, or a newer term started but
    // not yet proclaimed: `starting`).
    bool ended = false;
};

// Messages on the election channel: "leader <term> <version> <ttl ms> <value>" and
// "ended <term>". Anything else: nullopt (not ours, ignored).
std::optional<leader_view> parse_leader_message(std::string_view payload);
std::string leader_message(std::uint64_t term, std::uint64_t version, std::int64_t ttl_ms,
                           std::string_view value);
// The read script's reply.
error_code decode_leader_read(const generic_response& r, leader_view& out);

// An observer's state: the newest view delivered, and whether something may have been missed
// since. Views are ordered by (term, version), a term's end after all its versions; an older
// view than the one delivered (a read that raced a message) is dropped, and "no leader" after
// "no leader" is not delivered twice.
class observe_core {
public:
    // A view from a message or a read: the event to deliver, if it changes what the observer
    // last delivered.
    std::optional<leader_event> on_view(const leader_view& v);
    // The subscription was re-established, or messages were dropped: what comes next may skip.
    void on_gap() noexcept { gap_ = true; }
    const leader_info& last() const noexcept { return last_; }

private:
    leader_info last_;
    std::uint64_t last_version_ = 0;
    bool last_ended_ = false; // the last view closed last_.term
    bool gap_ = false;
    bool delivered_ = false; // the first view is always delivered
};

} // namespace corolock::detail

#endif
