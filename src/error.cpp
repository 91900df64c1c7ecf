// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include <ostream>
#include <string>

namespace corolock {
namespace {

const char* describe(error e) noexcept {
    switch (e) {
    case error::invalid_type_byte:
        return "RESP3: unknown type byte";
    case error::invalid_length:
        return "RESP3: malformed length";
    case error::missing_crlf:
        return "RESP3: missing CRLF terminator";
    case error::invalid_number:
        return "RESP3: malformed number, double or boolean";
    case error::nesting_too_deep:
        return "RESP3: aggregates nested too deep";
    case error::bulk_too_long:
        return "RESP3: blob longer than the limit";
    case error::aggregate_too_large:
        return "RESP3: aggregate larger than the limit";
    case error::streamed_not_supported:
        return "RESP3: streamed strings and aggregates are not supported";
    case error::message_too_large:
        return "reply larger than max_read_size or with more values than max_reply_nodes";
    case error::unexpected_reply:
        return "reply of an unexpected type or shape";
    case error::server_error:
        return "the server answered with an error";
    case error::auth_failed:
        return "authentication failed (HELLO/AUTH refused)";
    case error::wrong_type:
        return "a key of the wrong type exists at the name or at a key derived from it (its "
               ":fence key, a reader set, a queue); it was left untouched";
    case error::subscribe_refused:
        return "the server refused the subscription (e.g. NOPERM: no rights on the channel)";
    case error::moved:
        return "MOVED: the key's slot is served by another cluster node (not executed)";
    case error::ask:
        return "ASK: the key's slot is being migrated to another node (not executed)";
    case error::try_again:
        return "TRYAGAIN: multi-key command during resharding (not executed)";
    case error::cluster_down:
        return "CLUSTERDOWN: the cluster is down (not executed)";
    case error::readonly:
        return "READONLY: write command sent to a read-only replica (not executed)";
    case error::loading:
        return "LOADING: the server is loading its dataset (not executed)";
    case error::master_down:
        return "MASTERDOWN: the replica's link with its master is down (not executed)";
    case error::no_replicas:
        return "NOREPLICAS: not enough good replicas to write (not executed)";
    case error::not_connected:
        return "not connected: the connection is stopped, or the request waited longer than "
               "max_wait_for_connection";
    case error::connection_lost:
        return "connection lost before the reply arrived (outcome unknown)";
    case error::connect_timeout:
        return "connect timed out";
    case error::pong_timeout:
        return "health check: no answer to PING in time";
    case error::invalid_name:
        return "invalid lock name (the log names the rule it breaks)";
    case error::invalid_lease:
        return "invalid lease: below 100 ms or above 365 days";
    case error::invalid_wait:
        return "invalid wait time (negative)";
    case error::invalid_argument:
        return "invalid argument (the log names the field)";
    case error::not_owner:
        return "not the owner (an empty lease or claim, or the key is no longer ours)";
    case error::acquire_timeout:
        return "the lock was not acquired before the wait deadline";
    case error::lease_lost:
        return "the lease was lost";
    case error::operation_in_progress:
        return "another operation of this kind is in progress on this object";
    case error::stale_token:
        return "fenced write refused: a newer fencing token exists, or the lease is gone "
               "(a permit or a read lease past its deadline)";
    case error::max_hold_reached:
        return "the maximum hold time was reached";
    case error::cross_slot:
        return "the keys of one call map to different cluster slots";
    case error::too_many_redirects:
        return "too many cluster redirects (MOVED/ASK/TRYAGAIN) for one request";
    case error::quorum_not_reached:
        return "fewer than a majority of the RedLock nodes answered in time";
    case error::validity_expired:
        return "the RedLock majority answered too late: no validity was left";
    case error::sentinel_resolve_failed:
        return "no Sentinel could be reached";
    case error::sentinel_unknown_master:
        return "the Sentinels do not know this master name";
    case error::role_check_failed:
        return "the server named by Sentinel is not a master";
    case error::replicas_not_synced:
        return "fewer replicas than required acknowledged the write";
    case error::server_timeout:
        return "no reply to the acquire attempt before the deadline (a deadline shorter than a "
               "round trip, or a slow, stalled or unreachable server); the attempt is undone if it "
               "took the lock";
    case error::blocking_command:
        return "a blocking command on a connection that carries leases would delay their "
               "renewals: refused (see connection_config::allow_blocking_commands)";
    case error::failover_in_progress:
        return "Sentinel is failing the master over; waiting for the new master";
    case error::limit_mismatch:
        return "the semaphore is in use with another limit";
    case error::target_mismatch:
        return "the latch is in use with another target count";
    case error::stale_generation:
        return "the count-down names a latch round that is over";
    case error::no_latch:
        return "no such latch (never created, or expired)";
    case error::invalid_url:
        return "invalid connection URL (parse_connection_url says why)";
    case error::tls_no_answer:
        return "the TLS handshake got no answer: is the port a TLS port? (a plain-text Redis port "
               "waits for a command and never answers one)";
    }
    return "unknown corolock error";
}

bool in(error e, error first, error last) noexcept {
    return static_cast<int>(e) >= static_cast<int>(first) &&
           static_cast<int>(e) <= static_cast<int>(last);
}

class error_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "corolock"; }
    std::string message(int ev) const override { return describe(static_cast<error>(ev)); }
    char const* message(int ev, char*, std::size_t) const noexcept override {
        return describe(static_cast<error>(ev));
    }
    boost::system::error_condition default_error_condition(int ev) const noexcept override {
        const auto e = static_cast<error>(ev);
        if (in(e, error::invalid_type_byte, error::unexpected_reply))
            return make_error_condition(condition::protocol_violation);
        if (in(e, error::server_error, error::no_replicas))
            return make_error_condition(condition::server_failure);
        if (in(e, error::not_connected, error::pong_timeout) || e == error::quorum_not_reached ||
            e == error::server_timeout ||
            in(e, error::sentinel_resolve_failed, error::role_check_failed) ||
            e == error::failover_in_progress || e == error::tls_no_answer)
            return make_error_condition(condition::connection_failure);
        if (in(e, error::invalid_name, error::invalid_argument))
            return make_error_condition(condition::invalid_argument);
        if (e == error::cross_slot || e == error::blocking_command || e == error::limit_mismatch ||
            e == error::target_mismatch || e == error::no_latch || e == error::invalid_url)
            return make_error_condition(condition::invalid_argument);
        if (e == error::too_many_redirects)
            return make_error_condition(condition::server_failure);
        if (e == error::acquire_timeout)
            return make_error_condition(condition::lock_contention);
        if (e == error::not_owner || e == error::lease_lost || e == error::stale_token ||
            e == error::max_hold_reached || e == error::validity_expired ||
            e == error::replicas_not_synced || e == error::stale_generation)
            return make_error_condition(condition::lock_lost);
        return {ev, *this};
    }
};

