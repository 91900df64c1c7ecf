// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_POSTGRES_MUTEX_HPP
#define COROLOCK_POSTGRES_MUTEX_HPP

#include <corolock/capabilities.hpp>
#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/lease_base.hpp>
#include <corolock/lock_handle_base.hpp>
#include <corolock/postgres/config.hpp>
#include <corolock/postgres/connection.hpp>

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
struct pg_lease_state;
struct pg_mutex_core;
} // namespace detail

class pg_nested_hold;

/// Proof that one acquisition holds a `pg_mutex`: the lock table's row for the name carries
/// this lease's owner id (from a CSPRNG) and fencing token (from a sequence, so larger than
/// every earlier token of the table). Move-only, like `std::unique_lock`; nothing else can
/// release or prove the hold.
///
/// Destroying a lease that still owns the lock never blocks: it stops the watchdog and sends the
/// owner-checked release without waiting for it.
///
/// Loss and release (`lease_base`: async_wait_lost, async_release):
/// - Lost (`lease_lost`) when it expires by the local deadline or a renewal is refused (the row
///   is gone or another owner's), or `max_hold_reached`.
/// - The release is an owner-checked `DELETE` that announces the release with `NOTIFY`; it
///   completes when the server answers or the connection fails, both promptly. It fails with
///   `lease_lost` or `max_hold_reached` when the lease was lost before the release, or the row
///   was gone or another owner's (the critical section may have overlapped a later owner), and
///   with connection errors when the outcome is unknown (the row expires with its lease).
///
/// Thread safety: one lease is used by one coroutine at a time; the getters may be called from
/// any thread.
/// Lifetime: a lease keeps its connection's state alive, not its execution context: destroy
/// leases before the io_context they were acquired on.
class COROLOCK_DECL pg_lease
    : public lease_base<pg_lease, std::shared_ptr<detail::pg_lease_state>> {
public:
    /// The clock of `valid_until()`.
    using clock = std::chrono::steady_clock;

    /// An empty lease (owns nothing): also what a try-acquire gives when another owner holds the
    /// lock.
    pg_lease() noexcept = default;
    /// Moves the ownership; `other` is left empty.
    pg_lease(pg_lease&&) noexcept = default;
    /// Releases what this lease owned (without waiting), then takes `other`'s.
    pg_lease& operator=(pg_lease&& other) noexcept;
    ~pg_lease();

    /// Owns, not reported lost, and the local deadline has not passed: checks the clock.
    bool valid() const noexcept;
    /// The local end of the lease: the send time of the acquire (or of the last renewal) plus
    /// the lease minus a drift allowance. The row's expiry by the server's clock is later, so a
    /// critical section that ends before this cannot overlap a later owner (doc/postgres.md).
    /// `time_point::min()` when empty.
    clock::time_point valid_until() const noexcept;
    /// The watchdog reported this lease lost (why: `async_wait_lost`).
    bool lost() const noexcept;
    /// The fencing token of this acquisition, tagged `lock_backend::postgres` (value 0 when
    /// empty): a value of the table's sequence, larger than every earlier grant's of any name.
    fencing_token token() const noexcept;
    /// The lock name (empty when empty).
    const std::string& name() const noexcept;
    /// 32 hex digits from a CSPRNG, unique to this acquisition (empty when empty).
    std::string_view owner_id() const noexcept;

    /// A nested hold: for code that wants reentrant "acquire again / release" pairs. It costs no
    /// round trip and changes nothing in the table; the lock is released when the lease and
    /// every nested hold taken from it are gone. Requires `owns()`.
    pg_nested_hold hold() const;

    /// Runs one SQL statement only while this lease is current: in one transaction, a check
    /// that the table's row for the name still has this owner and token and has not expired
    /// (it takes a share lock on the row, so no acquire or release can change it before the
    /// commit), then the statement. The statement's result is in `out`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: `out` until completion; the SQL and parameters are copied.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none once sent (it completes promptly).
    /// Errors: `stale_token` (the row is gone, expired or another owner's: nothing was
    /// written); `lease_lost` when the lease is known lost or past `valid_until()` (nothing is
    /// sent); `not_owner` for an empty lease; `server_error` for the statement's own failure
    /// (rolled back; SQLSTATE and message in `out`); connection errors (outcome unknown).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_fenced_query(std::string_view sql, std::span<const pg_param> params, pg_result& out,
                            CompletionToken&& token = {}) {
        return detail::initiate_on(std::forward<CompletionToken>(token), &fenced_impl, share_, sql,
                                   params, &out);
    }

private:
    friend class lease_base<pg_lease, std::shared_ptr<detail::pg_lease_state>>;
    friend struct detail::access;
    friend class pg_nested_hold;
    explicit pg_lease(std::shared_ptr<detail::pg_lease_state> s) noexcept
        : lease_base(std::move(s)) {}
    void reset() noexcept;
    static void wait_lost_impl(std::shared_ptr<detail::pg_lease_state> s, handler_ec h);
    static void release_impl(std::shared_ptr<detail::pg_lease_state> s, handler_ec h);
    static void fenced_impl(std::shared_ptr<detail::pg_lease_state> s, std::string_view sql,
                            std::span<const pg_param> params, pg_result* out, handler_ec h);
};

