// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_POSTGRES_CONNECTION_HPP
#define COROLOCK_POSTGRES_CONNECTION_HPP

#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/logger.hpp>
#include <corolock/postgres/config.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corolock {

namespace detail {
class pg_connection_impl;
struct pg_listener_state;
} // namespace detail

/// One parameter of a statement, sent as text: a value, or SQL NULL (`std::nullopt`).
using pg_param = std::optional<std::string_view>;

/// What one query returned: rows of text values (PostgreSQL's text output), the command tag,
/// and for a server-side failure its SQLSTATE and message (kept here, never dropped).
class pg_result {
public:
    /// Rows and columns of the result (0 for a command without rows).
    std::size_t rows() const noexcept { return rows_; }
    /// Columns of the result (0 for a statement without rows).
    std::size_t columns() const noexcept { return columns_; }
    /// True for SQL NULL. Requires r < rows(), c < columns().
    bool is_null(std::size_t r, std::size_t c) const noexcept { return nulls_[r * columns_ + c]; }
    /// The value as text ("" for NULL). Requires r < rows(), c < columns().
    std::string_view value(std::size_t r, std::size_t c) const noexcept {
        return values_[r * columns_ + c];
    }
    /// The value, or nullopt for NULL. Requires r < rows(), c < columns().
    std::optional<std::string_view> get(std::size_t r, std::size_t c) const noexcept {
        if (is_null(r, c))
            return std::nullopt;
        return value(r, c);
    }
    /// The command tag: `SELECT 1`, `INSERT 0 1`, `DELETE 3`.
    const std::string& command_status() const noexcept { return status_; }
    /// Rows affected by an INSERT, UPDATE, DELETE, ... (0 when the tag has no count).
    std::uint64_t affected_rows() const noexcept { return affected_; }
    /// For a server-side failure, its five-character SQLSTATE (`23505`) and message; empty
    /// otherwise.
    const std::string& sqlstate() const noexcept { return sqlstate_; }
    /// The server's error message when the statement failed, else empty.
    const std::string& error_message() const noexcept { return error_message_; }
    /// Empties the result (a query stores into it from scratch anyway).
    void clear() noexcept { *this = pg_result(); }

private:
    friend struct detail::access;
    std::vector<std::string> values_;
    std::vector<bool> nulls_;
    std::size_t rows_ = 0;
    std::size_t columns_ = 0;
    std::string status_;
    std::uint64_t affected_ = 0;
    std::string sqlstate_;
    std::string error_message_;
};

/// A `NOTIFY` received on a channel the connection listens to.
struct pg_notification {
    /// The channel the notification was sent on.
    std::string channel;
    /// The notification's payload (may be empty).
    std::string payload;
    int sender_pid = 0; ///< the notifying session's backend process
};

/// A `LISTEN` on one channel, made by `pg_connection::listen`. While it lives, notifications on
/// its channel are buffered (up to pg_config::notify_buffer_size; beyond that the oldest is
/// dropped and counted) and read with `async_receive`. The connection issues `LISTEN` again
/// after every reconnect (notifications sent while it was down are lost). Destroying the last
/// listener of a channel sends `UNLISTEN`. Move-only.
class COROLOCK_DECL pg_listener {
public:
    pg_listener() = default;
    /// Moves the subscription; `other` listens to nothing.
    pg_listener(pg_listener&&) noexcept = default;
    /// Takes `other`'s subscription, ending this one's first.
    pg_listener& operator=(pg_listener&& other) noexcept;
    ~pg_listener();

    /// Waits for the next notification.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: `out` must stay valid until completion; the listener may be destroyed
    /// meanwhile (the wait then completes with `operation_aborted`).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial and total (no notification is lost when cancelled).
    /// Errors: `operation_aborted` when cancelled, when the listener is destroyed or the
    /// connection stops for good; `not_owner` for a default-constructed listener.
    /// Thread safety: one receive at a time per listener.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_receive(pg_notification& out, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, pg_listener* self, pg_notification* out) {
                self->receive_impl(*out, std::move(handler));
            },
            token, this, &out);
    }

    /// Notifications dropped because nobody read them in time.
    std::size_t dropped() const noexcept;
    /// The channel, or empty for a default-constructed object.
    const std::string& channel() const noexcept;

private:
    friend class pg_connection;
    explicit pg_listener(std::shared_ptr<detail::pg_listener_state> st) : state_(std::move(st)) {}
    void receive_impl(pg_notification& out,
                      boost::asio::any_completion_handler<void(error_code)> handler);
    void reset() noexcept;

    std::shared_ptr<detail::pg_listener_state> state_;
};

