// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_LOCAL_MUTEX_HPP
#define COROLOCK_LOCAL_MUTEX_HPP

#include <corolock/capabilities.hpp>
#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/lease_base.hpp>
#include <corolock/lock_handle_base.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <ratio>
#include <string>

// The in-process backend: the lock concept (lock_concepts.hpp) with no server, on a clock the
// test advances. For unit tests of code that takes locks; see doc/backends.md.
namespace corolock {

namespace detail {
struct local_core;
struct local_grant;
} // namespace detail

/// The time of a `local_backend`: it moves only when the test calls `local_backend::advance`.
/// It has no static `now()` (read `local_backend::now()`), and its time points are a type of
/// their own, so they never mix with `steady_clock`'s by mistake. Time starts at the epoch.
struct local_clock {
    /// As the standard clocks.
    using rep = std::int64_t;
    /// As the standard clocks.
    using period = std::nano;
    /// As the standard clocks.
    using duration = std::chrono::nanoseconds;
    /// As the standard clocks.
    using time_point = std::chrono::time_point<local_clock, duration>;
    /// Never goes back: only the test advances it.
    static constexpr bool is_steady = true;
};

/// Policy of the acquisitions made through one local_mutex, checked by the first acquire
/// (`invalid_lease`, `invalid_argument`), as `mutex_options`.
struct local_mutex_options {
    /// Lease of each acquisition, 100 ms to 365 days. With the watchdog it is renewed every
    /// lease/3 of clock time while held, unless renewals are paused.
    local_clock::duration lease = std::chrono::seconds(30);
    /// Renew the lease while held (true), or let it expire at its deadline unless
    /// `local_lease::async_extend` is called (false).
    bool watchdog = true;
    /// Report the lease lost after this total hold time, up to 365 days (0: no limit).
    local_clock::duration max_hold = local_clock::duration::zero();
};

/// The in-process stand-in for a lock server: the locks by name, their token sequences, and the
/// clock. Every `local_mutex` of one backend with the same name is the same lock, as two
/// `mutex`es of one name are on one Redis. Time moves only through `advance`: leases expire,
/// watchdogs renew, `max_hold` ends and waits time out as the clock passes their instants, in
/// time order, and their completions are posted (never run inside `advance`).
///
/// Thread safety: none. Use a backend, its mutexes and their leases from one thread (an
/// io_context run by one thread, as a unit test does).
/// Lifetime: leases and mutexes keep the backend's state alive; completions go to the token's
/// associated executor, else the backend's.
class COROLOCK_DECL local_backend {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// The clock that deadlines and lease ends are read on.
    using clock = local_clock;

