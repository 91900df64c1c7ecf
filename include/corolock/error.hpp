// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ERROR_HPP
#define COROLOCK_ERROR_HPP

#include <corolock/detail/export.hpp>

#include <boost/system/error_code.hpp>

#include <iosfwd>
#include <string_view>
#include <type_traits>

namespace corolock {

/// The error type of every completion.
using error_code = boost::system::error_code;

/// Every error corolock reports itself. Values start at 1 (0 means success).
/// Group them with `condition` to test a kind of failure.
enum class error {
    // RESP3 wire format (condition::protocol_violation)
    invalid_type_byte = 1, ///< a value starts with a byte that names no RESP3 type
    invalid_length,        ///< a length or count is not a valid number
    missing_crlf,          ///< a line or blob is not terminated by CRLF
    invalid_number,        ///< an integer, double or boolean body is malformed
    nesting_too_deep,      ///< aggregates nest deeper than parser_limits::max_depth
    bulk_too_long,         ///< a blob is longer than parser_limits::max_bulk_length
    aggregate_too_large, ///< an aggregate has more elements than parser_limits::max_aggregate_size
    streamed_not_supported, ///< a streamed string or aggregate (`$?`, `*?`); see doc/design.md
    message_too_large,      ///< one reply exceeds connection_config::max_read_size or
                            ///< connection_config::max_reply_nodes
    unexpected_reply,       ///< a reply has a shape the caller did not expect

    // Server replies (condition::server_failure)
    server_error,      ///< the server answered with an error reply; its text is in the response
    auth_failed,       ///< HELLO/AUTH was refused (wrong user or password)
    wrong_type,        ///< a key exists with a type the operation cannot use (left untouched)
    subscribe_refused, ///< SUBSCRIBE (or a sibling) was refused, e.g. NOPERM; text in the log
    // Refused before running (also condition::not_executed): sending again is safe.
    moved,        ///< MOVED: the key's slot is served by another cluster node
    ask,          ///< ASK: the key's slot is migrating; ask the named node
    try_again,    ///< TRYAGAIN: a multi-key command during resharding
    cluster_down, ///< CLUSTERDOWN: the cluster cannot serve the slot
    readonly,     ///< READONLY: a write sent to a replica
    loading,      ///< LOADING: the server is loading its dataset
    master_down,  ///< MASTERDOWN: a replica lost its master (replica-serve-stale-data no)
    no_replicas,  ///< NOREPLICAS: fewer good replicas than min-replicas-to-write

    // Connection (condition::connection_failure)
    not_connected,   ///< a request waited longer than connection_config::max_wait_for_connection
    connection_lost, ///< the connection dropped after the request was written, before its reply
    connect_timeout, ///< TCP/TLS connect or handshake took longer than connect_timeout
    pong_timeout,    ///< the health check got no answer within its interval

    // Arguments (condition::invalid_argument)
    invalid_name,     ///< bad lock name (doc/keys.md) or ZooKeeper path (doc/zookeeper.md)
    invalid_lease,    ///< lease below 100 ms or above 365 days
    invalid_wait,     ///< negative wait time
    invalid_argument, ///< any other argument out of range

    // Locks
    not_owner, ///< an operation on an empty lease or claim, or a claim no longer ours (lock_lost)
    acquire_timeout,       ///< the wait deadline passed before the lock was free (lock_contention)
    lease_lost,            ///< the lease expired or was taken while held (lock_lost)
    operation_in_progress, ///< a second async_run, or a second receive on one subscription
    stale_token,           ///< a fenced write was refused: a newer token exists, or the lease is
                           ///< gone from Redis (lock_lost)
    max_hold_reached,      ///< the watchdog stopped at mutex_options::max_hold (lock_lost)

    // Cluster
    cross_slot, ///< the keys of one call map to different slots (invalid_argument); also CROSSSLOT
    too_many_redirects, ///< cluster_config::max_redirects re-sends were not enough
                        ///< (server_failure)

    // RedLock (redlock.hpp)
    quorum_not_reached, ///< fewer than a majority of the nodes answered a RedLock round in time
                        ///< (connection_failure)
    validity_expired,   ///< a RedLock majority came too late: no validity left (lock_lost)

    // Sentinel (condition::connection_failure)
    sentinel_resolve_failed, ///< no Sentinel answered (each address refused, timed out or failed)
    sentinel_unknown_master, ///< the Sentinels that answered do not know the master name
    role_check_failed,       ///< the address a Sentinel gave is not a master (ROLE)

    // Replica acknowledgement (lock_lost)
    replicas_not_synced, ///< WAIT saw fewer replicas than mutex_options::replica_sync asks

    // Locks, continued
    server_timeout,   ///< no reply to an acquire attempt before its deadline: the server is busy,
                      ///< stalled or unreachable (connection_failure)
    blocking_command, ///< a blocking command on a connection that carries leases, which would
                      ///< delay their renewals (invalid_argument)

    // Sentinel, continued (condition::connection_failure)
    failover_in_progress, ///< Sentinel is failing the master over: it is not used meanwhile

    // Synchronizers (semaphore.hpp, latch.hpp; condition::invalid_argument)
    limit_mismatch,   ///< a semaphore's name is in use with another limit (set_limit changes it)
    target_mismatch,  ///< a latch's name is in use with another target count
    stale_generation, ///< a count-down names a latch round that is over (lock_lost)
    no_latch,         ///< a count-down or await names a latch that does not exist (expired)

    // Connection URL (config.hpp; condition::invalid_argument)
    invalid_url, ///< a connection URL that parse_connection_url refuses (the reason is returned)

    // Connection, continued (condition::connection_failure)
    tls_no_answer, ///< the TLS handshake got no answer: most likely a plain-text port
};

/// Kinds of failure, for `ec == corolock::condition::connection_failure` tests.
enum class condition {
    lock_contention = 1,
    lock_lost,
    connection_failure,
    protocol_violation,
    invalid_argument,
    server_failure,
    /// The server refused the command before running it; the only errors after which a command
    /// may be sent again. `connection_lost` is never one of them: its outcome is unknown.
    not_executed,
};

/// The `"corolock"` category of `corolock::error`.
COROLOCK_DECL const boost::system::error_category& error_category() noexcept;
/// The category of `corolock::condition`.
COROLOCK_DECL const boost::system::error_category& condition_category() noexcept;

/// The `error_code` of `e`; found by ADL, so `error_code ec = error::lease_lost;` works.
inline error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), error_category()};
}
/// The `error_condition` of `c`, for `ec == condition::lock_lost` tests.
inline boost::system::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

/// Prints the error's message.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, error e);
/// Prints the condition's message.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, condition c);

/// The code for a server's error reply, from its text (`MOVED 3999 127.0.0.1:6381`, `LOADING
/// ...`): one of the codes of condition::not_executed, `wrong_type` for WRONGTYPE, `cross_slot` for
/// CROSSSLOT, else `server_error`. Only the first word counts. Pure; the text itself stays in the
/// response.
COROLOCK_DECL error_code classify_server_error(std::string_view error_text) noexcept;

/// True when the error means the connection had to be re-established (the request's outcome on
/// the server may be unknown).
COROLOCK_DECL bool is_connection_error(const error_code& ec) noexcept;

} // namespace corolock

namespace boost::system {
template <>
struct is_error_code_enum<corolock::error> : std::true_type {};
template <>
struct is_error_condition_enum<corolock::condition> : std::true_type {};
} // namespace boost::system

#endif
