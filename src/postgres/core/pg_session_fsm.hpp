// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_CORE_PG_SESSION_FSM_HPP
#define COROLOCK_SRC_CORE_PG_SESSION_FSM_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace corolock::detail {

// One server session: its backend process's pid and its start, as the server prints
// `extract(epoch FROM backend_start)`. Pids are reused; the pair names one session, on one server.
struct pg_backend {
    std::int32_t pid = 0;
    std::string started;
    friend bool operator==(const pg_backend&, const pg_backend&) = default;
};

// The order of a connection's sessions, sans-io. Each PostgreSQL session is a process of its
// own, and a dropped session's process may still hold statements that were sent and never
// answered (a server that froze with them in its socket buffer runs them when it thaws). Nothing
// orders them against the next session's statements: an undo sent on the new session could run
// before the attempt it undoes. So a session that ended with statements in flight is ended by
// the next one (pg_terminate_backend, waiting for its exit) before that one runs anything else.
//
// Every session opens with one statement of its own (`identity`, preceded by `terminate` when a
// predecessor must end), sent alone; the queue is held back until its answer. It is one round
// trip per connect, and it means a session dropped before its answer had nothing but that
// statement in flight, so its identity is known whenever it matters.
//
// States: closed (no connection), opening (the opening statement is on its way), open (the queue
// is sent). The driver feeds the connect, the opening statement's answer and the drop.
class pg_session_fsm {
public:
    using clock = std::chrono::steady_clock;

    enum class state { closed, opening, open };

    // What the opening statement does: end `predecessor` if set, waiting up to `wait` for its
    // process to exit, then read this session's identity.
    struct opening {
        std::optional<pg_backend> predecessor;
        clock::duration wait{};
    };

    // What became of the predecessor (from the terminate query's answer, see decode_terminate).
    enum class ending {
        none,          // there was none to end
        terminated,    // it ended within the wait: none of its statements runs any more
        already_gone,  // it had ended before (or is on another server: a failover)
        still_running, // it was not seen to end within the wait: its statements may still run
        failed         // the terminate failed (no right to, PostgreSQL before 14): the same risk
    };

    // What the end of a session means for the next one.
    enum class ended {
        clean,           // nothing was in flight (or the session never opened)
        to_end,          // statements were in flight: the next session ends this one first
        identity_unknown // statements were in flight and the session's identity is unknown
    };

    // `wait`: how long the opening statement waits for a predecessor's exit (at least 1 ms).
    explicit pg_session_fsm(clock::duration wait) noexcept
        : wait_(wait < std::chrono::milliseconds(1) ? std::chrono::milliseconds(1) : wait) {}

    // A connection was made (closed -> opening): the opening statement to send, alone.
    opening on_connected() {
        state_ = state::opening;
        self_.reset();
        return opening{predecessor_, wait_};
    }

    // The opening statement answered (opening -> open): `self` is this session's identity
    // (nullopt when its query failed), `how` what became of the predecessor. The predecessor is
    // forgotten either way: ended, or, if not, nothing more can be done but say so.
    ending on_opened(std::optional<pg_backend> self, ending how) {
        if (state_ != state::opening)
            return ending::none;
        state_ = state::open;
        self_ = std::move(self);
        const ending out = predecessor_ ? how : ending::none;
        predecessor_.reset();
        return out;
    }

    // The connection dropped with `in_flight` statements sent and not answered (-> closed).
    ended on_disconnect(std::size_t in_flight) {
        const state was = std::exchange(state_, state::closed);
        if (was != state::open || in_flight == 0)
            return ended::clean; // opening: only the opening statement was out; the predecessor
                                 // (if any) is still to end
        predecessor_ = std::move(self_);
        self_.reset();
        return predecessor_ ? ended::to_end : ended::identity_unknown;
    }

    // Whether the queue may be sent: only once the session is open.
    bool may_send() const noexcept { return state_ == state::open; }
    state current() const noexcept { return state_; }
    const std::optional<pg_backend>& self() const noexcept { return self_; }
    const std::optional<pg_backend>& predecessor() const noexcept { return predecessor_; }
    clock::duration wait() const noexcept { return wait_; }

private:
    clock::duration wait_;
    state state_ = state::closed;
    std::optional<pg_backend> self_;
    std::optional<pg_backend> predecessor_;
};

std::ostream& operator<<(std::ostream& os, pg_session_fsm::state s);
std::ostream& operator<<(std::ostream& os, pg_session_fsm::ending e);
std::ostream& operator<<(std::ostream& os, pg_session_fsm::ended e);

namespace pg_session_sql {

// No parameters. One row: this session's pid and `extract(epoch FROM backend_start)` as text.
extern const std::string_view identity;
// $1 pid, $2 start (as `identity` gives it), $3 wait in ms. One row (pg_terminate_backend's
// answer: true when the process exited within the wait) when that session still exists, else
// none. PostgreSQL 14 or later; a role may end its own role's sessions.
extern const std::string_view terminate;

// The identity from `identity`'s row; nullopt when malformed.
std::optional<pg_backend> decode_identity(std::string_view pid, std::string_view started);
// What the terminate query's answer means: `failed` (it raised an error), else its rows (0 or 1)
// and the row's value ("t" or "f").
pg_session_fsm::ending decode_terminate(bool failed, std::size_t rows,
                                        std::string_view value) noexcept;

} // namespace pg_session_sql

} // namespace corolock::detail

#endif
