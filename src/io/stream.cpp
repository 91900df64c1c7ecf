// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// TCP, TLS over TCP (the certificate checked against the host) and unix sockets.
#include "io/stream.hpp"

#include "io/nothrow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace corolock::detail {

namespace asio = boost::asio;
using asio::awaitable;

awaitable<stream::io_result> stream::read_some(asio::mutable_buffer b) {
    if (auto* s = std::get_if<tcp_socket>(&s_))
        co_return co_await s->async_read_some(b, nothrow);
    if (auto* s = std::get_if<tls_stream>(&s_))
        co_return co_await s->async_read_some(b, nothrow);
    if (auto* s = std::get_if<unix_socket>(&s_))
        co_return co_await s->async_read_some(b, nothrow);
    co_return io_result{asio::error::not_connected, 0};
}

awaitable<stream::io_result> stream::write(asio::const_buffer b) {
    if (auto* s = std::get_if<tcp_socket>(&s_))
        co_return co_await asio::async_write(*s, b, nothrow);
    if (auto* s = std::get_if<tls_stream>(&s_))
        co_return co_await asio::async_write(*s, b, nothrow);
    if (auto* s = std::get_if<unix_socket>(&s_))
        co_return co_await asio::async_write(*s, b, nothrow);
    co_return io_result{asio::error::not_connected, 0};
}

std::size_t stream::write_now(asio::const_buffer b, error_code& ec) {
    if (auto* s = std::get_if<tcp_socket>(&s_))
        return s->write_some(b, ec);
    if (auto* s = std::get_if<unix_socket>(&s_))
        return s->write_some(b, ec);
    ec = asio::error::operation_not_supported;
    return 0;
}

awaitable<error_code> stream::connect(const connection_config& cfg, asio::ssl::context* tls,
                                      const asio::any_io_executor& ex) {
    close();
    s_.emplace<std::monostate>();
    if (!cfg.unix_socket.empty()) {
        unix_socket sock(ex);
        auto [ec] = co_await sock.async_connect(
            asio::local::stream_protocol::endpoint(cfg.unix_socket), nothrow);
        if (!ec)
            sock.non_blocking(true, ec); // for write_now
        if (!ec)
            s_.emplace<unix_socket>(std::move(sock));
        co_return ec;
    }
    asio::ip::tcp::resolver resolver(ex);
    auto [rec, endpoints] = co_await resolver.async_resolve(cfg.host, cfg.port, nothrow);
    if (rec)
        co_return rec;
    tcp_socket sock(ex);
    auto [cec, ep] = co_await asio::async_connect(sock, endpoints, nothrow);
    if (cec)
        co_return cec;
    error_code ignored;
    sock.set_option(asio::ip::tcp::no_delay(true), ignored);
    if (!cfg.use_tls) {
        if (sock.non_blocking(true, cec); cec) // for write_now
            co_return cec;
        s_.emplace<tcp_socket>(std::move(sock));
        co_return error_code{};
    }
    if (!tls)
        co_return error_code(error::invalid_argument);
    auto& s = s_.emplace<tls_stream>(std::move(sock), *tls);
    // The stream's own verify mode, whatever the context's: verified unless the caller opted out
    // (connection_config::tls_verify_server). The certificate must be for the host we dialled;
    // SNI is for names only (RFC 6066).
    error_code mode_ec;
    s.set_verify_mode(cfg.tls_verify_server ? asio::ssl::verify_peer : asio::ssl::verify_none,
                      mode_ec);
    if (mode_ec)
        co_return mode_ec;
    error_code not_ip;
    asio::ip::make_address(cfg.host, not_ip);
    if (not_ip) {
        if (SSL_set_tlsext_host_name(s.native_handle(), cfg.host.c_str()) != 1 ||
            SSL_set1_host(s.native_handle(), cfg.host.c_str()) != 1)
            co_return error_code(error::invalid_argument);
    } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s.native_handle()), cfg.host.c_str()) !=
               1) {
        co_return error_code(error::invalid_argument);
    }
    tls_handshake_since_ = std::chrono::steady_clock::now();
    auto [hec] = co_await s.async_handshake(asio::ssl::stream_base::client, nothrow);
    if (!hec) // a failed one (cancelled by the connect timeout) stays marked until close()
        tls_handshake_since_ = {};
    co_return hec;
}

void stream::close() noexcept {
    tls_handshake_since_ = {};
    error_code ignored;
    if (auto* s = std::get_if<tcp_socket>(&s_))
        s->close(ignored);
    else if (auto* s = std::get_if<tls_stream>(&s_))
        s->lowest_layer().close(ignored);
    else if (auto* s = std::get_if<unix_socket>(&s_))
        s->close(ignored);
}

} // namespace corolock::detail
