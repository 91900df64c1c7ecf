// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_CONFIG_HPP
#define COROLOCK_CONFIG_HPP

#include <corolock/resp3/parser.hpp>

#include <chrono>
#include <cstddef>
#include <string>

namespace corolock {

/// A server's TCP address.
struct address {
    std::string host = "127.0.0.1";
    std::string port = "6379";
};

/// Settings of one connection. A zero duration turns its feature off, as the comment says.
struct connection_config {
    /// TCP address. Loopback by default; use a hostname or an IPv4/IPv6 literal.
    std::string host = "127.0.0.1";
    std::string port = "6379";
    /// When non-empty, connect to this unix-domain socket instead of host:port.
    std::string unix_socket;
    /// TLS over TCP; needs the connection constructor that takes an ssl::context. When the context
    /// verifies the peer, the certificate must also match `host` (DNS name or IP address).
    /// A TLS client on a plain-text port is only stopped by `connect_timeout`.
    bool use_tls = false;

    /// ACL user (empty: "default") and password (empty: no AUTH) sent with HELLO 3.
    std::string username;
    std::string password;
    /// SELECT this database after HELLO (0: no SELECT).
    int database = 0;
    /// CLIENT SETNAME (empty: none).
    std::string client_name = "corolock";

    /// Resolve + connect + TLS handshake + HELLO must finish within this (0: no limit).
    std::chrono::steady_clock::duration connect_timeout = std::chrono::seconds(5);
    /// A PING goes out every interval; no answer within the next interval drops the
    /// connection, so a stalled server is noticed within about two intervals (0: off).
    std::chrono::steady_clock::duration health_check_interval = std::chrono::seconds(2);
    /// First wait before reconnecting; doubles with each failed attempt up to
    /// `reconnect_wait_max`, with full jitter (0: never reconnect; async_run completes).
    std::chrono::steady_clock::duration reconnect_wait = std::chrono::milliseconds(100);
    std::chrono::steady_clock::duration reconnect_wait_max = std::chrono::seconds(5);
    /// How long a request not yet written waits for a (re)connection before it fails with
    /// `error::not_connected` (0: wait until async_run ends).
    std::chrono::steady_clock::duration max_wait_for_connection = std::chrono::seconds(5);

    /// Largest single reply (bytes) accepted; a bigger one is a protocol error that drops the
    /// connection (the stream cannot be resynchronised without reading it). A reply is buffered
    /// whole before it is consumed, so this is the read buffer's bound too: 64 MiB is far above
    /// anything a lock or a typical command needs, while 512 MiB (Redis' own bulk limit) let a
    /// confused or hostile server make every connection hold half a gigabyte.
    std::size_t max_read_size = 64u * 1024u * 1024u;
    /// Most values (RESP3 nodes) one reply may put into a `generic_response` (0: no limit).
    /// A node costs about 64 bytes plus its text but can take 3 bytes on the wire (`_\r\n`),
    /// so without it a reply within max_read_size could cost ~20 times its size. Past the limit
    /// the request fails with `error::message_too_large` (the response keeps the nodes before
    /// it); the rest of the reply is read and dropped and the connection stays up. 256 Ki nodes
    /// bound the nodes of one reply to about 16 MiB.
    std::size_t max_reply_nodes = 256u * 1024u;
    resp3::parser_limits limits;
    /// Messages buffered per subscription for a slow reader; beyond it the oldest is dropped
    /// (and counted), so replies never wait for a push consumer.
    std::size_t push_buffer_size = 1024;
};

} // namespace corolock

#endif
