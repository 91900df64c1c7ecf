// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// One connect attempt (the master from Sentinel first, if any) and the handshake after it:
// HELLO, AUTH, SETNAME, SELECT and, with Sentinel, ROLE, in one write.
#include "core/handshake_reply.hpp"
#include "io/connection_impl.hpp"
#include "io/nothrow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace corolock::detail {

namespace asio = boost::asio;
using asio::awaitable;
using namespace asio::experimental::awaitable_operators;

awaitable<error_code> connection_impl::connect_once() {
    // With Sentinel, every attempt asks where the master is now (never a cached address).
    connection_config master_cfg;
    if (uses_sentinel()) {
        auto [ec, where] = co_await resolve_master();
        if (ec)
            co_return ec;
        master_ = where;
        master_cfg = cfg_;
        master_cfg.host = where.host;
        master_cfg.port = where.port;
        master_cfg.unix_socket.clear();
    }
    if (cfg_.use_tls && !cfg_.tls_verify_server && log_.enabled(logger::level::warning))
        log_.log(logger::level::warning,
                 "TLS without verifying the server (connection_config::tls_verify_server is "
                 "false): any certificate is accepted, so anyone who can answer on the address "
                 "can impersonate the server");
    auto attempt = [](connection_impl* self,
                      const connection_config* target) -> awaitable<error_code> {
        if (auto ec = co_await self->stream_.connect(*target, self->tls_, self->strand_))
            co_return ec;
        co_return co_await self->handshake();
    };
    const connection_config* target = uses_sentinel() ? &master_cfg : &cfg_;
    if (cfg_.connect_timeout <= std::chrono::steady_clock::duration::zero())
        co_return co_await attempt(this, target);
    asio::steady_timer timer(strand_, cfg_.connect_timeout);
    auto r = co_await (attempt(this, target) || timer.async_wait(nothrow));
    if (r.index() == 1) // TCP connected, the TLS handshake unanswered: a plain-text port?
        co_return stream_.tls_handshake_since() != std::chrono::steady_clock::time_point{}
            ? error_code(error::tls_no_answer)
            : error_code(error::connect_timeout);
    co_return std::get<0>(r);
}

awaitable<error_code> connection_impl::handshake() {
    request req;
    const std::string user = cfg_.username.empty() ? "default" : cfg_.username;
    if (cfg_.password.empty() && cfg_.client_name.empty())
        req.push("HELLO", 3);
    else if (cfg_.password.empty())
        req.push("HELLO", 3, "SETNAME", cfg_.client_name);
    else if (cfg_.client_name.empty())
        req.push("HELLO", 3, "AUTH", user, cfg_.password);
    else
        req.push("HELLO", 3, "AUTH", user, cfg_.password, "SETNAME", cfg_.client_name);
    if (cfg_.database != 0)
        req.push("SELECT", cfg_.database);
    // Sentinel named this server: it must still be a master (a stale Sentinel, or a demoted
    // master that has not been told yet, would take writes that are then lost).
    const std::size_t role_reply = uses_sentinel() ? req.expected_responses() : 0;
    if (uses_sentinel())
        req.push("ROLE");
    generic_response role;

    rbuf_.clear();
    parser_.reset();
    auto [wec, wn] = co_await stream_.write(asio::buffer(req.payload()));
    if (wec)
        co_return wec;
    bytes_written_ += wn;

    // Read one reply per command; the first node of each tells success or failure.
    for (std::size_t i = 0; i < req.expected_responses();) {
        error_code ec;
        auto n = parser_.consume(rbuf_.unread(), ec);
        if (ec)
            co_return ec;
        if (!n) {
            if (rbuf_.unread().size() > cfg_.max_read_size)
                co_return error::message_too_large;
            auto [rec, rn] = co_await stream_.read_some(rbuf_.prepare(4096));
            if (rec)
                co_return rec;
            rbuf_.commit(rn);
            bytes_read_ += rn;
            continue;
        }
        if (uses_sentinel() && i == role_reply && i > 0)
            role.push_back({n->data_type, n->aggregate_size, n->depth, std::string(n->value)});
        if (n->depth == 0 && resp3::is_error(n->data_type) &&
            !(uses_sentinel() && i == role_reply)) {
            const bool auth = i == 0 && is_auth_error(n->value);
            log_.log(logger::level::error,
                     std::string("handshake refused: ") + std::string(n->value));
            co_return auth ? error_code(error::auth_failed) : classify_server_error(n->value);
        }
        if (parser_.done()) {
            rbuf_.consume(parser_.consumed());
            parser_.reset();
            ++i;
        }
    }
    if (uses_sentinel()) {
        if (auto ec = check_role(role)) {
            log_.log(logger::level::warning,
                     "sentinel: " + master_.host + ":" + master_.port + " is not a master");
            co_return ec;
        }
    }
    co_return error_code{};
}

} // namespace corolock::detail
