// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The claim's commands, its give-back script and reply decoding: pure, unit-tested
// (doc/design.md lists the script's KEYS and ARGV).
#ifndef COROLOCK_SRC_DETAIL_CLAIM_SCRIPTS_HPP
#define COROLOCK_SRC_DETAIL_CLAIM_SCRIPTS_HPP

#include <corolock/error.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace corolock::detail {

// Retention accepted by async_claim: 1 ms to 365 days.
inline constexpr std::chrono::milliseconds min_retention{1};
inline constexpr std::chrono::milliseconds max_retention = std::chrono::hours(24 * 365);

// invalid_name for an empty key, invalid_argument for a retention out of range, else success.
error_code validate_claim(std::string_view key, std::chrono::steady_clock::duration retention);

// The retention in whole milliseconds, rounded up (the window is never shorter than asked).
std::int64_t retention_ms(std::chrono::steady_clock::duration retention);

// SET key owner NX PX ms.
request make_claim_request(std::string_view key, std::string_view owner, std::int64_t ms);

// The reply of SET NX: "+OK" -> claimed, null -> refused (the key exists, whatever its type).
error_code decode_claim(const generic_response& resp, bool& claimed);

// KEYS[1] = the claimed key, ARGV[1] = the owner: deletes the key only while its value is the
// owner. Returns 1 when deleted, 0 otherwise (expired, claimed by someone else, or not a string).
const script& give_back_script();

// 1 -> given back (`given_back` true), 0 -> not ours (false); server errors -> server_error.
error_code decode_give_back(const generic_response& resp, bool& given_back);

} // namespace corolock::detail

#endif
