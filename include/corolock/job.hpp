// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_JOB_HPP
#define COROLOCK_JOB_HPP

#include <corolock/connection.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>

namespace corolock {

namespace detail {
struct job_core;
} // namespace detail

class cluster;

/// What happens to a slot whose runner died (or whose body failed) before it completed.
enum class job_mode {
    /// The slot is run again by the next process that asks for it once the runner's lease has
    /// ended: every slot completes, a body may run more than once (make it idempotent, or fence
    /// its writes with the lease).
    at_least_once,
    /// The slot is not run again: a body runs at most once per slot, and an interrupted slot is
    /// reported `abandoned`.
    at_most_once,
};

/// Why `job::async_begin` did or did not give this process the slot.
enum class job_outcome {
    ran,          ///< this process runs (or ran) the slot
    done_already, ///< the slot, or a later one, completed
    busy,         ///< another process is running the job (a zero or exhausted `wait`)
    too_soon,     ///< a run of an earlier slot began less than `at_least_for` ago (server clock)
    abandoned,    ///< at_most_once: a run of this slot began and did not complete
};

/// Policy of one job (doc/job.md). Checked by the first call (`invalid_lease`,
/// `invalid_argument` with the field named in the log).
struct job_options {
    /// The run's lock: its lease (a runner that dies frees the slot within it), watchdog,
    /// back-off. Its `max_hold` is set from `at_most_for`.
    mutex_options lock;
    /// The longest run: past it the run's lease is reported lost and the body is cancelled
    /// (ShedLock's lockAtMostFor). 0: no limit (the watchdog renews as long as the body runs).
    std::chrono::steady_clock::duration at_most_for = std::chrono::steady_clock::duration::zero();
    /// No run of a later slot begins until this long after the last run began, on the server's
    /// clock (ShedLock's lockAtLeastFor): a fast run on a process whose clock is ahead cannot be
    /// followed at once by the next slot's. 0 to 365 days; 0: off.
    std::chrono::steady_clock::duration at_least_for = std::chrono::steady_clock::duration::zero();
    /// at_least_once (the default) or at_most_once.
    job_mode mode = job_mode::at_least_once;
    /// How long async_begin waits for another process's run to end (then it finds the slot
    /// done, or runs it if that run died). 0: skip at once when the job is running elsewhere
    /// (`busy`). Default: no limit.
    std::chrono::steady_clock::duration wait = std::chrono::steady_clock::duration::max();
    /// How long the job's record ({J}:job: the last slot done) outlives its last run, 1 ms to
    /// 365 days: keep it above the schedule's period, or a slot run before the record expired
    /// could run again. Default 7 days.
    std::chrono::steady_clock::duration record_retention = std::chrono::hours(24 * 7);
};

/// One slot's run, as `job::async_begin` gives it: when `runs()`, this process holds the job's
/// lock for the slot (`lease()`, for fenced writes); else `outcome()` says why not. Move-only.
/// Destroying a running one releases the lock without marking the slot done.
class COROLOCK_DECL job_run {
public:
    /// An empty run (runs nothing).
    job_run() noexcept = default;
    /// Takes `other`'s run; `other` is left empty.
    job_run(job_run&&) noexcept = default;
    /// Releases the lock this one held (no mark), then takes `other`'s run.
    job_run& operator=(job_run&&) noexcept = default;
    ~job_run() = default;

    /// This process runs the slot.
    bool runs() const noexcept { return lease_.owns(); }
    /// `ran` while runs(); else why this process does not run it.
    job_outcome outcome() const noexcept { return outcome_; }
    /// The slot.
    std::uint64_t slot() const noexcept { return slot_; }
    /// The run's lease (empty unless runs()).
    corolock::lease& lease() noexcept { return lease_; }
    /// The same, read-only.
    const corolock::lease& lease() const noexcept { return lease_; }

    /// Marks the slot done (owner-checked: only while the lease is the job's) and releases the
    /// lock. Leaves this object empty.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the run may be destroyed meanwhile.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none (it completes promptly).
    /// Errors: `lease_lost` (the lease ended before the mark: nothing marked; another process
    /// may have run the slot meanwhile); `not_owner` (not running); connection errors (unknown
    /// outcome: the mark may or may not be there; it is never sent again).
    /// Thread safety: one operation per run, as a lease.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_complete(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, job_run* self) { self->complete_impl(std::move(handler)); }, token,
            this);
    }

private:
    friend struct detail::access;
    job_run(corolock::lease l, std::shared_ptr<detail::job_core> core, std::uint64_t slot,
            job_outcome o)
        : lease_(std::move(l)), core_(std::move(core)), slot_(slot), outcome_(o) {}
    void complete_impl(boost::asio::any_completion_handler<void(error_code)> h);

    corolock::lease lease_;
    std::shared_ptr<detail::job_core> core_;
    std::uint64_t slot_ = 0;
    job_outcome outcome_ = job_outcome::ran;
};