class condition_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "corolock.condition"; }
    std::string message(int ev) const override {
        switch (static_cast<condition>(ev)) {
        case condition::lock_contention:
            return "the lock is held by another owner";
        case condition::lock_lost:
            return "the lock is not (or no longer) held";
        case condition::connection_failure:
            return "connection failure";
        case condition::protocol_violation:
            return "protocol violation";
        case condition::invalid_argument:
            return "invalid argument";
        case condition::server_failure:
            return "server failure";
        case condition::not_executed:
            return "the server refused the command before running it (safe to send again)";
        }
        return "unknown corolock condition";
    }
    bool equivalent(const boost::system::error_code& code, int cond) const noexcept override {
        if (code.category() == corolock::error_category()) {
            if (static_cast<condition>(cond) == condition::not_executed)
                return in(static_cast<error>(code.value()), error::moved, error::no_replicas);
            return code.default_error_condition() == boost::system::error_condition(cond, *this);
        }
        // Socket-level failures are connection failures too; a cancellation is not, and neither
        // is success (value 0 of the system category).
        if (static_cast<condition>(cond) == condition::connection_failure)
            return code && code != boost::asio::error::operation_aborted &&
                   (code.category() == boost::asio::error::get_system_category() ||
                    code.category() == boost::asio::error::get_misc_category() ||
                    code.category() == boost::asio::error::get_netdb_category() ||
                    code.category() == boost::asio::error::get_addrinfo_category() ||
                    code.category() == boost::asio::error::get_ssl_category() ||
                    code.category() == boost::asio::ssl::error::get_stream_category());
        return false;
    }
};

} // namespace

const boost::system::error_category& error_category() noexcept {
    static const error_category_impl instance;
    return instance;
}

const boost::system::error_category& condition_category() noexcept {
    static const condition_category_impl instance;
    return instance;
}

std::ostream& operator<<(std::ostream& os, error e) {
    return os << describe(e);
}

std::ostream& operator<<(std::ostream& os, condition c) {
    return os << condition_category().message(static_cast<int>(c));
}

error_code classify_server_error(std::string_view text) noexcept {
    struct entry {
        std::string_view prefix;
        error code;
    };
    static constexpr entry table[] = {
        {"MOVED", error::moved},
        {"ASK", error::ask},
        {"TRYAGAIN", error::try_again},
        {"CLUSTERDOWN", error::cluster_down},
        {"READONLY", error::readonly},
        {"LOADING", error::loading},
        {"MASTERDOWN", error::master_down},
        {"NOREPLICAS", error::no_replicas},
        {"WRONGTYPE", error::wrong_type},
        {"CROSSSLOT", error::cross_slot},
    };
    // The error code is the first word (up to a space or the end): "ASKING" is not "ASK".
    const auto word = text.substr(0, text.find(' '));
    for (const auto& e : table)
        if (word == e.prefix)
            return e.code;
    return error::server_error;
}

bool is_connection_error(const error_code& ec) noexcept {
    return ec == condition::connection_failure;
}

} // namespace corolock
