// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SHARED_MUTEX_HPP
#define COROLOCK_SHARED_MUTEX_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/lease.hpp>
#include <corolock/lock_handle_base.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace corolock {

namespace detail {
struct shared_mutex_core;
}

class connection;
class cluster;

/// A read-write lock across processes: many readers or one writer on one name. Every
/// acquisition, either side, is a `lease` with its own owner, the watchdog and the lost signal,
/// as a mutex's. See doc/shared_mutex.md for the keys, scripts and guarantees.
///
/// - **Writer preference.** A writer refused because readers hold records its *intent*; while a
///   live intent exists no new reader is granted, so a writer behind a stream of readers gets in
///   once the readers present finish. A writer that gives up (cancelled, timed out) removes its
///   intent; one that dies leaves it to expire within `2 × retry_max + 1 s` (5 s by default).
/// - **Tokens.** A writer's lease has a fencing token by the mutex's rule; a reader's
///   `lease::token()` is the last writer's token (0 if none yet), so a reader can stamp what it
///   read. A reader's `async_fenced_eval` runs its body only while its record is live on the
///   server's clock.
///
/// One name serves one kind of lock: a plain `mutex` on a shared_mutex's name does not see its
/// readers.
///
/// Acquiring, as the writer (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire:
/// the only writer, no reader holding) and as a reader (`shared_lock_handle_base`:
/// async_acquire_shared, _shared_for, _shared_until, async_try_acquire_shared: no writer holds
/// and none waits): as `mutex`'s. A cancelled or timed-out writer's intent goes with it; a
/// writer's try leaves no intent behind. A try comes back empty when a writer or readers hold
/// (writer) or a writer holds or waits (reader).
///
/// Thread safety: every member function may be called from any thread, concurrently.
/// Lifetime: the connection (or cluster) must outlive the shared_mutex. Destroying it cancels
/// its pending acquires; leases already given out live on.
class COROLOCK_DECL shared_mutex : public lock_handle_base<shared_mutex, lease>,
                                   public shared_lock_handle_base<shared_mutex, lease> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// As `mutex`'s (a writer's; a reader's lease carries the last writer's token).
    static constexpr lock_capabilities capabilities = mutex::capabilities;

    /// No I/O. Invalid arguments are reported by the first acquire.
    shared_mutex(connection& conn, std::string name, mutex_options opts = {});
    /// The same lock over a Redis Cluster: its keys share the name's slot.
    shared_mutex(cluster& c, std::string name, mutex_options opts = {});
    ~shared_mutex();
    shared_mutex(const shared_mutex&) = delete;
    shared_mutex& operator=(const shared_mutex&) = delete;

    /// The executor given at construction. The object's own work runs on it, and so does any
    /// completion whose handler has no associated executor.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const mutex_options& options() const noexcept;

    /// Turns a writer's lease of this lock into a reader's, in one step on the server: no other
    /// writer can come in between, and readers waiting behind the writer are let in. The new
    /// lease has the same owner id; `writer` (and its nested holds) end without a release.
    ///
    /// Completion signature: `void(error_code, lease)`; the reader's lease.
    /// Object lifetimes: `writer` need not outlive the call.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none (one script; its outcome is reported).
    /// Errors: `not_owner` (an empty lease, a reader's, another lock's, or already converted;
    /// nothing is sent), `lease_lost` (the writer's lease was lost), connection errors (an
    /// unknown outcome is undone: the reader's record is given back, and the writer's lease is
    /// reported lost at its next renewal if it is gone).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_downgrade(const lease& writer, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, lease)>(
            [](auto handler, shared_mutex* self, const lease* l) {
                self->convert_impl(*l, true, std::move(handler));
            },
            token, this, &writer);
    }

    /// One attempt to turn a reader's lease of this lock into the writer's: it succeeds only if
    /// it is the only live reader and no writer holds (a waiting writer's intent does not stop
    /// it: that writer waits for this reader anyway). It never waits, so two readers that both
    /// try to upgrade cannot deadlock: the loser keeps its reader's lease and should release it.
    ///
    /// Completion signature: `void(error_code, lease)`; the writer's lease (a new fencing
    /// token), or an empty lease when refused (`reader` is then untouched).
    /// Object lifetimes: `reader` need not outlive the call.
    /// Executor: as async_downgrade.
    /// Cancellation: none (one script; its outcome is reported).
    /// Errors: `not_owner` (an empty lease, a writer's, another lock's, or already converted;
    /// nothing is sent), connection errors (an unknown outcome is undone).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_upgrade(const lease& reader, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, lease)>(
            [](auto handler, shared_mutex* self, const lease* l) {
                self->convert_impl(*l, false, std::move(handler));
            },
            token, this, &reader);
    }

    /// Cancels every pending acquire of this shared_mutex, either side (`operation_aborted`).
    void cancel();

private:
    friend class lock_handle_base<shared_mutex, lease>;
    friend class shared_lock_handle_base<shared_mutex, lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, lease)>;

    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
        start(true, deadline, once, std::move(h));
    }
    void acquire_shared_impl(clock::time_point deadline, bool once, acquire_handler h) {
        start(false, deadline, once, std::move(h));
    }
    void start(bool exclusive, clock::time_point deadline, bool once, acquire_handler h);
    void convert_impl(const lease& from, bool downgrade, acquire_handler h);

    std::shared_ptr<detail::shared_mutex_core> core_;
};

} // namespace corolock

#endif
