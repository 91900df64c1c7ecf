// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The election's decisions (doc/election.md): what a campaign does after its lock is granted,
// and what an observer delivers from the messages and reads it gets. Pure: no socket, timer or
// clock; the driver (io/election_driver.cpp) feeds it replies and messages.
#ifndef COROLOCK_SRC_CORE_ELECTION_CORE_HPP
#define COROLOCK_SRC_CORE_ELECTION_CORE_HPP

#include "core/leader_view.hpp"
#include <corolock/election.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corolock::detail {

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

// The read script's reply.
error_code decode_leader_read(const generic_response& r, leader_view& out);

} // namespace corolock::detail

#endif
