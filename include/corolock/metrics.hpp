// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_METRICS_HPP
#define COROLOCK_METRICS_HPP

#include <corolock/detail/export.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

namespace corolock {

/// How an acquisition ended (one count per `async_*acquire*` call, including calls refused
/// before anything was sent).
enum class acquire_outcome {
    granted,        ///< a lease was given
    busy,           ///< a try-acquire found the lock held (empty lease, no error)
    timeout,        ///< acquire_timeout
    cancelled,      ///< operation_aborted (cancellation, or the mutex handle went away)
    error,          ///< any other error
    server_timeout, ///< server_timeout: the deadline passed with no attempt answered
};
/// Number of `acquire_outcome` values.
inline constexpr std::size_t acquire_outcome_count = 6;

/// Why a held lease was lost (one count per lost lease).
enum class lease_loss {
    expired,             ///< its local deadline passed with no renewal (or the answer came late)
    renewal_refused,     ///< a renewal or extension found the key gone or taken
    release_refused,     ///< the release found the key gone or taken
    max_hold,            ///< mutex_options::max_hold was reached
    replicas_not_synced, ///< a renewal's WAIT saw too few replicas
    connection_stopped,  ///< the connection was stopped while it was held
};
/// Number of `lease_loss` values.
inline constexpr std::size_t lease_loss_count = 6;

/// The value's name, as the metrics label it.
COROLOCK_DECL std::string_view to_string(acquire_outcome o) noexcept;
/// The value's name, as the metrics label it.
COROLOCK_DECL std::string_view to_string(lease_loss l) noexcept;
/// Prints the value's name, for logs and test failures.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, acquire_outcome o);
/// Prints the value's name, for logs and test failures.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, lease_loss l);

/// A fixed-bucket histogram of durations, as Prometheus counts them: a sample goes in the first
/// bucket whose upper bound it does not exceed. The bounds are log-spaced (1, 2.5, 5 per decade)
/// from 100 µs to 30 s; the last bucket holds what exceeds 30 s.
struct COROLOCK_DECL duration_histogram {
    /// The unit of samples and bounds.
    using duration = std::chrono::nanoseconds;
    /// Number of finite bounds; there is one bucket more.
    static constexpr std::size_t bound_count = 17;
    /// Upper bounds (inclusive) of the first `bound_count` buckets.
    static constexpr std::array<duration, bound_count> bounds = {
        std::chrono::microseconds(100),  std::chrono::microseconds(250),
        std::chrono::microseconds(500),  std::chrono::milliseconds(1),
        std::chrono::microseconds(2500), std::chrono::milliseconds(5),
        std::chrono::milliseconds(10),   std::chrono::milliseconds(25),
        std::chrono::milliseconds(50),   std::chrono::milliseconds(100),
        std::chrono::milliseconds(250),  std::chrono::milliseconds(500),
        std::chrono::seconds(1),         std::chrono::milliseconds(2500),
        std::chrono::seconds(5),         std::chrono::seconds(10),
        std::chrono::seconds(30)};

    /// Samples per bucket (not cumulative); the last one is above the last bound.
    std::array<std::uint64_t, bound_count + 1> buckets{};
    std::uint64_t count = 0; ///< samples
    duration sum{};          ///< of every sample (negative samples count as zero)

    /// The bucket a sample falls in.
    static std::size_t bucket_of(duration d) noexcept;
};

/// A snapshot of the lock layer's counters on one connection, from `get_lock_stats`. Counters
/// only grow while the connection lives; `leases_held` and `waiters` are gauges. The counters
/// are read one by one (relaxed): a snapshot taken under load may be a few events apart between
/// fields. doc/metrics.md says what each means and what to alert on.
struct lock_stats {
    std::uint64_t attempts = 0;       ///< acquire scripts sent
    std::uint64_t pubsub_wakeups = 0; ///< waiting heads woken by a release message
    std::uint64_t handoffs = 0;       ///< waiting heads woken by a release sent on this connection
    std::uint64_t timer_wakeups = 0;  ///< waiting heads woken by the fallback timer
    std::uint64_t renewals = 0;       ///< leases renewed by the watchdog
    std::uint64_t renewal_calls = 0;  ///< renew scripts sent (each renews up to 100 leases)
    std::uint64_t renewal_failures = 0; ///< leases whose renewal failed (retried until deadline)
    std::uint64_t leases_lost = 0;      ///< total of `lost`
    std::uint64_t undos = 0;       ///< give-backs of grants nobody waited for, or unknown outcomes
    std::uint64_t leases_held = 0; ///< now
    std::uint64_t waiters = 0;     ///< acquisitions waiting now
    /// Acquisitions by outcome, indexed by `acquire_outcome`.
    std::array<std::uint64_t, acquire_outcome_count> acquires{};
    /// Held leases lost, by reason, indexed by `lease_loss`.
    std::array<std::uint64_t, lease_loss_count> lost{};
    /// From the call to the grant, of every granted acquisition (its count is
    /// `acquires[granted]`).
    duration_histogram acquire_wait;
    /// Round trip of each watchdog renew script that got an answer.
    duration_histogram renewal_rtt;

    /// `acquires` for the outcome `o`.
    std::uint64_t acquired(acquire_outcome o) const noexcept {
        return acquires[static_cast<std::size_t>(o)];
    }
    /// `lost` for the reason `l`.
    std::uint64_t lost_by(lease_loss l) const noexcept { return lost[static_cast<std::size_t>(l)]; }
};

/// A label added to every sample by `write_prometheus`.
struct metric_label {
    std::string_view name;  ///< a Prometheus label name; not checked
    std::string_view value; ///< any text: escaped as the format requires
};

/// Appends `s` to `out` in the Prometheus text exposition format (version 0.0.4): one family
/// per series, each named `<prefix>_<series>` (`prefix` is a valid metric name: not checked),
/// every sample carrying `labels`. Durations are in seconds. Write each family once per
/// exposition: to export several connections, give each its own prefix, or one call per
/// connection into separate scrapes. doc/metrics.md lists the series.
COROLOCK_DECL void write_prometheus(std::string& out, const lock_stats& s,
                                    std::string_view prefix = "corolock",
                                    std::span<const metric_label> labels = {});

} // namespace corolock

#endif
