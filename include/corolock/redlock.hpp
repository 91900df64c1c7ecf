// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_REDLOCK_HPP
#define COROLOCK_REDLOCK_HPP

#include <corolock/capabilities.hpp>
#include <corolock/connection.hpp>
#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/lease_base.hpp>
#include <corolock/lock_handle_base.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace corolock {

namespace detail {
struct redlock_core;
struct redlock_lease_state;
} // namespace detail

/// Policy of the acquisitions made through one redlock. A zero duration turns its feature off
/// or picks the default, as the comment says. Checked before anything is sent.
struct redlock_options {
    /// Lease of each acquisition on every node, 100 ms to 365 days (`invalid_lease`).
    std::chrono::steady_clock::duration lease = std::chrono::seconds(30);
    /// Extend the lease on a quorum every lease/3 while held (true), or let it expire (false).
    bool watchdog = true;
    /// How long a round waits for a node's answer; a node silent longer counts as a failed vote
    /// (0: lease × 0.05, at least 5 ms). Up to 365 days; more than the lease makes every late
    /// grant a validity failure.
    std::chrono::steady_clock::duration node_timeout = std::chrono::steady_clock::duration::zero();
    /// Clock drift allowance: drift = lease × drift_factor + 2 ms (at most lease/2), subtracted
    /// from the validity. 0 to 0.5.
    double drift_factor = 0.01;
    /// Back-off between rounds when no release message arrives: exponential from retry_base (at
    /// least 1 ms) to retry_max (at least retry_base), full jitter, capped by the deadline.
    std::chrono::steady_clock::duration retry_base = std::chrono::milliseconds(50);
    /// The cap of that back-off.
    std::chrono::steady_clock::duration retry_max = std::chrono::seconds(2);
    /// Report the lease lost after this total hold time, up to 365 days (0: no limit).
    std::chrono::steady_clock::duration max_hold = std::chrono::steady_clock::duration::zero();
};

/// Counters of one redlock handle.
struct redlock_stats {
    std::uint64_t rounds = 0;            ///< acquire rounds sent (each to every node)
    std::uint64_t rounds_timed_out = 0;  ///< decided by the node timeout, not by the votes
    std::uint64_t validity_failures = 0; ///< a quorum that came too late (given back)
    std::uint64_t extensions = 0;        ///< extension rounds that reached a quorum
    /// Leases reported lost.
    std::uint64_t leases_lost = 0;
    std::uint64_t releases_sent = 0; ///< owner-checked releases sent to every node
};

/// Proof that one RedLock acquisition holds a majority of the nodes: what `redlock::async_acquire`
/// gives. Move-only, like `std::unique_lock`. Each acquisition is its own owner (a CSPRNG owner id)
/// on every node; nothing else can release it.
///
/// It has **no fencing token**: a RedLock token would need a second round (read the largest
/// token of a majority, write it back) and still repeats or goes backwards when a node loses its
/// data or its clock jumps, the two faults RedLock must survive; see doc/redlock.md. Use a
/// single-master `mutex` where storage must reject stale writers.
///
/// Destroying a lease that still owns the lock never blocks: it stops the watchdog and sends the
/// owner-checked release to every node without waiting for it.
///
/// Loss and release (`lease_base`: async_wait_lost, async_release; executor: else the first
/// node's):
/// - Lost (`lease_lost`) when an extension reached fewer than a quorum, or too late, or the local
///   deadline passed; or `max_hold_reached`.
/// - The release goes to every node (owner-checked) and is never retried: a node that does not
///   answer within the node timeout keeps the key until it expires. It succeeds when a quorum
///   of nodes deleted our key; `lease_lost` when a majority no longer had it (the section may
///   have overlapped another owner) or it was reported lost (`max_hold_reached` if that was
///   why); `quorum_not_reached` when too few nodes answered.
///
/// Thread safety: one lease is used by one coroutine at a time; the getters may be called from
/// any thread. Lifetime: destroy leases before the io_context they were acquired on.
class COROLOCK_DECL redlock_lease
    : public lease_base<redlock_lease, std::shared_ptr<detail::redlock_lease_state>> {
public:
    /// The clock that deadlines and lease ends are read on.
    using clock = std::chrono::steady_clock;

    /// An empty lease (owns nothing): also what a try-acquire gives when another owner holds a
    /// majority.
    redlock_lease() noexcept = default;
    /// Takes `other`'s ownership; `other` is left empty.
    redlock_lease(redlock_lease&& other) noexcept = default;
    /// Releases what this lease owned (without waiting), then takes `other`'s.
    redlock_lease& operator=(redlock_lease&& other) noexcept;
    ~redlock_lease();

    /// Owns, not reported lost, and the local deadline has not passed: checks the clock.
    bool valid() const noexcept;
    /// The local end of the lease: the granting round's send time + lease − drift, pushed on by
    /// each quorum extension (steady clock). `time_point::min()` when empty.
    clock::time_point valid_until() const noexcept;
    /// The lease was reported lost (why: `async_wait_lost`).
    bool lost() const noexcept;
    /// The lock name (empty when empty).
    const std::string& name() const noexcept;
    /// 32 hex digits from a CSPRNG, unique to this acquisition (empty when empty).
    std::string_view owner_id() const noexcept;

private:
    friend class lease_base<redlock_lease, std::shared_ptr<detail::redlock_lease_state>>;
    friend struct detail::access;
    explicit redlock_lease(std::shared_ptr<detail::redlock_lease_state> s) noexcept
        : lease_base(std::move(s)) {}
    static void wait_lost_impl(std::shared_ptr<detail::redlock_lease_state> s, handler_ec h);
    static void release_impl(std::shared_ptr<detail::redlock_lease_state> s, handler_ec h);
    void reset() noexcept;
};

