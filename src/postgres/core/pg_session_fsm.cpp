// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/core/pg_session_fsm.hpp"

#include "postgres/core/pg_lock_sql.hpp"

#include <ostream>

namespace corolock::detail {

std::ostream& operator<<(std::ostream& os, pg_session_fsm::state s) {
    switch (s) {
    case pg_session_fsm::state::closed:
        return os << "closed";
    case pg_session_fsm::state::opening:
        return os << "opening";
    case pg_session_fsm::state::open:
        return os << "open";
    }
    return os << "?";
}

std::ostream& operator<<(std::ostream& os, pg_session_fsm::ending e) {
    switch (e) {
    case pg_session_fsm::ending::none:
        return os << "none";
    case pg_session_fsm::ending::terminated:
        return os << "terminated";
    case pg_session_fsm::ending::already_gone:
        return os << "already_gone";
    case pg_session_fsm::ending::still_running:
        return os << "still_running";
    case pg_session_fsm::ending::failed:
        return os << "failed";
    }
    return os << "?";
}

std::ostream& operator<<(std::ostream& os, pg_session_fsm::ended e) {
    switch (e) {
    case pg_session_fsm::ended::clean:
        return os << "clean";
    case pg_session_fsm::ended::to_end:
        return os << "to_end";
    case pg_session_fsm::ended::identity_unknown:
        return os << "identity_unknown";
    }
    return os << "?";
}

namespace pg_session_sql {

// The start as exact numeric text: independent of the sessions' DateStyle and TimeZone.
const std::string_view identity =
    "SELECT pid, extract(epoch FROM backend_start)::text FROM pg_stat_activity "
    "WHERE pid = pg_backend_pid()";

// The timeout form waits until the process has left the server (its transaction rolled back or
// committed, nothing more read from its socket).
const std::string_view terminate =
    "SELECT pg_terminate_backend(pid, $3::bigint) FROM pg_stat_activity "
    "WHERE pid = $1::integer AND extract(epoch FROM backend_start) = $2::numeric";

std::optional<pg_backend> decode_identity(std::string_view pid, std::string_view started) {
    const auto n = pg_sql::parse_int(pid);
    if (!n || *n <= 0 || *n > INT32_MAX || started.empty())
        return std::nullopt;
    for (char c : started)
        if ((c < '0' || c > '9') && c != '.')
            return std::nullopt;
    return pg_backend{static_cast<std::int32_t>(*n), std::string(started)};
}

pg_session_fsm::ending decode_terminate(bool failed, std::size_t rows,
                                        std::string_view value) noexcept {
    if (failed)
        return pg_session_fsm::ending::failed;
    if (rows == 0)
        return pg_session_fsm::ending::already_gone;
    return value == "t" ? pg_session_fsm::ending::terminated
                        : pg_session_fsm::ending::still_running;
}

} // namespace pg_session_sql

} // namespace corolock::detail
