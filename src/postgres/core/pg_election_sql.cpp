// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/core/pg_election_sql.hpp"

#include "core/decimal.hpp"

namespace corolock::detail::pg_election_sql {

const std::string_view install = R"sql(DO $corolock$
BEGIN
    PERFORM pg_advisory_xact_lock(7236544211412701313);
    CREATE TABLE IF NOT EXISTS corolock_leaders (
        name text PRIMARY KEY,
        term bigint NOT NULL,
        version bigint NOT NULL,
        live boolean NOT NULL,
        value text NOT NULL);
END
$corolock$)sql";

const std::string_view begin = R"sql(WITH w AS (
    INSERT INTO corolock_leaders AS l (name, term, version, live, value)
    VALUES ($1, $2::bigint, 1, true, $3)
    ON CONFLICT (name) DO UPDATE
        SET term = excluded.term, version = 1, live = true, value = excluded.value
    RETURNING l.term, l.version)
SELECT pg_notify('corolock_leader', octet_length($1) || ':' || $1 || 'leader ' || w.term || ' '
    || w.version || ' -1 ' || $3) FROM w)sql";

const std::string_view proclaim = R"sql(WITH w AS (
    UPDATE corolock_leaders SET version = version + 1, value = $3
    WHERE name = $1 AND term = $2::bigint AND live
    RETURNING term, version)
SELECT w.version, pg_notify('corolock_leader', octet_length($1) || ':' || $1 || 'leader '
    || w.term || ' ' || w.version || ' -1 ' || $3) FROM w)sql";

const std::string_view end = R"sql(WITH w AS (
    UPDATE corolock_leaders SET live = false
    WHERE name = $1 AND term = $2::bigint AND live
    RETURNING term)
SELECT pg_notify('corolock_leader', octet_length($1) || ':' || $1 || 'ended ' || w.term)
FROM w)sql";

const std::string_view read = R"sql(SELECT l.term, l.version, l.live, l.value,
    (SELECT greatest(0, ceil(extract(epoch FROM (m.expires_at - clock_timestamp())) * 1000))::bigint
     FROM corolock_locks m
     WHERE m.name = l.name AND m.token = l.term AND m.expires_at > clock_timestamp())
FROM corolock_leaders l WHERE l.name = $1)sql";

namespace {

bool parse_bool(std::optional<std::string_view> s, bool& out) {
    if (s == "t" || s == "f") {
        out = *s == "t";
        return true;
    }
    return false;
}

} // namespace

bool decode_read(const std::optional<record_cells>& row, leader_view& out) {
    out = leader_view{};
    if (!row)
        return true;
    bool live = false;
    if (!row->term || !row->version || !row->value || !parse_decimal(*row->term, out.term) ||
        !parse_decimal(*row->version, out.version) || !parse_bool(row->live, live) ||
        out.term == 0 || out.version == 0)
        return false;
    if (live && row->ttl_ms) {
        if (!parse_decimal(*row->ttl_ms, out.ttl_ms) || out.ttl_ms < 0)
            return false;
        out.present = true;
        out.value = *row->value;
    } else {
        out.ended = true;
    }
    return true;
}

bool must_delay(const std::optional<record_cells>& row, std::uint64_t mine) {
    std::uint64_t term = 0;
    bool live = false;
    return row && row->term && parse_decimal(*row->term, term) && parse_bool(row->live, live) &&
           live && term != mine;
}

std::optional<std::string_view> message_for(std::string_view payload, std::string_view name) {
    const auto colon = payload.find(':');
    std::size_t bytes = 0;
    if (colon == std::string_view::npos || !parse_decimal(payload.substr(0, colon), bytes) ||
        bytes != name.size() || payload.substr(colon + 1, bytes) != name)
        return std::nullopt;
    return payload.substr(colon + 1 + bytes);
}

} // namespace corolock::detail::pg_election_sql