/// A RedLock over N independent Redis masters (N odd, at least 3; one `connection` per master,
/// no replication between them): a lock is held while a majority (N/2 + 1) of the nodes keeps
/// our key. A handle meant to be shared, like `mutex`; every acquisition returns its own
/// `redlock_lease`. See doc/redlock.md for the algorithm, the guarantees and the limits.
///
/// Acquiring (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire): granted when
/// a majority of the nodes is ours with validity left.
/// - Object lifetimes: the redlock may be destroyed meanwhile (the acquire is then cancelled).
/// - Cancellation: the owner-checked release is queued behind the round on every node, so
///   nothing of ours stays once the nodes have answered.
/// - Errors: `invalid_argument`, `invalid_name`, `invalid_lease` (before anything is sent). Each
///   round that fails (held, unreachable, too late) is released everywhere and retried with
///   back-off; without a deadline it never fails for those reasons. At a deadline, the last
///   round's reason: `acquire_timeout` (held by another, or no round decided yet),
///   `quorum_not_reached` (too few nodes answered) or `validity_expired` (the quorum came too
///   late).
/// - A try is one round: an empty lease when another owner's keys alone make a majority
///   impossible; `quorum_not_reached` (too few nodes answered within the node timeout) and
///   `validity_expired` (the quorum came too late; given back).
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connections must outlive the redlock and its leases. Destroying the redlock
/// cancels its pending acquires (`operation_aborted`); leases already given out live on.
class COROLOCK_DECL redlock : public lock_handle_base<redlock, redlock_lease> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// No fencing token; a node restarted without our key can let a second owner in while the
    /// first one's lease looks valid (no failover survival); a holder knows its loss by
    /// `valid_until()`; an owner per acquisition. doc/redlock.md, doc/backends.md.
    static constexpr lock_capabilities capabilities{
        .backend = lock_backend::redis,
        .fencing = fencing_kind::none,
        .grant_survives_failover = false,
        .loss_detected_in_bounded_time = true,
        .owner = lock_owner::acquisition,
    };

    /// No I/O. Throws std::invalid_argument if `nodes` is empty or holds a null pointer; any
    /// other invalid argument (an even N or N < 3, one connection twice, a bad name or option)
    /// is reported by the first acquire.
    redlock(std::span<connection* const> nodes, std::string name, redlock_options opts = {});
    ~redlock();
    redlock(const redlock&) = delete;
    redlock& operator=(const redlock&) = delete;

    /// The first node's executor.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const redlock_options& options() const noexcept;
    /// N, as configured.
    std::size_t size() const noexcept;
    /// N/2 + 1 of the configured N, whatever the nodes' state.
    std::size_t quorum() const noexcept { return size() / 2 + 1; }
    /// A snapshot of the counters (each read on its own, relaxed).
    redlock_stats stats() const noexcept;

    /// Cancels every pending acquire of this redlock (`operation_aborted`). Leases are untouched.
    void cancel();

private:
    friend class lock_handle_base<redlock, redlock_lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, redlock_lease)>;

    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::redlock_core> core_;
};

} // namespace corolock

#endif
