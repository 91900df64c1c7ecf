// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_CLUSTER_HPP
#define COROLOCK_CLUSTER_HPP

#include <corolock/config.hpp>
#include <corolock/connection.hpp>
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

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corolock {

namespace detail {
class cluster_impl;
} // namespace detail

/// Settings of a `cluster`. A zero duration turns its feature off, as the comment says.
struct cluster_config {
    /// Nodes asked for the topology (CLUSTER SHARDS) until one answers; any node will do.
    std::vector<address> seeds;
    /// Template of every node connection: credentials, TLS, timeouts, health check, limits.
    /// Its host, port and unix_socket are ignored (the topology gives the address).
    connection_config node;
    /// Ask for the topology again this often (0: only on MOVED, CLUSTERDOWN and failures).
    std::chrono::steady_clock::duration refresh_interval = std::chrono::seconds(5);
    /// One CLUSTER SHARDS question may take this long before the next node is asked.
    std::chrono::steady_clock::duration refresh_timeout = std::chrono::seconds(1);
    /// Most re-sends of one request (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, a node that was
    /// never reached) before it fails with error::too_many_redirects.
    unsigned max_redirects = 16;
    /// Wait before re-sending after TRYAGAIN, CLUSTERDOWN or LOADING.
    std::chrono::steady_clock::duration try_again_delay = std::chrono::milliseconds(100);
};

/// Counters of a cluster since it was constructed.
struct cluster_stats {
    std::uint64_t moved = 0;     ///< MOVED replies (each re-sent to the new owner)
    std::uint64_t asks = 0;      ///< ASK replies (each re-sent with ASKING)
    std::uint64_t retries = 0;   ///< TRYAGAIN, CLUSTERDOWN, LOADING or unreachable-node waits
    std::uint64_t refreshes = 0; ///< topology refreshes that succeeded
    std::uint64_t refresh_failures = 0; ///< refreshes that found no node to answer
    std::uint64_t nodes = 0;            ///< node connections open now
};

/// A Redis Cluster client: the slot map, one multiplexed `connection` per master (made on first
/// use), and the routing of each request to the master of its slot, following MOVED and ASK
/// redirects and waiting out TRYAGAIN, CLUSTERDOWN and LOADING. Construct it, start `async_run`
/// once, then call `async_exec` / `async_eval` from anywhere. See doc/cluster.md.
///
/// A request is sent again only when the reply proves it did not run (MOVED, ASK, TRYAGAIN,
/// CLUSTERDOWN, LOADING) or when it was never written (its node could not be reached). A request
/// whose connection dropped after the write fails with `connection_lost` and is never re-sent.
///
/// Thread safety: every member function may be called from any thread; the cluster serialises
/// its state on an internal strand. The object must outlive every operation started on it.
class COROLOCK_DECL cluster {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;

    /// Makes a cluster on `ex`, not yet connected: start `async_run`. `log` receives the cluster's
    /// lines and the lock layer's.
    explicit cluster(executor_type ex, cluster_config cfg = {}, logger log = {});
    /// On `ioc.get_executor()`: `cluster c(ioc, cfg);`.
    explicit cluster(boost::asio::io_context& ioc, cluster_config cfg = {}, logger log = {});
    /// With TLS: `tls` must outlive the cluster; set `cfg.node.use_tls`.
    cluster(executor_type ex, boost::asio::ssl::context& tls, cluster_config cfg = {},
            logger log = {});
    /// With TLS, on `ioc.get_executor()`.
    cluster(boost::asio::io_context& ioc, boost::asio::ssl::context& tls, cluster_config cfg = {},
            logger log = {});
    /// Stops `async_run` and every node connection.
    ~cluster();
    cluster(const cluster&) = delete;
    cluster& operator=(const cluster&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The configuration given at construction.
    const cluster_config& config() const noexcept;

    /// Learns the topology from the seeds, then refreshes it every `refresh_interval` (and on
    /// demand), opening connections to new masters and closing those to nodes that left, until
    /// `cancel()`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: none beyond the cluster's.
    /// Executor: completes on the token's associated executor (else the cluster's).
    /// Cancellation: terminal (the same as `cancel()`).
    /// Errors: `operation_aborted` after cancel; `operation_in_progress` for a second run;
    /// `invalid_argument` when there are no seeds.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_run(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, cluster* self) { self->async_run_impl(std::move(handler)); }, token,
            this);
    }

    /// Sends a request to the master of `routing_key`'s slot (every key of every command in it
    /// must map to that slot: the cluster does not parse commands) and stores the replies of the
    /// last attempt in `resp` (`generic_response` or `ignore`).
    ///
    /// Completion signature: `void(error_code, std::size_t bytes_read)`.
    /// Object lifetimes: `req` and `resp` must stay valid until completion.
    /// Executor: completes on the token's associated executor (else the cluster's); never inside
    /// the initiating call.
    /// Cancellation: terminal, partial and total; a request already written completes at once
    /// and its reply is dropped (it may have run).
    /// Errors: as `connection::async_exec`, plus `too_many_redirects` (max_redirects re-sends),
    /// `cluster_down` (no master serves the slot), `not_connected` after `cancel()`.
    /// Thread safety: any thread.
    template <class Response, class CompletionToken = boost::asio::deferred_t>
    auto async_exec(std::string_view routing_key, const request& req, Response& resp,
                    CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
            [](auto handler, cluster* self, std::string_view key, const request* req,
               detail::response_adapter a) {
                self->async_exec_impl(key, *req, a, std::move(handler));
            },
            token, this, routing_key, &req, detail::make_adapter(resp));
    }
    /// As above, for a request whose replies are read and dropped (`corolock::ignore`).
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_exec(std::string_view routing_key, const request& req, ignore_t,
                    CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
            [](auto handler, cluster* self, std::string_view key, const request* req) {
                self->async_exec_impl(key, *req, detail::make_adapter(ignore), std::move(handler));
            },
            token, this, routing_key, &req);
    }

    /// Runs a script on the master of its keys' slot: EVALSHA, and EVAL on NOSCRIPT (each node
    /// has its own script cache). The script's reply (or error reply) is stored in `resp`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: `s` and `resp` must stay valid until completion; keys and args are
    /// copied before the call returns.
    /// Executor: completes on the token's associated executor (else the cluster's).
    /// Cancellation: as `async_exec`.
    /// Errors: `cross_slot` before anything is sent when the keys map to different slots (use a
    /// hash tag: `{order-7}:a`, `{order-7}:b`); otherwise as `async_exec`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_eval(const script& s, std::span<const std::string_view> keys,
                    std::span<const std::string_view> args, generic_response& resp,
                    CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, cluster* self, const script* s, std::span<const std::string_view> k,
               std::span<const std::string_view> a, generic_response* resp) {
                self->async_eval_impl(*s, k, a, *resp, std::move(handler));
            },
            token, this, &s, keys, args, &resp);
    }

    /// Stops `async_run` and every node connection; outstanding requests fail. Thread-safe.
    void cancel();

    /// True while every slot has a master in the map and the cluster is running.
    bool is_connected() const noexcept;

    /// A snapshot of the counters (each read on its own, relaxed).
    cluster_stats stats() const noexcept;

private:
    friend struct detail::access;
    void async_run_impl(boost::asio::any_completion_handler<void(error_code)> handler);
    void async_exec_impl(std::string_view routing_key, const request& req,
                         detail::response_adapter adapter,
                         boost::asio::any_completion_handler<void(error_code, std::size_t)> h);
    void async_eval_impl(const script& s, std::span<const std::string_view> keys,
                         std::span<const std::string_view> args, generic_response& resp,
                         boost::asio::any_completion_handler<void(error_code)> handler);

    std::shared_ptr<detail::cluster_impl> impl_;
};

} // namespace corolock

#endif
