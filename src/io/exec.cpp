// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// start_exec and start_eval: a caller's request, its cancellation wired, queued on the strand.
#include "io/exec.hpp"

#include "core/exec_cancel.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

namespace corolock::detail {

namespace asio = boost::asio;

namespace {

// A request sent on behalf of a caller: completes its handler.
class exec_op final : public exec_entry {
public:
    using handler_type = asio::any_completion_handler<void(error_code, std::size_t)>;

    exec_op(const request& req, response_adapter adapter, handler_type h,
            const asio::any_io_executor& fallback)
        : exec_entry(req, adapter, clock::now()), handler_(std::move(h)), fallback_(fallback),
          work_(tracked_work(handler_executor(handler_, fallback))) {}

private:
    void on_complete(error_code ec, std::size_t n) override {
        // The post holds work on the handler's executor from here on.
        deliver_on(work_, std::move(handler_), fallback_, ec, n);
        work_ = {};
    }

    handler_type handler_;
    asio::any_io_executor fallback_;     // the connection's: never-blocking posts go there
    asio::any_completion_executor work_; // keeps the caller's executor from running out of work
};

} // namespace

void start_eval(const std::shared_ptr<connection_impl>& impl, const script& s,
                std::shared_ptr<request> req, generic_response& resp,
                asio::any_completion_handler<void(error_code)> handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto ex = asio::get_associated_executor(handler, impl->executor());
    auto retry = [impl, s = &s, req, resp = &resp, slot, ex,
                  h = std::move(handler)](error_code ec, std::size_t) mutable {
        if (ec || !is_noscript(*resp)) {
            std::move(h)(ec);
            return;
        }
        resp->clear();
        auto eval = std::make_shared<request>(evalsha_to_eval(*req, *s));
        start_exec(impl, *eval, make_adapter(*resp),
                   asio::bind_cancellation_slot(
                       slot, asio::bind_executor(
                                 ex, [eval, h = std::move(h)](error_code ec, std::size_t) mutable {
                                     std::move(h)(ec);
                                 })));
    };
    start_exec(impl, *req, make_adapter(resp),
               asio::bind_cancellation_slot(slot, asio::bind_executor(ex, std::move(retry))));
}

void start_exec(const std::shared_ptr<connection_impl>& impl, const request& req,
                response_adapter adapter,
                asio::any_completion_handler<void(error_code, std::size_t)> handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto op = std::make_shared<exec_op>(req, adapter, std::move(handler), impl->executor());
    if (slot.is_connected()) {
        slot.assign([weak = std::weak_ptr<exec_entry>(op), impl](asio::cancellation_type t) {
            asio::post(impl->strand(), [weak, impl, t] {
                auto e = weak.lock();
                if (e && (!e->written() || cancels_written(t)))
                    impl->cancel_entry(e);
            });
        });
    }
    impl->submit(std::move(op));
}

} // namespace corolock::detail
