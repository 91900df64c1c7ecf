// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_CONFIG_HPP
#define COROLOCK_CONFIG_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/resp3/parser.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace corolock {

/// A server's TCP address (host name or IP literal, and port).
struct address {
    /// Host name or IP literal.
    std::string host;
    /// TCP port: a number or a service name.
    std::string port;
    /// Compares every field.
    friend bool operator==(const address&, const address&) = default;
};

/// Where Sentinel says the master is (off while `addresses` is empty). With it on, every
/// (re)connect asks the Sentinels in turn for `master_name`, connects there and checks `ROLE`
/// before any request goes out; the master's address is never reused from a previous connect.
/// `connection_config::host`, `port` and `unix_socket` are then ignored; its credentials, TLS
/// and database are the master's. See doc/sentinel.md.
struct sentinel_config {
    /// Bootstrap Sentinels, tried in order (the list is refreshed with SENTINEL SENTINELS; these
    /// entries are always kept).
    std::vector<address> addresses;
    /// The name the Sentinels monitor the master under (`SENTINEL MONITOR <name> ...`).
    std::string master_name;
    /// ACL user (empty: "default") and password (empty: no AUTH) for the Sentinels only.
    std::string username;
    /// Password (empty: no AUTH).
    std::string password;
    /// TLS to the Sentinels (the connection's ssl::context is used); `connection_config::use_tls`
    /// is for the master.
    bool use_tls = false;
    /// Connect (+ TLS handshake) to one Sentinel must finish within this; then the next is tried.
    std::chrono::steady_clock::duration connect_timeout = std::chrono::milliseconds(500);
    /// HELLO + SENTINEL GET-MASTER-ADDR-BY-NAME + SENTINEL SENTINELS must be answered within this.
    std::chrono::steady_clock::duration request_timeout = std::chrono::seconds(1);
    /// Keep small side connections to the Sentinels (one per bootstrap address, each on a
    /// different Sentinel) subscribed to `+switch-master` and to the failover announcements: a
    /// switch that names our master drops the master connection at once (requests written to
    /// it fail with `connection_lost`, queued ones go to the new master), instead of waiting for
    /// Sentinel to demote the old master (about 10 s for a paused one); so does the first
    /// announcement of a failover of our master (see `failover_hold`). Each side connection
    /// sends PING every `connection_config::health_check_interval` and moves to another
    /// Sentinel when its own has said nothing for one and a half intervals (a paused Sentinel,
    /// a dead link).
    bool follow_switch_master = true;
    /// With `follow_switch_master`: from a Sentinel's first announcement of a failover of our
    /// master (`+try-failover`, `+failover-state-*`, ...) until a new master is named or that
    /// Sentinel aborts, nothing is written to the master: the connection is dropped and does not
    /// connect there again (`error::failover_in_progress`; requests wait in the queue). After
    /// `+switch-master` the old master is avoided too, even when a Sentinel not yet told still
    /// names it. Either lasts at most this long (0: off; only `+switch-master` moves the
    /// connection). Without it a planned `SENTINEL FAILOVER` lets the old master grant for about
    /// 1 s after the replica's promotion, and those grants vanish (doc/sentinel.md).
    std::chrono::steady_clock::duration failover_hold = std::chrono::seconds(10);
};

/// Settings of one connection. A zero duration turns its feature off, as the comment says.
struct connection_config {
    /// TCP address. Loopback by default; use a hostname or an IPv4/IPv6 literal.
    std::string host = "127.0.0.1";
    /// TCP port: a number or a service name.
    std::string port = "6379";
    /// When non-empty, connect to this unix-domain socket instead of host:port.
    std::string unix_socket;
    /// TLS over TCP; needs the connection constructor that takes an ssl::context.
    /// A TLS client on a plain-text port is only stopped by `connect_timeout`.
    bool use_tls = false;
    /// With TLS, the server proves who it is: its certificate chain must verify against the
    /// ssl::context's trusted certificates (`load_verify_file`, `set_default_verify_paths`) and
    /// the certificate must name `host` (a DNS name or an IP address), whatever verify mode the
    /// context itself has (Asio's default, `verify_none`, would accept anyone). false: any
    /// certificate is accepted (a test rig's self-signed one), and every TLS connect logs a
    /// warning that says so. The Sentinels' TLS follows the same setting. A `rediss://` URL
    /// verifies too, unless it says `?ssl_cert_reqs=none` (as redis-py writes it).
    bool tls_verify_server = true;

