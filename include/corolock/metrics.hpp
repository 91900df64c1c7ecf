// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_METRICS_HPP
#define COROLOCK_METRICS_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

/// The counters of one lock name (or of the names past the bound), kept when
/// `lock_metrics_options::max_named_locks` is above 0.
struct named_lock_stats {
    /// The lock's name, or `lock_metrics_options::overflow_name` for the names past the bound.
    std::string name;
    /// Acquisitions by outcome, indexed by `acquire_outcome` (calls refused before anything
    /// was sent are not counted per name).
    std::array<std::uint64_t, acquire_outcome_count> acquires{};
    std::uint64_t leases_lost = 0; ///< held leases lost, for any reason
    duration_histogram hold;       ///< as `lock_stats::hold`, for this name
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
    /// How long each lease was held: from the grant to its release (when the release is sent)
    /// or to its loss, whichever came first. Leases still held are not in it.
    duration_histogram hold;
    /// Per-name counters (empty unless `lock_metrics_options::max_named_locks` > 0), in the
    /// order the names were first seen; the overflow entry, if any, comes last.
    std::vector<named_lock_stats> by_name;

    /// `acquires` for the outcome `o`.
    std::uint64_t acquired(acquire_outcome o) const noexcept {
        return acquires[static_cast<std::size_t>(o)];
    }
    /// `lost` for the reason `l`.
    std::uint64_t lost_by(lease_loss l) const noexcept { return lost[static_cast<std::size_t>(l)]; }
};

/// What a `lock_event` reports.
enum class lock_event_kind {
    acquire_start, ///< an acquisition started (its arguments were valid)
    granted,       ///< it ended with a lease; `elapsed`: since acquire_start
    not_granted,   ///< it ended without one (`outcome`, `ec`); `elapsed`: since acquire_start
    lost,          ///< a held lease was lost (`ec`: why); `elapsed`: since the grant
    released,      ///< a held lease's release was sent; `elapsed`: since the grant
};
/// The number of `lock_event_kind` values.
inline constexpr std::size_t lock_event_kind_count = 5;

/// The kind's name ("acquire_start", "granted", ...), for logs and test output.
COROLOCK_DECL std::string_view to_string(lock_event_kind k) noexcept;
/// Prints `to_string(k)`.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, lock_event_kind k);

/// One step of an acquisition or a lease, given to `lock_metrics_options::on_event`. Every
/// acquire_start is followed by one granted or not_granted; every granted by one lost (a stopped
/// connection included) or released, and a released by a lost when its release then finds the
/// key gone or taken (`release_refused`). Exceptions: a lease that a `shared_mutex` upgrade or
/// downgrade turned into another (no event; the new lease reports no granted), and leases left
/// when the io_context is destroyed. The views are valid only during the call.
struct lock_event {
    lock_event_kind kind = lock_event_kind::acquire_start; ///< what happened
    std::string_view name;                                 ///< the lock's name
    std::chrono::nanoseconds elapsed{}; ///< see `lock_event_kind` (0 for acquire_start)
    std::uint64_t token = 0; ///< granted, lost, released: the fencing token value (0: none)
    acquire_outcome outcome = acquire_outcome::granted; ///< granted, not_granted
    error_code ec; ///< not_granted: the error (none for busy); lost: the reason
};

