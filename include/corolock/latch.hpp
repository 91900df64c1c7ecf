// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_LATCH_HPP
#define COROLOCK_LATCH_HPP

#include <corolock/connection.hpp>
#include <corolock/detail/deadline.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace corolock {

namespace detail {
struct latch_impl;
}

class cluster;

/// Policy of one latch object. Checked by each operation before anything is sent
/// (`invalid_argument`).
struct latch_options {
    /// How long the latch's keys live after the last create or count-down (1 ms to 365 days):
    /// every create and count-down sets this TTL on both keys. An opened latch answers late
    /// awaiters at once for this long; a latch nobody counts down for this long disappears
    /// (`no_latch`). Awaiting does not extend it.
    std::chrono::steady_clock::duration retention = std::chrono::minutes(10);
    /// Fallback back-off of an awaiting latch object, when no open message comes: it re-reads
    /// the latch after a wait drawn from [d/2, d], d doubling from retry_base (at least 1 ms) to
    /// retry_max (at least retry_base, at most 1 hour), reset by any progress seen.
    std::chrono::steady_clock::duration retry_base = std::chrono::milliseconds(200);
    /// The cap of that back-off.
    std::chrono::steady_clock::duration retry_max = std::chrono::seconds(5);
};

/// One round of a latch, as `async_create` found or made it.
struct latch_round {
    /// The round's generation (server TIME in µs when it began; larger for each new round).
    /// Count-downs name it.
    std::uint64_t generation = 0;
    /// The number of distinct participants that open it.
    std::uint64_t target = 0;
    /// True when this call began the round (a new latch, or a new round over an open one);
    /// false when it was already there and is returned as is.
    bool created = false;
};

/// What a count-down left behind.
struct latch_state {
    /// The round is open (this count-down opened it, or it was open already).
    bool open = false;
    /// Distinct participants still missing (0 when open).
    std::uint64_t remaining = 0;
};

/// A count-down latch across processes on one name (doc/latch.md): it opens when `target`
/// distinct participant ids have counted down in the current round, and wakes every awaiter in
/// every process. A handle meant to be shared, like `mutex`; it holds nothing in Redis itself.
///
/// Rounds: `async_create` begins the first round; on an open latch it begins the next one (a new
/// generation, no participants). Count-downs name the round (`latch_round::generation`), so a
/// count-down of an earlier round never counts in a later one. An await waits for the round
/// current at its first read.
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection (or cluster) must outlive the latch. Destroying the latch cancels its
/// pending awaits (`operation_aborted`).
class COROLOCK_DECL latch {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// The clock that deadlines and lease ends are read on.
    using clock = std::chrono::steady_clock;
    /// A wait, lease or window length on `clock`.
    using duration = clock::duration;