    /// ACL user (empty: "default") and password (empty: no AUTH) sent with HELLO 3.
    std::string username;
    /// Password (empty: no AUTH).
    std::string password;
    /// SELECT this database after HELLO (0: no SELECT).
    int database = 0;
    /// CLIENT SETNAME (empty: none).
    std::string client_name = "corolock";

    /// Resolve + connect + TLS handshake + HELLO must finish within this (0: no limit).
    std::chrono::steady_clock::duration connect_timeout = std::chrono::seconds(5);
    /// A PING goes out every interval; an interval with neither its answer nor any other
    /// reply drops the connection (a PING late behind a deep pipeline is not a stall), so a
    /// stalled server is noticed within about two intervals (0: off).
    std::chrono::steady_clock::duration health_check_interval = std::chrono::seconds(2);
    /// First wait before reconnecting; doubles with each failed attempt up to
    /// `reconnect_wait_max`, with full jitter (0: never reconnect; async_run completes).
    std::chrono::steady_clock::duration reconnect_wait = std::chrono::milliseconds(100);
    /// The cap of that doubling.
    std::chrono::steady_clock::duration reconnect_wait_max = std::chrono::seconds(5);
    /// How long a request not yet written waits for a (re)connection before it fails with
    /// `error::not_connected` (0: wait until async_run ends).
    std::chrono::steady_clock::duration max_wait_for_connection = std::chrono::seconds(5);
    /// Accept blocking commands (`request::has_blocking_command`: BLPOP and its family, WAIT,
    /// WAITAOF, XREAD/XREADGROUP BLOCK) while the connection carries leases. Redis answers one
    /// connection's commands in order, so every renewal behind such a command waits for it: a
    /// `BLPOP jobs 5` loses a lease of 5 s or less. Off: `async_exec` refuses them with
    /// `error::blocking_command` while a lease is held (before sending). Give blocking work its
    /// own connection instead (doc/usage.md, "Blocking commands").
    bool allow_blocking_commands = false;

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
    /// The RESP3 parser's bounds for every reply.
    resp3::parser_limits limits;
    /// Messages buffered per subscription for a slow reader; beyond it the oldest is dropped
    /// (and counted), so replies never wait for a push consumer.
    std::size_t push_buffer_size = 1024;

    /// Find the master through Sentinel (off while sentinel.addresses is empty).
    sentinel_config sentinel;

    /// `base` with the server named by `url` (see `parse_connection_url`); throws
    /// `boost::system::system_error` with `error::invalid_url` and the reason in `what()`.
    COROLOCK_DECL static connection_config from_url(std::string_view url, connection_config base);
    /// The defaults with the server named by `url`; throws as the overload above.
    COROLOCK_DECL static connection_config from_url(std::string_view url);
};

/// Sets the address, TLS, credentials and database of `cfg` from a connection URL, as
/// redis-py, Jedis and Lettuce write them; the other fields keep their values:
/// - `redis://[[user]:password@]host[:port][/db]`: TCP (host: a name, an IPv4 literal or a
///   bracketed IPv6 literal; port 1 to 65535, default 6379; db 0 to 2^31 - 1, default 0);
/// - `rediss://...`: the same over TLS (`use_tls`; the connection needs an ssl::context);
/// - `unix://[[user]:password@]/path/to/socket`: a unix-domain socket (no host, no port).
/// The database may also be given as a query parameter, `?db=N` (the one way for `unix://`),
/// and a `rediss://` URL may say `ssl_cert_reqs=none` (accept any server certificate: sets
/// `tls_verify_server` to false; `required`, the default, sets it to true). User and password
/// are percent-decoded; a user needs a password (AUTH takes both). Nothing else is accepted:
/// another scheme, a fragment, another query parameter, a database given twice, an empty or
/// over-long path, a port or database out of range. No I/O.
///
/// Returns `error::invalid_url` (and the reason in `*why` when given), leaving `cfg`
/// unchanged; else success.
COROLOCK_DECL error_code parse_connection_url(std::string_view url, connection_config& cfg,
                                              std::string* why = nullptr);

} // namespace corolock

#endif
