// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/core/pg_lock_sql.hpp"

#include "core/lease_table.hpp"
#include "core/lock_policy.hpp"
#include <corolock/postgres/config.hpp>

#include <charconv>

namespace corolock::detail::pg_sql {

// The advisory lock here is transaction-scoped and only serialises concurrent installs (two
// CREATE ... IF NOT EXISTS racing can both miss and one then fails); leases never use one.
const std::string_view install = R"sql(DO $corolock$
BEGIN
    PERFORM pg_advisory_xact_lock(7236544211412701312);
    CREATE SEQUENCE IF NOT EXISTS corolock_lock_tokens AS bigint;
    CREATE TABLE IF NOT EXISTS corolock_locks (
        name text PRIMARY KEY,
        owner text NOT NULL,
        token bigint NOT NULL,
        expires_at timestamptz NOT NULL);
    CREATE OR REPLACE FUNCTION corolock_fence(p_name text, p_owner text, p_token bigint)
    RETURNS void LANGUAGE plpgsql AS $fence$
    BEGIN
        PERFORM 1 FROM corolock_locks
        WHERE name = p_name AND owner = p_owner AND token = p_token
          AND expires_at > clock_timestamp()
        FOR SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'corolock: the lease with token % on % is not current', p_token,
                p_name USING ERRCODE = 'CL001';
        END IF;
    END $fence$;
    CREATE OR REPLACE FUNCTION corolock_acquire(p_name text, p_owner text, p_ms bigint)
    RETURNS TABLE (granted_token bigint, holder_ms bigint) LANGUAGE plpgsql AS $acquire$
    BEGIN
        INSERT INTO corolock_locks AS l (name, owner, token, expires_at)
        VALUES (p_name, p_owner, 0, clock_timestamp() + p_ms * interval '1 millisecond')
        ON CONFLICT (name) DO UPDATE
            SET owner = excluded.owner, token = 0, expires_at = excluded.expires_at
            WHERE l.expires_at <= clock_timestamp();
        IF FOUND THEN
            UPDATE corolock_locks l SET token = nextval('corolock_lock_tokens')
            WHERE l.name = p_name AND l.owner = p_owner
            RETURNING l.token INTO granted_token;
            RETURN NEXT;
            RETURN;
        END IF;
        RETURN QUERY SELECT NULL::bigint, greatest(0, ceil(1000 * extract(epoch FROM
            h.expires_at - clock_timestamp())))::bigint
        FROM corolock_locks h WHERE h.name = p_name;
    END $acquire$;
END $corolock$)sql";

// The token is drawn at the grant, under the row lock: the function first wins the row with a
// placeholder token (0, which no other session can see: it is replaced before the commit), then
// draws nextval. Drawn in the INSERT's VALUES, it was evaluated when the statement began, before
// any wait on the row (a holder's fence, renewal or release), and a retried insert kept it: a
// waiter could be granted after a larger token (scale-out review K1). No single INSERT can
// do this: VALUES, column defaults and BEFORE triggers are all evaluated before the wait, and a
// later statement of the same query cannot see the row inserted by a data-modifying CTE.
// Tokens have gaps (a rolled-back grant's), never repeats (except after a failover to an
// asynchronous standby or a crash with synchronous_commit off: doc/postgres.md, "Deployment").
const std::string_view acquire =
    "SELECT granted_token, holder_ms FROM corolock_acquire($1, $2, $3::bigint)";

const std::string_view release = R"sql(WITH d AS (
    DELETE FROM corolock_locks WHERE name = $1 AND owner = $2 RETURNING name)
SELECT pg_notify('corolock_release', d.name) FROM d)sql";

const std::string_view renew = R"sql(UPDATE corolock_locks l
SET expires_at = clock_timestamp() + u.ms * interval '1 millisecond'
FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(name, owner, ms)
WHERE l.name = u.name AND l.owner = u.owner AND l.expires_at > clock_timestamp()
RETURNING l.owner)sql";

const std::string_view fence = "SELECT corolock_fence($1, $2, $3::bigint)";

// set_config(..., true) lasts until the transaction ends, as SET LOCAL does, and needs no
// explicit transaction block (the pipeline entry is an implicit one).
const std::string_view xact_begin =
    "SELECT set_config('corolock.lock_timeout', current_setting('lock_timeout'), true), "
    "set_config('lock_timeout', $1, true)";

const std::string_view xact_lock = "SELECT pg_advisory_xact_lock($1::bigint)";

const std::string_view xact_locked =
    "SELECT set_config('lock_timeout', current_setting('corolock.lock_timeout'), true)";

const std::string_view xact_notify = "SELECT pg_notify('corolock_xact_release', $1)";