/// A nested hold on a `pg_lease` (see `pg_lease::hold`). Move-only; ending it never blocks.
class COROLOCK_DECL pg_nested_hold
    : public hold_base<pg_nested_hold, std::shared_ptr<detail::pg_lease_state>> {
public:
    pg_nested_hold() noexcept = default;
    /// Moves the hold; `other` is left empty.
    pg_nested_hold(pg_nested_hold&&) noexcept = default;
    /// Ends the hold this object had, then takes `other`'s.
    pg_nested_hold& operator=(pg_nested_hold&& other) noexcept;
    ~pg_nested_hold();

    /// As the lease's.
    bool valid() const noexcept;
    /// The lease's fencing token (value 0 when empty).
    fencing_token token() const noexcept;
    /// Ends this hold now without waiting (the destructor does the same). If it was the last
    /// share of the lease, the release goes out in the background.
    void reset() noexcept;

private:
    friend class hold_base<pg_nested_hold, std::shared_ptr<detail::pg_lease_state>>;
    friend class pg_lease;
    explicit pg_nested_hold(std::shared_ptr<detail::pg_lease_state> s) noexcept
        : hold_base(std::move(s)) {}
    static void release_impl(std::shared_ptr<detail::pg_lease_state> s, handler_ec h) {
        pg_lease::release_impl(std::move(s), std::move(h));
    }
};

/// A distributed lock on one name, kept in a PostgreSQL table (`corolock_locks`, one row per
/// held name; doc/postgres.md): a handle meant to be shared, like `std::mutex`. Every
/// acquisition returns its own `pg_lease`, the owner. Expiry is by the server's clock; waiting
/// is woken by `NOTIFY` on release, with a jittered timer as the fallback. Never a
/// session-level advisory lock: those belong to the connection, which many coroutines share.
///
/// The table must exist: call `async_install` once (it is idempotent) before the first
/// acquire, e.g. at deployment or at start-up, and again after upgrading corolock; an acquire
/// without it, or after an older corolock's install, fails with `server_error` (SQLSTATE 42883:
/// no `corolock_acquire`; the log says to run `async_install`).
///
/// Acquiring (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire):
/// - Object lifetimes: the mutex may be destroyed meanwhile (the acquire is then cancelled).
/// - Cancellation: if the statement in flight took the lock, the row is deleted (owner-checked)
///   when its answer arrives.
/// - Errors: `invalid_name`, `invalid_lease`, `invalid_argument` (before anything is sent);
///   `not_connected`; `server_error` (e.g. no schema, or an older corolock's: see
///   `async_install`); `readonly` (a standby). A lost connection during the wait is ridden out:
///   the attempt whose outcome is unknown is undone by an owner-checked delete queued before the
///   next attempt, which uses a new owner id. A bounded wait that runs out with no answer from
///   the server fails with `server_timeout` (a later grant is given back).
/// - A try also fails with `connection_lost` when the connection drops with the attempt in
///   flight (it is undone).
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection must outlive the mutex. Destroying the mutex cancels its pending
/// acquires (`operation_aborted`); leases already given out live on.
class COROLOCK_DECL pg_mutex : public lock_handle_base<pg_mutex, pg_lease> {
public:
    /// The executor of the connection.
    using executor_type = boost::asio::any_io_executor;
    /// Tokens from a sequence (a total order, no clock assumption); a holder knows its loss by
    /// `valid_until()`; an owner per acquisition (its row's owner id). A grant survives a
    /// failover only with a synchronous standby (`synchronous_commit = remote_apply`), which is
    /// the server's configuration, not the library's: generic code cannot rely on it, so the
    /// constant says no (doc/postgres.md, "Deployment").
    static constexpr lock_capabilities capabilities{
        .backend = lock_backend::postgres,
        .fencing = fencing_kind::total_order,
        .grant_survives_failover = false,
        .loss_detected_in_bounded_time = true,
        .owner = lock_owner::acquisition,
    };

    /// No I/O. Invalid arguments are reported by the first acquire.
    pg_mutex(pg_connection& conn, std::string name, pg_mutex_options opts = {});
    ~pg_mutex();
    pg_mutex(const pg_mutex&) = delete;
    pg_mutex& operator=(const pg_mutex&) = delete;

    /// The connection's executor.
    executor_type get_executor() const noexcept;
    /// The lock's name.
    const std::string& name() const noexcept;
    /// The options given to the constructor.
    const pg_mutex_options& options() const noexcept;

    /// Creates the lock table, its token sequence and the fence function if they are missing,
    /// and creates or replaces the acquire function (safe to run from many processes at once,
    /// and while leases are held). Needs the rights to create them.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the mutex may be destroyed meanwhile.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none (it completes promptly).
    /// Errors: as `pg_connection::async_query` (`server_error` when refused, text in the log).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_install(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, pg_mutex* self) { self->install_impl(std::move(handler)); }, token,
            this);
    }

    /// Cancels every pending acquire of this mutex (`operation_aborted`). Leases are untouched.
    void cancel();

private:
    friend class lock_handle_base<pg_mutex, pg_lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, pg_lease)>;

    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h);
    void install_impl(boost::asio::any_completion_handler<void(error_code)> h);

    std::shared_ptr<detail::pg_mutex_core> core_;
};

} // namespace corolock

#endif
