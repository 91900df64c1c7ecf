// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The latch's Lua scripts, its keys and reply decoding: pure, unit-tested (doc/latch.md lists
// each script's KEYS, ARGV and reply).
#ifndef COROLOCK_SRC_DETAIL_LATCH_SCRIPTS_HPP
#define COROLOCK_SRC_DETAIL_LATCH_SCRIPTS_HPP

#include <corolock/error.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corolock::detail {

// The keys and channel of the latch `name` (doc/keys.md): the hash at the name, the set of
// participants that counted down, and the release channel (the lock's convention).
struct latch_keys {
    std::string name;
    std::string done;    // {N}:d
    std::string channel; // {N}:released
};
latch_keys make_latch_keys(std::string_view name);

// A latch's name: lockable_name, and not a tagged name ending in ":d" (another latch's set).
bool latch_name(std::string_view name) noexcept;

// Retention and targets accepted: 1 ms to 365 days; 1 to 2^40 participants.
inline constexpr std::chrono::milliseconds min_latch_retention{1};
inline constexpr std::chrono::milliseconds max_latch_retention = std::chrono::hours(24 * 365);
inline constexpr std::uint64_t max_latch_target = std::uint64_t{1} << 40;
// A participant id: 1 to 512 bytes.
inline constexpr std::size_t max_participant_id = 512;

// KEYS: name, done set; ARGV: target, retention ms.
// Reply {status, gen, target, created}: status 0 = the round `gen` (created 0: returned as is,
// 1: a new latch, 2: a new round over an open one); status 1 = another target (`target` is it).
const script& latch_create_script();
// KEYS: name, done set; ARGV: participant id, generation, channel, 'S' (SPUBLISH) or 'P',
// retention ms. Reply {status, open, remaining, gen}: status 0 = counted (or already open),
// 1 = no latch, 2 = stale generation (`gen` is the current one).
const script& latch_count_down_script();
// KEYS: name, done set. Reply {status, open, remaining, gen, prev}: status 0 = the latch, `prev`
// the generation of the round before `gen` (0: none known); status 1 = no latch. Reads only.
const script& latch_read_script();

// Server errors: WRONGTYPE -> wrong_type, anything else -> server_error; any other shape or
// value out of range -> unexpected_reply.
struct latch_created {
    std::uint64_t generation = 0;
    std::uint64_t target = 0;
    int created = 0; // 0 as is, 1 new latch, 2 new round
};
// target_mismatch when another target is in place.
error_code decode_latch_create(const generic_response& resp, latch_created& out);

struct latch_count {
    bool open = false;
    std::uint64_t remaining = 0;
    std::uint64_t generation = 0;
};
// no_latch, stale_generation as the script says.
error_code decode_latch_count_down(const generic_response& resp, latch_count& out);

struct latch_snapshot {
    bool open = false;
    std::uint64_t remaining = 0;
    std::uint64_t generation = 0;
    std::uint64_t previous = 0;
};
// no_latch when the name holds nothing.
error_code decode_latch_read(const generic_response& resp, latch_snapshot& out);

// "open <gen>" -> gen; anything else -> none.
std::optional<std::uint64_t> parse_open_message(std::string_view payload) noexcept;
std::string make_open_message(std::uint64_t generation);

} // namespace corolock::detail

#endif
