// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_POSTGRES_CONFIG_HPP
#define COROLOCK_POSTGRES_CONFIG_HPP

#include <chrono>
#include <cstddef>
#include <string>

namespace corolock {

/// Settings of one PostgreSQL connection (`pg_connection`, in the optional library
/// `corolock::postgres`). A zero duration turns its feature off, as the comment says.
struct pg_config {
    /// A libpq connection string or URI (`host=db port=5432 user=app dbname=app
    /// sslmode=verify-full`, `postgresql://app@db/app`), passed to libpq as it is: host, TLS,
    /// password (or a password file), application name and timeouts come from it. libpq's own
    /// environment variables (PGHOST, ...) fill what it leaves out.
    std::string conninfo;
    /// Connecting (TCP, TLS, authentication) must finish within this (0: no limit).
    std::chrono::steady_clock::duration connect_timeout = std::chrono::seconds(5);
    /// A `SELECT 1` goes out every interval; an interval with neither its answer nor any other
    /// result drops the connection, so a stalled server is noticed within about two intervals
    /// (0: off).
    std::chrono::steady_clock::duration health_check_interval = std::chrono::seconds(2);
    /// First wait before reconnecting; doubles with each failed attempt up to
    /// `reconnect_wait_max`, with full jitter (0: never reconnect; async_run completes).
    std::chrono::steady_clock::duration reconnect_wait = std::chrono::milliseconds(100);
    /// The longest wait between reconnection attempts.
    std::chrono::steady_clock::duration reconnect_wait_max = std::chrono::seconds(5);
    /// How long a statement not yet sent waits for a (re)connection before it fails with
    /// `error::not_connected` (0: wait until async_run ends).
    std::chrono::steady_clock::duration max_wait_for_connection = std::chrono::seconds(5);
    /// Notifications buffered per listener for a slow reader; beyond it the oldest is dropped.
    std::size_t notify_buffer_size = 1024;
};

/// Policy of the acquisitions made through one `pg_mutex`. Checked before anything is sent
/// (`invalid_lease`, `invalid_argument`).
struct pg_mutex_options {
    /// Lease of each acquisition, 100 ms to 365 days, counted by the server's clock. With the
    /// watchdog it is renewed every lease/3 while held.
    std::chrono::steady_clock::duration lease = std::chrono::seconds(30);
    /// Renew the lease while held (true), or let it expire (false: a fixed lease).
    bool watchdog = true;
    /// Report the lease lost after this total hold time, up to 365 days (0: no limit).
    std::chrono::steady_clock::duration max_hold = std::chrono::steady_clock::duration::zero();
    /// Fallback back-off between attempts when no release notification arrives: exponential
    /// from retry_base (at least 1 ms) to retry_max (at least retry_base), full jitter, capped by
    /// the holder's remaining lease and the wait deadline.
    std::chrono::steady_clock::duration retry_base = std::chrono::milliseconds(50);
    /// The longest fallback back-off (see `retry_base`).
    std::chrono::steady_clock::duration retry_max = std::chrono::seconds(2);
};

/// Policy of the transactions run through one `pg_xact_mutex`. Checked before anything is sent
/// (`invalid_argument`).
struct pg_xact_options {
    /// The longest one attempt waits inside the server for the lock (its `lock_timeout`), at
    /// least 1 ms. The connection is a pipeline: while an attempt waits, every statement queued
    /// behind it on the same connection waits too (renewals of `pg_mutex` leases included). Keep
    /// it short on a shared connection; on a connection of its own, set it to the longest wait
    /// (the server then hands the lock over at once, in arrival order).
    std::chrono::steady_clock::duration attempt_wait = std::chrono::milliseconds(2);
    /// Fallback back-off between attempts when no release notification arrives: exponential
    /// from retry_base (at least 1 ms) to retry_max (at least retry_base), full jitter, capped by
    /// the wait deadline.
    std::chrono::steady_clock::duration retry_base = std::chrono::milliseconds(5);
    /// The longest fallback back-off (see `retry_base`).
    std::chrono::steady_clock::duration retry_max = std::chrono::milliseconds(500);
};

} // namespace corolock

#endif
