// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_CONNECTION_HPP
#define COROLOCK_CONNECTION_HPP

#include <corolock/config.hpp>
#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/logger.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace boost::asio {
class io_context;
namespace ssl {
class context;
}
} // namespace boost::asio

namespace corolock {

namespace detail {
class connection_impl;
struct subscription_state;
} // namespace detail

/// A pub/sub message.
struct message {
    /// The channel it was published on.
    std::string channel;
    /// The published text.
    std::string payload;
};

/// Counters of a connection since it was constructed.
struct connection_stats {
    std::uint64_t commands = 0; ///< commands written
    std::uint64_t writes = 0;   ///< socket writes (one write carries many requests)
    /// Bytes written to the sockets.
    std::uint64_t bytes_written = 0;
    /// Bytes read from the sockets.
    std::uint64_t bytes_read = 0;
    std::uint64_t replies = 0;         ///< replies matched to requests
    std::uint64_t pushes = 0;          ///< RESP3 push frames received
    std::uint64_t pushes_dropped = 0;  ///< messages dropped because a subscriber fell behind
    std::uint64_t connects = 0;        ///< successful connections (the first one included)
    std::uint64_t resolves = 0;        ///< masters found through Sentinel
    std::uint64_t master_switches = 0; ///< `+switch-master` messages that dropped the connection
};

/// A subscription to one pub/sub channel, made by `connection::subscribe`. While it lives,
/// messages on its channel are buffered (up to connection_config::push_buffer_size; beyond that
/// the oldest is dropped and counted) and read with `async_receive`. The connection re-issues
/// SUBSCRIBE after every reconnect. Destroying it unsubscribes. Move-only.
class COROLOCK_DECL subscription {
public:
    subscription() = default;
    /// Takes `other`'s ownership; `other` is left empty.
    subscription(subscription&&) noexcept = default;
    /// Gives up what this object holds, then takes `other`'s; `other` is left empty.
    subscription& operator=(subscription&& other) noexcept;
    ~subscription();

    /// Waits for the next message.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: `out` must stay valid until completion.
    /// Executor: completes on the token's associated executor (else the connection's).
    /// Cancellation: terminal, partial and total (no message is lost when cancelled).
    /// Errors: `boost::asio::error::operation_aborted` when cancelled or when the connection
    /// stops for good; `error::subscribe_refused` when the server refused the SUBSCRIBE (e.g.
    /// NOPERM: the ACL user has no rights on the channel; the server's text goes to the
    /// connection's logger). That failure is final for this object: the connection does not
    /// retry it. Messages buffered before it are still delivered first.
    /// Thread safety: one receive at a time per subscription.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_receive(message& out, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, subscription* self, message* out) {
                self->async_receive_impl(*out, std::move(handler));
            },
            token, this, &out);
    }

    /// Messages dropped on this subscription because nobody read them in time.
    std::size_t dropped() const noexcept;
    /// The channel, or empty for a default-constructed object.
    const std::string& channel() const noexcept;

private:
    friend class connection;
    explicit subscription(std::shared_ptr<detail::subscription_state> st) : state_(std::move(st)) {}
    void async_receive_impl(message& out,
                            boost::asio::any_completion_handler<void(error_code)> handler);
    void reset() noexcept;

    std::shared_ptr<detail::subscription_state> state_;
};

/// One Redis connection shared by any number of coroutines (pipelined, RESP3, pub/sub on the same
/// socket). Construct it, start `async_run` once, then call `async_exec` from anywhere.
///
/// Thread safety: every member function may be called from any thread; the connection serialises
/// its state on an internal strand. The object must outlive every operation started on it.
class COROLOCK_DECL connection {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;

    /// Makes a connection on `ex`, not yet connected: start `async_run`. `log` receives the
    /// connection's lines and the lock layer's.
    explicit connection(executor_type ex, connection_config cfg = {}, logger log = {});
    /// On `ioc.get_executor()`, as Boost.Redis and Boost.MySQL allow: `connection conn(ioc);`.
    explicit connection(boost::asio::io_context& ioc, connection_config cfg = {}, logger log = {});
    /// With TLS: `tls` must outlive the connection; set `cfg.use_tls` (a `rediss://` URL does).
    connection(executor_type ex, boost::asio::ssl::context& tls, connection_config cfg = {},
               logger log = {});
    /// With TLS, on `ioc.get_executor()`.
    connection(boost::asio::io_context& ioc, boost::asio::ssl::context& tls,
               connection_config cfg = {}, logger log = {});
    /// Stops `async_run` and fails outstanding requests with operation_aborted.
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The configuration given at construction.
    const connection_config& config() const noexcept;

