// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The byte stream under a connection, one type for its three transports.
#ifndef COROLOCK_SRC_IO_STREAM_HPP
#define COROLOCK_SRC_IO_STREAM_HPP

#include <corolock/config.hpp>
#include <corolock/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <cstddef>
#include <tuple>
#include <variant>

namespace corolock::detail {

// The byte stream under a connection: TCP, TLS over TCP, or a unix socket.
class stream {
public:
    using tcp_socket = boost::asio::ip::tcp::socket;
    using tls_stream = boost::asio::ssl::stream<tcp_socket>;
    using unix_socket = boost::asio::local::stream_protocol::socket;
    using io_result = std::tuple<error_code, std::size_t>;

    boost::asio::awaitable<io_result> read_some(boost::asio::mutable_buffer b);
    boost::asio::awaitable<io_result> write(boost::asio::const_buffer b);
    // A plain socket (TCP or unix, in non-blocking mode), not TLS: what write_now needs.
    bool is_plain() const noexcept {
        return std::holds_alternative<tcp_socket>(s_) || std::holds_alternative<unix_socket>(s_);
    }
    // Plain sockets only: a write now, without the reactor (would_block when the socket cannot
    // take the bytes).
    std::size_t write_now(boost::asio::const_buffer b, error_code& ec);
    boost::asio::awaitable<error_code> connect(const connection_config& cfg,
                                               boost::asio::ssl::context* tls,
                                               const boost::asio::any_io_executor& ex);
    void close() noexcept;
    // When the TLS handshake of the connect in progress began (TCP connected, no answer yet,
    // or failed and not yet closed); the epoch when none is.
    std::chrono::steady_clock::time_point tls_handshake_since() const noexcept {
        return tls_handshake_since_;
    }

private:
    std::variant<std::monostate, tcp_socket, tls_stream, unix_socket> s_;
    std::chrono::steady_clock::time_point tls_handshake_since_{};
};

} // namespace corolock::detail

#endif