    /// No I/O. Invalid names and options are reported by each operation.
    latch(connection& conn, std::string name, latch_options opts = {});
    /// The same latch over a Redis Cluster: every script goes to the master of the name's slot,
    /// the open is published with SPUBLISH and awaiters listen with SSUBSCRIBE there. The
    /// cluster must outlive the latch; `cluster::async_run` must be running. No I/O here.
    latch(cluster& c, std::string name, latch_options opts = {});
    ~latch();
    latch(const latch&) = delete;
    latch& operator=(const latch&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const latch_options& options() const noexcept;

    /// Makes the latch with `target` participants, or returns the round in place: a closed latch
    /// with the same target is returned as is (`created` false); an open one begins its next
    /// round with `target` (a new generation, `created` true).
    ///
    /// Completion signature: `void(error_code, latch_round)`.
    /// Object lifetimes: the latch may be destroyed meanwhile; the connection must outlive the
    /// operation.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal and partial, as `connection::async_exec`: a create cancelled after
    /// it was written may still have made the latch.
    /// Errors: `invalid_name`, `invalid_argument` (target 0 or above 2^40, bad options) before
    /// anything is sent; `target_mismatch` (a closed latch with another target: the round in
    /// place is in the result); `wrong_type` (a foreign key at the name or its `:d` key);
    /// connection errors (`connection_lost`: the outcome is unknown, a retry is safe as it returns
    /// the latch as is); `server_error`; `unexpected_reply`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_create(std::uint64_t target, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, latch_round)>(
            [](auto handler, latch* self, std::uint64_t target) {
                self->create_impl(target, std::move(handler));
            },
            token, this, target);
    }

    /// Counts participant `id` down in round `generation`. Idempotent per id: a repeat (a retry
    /// after `connection_lost`, with the same id) counts once. The count-down that reaches the
    /// target opens the round and publishes `open <generation>` once.
    ///
    /// Completion signature: `void(error_code, latch_state)`.
    /// Object lifetimes: `id` is copied before the call returns; the latch may be destroyed
    /// meanwhile; the connection must outlive the operation.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal and partial, as `connection::async_exec`: a cancelled count-down may
    /// have counted (retry it with the same id to know).
    /// Errors: `invalid_name`, `invalid_argument` (empty id or above 512 bytes, generation 0, bad
    /// options) before anything is sent; `no_latch` (missing or expired); `stale_generation`
    /// (another round is current: nothing counted); `wrong_type`; connection errors
    /// (`connection_lost`: unknown outcome, retry with the same id); `server_error`;
    /// `unexpected_reply`.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_count_down(std::string_view id, std::uint64_t generation,
                          CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, latch_state)>(
            [](auto handler, latch* self, std::string id, std::uint64_t generation) {
                self->count_down_impl(std::move(id), generation, std::move(handler));
            },
            token, this, std::string(id), generation);
    }

    /// Waits until the current round is open; an open latch completes at once (for its
    /// retention). Subscribes to the release channel before it reads the latch, so an open after
    /// that read is never missed; a fallback timer re-reads it (options' back-off), and so does a
    /// reconnect. Every awaiter of every latch object is woken by the one message.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the latch may be destroyed meanwhile (the wait is then cancelled).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total; each await on its own (the others go on).
    /// Completes promptly with `operation_aborted`; nothing is left in Redis.
    /// Errors: `invalid_name`, `invalid_argument` (bad options) before anything is sent;
    /// `no_latch` (missing, or it expired while awaited); `stale_generation` (the round was
    /// replaced by a new latch after it expired, without opening); `wrong_type`;
    /// `server_error`; `unexpected_reply`. Connection errors are ridden out (the latch is read
    /// again).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait(CompletionToken&& token = {}) {
        return async_wait_until(clock::time_point::max(), std::forward<CompletionToken>(token));
    }

    /// As async_wait, but gives up after `wait`. The first read always answers: with `wait` zero
    /// or negative it is a try (success if open, else `acquire_timeout`).
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: as async_wait.
    /// Executor: as async_wait.
    /// Cancellation: as async_wait.
    /// Errors: as async_wait, plus `acquire_timeout` when `wait` passed first (never before the
    /// first read has answered or failed).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_for(duration wait, CompletionToken&& token = {}) {
        return async_wait_until(detail::deadline_of(std::max(wait, duration::zero())),
                                std::forward<CompletionToken>(token));
    }

    /// As async_wait, but gives up at `deadline`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: as async_wait.
    /// Executor: as async_wait.
    /// Cancellation: as async_wait.
    /// Errors: as async_wait_for.
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_until(clock::time_point deadline, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, latch* self, clock::time_point deadline) {
                self->wait_impl(deadline, std::move(handler));
            },
            token, this, deadline);
    }

    /// Cancels every pending await of this latch object (`operation_aborted`).
    void cancel();

private:
    void create_impl(std::uint64_t target,
                     boost::asio::any_completion_handler<void(error_code, latch_round)> h);
    void count_down_impl(std::string id, std::uint64_t generation,
                         boost::asio::any_completion_handler<void(error_code, latch_state)> h);
    void wait_impl(clock::time_point deadline,
                   boost::asio::any_completion_handler<void(error_code)> h);

    std::shared_ptr<detail::latch_impl> impl_;
};

} // namespace corolock

#endif