/// Counters of a PostgreSQL connection since it was constructed.
struct pg_connection_stats {
    std::uint64_t statements = 0;    ///< statements handed to libpq
    std::uint64_t results = 0;       ///< statements completed by the server's answer
    std::uint64_t notifications = 0; ///< NOTIFY messages received
    std::uint64_t connects = 0;      ///< successful connections (the first one included)
};

/// One PostgreSQL connection (libpq, non-blocking, in pipeline mode) shared by any number of
/// coroutines: their statements go out one behind the other without waiting for answers, and
/// the answers are matched in order. Each statement runs as its own transaction. `LISTEN` and
/// `NOTIFY` travel on the same socket. Construct it, start `async_run` once, then call
/// `async_query` from anywhere. Part of the optional library `corolock::postgres`.
///
/// Thread safety: every member function may be called from any thread; the connection
/// serialises its state on an internal strand. The object must outlive every operation started
/// on it.
class COROLOCK_DECL pg_connection {
public:
    /// The executor type of the connection.
    using executor_type = boost::asio::any_io_executor;

    /// A connection on `ex`, configured by `cfg`, logging to `log`. No I/O until `async_run`.
    explicit pg_connection(executor_type ex, pg_config cfg = {}, logger log = {});
    /// Stops `async_run` and fails outstanding statements with operation_aborted.
    ~pg_connection();
    pg_connection(const pg_connection&) = delete;
    pg_connection& operator=(const pg_connection&) = delete;

    /// The executor given to the constructor.
    executor_type get_executor() const noexcept;
    /// The configuration given to the constructor.
    const pg_config& config() const noexcept;

    /// Connects (libpq's `PQconnectStart`/`PQconnectPoll` on the executor), enters pipeline mode,
    /// listens again to every channel, then sends and reads until `cancel()`; after any loss it
    /// reconnects with capped exponential back-off and full jitter.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the connection must outlive the operation.
    /// Executor: the token's associated executor, else the connection's.
    /// Cancellation: terminal (the same as `cancel()`).
    /// Errors: `operation_aborted` after cancel; when reconnection is off
    /// (`reconnect_wait == 0`), the error that ended the connection (`not_connected` for a
    /// failed connect, whose libpq message goes to the logger, `connect_timeout`,
    /// `connection_lost`, `pong_timeout`); `operation_in_progress` for a second `async_run`.
    /// Thread safety: any thread; once per connection.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_run(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, pg_connection* self) { self->run_impl(std::move(handler)); }, token,
            this);
    }

    /// Runs one SQL statement with text parameters `$1`, `$2`, ... (their types are inferred by
    /// the server; cast in the SQL where it cannot tell) as its own transaction, and stores its
    /// result in `out`. The SQL and the parameters are copied when the operation starts.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: `out` must stay valid until completion.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial and total before the statement is handed to libpq (it
    /// is removed, never sent); terminal and partial after (it completes at once; its result is
    /// read and dropped, and whether it ran is unknown).
    /// Errors: `server_error` (the server refused or failed it: SQLSTATE and message in `out`),
    /// `readonly` (a write on a read-only server, such as a standby: SQLSTATE 25006),
    /// `not_connected` (waited longer than max_wait_for_connection, or the connection is
    /// stopped), `connection_lost` (handed to libpq, no answer: the outcome is unknown; it is
    /// never sent again), `invalid_argument` (a NUL byte in the SQL or a parameter: nothing is
    /// sent), `unexpected_reply` (a COPY, which this connection does not carry).
    /// Thread safety: any thread, concurrently with every other statement.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_query(std::string_view sql, std::span<const pg_param> params, pg_result& out,
                     CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, pg_connection* self, std::string_view sql,
               std::span<const pg_param> params,
               pg_result* out) { self->query_impl(sql, params, *out, std::move(handler)); },
            token, this, sql, params, &out);
    }
    /// As above, with no parameters.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_query(std::string_view sql, pg_result& out, CompletionToken&& token = {}) {
        return async_query(sql, std::span<const pg_param>(), out,
                           std::forward<CompletionToken>(token));
    }

    /// Listens to a channel (the `LISTEN` is queued like any statement, so a statement issued
    /// after this call reaches the server after it). No I/O here.
    pg_listener listen(std::string channel);

    /// Stops `async_run`, closes the connection and fails every outstanding statement with
    /// operation_aborted. Thread-safe.
    void cancel();

    /// True while a connection is established and in pipeline mode.
    bool is_connected() const noexcept;

    /// Counters of this connection (any thread).
    pg_connection_stats stats() const noexcept;

private:
    friend struct detail::access;
    void run_impl(boost::asio::any_completion_handler<void(error_code)> handler);
    void query_impl(std::string_view sql, std::span<const pg_param> params, pg_result& out,
                    boost::asio::any_completion_handler<void(error_code)> handler);

    std::shared_ptr<detail::pg_connection_impl> impl_;
};

} // namespace corolock

#endif