    /// Connects, sends HELLO 3 (with AUTH and SETNAME) and SELECT, then reads and writes until
    /// `cancel()`; after any loss it reconnects with capped exponential back-off and full jitter.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the connection must outlive the operation.
    /// Executor: completes on the token's associated executor (else the connection's).
    /// Cancellation: terminal (the same as `cancel()`).
    /// Errors: `operation_aborted` after cancel; when reconnection is off
    /// (`reconnect_wait == 0`), the error that ended the connection; `operation_in_progress`
    /// for a second `async_run`.
    /// Thread safety: any thread; once per connection.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_run(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, connection* self) { self->async_run_impl(std::move(handler)); }, token,
            this);
    }

    /// Sends a request (queued, pipelined with every other request queued meanwhile, replies
    /// matched in order) and stores its replies in `resp` (`generic_response` or `ignore`).
    ///
    /// Completion signature: `void(error_code, std::size_t bytes_read)`.
    /// Object lifetimes: `req` and `resp` must stay valid until completion.
    /// Executor: completes on the token's associated executor (else the connection's); never
    /// inside the initiating call.
    /// Cancellation: terminal, partial and total before the request is written (it is removed);
    /// terminal and partial after (it completes at once; its reply will be read and dropped).
    /// Errors: `not_connected` (waited longer than max_wait_for_connection, or the connection is
    /// stopped), `connection_lost` (written, no reply: the outcome on the server is unknown; it is
    /// never re-sent), `operation_aborted` (also for a request written but unanswered when the
    /// connection is stopped by cancel() or its destruction: its outcome is unknown too),
    /// protocol errors, `message_too_large` (a reply longer than max_read_size,
    /// which drops the connection, or with more than max_reply_nodes values into a
    /// `generic_response`, which does not), and with `ignore` the code of the first error reply
    /// (`classify_server_error`: `server_error`, `wrong_type`, a `condition::not_executed` code,
    /// or `subscribe_refused` for a refused subscription command), `blocking_command` (a
    /// blocking command while the connection carries leases, unless
    /// `connection_config::allow_blocking_commands`: nothing is sent).
    /// Thread safety: any thread, concurrently with every other request.
    template <class Response, class CompletionToken = boost::asio::deferred_t>
    auto async_exec(const request& req, Response& resp, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
            [](auto handler, connection* self, const request* req, detail::response_adapter a) {
                self->async_exec_impl(*req, a, std::move(handler));
            },
            token, this, &req, detail::make_adapter(resp));
    }
    /// As above, for a request whose replies are read and dropped (`corolock::ignore`).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_exec(const request& req, ignore_t, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
            [](auto handler, connection* self, const request* req) {
                self->async_exec_impl(*req, detail::make_adapter(ignore), std::move(handler));
            },
            token, this, &req);
    }

    /// Runs a script: EVALSHA, and on NOSCRIPT once more with EVAL. The script's reply (or error
    /// reply) is stored in `resp`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: `s`, `resp`, and the keys and args must stay valid until completion (as
    /// an Asio operation's buffers); the request is built when the operation starts, so a
    /// `deferred` operation does nothing until it is awaited.
    /// Executor: as `async_exec`.
    /// Cancellation: as `async_exec`.
    /// Errors: as `async_exec`; the script's own error reply gives `server_error` (or its
    /// `classify_server_error` code), with the text in `resp`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_eval(const script& s, std::span<const std::string_view> keys,
                    std::span<const std::string_view> args, generic_response& resp,
                    CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, connection* self, const script* s,
               std::span<const std::string_view> keys, std::span<const std::string_view> args,
               generic_response* resp) {
                self->async_eval_impl(*s, keys, args, *resp, std::move(handler));
            },
            token, this, &s, keys, args, &resp);
    }

    /// Subscribes to a channel (SUBSCRIBE is queued like any request, so a request issued after
    /// this call reaches the server after the subscription).
    subscription subscribe(std::string channel);

    /// Stops `async_run`, closes the socket and fails every outstanding request with
    /// operation_aborted. Requests queued but not yet written are first written, best effort
    /// (one non-blocking write, plain TCP or unix sockets, not TLS), so a lease dropped just
    /// before still sends its release: their outcome is unknown, as for requests in flight.
    /// Thread-safe.
    void cancel();

    /// True while a connection is established and set up.
    bool is_connected() const noexcept;

    /// A snapshot of the counters (each read on its own, relaxed).
    connection_stats stats() const noexcept;

private:
    friend struct detail::access;
    void async_run_impl(boost::asio::any_completion_handler<void(error_code)> handler);
    void async_exec_impl(const request& req, detail::response_adapter adapter,
                         boost::asio::any_completion_handler<void(error_code, std::size_t)> h);
    void async_eval_impl(const script& s, std::span<const std::string_view> keys,
                         std::span<const std::string_view> args, generic_response& resp,
                         boost::asio::any_completion_handler<void(error_code)> handler);

    std::shared_ptr<detail::connection_impl> impl_;
};

} // namespace corolock

#endif
