// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_MUTEX_HPP
#define COROLOCK_MUTEX_HPP

#include <corolock/capabilities.hpp>
#include <corolock/connection.hpp>
#include <corolock/detail/deadline.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/lease.hpp>
#include <corolock/lock_handle_base.hpp>
#include <corolock/metrics.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock {

namespace detail {
struct mutex_core;
}

/// Replica acknowledgement of grants and renewals (opt-in). With `replicas` > 0, `WAIT replicas
/// timeout` goes out in the same write as each acquire and renew script: a grant that fewer
/// replicas acknowledged within `timeout` is given back and the acquire fails with
/// `replicas_not_synced`; such a renewal reports the lease lost with that error. It narrows the
/// window in which a failover loses a grant; it cannot close it (replication stays
/// asynchronous): see doc/design.md, "Replica acknowledgement".
struct replica_sync {
    /// What to do when the master has fewer connected replicas than `replicas`.
    enum class shortfall {
        /// Refuse every grant and renewal (`replicas_not_synced`): nothing stands on fewer
        /// copies than asked. Under Sentinel this turns each failover into an outage until the
        /// old master has resynced as the new one's replica (15-22 s measured, doc/sentinel.md).
        refuse,
        /// Ask only the replicas the master has (`ROLE` follows the WAIT): all of them must
        /// acknowledge, and with none the grant stands on the master alone, as without
        /// replica_sync. While the master has fewer, each WAIT blocks the connection for its
        /// full `timeout`.
        count_connected,
    };
    /// Replicas that must acknowledge (0: off; at most 1000).
    int replicas = 0;
    /// How long WAIT may block (1 ms up to half the lease, when replicas > 0).
    std::chrono::steady_clock::duration timeout = std::chrono::milliseconds(100);
    /// With fewer connected replicas than `replicas` (a watchdog batch that mixes both settings
    /// is treated as `refuse`).
    shortfall on_shortfall = shortfall::refuse;
};

/// Policy of the acquisitions made through one mutex. A zero duration turns its feature off, as
/// the comment says. Checked before anything is sent (`invalid_lease`, `invalid_argument`).
struct mutex_options {
    /// Lease of each acquisition, 100 ms to 365 days. With the watchdog it is renewed every
    /// lease/3 while held.
    std::chrono::steady_clock::duration lease = std::chrono::seconds(30);
    /// Renew the lease while held (true), or let it expire unless `lease::async_extend` is
    /// called (false: fixed lease).
    bool watchdog = true;
    /// Report the lease lost after this total hold time, up to 365 days (0: no limit).
    std::chrono::steady_clock::duration max_hold = std::chrono::steady_clock::duration::zero();
    /// Fallback back-off between attempts when no release message arrives: exponential from
    /// retry_base (at least 1 ms) to retry_max (at least retry_base), full jitter, capped by the
    /// holder's remaining lease and the wait deadline.
    std::chrono::steady_clock::duration retry_base = std::chrono::milliseconds(50);
    /// The cap of that back-off.
    std::chrono::steady_clock::duration retry_max = std::chrono::seconds(2);
    /// How long the lock's fence key outlives the last acquisition's lease (1 ms to 365 days).
    /// It keeps tokens increasing when the server clock steps back within that time; see
    /// doc/design.md, "Fencing tokens".
    std::chrono::steady_clock::duration fence_retention = std::chrono::minutes(10);
    /// Replica acknowledgement (off by default).
    corolock::replica_sync replica_sync;
    /// How long `async_try_acquire` waits for its one attempt's reply (1 ms to 365 days). Past
    /// it the try fails with `server_timeout` (the attempt is undone if it took the lock), so a
    /// stalled or unreachable server cannot hold a try longer than this.
    std::chrono::steady_clock::duration try_timeout = std::chrono::seconds(1);
};

/// Settings of one acquisition where the mutex's defaults do not fit (`mutex::async_acquire_with`).
struct acquire_options {
    /// This acquisition's lease in place of `mutex_options::lease` (0: the mutex's), with the
    /// same limits (100 ms to 365 days, else `invalid_lease`). The watchdog, when on, renews it
    /// every lease/3; the fence key outlives it by `mutex_options::fence_retention`.
    std::chrono::steady_clock::duration lease = std::chrono::steady_clock::duration::zero();
    /// How long to wait for the lock, as `async_acquire_for` (the default: no limit).
    std::chrono::steady_clock::duration wait = std::chrono::steady_clock::duration::max();
};

class cluster;

/// The lock layer's counters on `conn` (all zero before its first mutex): what operators graph.
/// Any thread; never blocks. `write_prometheus` (metrics.hpp) exports them.
COROLOCK_DECL lock_stats get_lock_stats(connection& conn);
/// The same for the mutexes over a cluster (one lock layer per cluster).
COROLOCK_DECL lock_stats get_lock_stats(cluster& c);
/// Turns on per-name counters and the event hook of the lock layer on `conn` (metrics.hpp): for
/// every mutex, semaphore, shared_mutex and fair_mutex on it. Takes effect for what happens
/// after the call (set it before the first acquisition); a second call replaces the options and
/// keeps the counters. Any thread.
COROLOCK_DECL void set_lock_metrics(connection& conn, lock_metrics_options opts);
/// The same for the lock layer of a cluster.
COROLOCK_DECL void set_lock_metrics(cluster& c, lock_metrics_options opts);

