// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What the lock layer sends through: one connection, or a cluster that routes each lock script
// to the master of its key's slot. A concrete class, not an interface: the single connection's
// path is the template eval_on_strand, unchanged and allocation-free; only the cluster's path
// goes through the router's type-erased handler.
#ifndef COROLOCK_SRC_DETAIL_LOCK_TRANSPORT_HPP
#define COROLOCK_SRC_DETAIL_LOCK_TRANSPORT_HPP

#include "io/connection_impl.hpp"
#include "io/exec.hpp"

#include <boost/asio/any_completion_handler.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace corolock::detail {

class cluster_impl;

class lock_transport {
public:
    // These keep their connection or cluster alive (a mutex's spec does).
    explicit lock_transport(std::shared_ptr<connection_impl> c);
    explicit lock_transport(std::shared_ptr<cluster_impl> c);
    // The same target, not kept alive: for the lock service, which its connection or cluster
    // owns (owning it back would be a cycle, and neither would ever be freed).
    lock_transport borrowed() const {
        auto t = *this;
        t.keep_.reset();
        return t;
    }

    const boost::asio::any_io_executor& executor() const noexcept { return executor_; }
    // The strand every lock decision runs on (the connection's, or the cluster's).
    const boost::asio::any_io_executor& strand() const noexcept { return strand_; }
    const logger& log() const noexcept { return *log_; }
    // Releases publish with SPUBLISH and waiters subscribe with SSUBSCRIBE (a cluster).
    bool sharded() const noexcept { return cluster_ != nullptr; }
    // Strand only. Why the connection is down while it is: its last connect attempt's error
    // (auth_failed, a refused port, a TLS error); none while up, before an attempt failed, or on
    // a cluster (whose nodes each have their own).
    error_code down_cause() const noexcept { return conn_ ? conn_->down_cause() : error_code(); }
    cluster_impl* cluster() const noexcept { return cluster_; }

    // Strand only. Runs a lock script whose keys share `key`'s slot: `req` as built (EVALSHA,
    // then EVAL once on NOSCRIPT; or EVAL), then `done(ec)` on the strand. `s`, `req` and `resp`
    // must live until then (`done` may own them). `try_once`: on a cluster, a slot being
    // migrated (TRYAGAIN) fails with error::try_again instead of being waited out.
    template <class Done>
    void eval(const script& s, std::string_view key, const request& req, generic_response& resp,
              Done done, bool try_once = false) const {
        if (conn_)
            return eval_on_strand(*conn_, s, req, resp, std::move(done));
        eval_routed(s, key, req, resp,
                    boost::asio::any_completion_handler<void(error_code)>(std::move(done)),
                    try_once);
    }

    // Any thread: requests queued while it lives leave together (connection_impl::write_batch;
    // nothing to do on a cluster, whose nodes are written by their own writers).
    connection_impl::write_batch write_batch(bool on = true) const noexcept {
        return connection_impl::write_batch(on ? conn_ : nullptr);
    }

    // Any thread: a user's request (start_exec / start_eval of the connection, routed by `key` on
    // a cluster). Completes on the handler's executor.
    void exec(std::string_view key, std::shared_ptr<const request> req, response_adapter out,
              boost::asio::any_completion_handler<void(error_code, std::size_t)> h) const;
    void start_eval(const script& s, std::string_view key, std::shared_ptr<request> req,
                    generic_response& resp,
                    boost::asio::any_completion_handler<void(error_code)> h) const;

    // Any thread: `s` with these keys and args (EVALSHA, then EVAL once on NOSCRIPT), routed by
    // `key`; `done(ec)` on the strand, with the reply in `*resp`. The keys and args are copied
    // into the request before this returns.
    void run_script(const script& s, std::string_view key, std::span<const std::string_view> keys,
                    std::span<const std::string_view> args, std::shared_ptr<generic_response> resp,
                    boost::asio::any_completion_handler<void(error_code)> done) const;

    // Strand only: pub/sub of the release channel.
    void add_listener(const std::string& channel, std::shared_ptr<push_listener> l) const;
    void remove_listener(const std::string& channel, const push_listener* l) const;

private:
    void eval_routed(const script& s, std::string_view key, const request& req,
                     generic_response& resp,
                     boost::asio::any_completion_handler<void(error_code)> done,
                     bool try_once) const;

    connection_impl* conn_ = nullptr;
    cluster_impl* cluster_ = nullptr;
    std::shared_ptr<void> keep_; // empty when borrowed
    boost::asio::any_io_executor executor_;
    boost::asio::any_io_executor strand_;
    const logger* log_;
};

} // namespace corolock::detail

#endif
