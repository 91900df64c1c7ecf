// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/lock_transport.hpp"

#include "core/script_request.hpp"
#include "core/slot_table.hpp"
#include "io/cluster_impl.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>

namespace corolock::detail {

namespace asio = boost::asio;

namespace {

std::shared_ptr<const request> eval_form(const script& s, const request& req) {
    return starts_with_evalsha(req) ? std::make_shared<const request>(evalsha_to_eval(req, s))
                                    : nullptr;
}

} // namespace

lock_transport::lock_transport(std::shared_ptr<connection_impl> c)
    : conn_(c.get()), keep_(std::move(c)), executor_(conn_->executor()), strand_(conn_->strand()),
      log_(&conn_->log()) {}

lock_transport::lock_transport(std::shared_ptr<cluster_impl> c)
    : cluster_(c.get()), keep_(std::move(c)), executor_(cluster_->executor()),
      strand_(cluster_->strand()), log_(&cluster_->log()) {}

void lock_transport::eval_routed(const script& s, std::string_view key, const request& req,
                                 generic_response& resp,
                                 asio::any_completion_handler<void(error_code)> done,
                                 bool try_once) const {
    // `req` outlives the call (the caller's `done` owns it): an alias, not a copy.
    std::shared_ptr<const request> alias(std::shared_ptr<void>(), &req);
    cluster_->start_route(
        key_slot(key), std::move(alias), eval_form(s, req),
        make_adapter(resp, max_lock_reply_nodes),
        asio::bind_executor(strand_, [d = std::move(done)](
                                         error_code ec, std::size_t) mutable { std::move(d)(ec); }),
        try_once);
}

void lock_transport::exec(std::string_view key, std::shared_ptr<const request> req,
                          response_adapter out,
                          asio::any_completion_handler<void(error_code, std::size_t)> h) const {
    if (conn_)
        return start_exec(conn_->shared_from_this(), *req, out, std::move(h));
    cluster_->start_route(key_slot(key), std::move(req), nullptr, out, std::move(h));
}

void lock_transport::start_eval(const script& s, std::string_view key, std::shared_ptr<request> req,
                                generic_response& resp,
                                asio::any_completion_handler<void(error_code)> h) const {
    if (conn_)
        return detail::start_eval(conn_->shared_from_this(), s, std::move(req), resp, std::move(h));
    auto eval = eval_form(s, *req);
    auto cslot = asio::get_associated_cancellation_slot(h);
    auto ex = asio::get_associated_executor(h, executor_);
    cluster_->start_route(
        key_slot(key), std::move(req), std::move(eval), make_adapter(resp),
        asio::bind_cancellation_slot(
            cslot, asio::bind_executor(ex, [h = std::move(h)](error_code ec, std::size_t) mutable {
                std::move(h)(ec);
            })));
}

void lock_transport::run_script(const script& s, std::string_view key,
                                std::span<const std::string_view> keys,
                                std::span<const std::string_view> args,
                                std::shared_ptr<generic_response> resp,
                                asio::any_completion_handler<void(error_code)> done) const {
    auto req = std::make_shared<request>(make_evalsha(s, keys, args));
    auto& r = *resp;
    start_eval(s, key, std::move(req), r,
               asio::bind_executor(strand_, [resp = std::move(resp), done = std::move(done)](
                                                error_code ec) mutable { std::move(done)(ec); }));
}

void lock_transport::add_listener(const std::string& channel,
                                  std::shared_ptr<push_listener> l) const {
    if (conn_)
        return conn_->add_listener(channel, std::move(l));
    cluster_->add_listener(channel, std::move(l));
}

void lock_transport::remove_listener(const std::string& channel, const push_listener* l) const {
    if (conn_)
        return conn_->remove_listener(channel, l);
    cluster_->remove_listener(channel, l);
}

} // namespace corolock::detail
