// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_POSTGRES_XACT_MUTEX_HPP
#define COROLOCK_POSTGRES_XACT_MUTEX_HPP

#include <corolock/detail/deadline.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
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
#include <vector>

namespace corolock {

namespace detail {
struct pg_xact_core;
} // namespace detail

/// One query of a locked transaction: SQL with text parameters `$1`, `$2`, ... (copied when the
/// operation starts).
struct pg_query_view {
    /// The SQL of one query (no transaction control: no BEGIN, COMMIT, ROLLBACK, SAVEPOINT).
    std::string_view sql;
    /// Its parameters, as for `pg_connection::async_query`.
    std::span<const pg_param> params = {};
};

/// A lock on one name whose every hold is a transaction of the same database: the lock is a
/// transaction-scoped advisory lock (`pg_advisory_xact_lock` on a 64-bit hash of the name), taken
/// by the first query of the transaction and given back by its commit or rollback. The caller's
/// queries run inside, so the writes and the lock commit or roll back together: no lease, no
/// watchdog and no fencing token are needed, and a client that dies mid-transaction loses the
/// lock with its session (doc/postgres.md, "Locked transactions").
///
/// Each attempt is one pipeline entry of the connection (one round trip, one sync point): the
/// lock with a bounded `lock_timeout` (`pg_xact_options::attempt_wait`), the queries, and a
/// `NOTIFY` delivered at commit that wakes the waiters of other clients. A busy lock fails the
/// attempt before any of the queries runs; the next attempt follows a release notification or a
/// jittered timer.
///
/// Its lock space is PostgreSQL's advisory locks, not the `pg_mutex` table: a `pg_xact_mutex`
/// and a `pg_mutex` of the same name do not exclude each other.
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection must outlive the mutex. Destroying the mutex cancels its pending
/// transactions (as `cancel()`).
class COROLOCK_DECL pg_xact_mutex {
public:
    /// The executor of the connection.
    using executor_type = boost::asio::any_io_executor;
    /// The clock of deadlines.
    using clock = std::chrono::steady_clock;
    /// Durations of waits.
    using duration = clock::duration;

    /// No I/O. Invalid names and options are reported by the first transaction.
    pg_xact_mutex(pg_connection& conn, std::string name, pg_xact_options opts = {});
    ~pg_xact_mutex();
    pg_xact_mutex(const pg_xact_mutex&) = delete;
    pg_xact_mutex& operator=(const pg_xact_mutex&) = delete;

    /// The connection's executor.
    executor_type get_executor() const noexcept;
    /// The lock's name.
    const std::string& name() const noexcept;
    /// The advisory lock key of the name: FNV-1a (64 bits) of its bytes, as a signed `bigint`.
    std::int64_t key() const noexcept;

    /// Runs `queries` as one transaction that holds the lock, waiting as long as it takes.
    ///
    /// Completion signature: `void(error_code)`; `results` then has one entry per query.
    /// Object lifetimes: `results` until completion; the SQL and parameters are copied.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total. Between attempts it completes at once with
    /// `operation_aborted`; with an attempt in flight it completes when that attempt's answer
    /// arrives (within `attempt_wait` plus the queries' own time), with its outcome: a
    /// transaction that committed is reported as committed.
    /// Errors: `invalid_name`, `invalid_argument` (no queries, a NUL byte, bad options), before
    /// anything is sent; `server_error` (a query failed: everything was rolled back and the lock
    /// released; SQLSTATE and message in its result); `readonly` (a standby); `not_connected`;
    /// `connection_lost` (the attempt was in flight: whether it committed is unknown; it is
    /// never sent again).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_transact(std::span<const pg_query_view> queries, std::vector<pg_result>& results,
                        CompletionToken&& token = {}) {
        return initiate(clock::time_point::max(), queries, results,
                        std::forward<CompletionToken>(token));
    }

    /// As async_transact, but waits at most `wait` for the lock.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: as async_transact.
    /// Executor: as async_transact.
    /// Cancellation: as async_transact.
    /// Errors: as async_transact, plus `invalid_wait` when `wait` is negative (before anything is
    /// sent) and `acquire_timeout` when the lock was still held by another transaction at the
    /// deadline (nothing of `queries` ran). A zero wait is one attempt; a longer wait that runs
    /// out while earlier transactions of the same name on this connection still queue ahead of
    /// it ends without an attempt of its own.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_transact_for(duration wait, std::span<const pg_query_view> queries,
                            std::vector<pg_result>& results, CompletionToken&& token = {}) {
        return initiate(detail::deadline_of(wait), queries, results,
                        std::forward<CompletionToken>(token));
    }

    /// Cancels every pending transaction of this mutex, as a terminal cancellation of each.
    void cancel();

private:
    using handler_type = boost::asio::any_completion_handler<void(error_code)>;

    template <class CompletionToken>
    auto initiate(clock::time_point deadline, std::span<const pg_query_view> queries,
                  std::vector<pg_result>& results, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, pg_xact_mutex* self, clock::time_point deadline,
               std::span<const pg_query_view> queries, std::vector<pg_result>* results) {
                self->transact_impl(deadline, queries, *results, std::move(handler));
            },
            token, this, deadline, queries, &results);
    }
    void transact_impl(clock::time_point deadline, std::span<const pg_query_view> queries,
                       std::vector<pg_result>& results, handler_type h);

    std::shared_ptr<detail::pg_xact_core> core_;
};

} // namespace corolock

#endif
