// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_CORE_PG_LOCK_SQL_HPP
#define COROLOCK_SRC_CORE_PG_LOCK_SQL_HPP

#include "core/acquire_fsm.hpp"
#include <corolock/error.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace corolock {
struct pg_mutex_options;
struct pg_xact_options;
} // namespace corolock

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

// Creates the sequence, the table and the fence function if missing, and (re)creates the acquire
// function; safe to run concurrently (one DO block, serialised by a transaction-scoped advisory
// lock). No parameters.
extern const std::string_view install;
// $1 name, $2 owner, $3 lease in ms: one call of corolock_acquire, which draws the token only
// once the row is won. One row: (token, null) when granted, (null, holder's remaining ms) when
// held by another; no row when refused and the holder released before its lease was read.
// Fails with undefined_function_sqlstate on a database installed by an older corolock.
extern const std::string_view acquire;
// $1 name, $2 owner. One row when the row was ours (deleted, release announced), else none.
extern const std::string_view release;
// $1 names (text[]), $2 owners (text[]), $3 leases in ms (bigint[]). One row (owner) per lease
// renewed: still ours and not expired.
extern const std::string_view renew;
// $1 name, $2 owner, $3 token: nothing if the lease is current (it then holds the row until the
// transaction ends), else raises fence_sqlstate.
extern const std::string_view fence;

// The locked transaction (pg_xact_mutex): its queries before the caller's, in one pipeline entry
// (one implicit transaction up to its sync point), and the one after them.
// $1 lock_timeout in ms: saves the session's lock_timeout, then bounds the lock's wait.
extern const std::string_view xact_begin;
// $1 the key (bigint): the transaction-scoped advisory lock; fails with lock_timeout_sqlstate
// when the wait ran out.
extern const std::string_view xact_lock;
// No parameters: gives the caller's queries the session's own lock_timeout back.
extern const std::string_view xact_locked;
// $1 name: the release announcement, delivered at commit (or sent alone after a rollback).
extern const std::string_view xact_notify;
// How many of corolock's queries come before the caller's, and where the lock is among them.
inline constexpr std::size_t xact_prefix = 3;
inline constexpr std::size_t xact_lock_index = 1;
// The channel of xact_notify.
inline constexpr std::string_view xact_channel = "corolock_xact_release";
// The SQLSTATE of a lock wait that ran out of lock_timeout (lock_not_available).
inline constexpr std::string_view lock_timeout_sqlstate = "55P03";
// The SQLSTATEs of a schema that is missing (undefined_table) or older than this corolock
// (undefined_function: no corolock_acquire).
inline constexpr std::string_view undefined_table_sqlstate = "42P01";
inline constexpr std::string_view undefined_function_sqlstate = "42883";

// The log line of an acquire the server refused with `message` and `sqlstate`: the server's
// words, and for a missing or outdated schema what to do about it (run async_install).
std::string acquire_failure(std::string_view name, std::string_view sqlstate,
                            std::string_view message);

// The advisory lock key of a name: FNV-1a (64 bits) of its bytes, read as a signed bigint.
std::int64_t xact_key(std::string_view name) noexcept;
// A pg_xact_mutex's options: invalid_argument when out of range.
error_code check_xact_options(const pg_xact_options& o) noexcept;

// What one attempt of a locked transaction came to.
enum class xact_outcome {
    committed, // every query ran and the sync committed
    busy,      // the lock's wait ran out: nothing of the caller's ran, nothing is held
    failed     // another error: rolled back (or, for connection_lost, unknown)
};
// From the statement's error and the lock query's SQLSTATE ("" when it did not fail).
xact_outcome decide_xact(error_code ec, std::string_view lock_sqlstate) noexcept;

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

// What an acquisition through a pg_mutex with `opts` asks of the lock core (`once`: a try), and
// what a locked transaction does (a binding acquisition), for a wait that ends at `deadline`.
acquire_params acquire_params_of(const pg_mutex_options& opts, clock::time_point deadline,
                                 bool once, clock::time_point now);
acquire_params xact_params_of(const pg_xact_options& opts, clock::time_point deadline,
                              clock::time_point now);

} // namespace corolock::detail::pg_sql

#endif