namespace {

// Valid UTF-8 (no overlong forms, no surrogates, at most U+10FFFF), as PostgreSQL's UTF8
// encoding accepts it.
bool valid_utf8(std::string_view s) noexcept {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + n >= s.size())
            return false; // truncated
        for (std::size_t k = 1; k <= n; ++k) {
            const auto b = static_cast<unsigned char>(s[i + k]);
            if ((b & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (b & 0x3F);
        }
        const std::uint32_t min[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

} // namespace

error_code check_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > max_name_bytes || name.find('\0') != std::string_view::npos ||
        !valid_utf8(name))
        return error::invalid_name;
    return {};
}

error_code check_options(const pg_mutex_options& o) noexcept {
    if (!valid_lease(o.lease))
        return error::invalid_lease;
    if (!within(o.max_hold, std::chrono::steady_clock::duration::zero()))
        return error::invalid_argument;
    if (!valid_retry(o.retry_base, o.retry_max))
        return error::invalid_argument;
    return {};
}

std::int64_t xact_key(std::string_view name) noexcept {
    std::uint64_t h = 0xcbf29ce484222325u;
    for (char c : name) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3u;
    }
    return static_cast<std::int64_t>(h);
}

error_code check_xact_options(const pg_xact_options& o) noexcept {
    if (!within(o.attempt_wait, std::chrono::milliseconds(1)))
        return error::invalid_argument;
    if (!valid_retry(o.retry_base, o.retry_max))
        return error::invalid_argument;
    return {};
}

xact_outcome decide_xact(error_code ec, std::string_view lock_sqlstate) noexcept {
    if (!ec)
        return xact_outcome::committed;
    if (ec == error::server_error && lock_sqlstate == lock_timeout_sqlstate)
        return xact_outcome::busy;
    return xact_outcome::failed;
}

std::string acquire_failure(std::string_view name, std::string_view sqlstate,
                            std::string_view message) {
    std::string out = "postgres lock: acquire of ";
    out.append(name).append(" failed: ").append(message);
    if (!sqlstate.empty())
        out.append(" (SQLSTATE ").append(sqlstate).append(")");
    if (sqlstate == undefined_function_sqlstate)
        out += ": no corolock_acquire function: the schema is missing or was installed by an "
               "older corolock; run pg_mutex::async_install (again after an upgrade)";
    else if (sqlstate == undefined_table_sqlstate)
        out += ": no lock table; run pg_mutex::async_install";
    return out;
}

std::string to_ms(std::chrono::steady_clock::duration d) {
    return std::to_string(std::chrono::ceil<std::chrono::milliseconds>(d).count());
}

std::string text_array(std::span<const std::string_view> values) {
    std::string out(1, '{');
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i != 0)
            out += ',';
        out += '"';
        for (char c : values[i]) {
            if (c == '"' || c == '\\')
                out += '\\';
            out += c;
        }
        out += '"';
    }
    out += '}';
    return out;
}

std::optional<std::int64_t> parse_int(std::string_view text) noexcept {
    std::int64_t v = 0;
    const auto* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || p != end || text.empty())
        return std::nullopt;
    return v;
}

error_code decode_acquire(std::size_t rows, std::optional<std::string_view> token,
                          std::optional<std::string_view> remaining, acquire_reply& out) noexcept {
    out = {};
    if (rows == 0)
        return {}; // refused, and the holder's row was gone when its remaining lease was read
    if (rows != 1)
        return error::unexpected_reply;
    if (token) {
        const auto t = parse_int(*token);
        if (!t || *t <= 0 || remaining)
            return error::unexpected_reply;
        out.granted = true;
        out.token = static_cast<std::uint64_t>(*t);
        return {};
    }
    if (!remaining)
        return error::unexpected_reply;
    const auto r = parse_int(*remaining);
    if (!r || *r < 0)
        return error::unexpected_reply;
    out.holder_ms = *r;
    return {};
}

// What an acquisition through `opts` asks of the lock core. A wait already over when it begins
// (a zero wait, a deadline past) is one attempt, as a try: the lock if it is free, else
// `acquire_timeout` (racing the attempt against a deadline already past would make the outcome
// depend on which is seen first). Its reply is waited for as long as the connection takes: the
// connection's health check bounds a stalled server.
acquire_params acquire_params_of(const pg_mutex_options& opts, clock::time_point deadline,
                                 bool once, clock::time_point now) {
    const bool no_wait = !once && deadline <= now;
    acquire_params p;
    p.deadline = once || no_wait ? clock::time_point::max() : deadline;
    p.once = once || no_wait;
    p.held_is_timeout = no_wait;
    p.lease = opts.lease;
    p.drift = drift_for(opts.lease);
    p.retry_base = opts.retry_base;
    p.retry_max = opts.retry_max;
    return p;
}

acquire_params xact_params_of(const pg_xact_options& opts, clock::time_point deadline,
                              clock::time_point now) {
    // A wait already over when it begins is one attempt, as for a pg_mutex: not queued behind
    // the connection's other transactions of the name, busy is acquire_timeout.
    const bool no_wait = deadline <= now;
    acquire_params p;
    p.deadline = deadline;
    p.once = no_wait;
    p.held_is_timeout = no_wait;
    p.binding = true;
    p.retry_base = opts.retry_base;
    p.retry_max = opts.retry_max;
    return p;
}

} // namespace corolock::detail::pg_sql
