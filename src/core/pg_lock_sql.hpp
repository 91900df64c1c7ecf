// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_CORE_PG_LOCK_SQL_HPP
#define COROLOCK_SRC_CORE_PG_LOCK_SQL_HPP

#include <corolock/error.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace corolock {
struct pg_mutex_options;
}

namespace corolock::detail::pg_sql {

// The lock table's statements (doc/postgres.md lists them with the schema). Pure: text and the
// checks and decoding around it. Every statement is one query with parameters, so that it can go
// into the connection's pipeline; each runs as its own transaction.

// The NOTIFY channel a release announces the lock's name on.
inline constexpr std::string_view release_channel = "corolock_release";
// The SQLSTATE corolock_fence raises when the lease is not current (a fenced write refused).
inline constexpr std::string_view fence_sqlstate = "CL001";
// The longest lock name, in bytes (a NOTIFY payload holds it with room to spare).
inline constexpr std::size_t max_name_bytes = 1024;

// Creates the sequence, the table and the fence function if missing; safe to run concurrently
// (one DO block, serialised by a transaction-scoped advisory lock). No parameters.
extern const std::string_view install;
// $1 name, $2 owner, $3 lease in ms. One row: (token, null) when granted, (null, holder's
// remaining ms) when held by another; no row when held by an owner that committed meanwhile.
extern const std::string_view acquire;
// $1 name, $2 owner. One row when the row was ours (deleted, release announced), else none.
extern const std::string_view release;
// $1 names (text[]), $2 owners (text[]), $3 leases in ms (bigint[]). One row (owner) per lease
// renewed: still ours and not expired.
extern const std::string_view renew;
// $1 name, $2 owner, $3 token: nothing if the lease is current (it then holds the row until the
// transaction ends), else raises fence_sqlstate.
extern const std::string_view fence;

// A lock name: 1 to max_name_bytes bytes of valid UTF-8 without NUL (PostgreSQL text cannot hold
// one). invalid_name otherwise.
error_code check_name(std::string_view name) noexcept;
// A pg_mutex's options: invalid_lease or invalid_argument when out of range.
error_code check_options(const pg_mutex_options& o) noexcept;
// A duration as whole milliseconds, rounded up, as the statements take it.
std::string to_ms(std::chrono::steady_clock::duration d);
// A PostgreSQL array literal of text values, each quoted: {"a","b\"c"}.
std::string text_array(std::span<const std::string_view> values);
// A signed decimal integer as PostgreSQL prints one; nullopt when malformed.
std::optional<std::int64_t> parse_int(std::string_view text) noexcept;

// The decoded row of `acquire`.
struct acquire_reply {
    bool granted = false;
    std::uint64_t token = 0;     // when granted
    std::int64_t holder_ms = -1; // when refused: the holder's remaining lease (-1: unknown)
};
// From the reply's rows: `rows` is 0 or 1, `token` and `remaining` the row's two values (null:
// nullopt). unexpected_reply when the row makes no sense.
error_code decode_acquire(std::size_t rows, std::optional<std::string_view> token,
                          std::optional<std::string_view> remaining, acquire_reply& out) noexcept;

} // namespace corolock::detail::pg_sql

#endif