/// Optional lock metrics of one connection (or cluster), set with `set_lock_metrics`
/// (mutex.hpp). Both are off by default and then cost one branch each per event.
struct lock_metrics_options {
    /// Keep per-name counters (`lock_stats::by_name`) for up to this many names (0: none).
    /// Names beyond it are added up under `overflow_name`, so a service that locks per order
    /// id cannot grow the exposition without bound.
    std::size_t max_named_locks = 0;
    /// The `by_name` entry (and the `lock` label value) of the names beyond the bound. A lock
    /// that is itself named so shares that entry.
    std::string overflow_name = "_other";
    /// Called for every `lock_event` (empty: off) on the connection's strand, in the order the
    /// events happen for one acquisition and its lease: it must not block (record a span,
    /// bump a counter). An exception from it is caught and dropped.
    std::function<void(const lock_event&)> on_event;
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
/// With `s.by_name` non-empty, three more families carry a `lock` label: `named_acquires_total`,
/// `named_leases_lost_total` and the `named_lease_hold_seconds` histogram.
COROLOCK_DECL void write_prometheus(std::string& out, const lock_stats& s,
                                    std::string_view prefix = "corolock",
                                    std::span<const metric_label> labels = {});

/// A snapshot of a `lock_meter`: what generic code measured of the acquisitions and leases of
/// any lock handle (lock_concepts.hpp) it was given. Durations are real time (`steady_clock`),
/// whatever the handle's clock. doc/metrics.md says what each means.
struct lock_meter_stats {
    /// Acquisitions by outcome, indexed by `acquire_outcome`: one per metered acquire.
    std::array<std::uint64_t, acquire_outcome_count> acquires{};
    /// Held leases lost (during the body, or found lost by the release), each counted once.
    std::uint64_t leases_lost = 0;
    /// From the acquire call to the grant, of every granted acquisition (its count is
    /// `acquires[granted]`).
    duration_histogram acquire_wait;
    /// From the grant to the release (when it is sent) or to the loss that ended the body.
    /// Leases still held are not in it.
    duration_histogram hold;

    /// `acquires` for the outcome `o`.
    std::uint64_t acquired(acquire_outcome o) const noexcept {
        return acquires[static_cast<std::size_t>(o)];
    }
};

namespace detail {
struct lock_meter_state;
} // namespace detail

/// Counters for generic code that takes any lock handle: pass its address as the last argument
/// of `with_lock`, `with_lock_for`, `with_lock_until` or `try_with_lock` (with_lock.hpp), which
/// record every acquisition's outcome and wait and every lease's hold and loss. Not tied to a
/// backend or a connection: one meter may count the locks of several handles and backends
/// (for one series per lock, use one meter per lock).
///
/// Thread safety: every member may be called from any thread at once (relaxed atomics, as the
/// connection's own counters: a snapshot taken under load may be a few events apart between
/// fields). Not copyable or movable: the metered calls keep its address.
class COROLOCK_DECL lock_meter {
public:
    /// All counters at zero.
    lock_meter();
    ~lock_meter();
    lock_meter(const lock_meter&) = delete;
    lock_meter& operator=(const lock_meter&) = delete;

    /// Counts one acquisition that completed with `ec` and, if `granted`, a lease (an empty
    /// lease with no error is `busy`), and its `wait` when granted. `with_lock` and its forms
    /// call it; generic code that acquires by hand calls it the same way.
    void record_acquire(const error_code& ec, bool granted, std::chrono::nanoseconds wait) noexcept;
    /// Counts the end of one granted lease, held for `held`, and whether it was `lost`.
    void record_hold(std::chrono::nanoseconds held, bool lost) noexcept;
    /// The counters now. Any thread; never blocks.
    lock_meter_stats snapshot() const noexcept;

private:
    std::unique_ptr<detail::lock_meter_state> state_;
};

class connection;
struct connection_stats;

/// Appends a connection's own counters (`connection::stats()`) as `<prefix>_connection_*`
/// families, and `<prefix>_connection_up` (`connected`: 1 or 0), in the same format.
COROLOCK_DECL void write_prometheus(std::string& out, const connection_stats& s, bool connected,
                                    std::string_view prefix = "corolock",
                                    std::span<const metric_label> labels = {});

/// Appends a `lock_meter`'s counters in the same format, with the families of `lock_stats` that
/// mean the same: `<prefix>_acquires_total{outcome}`, `<prefix>_acquire_wait_seconds`,
/// `<prefix>_leases_lost_total` (no `reason`: a meter does not know it) and
/// `<prefix>_lease_hold_seconds`. Give a meter a prefix of its own (or write it into another
/// scrape than a connection's): each family must appear once per exposition.
COROLOCK_DECL void write_prometheus(std::string& out, const lock_meter_stats& s,
                                    std::string_view prefix = "corolock",
                                    std::span<const metric_label> labels = {});

/// Everything about `conn` in one exposition: its lock layer (`get_lock_stats`) and its own
/// counters and state. Any thread; never blocks.
COROLOCK_DECL void write_prometheus(std::string& out, connection& conn,
                                    std::string_view prefix = "corolock",
                                    std::span<const metric_label> labels = {});

} // namespace corolock

#endif
