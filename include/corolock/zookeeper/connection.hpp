// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ZOOKEEPER_CONNECTION_HPP
#define COROLOCK_ZOOKEEPER_CONNECTION_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/logger.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

// The ZooKeeper backend's session (corolock::zookeeper, doc/zookeeper.md): one ZooKeeper session
// driven from Asio by the single-threaded C client, shared by every zk_mutex built on it.
namespace corolock {

namespace detail {
class zk_session;
} // namespace detail

/// Where a ZooKeeper session stands (doc/zookeeper.md, "Suspended").
enum class zk_session_state {
    connecting, ///< no session yet: looking for a server of the ensemble
    connected,  ///< the session is alive and a server answers: leases are valid
    suspended,  ///< the server was lost; the session may live on: leases stay valid until their
                ///< `valid_until()`, then are reported lost
    expired,    ///< the session is gone with its nodes (a new one is being opened)
    closed,     ///< stopped by `cancel()`, or the credentials were refused
};

/// "connecting", "connected", ...
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, zk_session_state s);

/// Settings of a `zk_connection`.
struct zk_config {
    /// The ensemble: "host:port,host:port,...".
    std::string hosts = "127.0.0.1:2181";
    /// A path every other path is relative to ("/app"; empty: none). The node must exist.
    std::string chroot;
    /// The session timeout asked for; the servers bound it (2 to 20 ticks by default).
    std::chrono::steady_clock::duration session_timeout = std::chrono::seconds(10);
    /// Taken off a lease's validity (the leader's expiry of the session, as proven by sync round
    /// trips): the two clocks' rates, a holder's reaction time, and a stale leader's last tick.
    /// Zero means a fifth of the negotiated timeout; less than a sixth of it counts as a sixth.
    std::chrono::steady_clock::duration loss_margin = std::chrono::steady_clock::duration::zero();
    /// Digest credentials (`user:password` to ZooKeeper); an empty user means none. With them,
    /// lock nodes get the creator-only ACL.
    std::string digest_user;
    /// The digest password.
    std::string digest_password;
    /// Session changes, lost leases and refused requests.
    logger log;
};

/// One ZooKeeper session on an executor: what `zk_mutex` and `zk_shared_mutex` take their locks
/// through. `async_run` drives it (the C client's socket and timers) until `cancel()`; requests
/// wait while it is not connected. The user never sees a C callback: completions are posted to
/// each caller's executor.
///
/// Thread safety: as Asio's objects (one thread at a time), but the session's own work runs on a
/// strand of the executor, so an io_context run by several threads may share it.
class COROLOCK_DECL zk_connection {
public:
    /// The executor the connection was made with.
    using executor_type = boost::asio::any_io_executor;

    /// No I/O until async_run. The config is checked there.
    zk_connection(executor_type ex, zk_config config);
    /// Closes the session (its nodes go at once) and cancels async_run.
    ~zk_connection();
    zk_connection(const zk_connection&) = delete;
    zk_connection& operator=(const zk_connection&) = delete;

    /// The executor given at construction.
    executor_type get_executor() const noexcept;
    /// The settings given at construction.
    const zk_config& config() const noexcept;
    /// The session's state now.
    zk_session_state state() const noexcept;
    /// The timeout the servers granted (zero before the first connect).
    std::chrono::milliseconds session_timeout() const noexcept;
    /// How many sessions were opened: 1 after the first connect, one more after each expiry.
    unsigned sessions() const noexcept;

    /// Runs the session: connects, reconnects, opens a new session after an expiry (every
    /// lease of the old one is then lost), until `cancel()`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the connection must outlive the operation.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, as `cancel()`.
    /// Errors: `operation_aborted` after `cancel()`; `auth_failed` (digest refused);
    /// `invalid_argument` (empty hosts, a chroot that is not a valid path);
    /// `operation_in_progress` for a second run.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_run(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, zk_connection* self) { self->run_impl(std::move(handler)); }, token,
            this);
    }

    /// Reads a node's data (to check what fenced writes wrote).
    ///
    /// Completion signature: `void(error_code, std::string)`.
    /// Object lifetimes: the connection must outlive the operation; `path` is copied.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none (it waits for the reply, or the session's end).
    /// Errors: `invalid_name` (not a valid path); `server_error` (no such node, or refused: the
    /// log says which); `connection_lost` (the connection was stopped first).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_get(std::string path, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::string)>(
            [](auto handler, zk_connection* self, std::string path) {
                self->get_impl(std::move(path), std::move(handler));
            },
            token, this, std::move(path));
    }

    /// Stops async_run and closes the session: its ephemeral nodes (held locks) go at once.
    void cancel();

private:
    friend class zk_mutex;
    friend class zk_shared_mutex;
    friend class zk_election;
    void run_impl(boost::asio::any_completion_handler<void(error_code)> h);
    void get_impl(std::string path,
                  boost::asio::any_completion_handler<void(error_code, std::string)> h);

    zk_config config_;
    std::shared_ptr<detail::zk_session> impl_;
};

} // namespace corolock

#endif
