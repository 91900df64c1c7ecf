// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL connection's driver: libpq's non-blocking API on an Asio stream_descriptor, in
// pipeline mode, serialised on a strand. The ordering of statements and results is decided by
// core/pg_statement_queue.hpp; this file only moves bytes and completes what it says.
#ifndef COROLOCK_SRC_IO_PG_CONNECTION_IMPL_HPP
#define COROLOCK_SRC_IO_PG_CONNECTION_IMPL_HPP

#include "core/access.hpp"
#include "core/backoff.hpp"
#include "postgres/core/pg_session_fsm.hpp"
#include "postgres/core/pg_statement_queue.hpp"
#include <corolock/postgres/connection.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

// libpq's handles (libpq-fe.h: PGconn, PGresult), named here without including it.
struct pg_conn;
struct pg_result;

namespace corolock::detail {

// One query of a statement: SQL and text parameters (nullopt: NULL).
struct pg_query {
    std::string sql;
    std::vector<std::optional<std::string>> params;
};

// One entry of the pipeline: its queries, then one sync point; it runs as one transaction (an
// implicit one, or the BEGIN ... COMMIT its queries spell out) and ends at its sync.
class pg_statement {
public:
    virtual ~pg_statement() = default;
    std::vector<pg_query> queries;
    std::vector<pg_result> results; // one per query, filled as the server answers
    std::uint64_t id = 0;           // in the statement queue
    bool done = false;
    // Called once, on the connection's strand, with the statement's outcome.
    virtual void complete(error_code ec) = 0;
};

// A statement that calls `f(ec, statement&)` on the strand: for corolock's own statements.
template <class F>
class callback_statement final : public pg_statement {
public:
    explicit callback_statement(F f) : f_(std::move(f)) {}
    void complete(error_code ec) override { f_(ec, *this); }

private:
    F f_;
};

template <class F>
std::shared_ptr<pg_statement> make_statement(std::vector<pg_query> queries, F f) {
    auto st = std::make_shared<callback_statement<F>>(std::move(f));
    st->queries = std::move(queries);
    return st;
}

// A listener's buffer and its one pending receive; on the strand.
struct pg_listener_state {
    using handler_type = boost::asio::any_completion_handler<void(error_code)>;
    std::string channel;
    std::weak_ptr<pg_connection_impl> conn;
    std::deque<pg_notification> buffer;
    std::optional<handler_type> waiting;
    pg_notification* out = nullptr;
    std::atomic<std::size_t> dropped{0};
    error_code failed; // set once for good (invalid channel, connection stopped)
    // corolock's own listeners take each notification at once instead of buffering it.
    std::function<void(const pg_notification&)> sink;
};

class pg_lock_service;

class pg_connection_impl : public std::enable_shared_from_this<pg_connection_impl> {
public:
    using executor_type = boost::asio::any_io_executor;
    using strand_type = boost::asio::strand<executor_type>;
    using clock = std::chrono::steady_clock;

    pg_connection_impl(executor_type ex, pg_config cfg, logger log);
    ~pg_connection_impl();

    executor_type get_executor() const noexcept { return ex_; }
    const strand_type& strand() const noexcept { return strand_; }
    const pg_config& config() const noexcept { return cfg_; }
    const logger& log() const noexcept { return log_; }
    bool is_connected() const noexcept { return connected_.load(std::memory_order_relaxed); }
    pg_connection_stats stats() const noexcept;

    // On the strand from here on.
    void run(boost::asio::any_completion_handler<void(error_code)> h);
    void stop();
    // Queues `st` and sends it at once when connected.
    void submit(std::shared_ptr<pg_statement> st);
    // A cancellation of `st` of type `t` (see pg_connection::async_query).
    void cancel_statement(const std::shared_ptr<pg_statement>& st,
                          boost::asio::cancellation_type_t t);
    void add_listener(const std::shared_ptr<pg_listener_state>& l);
    void remove_listener(pg_listener_state* l);
    // A listener's receive: completes at once from the buffer, or waits.
    void receive(const std::shared_ptr<pg_listener_state>& l, pg_notification& out,
                 pg_listener_state::handler_type h);
    // Drops the current connection (a test's or the lock layer's fault reaction): in-flight
    // statements fail with `why`'s connection_lost, the run loop reconnects.
    void drop(error_code why);

    // Called on the strand after each (re)connect, once the LISTENs are queued: the lock
    // layer's hook (renew now, retry waiters).
    std::function<void()> on_connected;
    // The lock layer of this connection, made on first use (pg_lock_service::of).
    std::mutex lock_service_mutex;
    std::weak_ptr<pg_lock_service> lock_service;

    // The SQLSTATE-derived code of a finished statement (first failed query), else {}.
    static error_code statement_error(const pg_statement& st) noexcept;

private:
    boost::asio::awaitable<void> run_loop();
    boost::asio::awaitable<error_code> connect_once();
    boost::asio::awaitable<error_code> session();
    void reassign_socket();
    void close_connection(error_code why);
    // Sends what is queued, once the session is open (pg_session_fsm).
    void send_queued();
    // Hands up to `max` queued statements to libpq, in order.
    void send(std::size_t max);
    // The session's first statement: ends the predecessor if it must, learns this one's identity.
    void open_session(const pg_session_fsm::opening& o);
    void flush();
    void read_results();
    void deliver_notifications();
    void store(::pg_result* r, pg_statement& st);
    void finish(const std::shared_ptr<pg_statement>& st, error_code ec);
    void arm_expiry();
    void arm_health();
    void listen_statement(const std::string& channel, bool listen, bool front);
    // The connection is over for good: statements still queued fail, listeners end.
    void finish_all();

    executor_type ex_;
    strand_type strand_;
    pg_config cfg_;
    logger log_;
    pg_conn* conn_ = nullptr;
    boost::asio::posix::stream_descriptor sd_;
    boost::asio::steady_timer retry_timer_;
    boost::asio::steady_timer connect_timer_;
    boost::asio::steady_timer health_timer_;
    boost::asio::steady_timer expiry_timer_;
    pg_statement_queue<std::shared_ptr<pg_statement>> queue_;
    pg_session_fsm sessions_;
    std::map<std::string, std::vector<std::weak_ptr<pg_listener_state>>> listeners_;
    std::optional<boost::asio::any_completion_handler<void(error_code)>> run_handler_;
    std::optional<error_code> drop_reason_;
    std::atomic<bool> connected_{false};
    bool running_ = false;
    bool stopped_ = false;      // over for good (stop(), or reconnection off and lost)
    bool user_stopped_ = false; // stop() was called
    bool flush_pending_ = false;
    bool waiting_read_only_ = false;
    bool probe_in_flight_ = false;
    bool activity_ = false;
    std::uint64_t session_ = 0; // counts sessions: a timer of an old one does nothing
    std::minstd_rand rng_;
    std::atomic<std::uint64_t> statements_{0}, results_{0}, notifications_{0}, connects_{0};
};

} // namespace corolock::detail

#endif