/// A job that runs once per schedule slot on at most one process at a time (doc/job.md). A
/// slot is a number the caller derives from its schedule (a day's number), or the server's
/// (`async_server_slot`). A handle meant to be shared, as `mutex`. Keys: the lock's (doc/keys.md,
/// `mutex`) and the record `{J}:job`.
///
/// Thread safety: every member function may be called from any thread.
/// Lifetime: the connection (or cluster) must outlive the job.
class COROLOCK_DECL job {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;

    /// No I/O. Invalid arguments are reported by the first call.
    job(connection& conn, std::string name, job_options opts = {});
    /// Over a Redis Cluster: the lock and the record share the name's slot.
    job(cluster& c, std::string name, job_options opts = {});
    ~job();
    job(const job&) = delete;
    job& operator=(const job&) = delete;

    /// The executor given at construction.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const job_options& options() const noexcept;

    /// Takes the slot for this process: waits (up to `wait`) for the job's lock, then checks the
    /// record. A run that `runs()` is this process's to run and complete.
    ///
    /// Completion signature: `void(error_code, job_run)`.
    /// Object lifetimes: the job may be destroyed meanwhile (`operation_aborted`).
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial and total: the lock, if granted, is released.
    /// Errors: as `mutex::async_acquire`; `invalid_argument` (before anything is sent);
    /// `wrong_type` (a foreign key at the record); `lease_lost` (the lock was lost before the
    /// record was read).
    /// Thread safety: any thread, concurrently.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_begin(std::uint64_t slot, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, job_run)>(
            [](auto handler, job* self, std::uint64_t s) {
                self->begin_impl(s, std::move(handler));
            },
            token, this, slot);
    }

    /// The slot the server's clock is in for `period` (its `TIME` in ms divided by the period):
    /// every process agrees on it whatever its own clock says.
    ///
    /// Completion signature: `void(error_code, std::uint64_t)`.
    /// Object lifetimes: the job may be destroyed meanwhile.
    /// Executor: as `connection::async_exec`. Cancellation: as `connection::async_exec`.
    /// Errors: `invalid_argument` (a period below 1 ms, before anything is sent); connection
    /// errors.
    /// Thread safety: any thread, concurrently.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_server_slot(std::chrono::steady_clock::duration period,
                           CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, std::uint64_t)>(
            [](auto handler, job* self, std::chrono::steady_clock::duration p) {
                self->slot_impl(p, std::move(handler));
            },
            token, this, period);
    }

    /// The last slot done (nullopt: none in the record's retention).
    ///
    /// Completion signature: `void(error_code, std::optional<std::uint64_t>)`.
    /// Object lifetimes: the job may be destroyed meanwhile.
    /// Executor: as `connection::async_exec`. Cancellation: as `connection::async_exec`.
    /// Errors: `invalid_name` (before anything is sent); `wrong_type`; connection errors.
    /// Thread safety: any thread, concurrently.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_last_done(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken,
                                           void(error_code, std::optional<std::uint64_t>)>(
            [](auto handler, job* self) { self->last_done_impl(std::move(handler)); }, token, this);
    }

private:
    void begin_impl(std::uint64_t slot,
                    boost::asio::any_completion_handler<void(error_code, job_run)> h);
    void slot_impl(std::chrono::steady_clock::duration period,
                   boost::asio::any_completion_handler<void(error_code, std::uint64_t)> h);
    void last_done_impl(
        boost::asio::any_completion_handler<void(error_code, std::optional<std::uint64_t>)> h);

    std::shared_ptr<detail::job_core> core_;
};

/// Runs `body(lease&)` (a callable returning `boost::asio::awaitable<void>`) for `slot` if this
/// process gets it (job::async_begin), then marks the slot done; returns the outcome. If the
/// lease is lost while the body runs, the body is cancelled and this throws
/// `system_error(lease_lost)` (or `max_hold_reached`: `at_most_for`), the slot not marked. A
/// body's exception is rethrown after the lock is released, the slot not marked. A failed begin
/// or mark throws `system_error`. Coroutine-only, as `with_lock`.
template <class Body>
boost::asio::awaitable<job_outcome> run_once(job& j, std::uint64_t slot, Body body) {
    namespace asio = boost::asio;
    auto [ec, run] = co_await j.async_begin(slot, asio::as_tuple(asio::use_awaitable));
    if (ec)
        throw boost::system::system_error(ec);
    if (!run.runs())
        co_return run.outcome();
    auto ex = co_await asio::this_coro::executor;
    auto [order, body_error, watch_error, lost_ec] =
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ex, detail::run_void_body(body, run.lease()), asio::deferred),
            asio::co_spawn(ex, detail::watch_lost(run.lease()), asio::deferred))
            .async_wait(asio::experimental::wait_for_one(), asio::deferred);
    (void)watch_error;
    co_await asio::this_coro::reset_cancellation_state(); // the mark goes out even when cancelled
    if (order[0] == 1 && lost_ec && lost_ec != asio::error::operation_aborted)
        throw boost::system::system_error(lost_ec); // `run` releases what is left
    if (body_error)
        std::rethrow_exception(body_error);
    auto [mark_ec] = co_await run.async_complete(asio::as_tuple(asio::use_awaitable));
    if (mark_ec)
        throw boost::system::system_error(mark_ec);
    co_return job_outcome::ran;
}

} // namespace corolock

#endif
