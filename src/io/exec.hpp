// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Queueing a request on a connection for corolock's own layers: with a caller's erased handler
// (start_exec, start_eval) or with a continuation that runs on the strand (strand_call,
// eval_on_strand); both retry an EVALSHA as EVAL on NOSCRIPT.
#ifndef COROLOCK_SRC_IO_EXEC_HPP
#define COROLOCK_SRC_IO_EXEC_HPP

#include "core/lock_policy.hpp"
#include "core/script_request.hpp"
#include "io/connection_impl.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include <cstddef>
#include <memory>

namespace corolock::detail {

// async_exec for corolock's own layers (wires the handler's cancellation slot, then queues the
// entry on the strand): `req` and the adapter's target must outlive it.
void start_exec(const std::shared_ptr<connection_impl>& impl, const request& req,
                response_adapter adapter,
                boost::asio::any_completion_handler<void(error_code, std::size_t)> handler);

// EVALSHA, and EVAL once more on NOSCRIPT. `req` comes from make_evalsha (core/script_request).
void start_eval(const std::shared_ptr<connection_impl>& impl, const script& s,
                std::shared_ptr<request> req, generic_response& resp,
                boost::asio::any_completion_handler<void(error_code)> handler);

// A request of corolock's own layers, queued on the strand: the entry carries `done`, which runs
// on the strand, never inside the multiplexer: right after it, when a reply completed the entry
// (connection_impl::continue_inline), else posted (a failure, a reconnect). One allocation, no
// type-erased handler and no executor copies (start_exec has all three). Never cancelled: the
// lock layer decides what a late reply means.
template <class Done>
class strand_call final : public exec_entry, connection_impl::inline_continuation {
public:
    strand_call(connection_impl& c, const request& req, response_adapter adapter, Done done)
        : exec_entry(req, adapter, clock::now()), conn_(c), done_(std::move(done)) {}

private:
    void on_complete(error_code ec, std::size_t) override {
        ec_ = ec;
        if (conn_.continue_inline(*this))
            return;
        boost::asio::post(conn_.strand(), [done = std::move(done_), ec]() mutable { done(ec); });
    }
    void run() override { done_(ec_); }

    connection_impl& conn_; // owns the multiplexer that owns this entry
    Done done_;
    error_code ec_;
};

// start_eval for corolock's own layers, on the strand: EVALSHA `req`, and EVAL once more on
// NOSCRIPT; then `done(ec)` runs on the strand. `c`, `s`, `req` and `resp` must live until then
// (`done` may own them).
template <class Done>
void eval_on_strand(connection_impl& c, const script& s, const request& req, generic_response& resp,
                    Done done) {
    auto retry = [&c, &s, &req, &resp, done = std::move(done)](error_code ec) mutable {
        if (ec || !is_noscript(resp))
            return done(ec);
        resp.clear();
        auto eval = std::make_shared<request>(evalsha_to_eval(req, s));
        auto last = [eval, done = std::move(done)](error_code ec) mutable { done(ec); };
        c.add_entry(std::make_shared<strand_call<decltype(last)>>(
            c, *eval, make_adapter(resp, max_lock_reply_nodes), std::move(last)));
    };
    c.add_entry(std::make_shared<strand_call<decltype(retry)>>(
        c, req, make_adapter(resp, max_lock_reply_nodes), std::move(retry)));
}

} // namespace corolock::detail

#endif
