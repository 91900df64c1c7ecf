// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL election's statements and decisions (doc/election.md, "PostgreSQL"): the
// record table, the fenced begin, proclaim and end, the read, the channel's payloads, and what a
// campaign or an observer makes of a read. Pure: the driver (io/pg_election_driver.cpp) runs
// the statements.
#ifndef COROLOCK_SRC_POSTGRES_CORE_PG_ELECTION_SQL_HPP
#define COROLOCK_SRC_POSTGRES_CORE_PG_ELECTION_SQL_HPP

#include "core/leader_view.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corolock::detail::pg_election_sql {

// The channel every election announces on; a payload is "<bytes of the name>:<name><message>"
// (a name may hold any character), the message as Redis's (core/leader_view.hpp):
// "leader <term> <version> -1 <value>" or "ended <term>".
inline constexpr std::string_view channel = "corolock_leader";

// CREATE TABLE IF NOT EXISTS corolock_leaders (name, term, version, live, value), serialised
// against concurrent installs as pg_sql::install is.
extern const std::string_view install;
// Fenced by the lease ($1 name, $2 term, $3 value): the row (version 1, live) and its NOTIFY.
extern const std::string_view begin;
// Fenced ($1 name, $2 term, $3 value): version + 1 while the row is this term's and live;
// returns the new version (no row: the record is not this term's).
extern const std::string_view proclaim;
// Fenced ($1 name, $2 term): live false while the row is this term's, and its NOTIFY.
extern const std::string_view end;
// $1 name: term, version, live, value, and the lock's remaining ms while the lock row holds
// this term (NULL otherwise); no row without a record.
extern const std::string_view read;

// A row of `read`, as text cells.
struct record_cells {
    std::optional<std::string_view> term, version, live, value, ttl_ms;
};
// The read's view: none (no row), the leader while the lock holds its term, else the term's
// end. False for cells of another shape.
bool decode_read(const std::optional<record_cells>& row, leader_view& out);
// Whether a campaign holding term `mine` waits the lock-delay: the record says live for
// another term (its leader was lost, not resigned).
bool must_delay(const std::optional<record_cells>& row, std::uint64_t mine);

// The message of a payload when it is `name`'s, else nothing.
std::optional<std::string_view> message_for(std::string_view payload, std::string_view name);

} // namespace corolock::detail::pg_election_sql

#endif