/// A distributed lock on one name: a handle meant to be shared, like `std::mutex` (a class
/// member used by every request handler is the intended use). It holds no ownership: every
/// acquisition returns its own `lease`, which is the owner. See doc/design.md for the keys and
/// scripts.
///
/// Acquiring (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire):
/// - Object lifetimes: the mutex may be destroyed meanwhile (the acquire is then cancelled).
/// - Cancellation: if the script on the wire took the lock, that grant is given back when its
///   reply arrives.
/// - Errors: `invalid_name`, `invalid_lease`, `invalid_argument` (before anything is sent);
///   `wrong_type` (a foreign key at the name); `not_connected`; other connection and server
///   errors. A lost connection during the wait is ridden out (the unknown attempt is undone).
/// - A bounded wait that runs out: `acquire_timeout` if the lock was seen held,
///   `server_timeout` if no attempt was ever answered and no other lock script was answered
///   meanwhile (the server is slow, stalled or unreachable). A zero wait's one reply is waited
///   for as a try's.
/// - A try waits for its reply at most `mutex_options::try_timeout`, and also fails with
///   `connection_lost` when the connection drops with the attempt on the wire,
///   `server_timeout` when no reply came within `try_timeout`, and `lease_lost` when the
///   grant's reply came after its own lease deadline (each undoes the attempt if it took the
///   lock).
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection (or cluster) must outlive the mutex. Destroying the mutex cancels its
/// pending acquires (they complete with `operation_aborted`); leases already given out live on.
class COROLOCK_DECL mutex : public lock_handle_base<mutex, lease> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// A single Redis master (or Sentinel, or a cluster's slot master): tokens grow under a
    /// clock assumption (doc/design.md, "Fencing tokens"); asynchronous replication can lose a
    /// grant in a failover; a holder knows its loss by `valid_until()`; an owner per
    /// acquisition. doc/backends.md.
    static constexpr lock_capabilities capabilities{
        .backend = lock_backend::redis,
        .fencing = fencing_kind::time_based,
        .grant_survives_failover = false,
        .loss_detected_in_bounded_time = true,
        .owner = lock_owner::acquisition,
    };

    /// No I/O. Invalid arguments are reported by the first acquire.
    mutex(connection& conn, std::string name, mutex_options opts = {});
    /// The same lock over a Redis Cluster (doc/cluster.md): every script goes to the master of
    /// the name's slot (following MOVED and ASK), releases publish with SPUBLISH and waiters
    /// listen with SSUBSCRIBE there. The cluster must outlive the mutex; `cluster::async_run`
    /// must be running. No I/O here.
    mutex(cluster& c, std::string name, mutex_options opts = {});
    ~mutex();
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const mutex_options& options() const noexcept;

    /// As async_acquire_for(`o.wait`), with this call's own lease (`o.lease`) in place of the
    /// mutex's: a long job and a short one can share one lock name.
    ///
    /// Completion signature: `void(error_code, lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire_for; `invalid_lease` when `o.lease` is out of range (before
    /// anything is sent).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_with(const acquire_options& o, CompletionToken&& token = {}) {
        return initiate(detail::deadline_of(o.wait), false, std::forward<CompletionToken>(token),
                        o.lease);
    }

    /// Cancels every pending acquire of this mutex (`operation_aborted`). Leases are untouched.
    void cancel();

    /// The server's remaining TTL of the lock key in ms (-2: no key, -1: no TTL).
    ///
    /// Completion signature: `void(error_code, std::int64_t)`.
    /// Object lifetimes: the mutex may be destroyed meanwhile.
    /// Executor: as `connection::async_exec`.
    /// Cancellation: as `connection::async_exec`.
    /// Errors: as `connection::async_exec`, plus `invalid_name` (before anything is sent).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_remaining_ttl(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::int64_t)>(
            [](auto handler, mutex* self) { self->ttl_impl(std::move(handler)); }, token, this);
    }

    /// Deletes the lock whoever holds it and wakes its waiters (an administrator's tool). It
    /// publishes the deleted owner on `corolock:forced`: a holder on a single server or behind
    /// Sentinel renews at once and reports its lease lost within a round trip; on a cluster the
    /// holder learns it at its next renewal.
    ///
    /// Completion signature: `void(error_code, bool deleted)`.
    /// Object lifetimes: the mutex may be destroyed meanwhile.
    /// Executor: as `connection::async_exec`.
    /// Cancellation: as `connection::async_exec`.
    /// Errors: as `connection::async_exec`, plus `invalid_name` (before anything is sent).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_force_unlock(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, bool)>(
            [](auto handler, mutex* self) { self->force_unlock_impl(std::move(handler)); }, token,
            this);
    }

private:
    friend class lock_handle_base<mutex, lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, lease)>;

    template <class CompletionToken>
    auto initiate(clock::time_point deadline, bool once, CompletionToken&& token,
                  duration lease_override = duration::zero()) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, lease)>(
            [](auto handler, mutex* self, clock::time_point deadline, bool once, duration l) {
                self->acquire_impl(deadline, once, l, std::move(handler));
            },
            token, this, deadline, once, lease_override);
    }
    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
        acquire_impl(deadline, once, duration::zero(), std::move(h));
    }
    void acquire_impl(clock::time_point deadline, bool once, duration lease_override,
                      acquire_handler h);
    void ttl_impl(boost::asio::any_completion_handler<void(error_code, std::int64_t)> h);
    void force_unlock_impl(boost::asio::any_completion_handler<void(error_code, bool)> h);

    std::shared_ptr<detail::mutex_core> core_;
};

} // namespace corolock

#endif