    /// Completions without an associated executor run on `ex`. The clock starts at the epoch.
    explicit local_backend(executor_type ex);
    ~local_backend();
    local_backend(const local_backend&) = delete;
    local_backend& operator=(const local_backend&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The backend's current time.
    clock::time_point now() const noexcept;
    /// Moves the clock on by `d` (not negative: `std::invalid_argument`), running every
    /// renewal, expiry, `max_hold` end and wait deadline that falls in that time, in order. A
    /// lease lost at an instant frees its lock at that instant for the first waiter.
    void advance(clock::duration d);
    /// From now on the watchdogs renew nothing, as when the server is out of reach or the
    /// holder's process is paused: leases run out at their `valid_until()`.
    void pause_renewals();
    /// The watchdogs renew again, at once for every lease still valid.
    void resume_renewals();

private:
    friend class local_mutex;
    std::shared_ptr<detail::local_core> core_;
};

class local_hold;

/// Proof that one acquisition holds a local lock: what `local_mutex::async_acquire` gives. The
/// same contract as `lease` (move-only owner, released by its destructor without waiting,
/// nested holds, a fencing token), with its deadline on the backend's `local_clock`. Tokens of
/// one name are 1, 2, 3, ...: a total order, tagged `lock_backend::local`.
///
/// Loss and release (`lease_base`: async_wait_lost, async_release): lost (`lease_lost`) when it
/// expires on the backend's clock or is taken by `local_mutex::force_unlock`, or
/// `max_hold_reached`. The release completes at once, and the first waiter gets the lock.
///
/// Thread safety: as `local_backend`.
/// Executors: operations complete on the token's associated executor, else the backend's; on an
/// empty lease on the token's associated executor.
class COROLOCK_DECL local_lease
    : public lease_base<local_lease, std::shared_ptr<detail::local_grant>> {
public:
    /// The clock that deadlines and lease ends are read on.
    using clock = local_clock;

    /// An empty lease (owns nothing): also what a try-acquire gives when the lock is held.
    local_lease() noexcept = default;
    /// Takes `other`'s ownership; `other` is left empty.
    local_lease(local_lease&&) noexcept = default;
    /// Releases what this lease owned (without waiting), then takes `other`'s.
    local_lease& operator=(local_lease&& other) noexcept;
    ~local_lease();

    /// Owns, not lost, and the backend's clock is before `valid_until()`.
    bool valid() const noexcept;
    /// The end of the lease on the backend's clock, pushed on by each renewal.
    /// `time_point::min()` when empty.
    clock::time_point valid_until() const noexcept;
    /// The lease was lost (why: `async_wait_lost`).
    bool lost() const noexcept;
    /// The fencing token (`lock_backend::local`; value 0 when empty).
    fencing_token token() const noexcept;
    /// The lock name (empty when empty).
    const std::string& name() const noexcept;
    /// A nested hold, as `lease::hold`. Requires `owns()` (else `std::logic_error`).
    local_hold hold() const;

    /// Renews the lease now for another `local_mutex_options::lease`, as `lease::async_extend`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the lease may be moved meanwhile.
    /// Executor: the token's associated executor, else the backend's; never inline.
    /// Cancellation: none (it completes at once).
    /// Errors: `lease_lost` or `max_hold_reached` (already lost: never brought back);
    /// `not_owner` for an empty lease.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_extend(CompletionToken&& token = {}) {
        return detail::initiate_on(std::forward<CompletionToken>(token), &extend_impl, share_);
    }

private:
    friend class lease_base<local_lease, std::shared_ptr<detail::local_grant>>;
    friend struct detail::access;
    friend class local_hold;
    explicit local_lease(std::shared_ptr<detail::local_grant> g) noexcept
        : lease_base(std::move(g)) {}
    static void wait_lost_impl(std::shared_ptr<detail::local_grant> g, handler_ec h);
    static void release_impl(std::shared_ptr<detail::local_grant> g, handler_ec h);
    static void hold_release_impl(std::shared_ptr<detail::local_grant> g, handler_ec h);
    static void extend_impl(std::shared_ptr<detail::local_grant> g, handler_ec h);
};

/// A nested hold on a local lease (see `local_lease::hold`), as `nested_hold`.
class COROLOCK_DECL local_hold
    : public hold_base<local_hold, std::shared_ptr<detail::local_grant>> {
public:
    local_hold() noexcept = default;
    /// Takes `other`'s ownership; `other` is left empty.
    local_hold(local_hold&&) noexcept = default;
    /// Ends this hold, then takes `other`'s.
    local_hold& operator=(local_hold&& other) noexcept;
    ~local_hold();

    /// As the lease's.
    bool valid() const noexcept;
    /// As the lease's.
    fencing_token token() const noexcept;
    /// Ends this hold now; as the last share of a released lease it releases the lock.
    void reset() noexcept;

private:
    friend class hold_base<local_hold, std::shared_ptr<detail::local_grant>>;
    friend class local_lease;
    explicit local_hold(std::shared_ptr<detail::local_grant> g) noexcept
        : hold_base(std::move(g)) {}
    static void release_impl(std::shared_ptr<detail::local_grant> g, handler_ec h) {
        local_lease::hold_release_impl(std::move(g), std::move(h));
    }
};

/// A lock on one name of a `local_backend`: the in-process model of the lock concept
/// (`lock_handle`, lock_concepts.hpp), for unit tests of code that takes locks, with no server.
/// Shared like `mutex`; every acquisition returns its own `local_lease`. Waiters are served in
/// arrival order.
///
/// Acquiring (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire): deadlines are
/// read on the backend's clock (`local_clock`).
/// - Object lifetimes: the mutex may be destroyed meanwhile (the acquire is then cancelled).
/// - Cancellation: nothing is held afterwards.
/// - Errors: `invalid_name` (empty), `invalid_lease`, `invalid_argument` (`max_hold`).
/// - A try completes at once: an empty lease when the lock is held or has waiters.
///
/// Thread safety: as `local_backend`.
/// Lifetime: destroying the mutex cancels its pending acquires (`operation_aborted`); leases
/// live on.
class COROLOCK_DECL local_mutex : public lock_handle_base<local_mutex, local_lease> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// Tokens from a sequence per name (total order); nothing to fail over (the lock lives and
    /// dies with the process that holds it); a holder knows its loss by `valid_until()`; an
    /// owner per acquisition.
    static constexpr lock_capabilities capabilities{
        .backend = lock_backend::local,
        .fencing = fencing_kind::total_order,
        .grant_survives_failover = true,
        .loss_detected_in_bounded_time = true,
        .owner = lock_owner::acquisition,
    };

    /// No work. Invalid arguments are reported by the first acquire.
    local_mutex(local_backend& backend, std::string name, local_mutex_options opts = {});
    ~local_mutex();
    local_mutex(const local_mutex&) = delete;
    local_mutex& operator=(const local_mutex&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const local_mutex_options& options() const noexcept;

    /// Cancels every pending acquire of this mutex (`operation_aborted`). Leases are untouched.
    void cancel();
    /// Takes the lock from its holder, as `mutex::async_force_unlock` (an administrator, or a
    /// test that wants a lease lost now): the holder's lease is lost with `lease_lost` and the
    /// first waiter gets the lock. Returns whether the lock was held.
    bool force_unlock();

private:
    friend class lock_handle_base<local_mutex, local_lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, local_lease)>;

    clock::time_point deadline_in(duration wait) const noexcept;
    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::local_core> core_;
    std::string name_;
    local_mutex_options opts_;
    std::uint64_t id_;
};

} // namespace corolock

#endif
