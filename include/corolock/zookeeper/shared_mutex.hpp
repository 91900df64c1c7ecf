// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ZOOKEEPER_SHARED_MUTEX_HPP
#define COROLOCK_ZOOKEEPER_SHARED_MUTEX_HPP

#include <corolock/detail/deadline.hpp>
#include <corolock/zookeeper/mutex.hpp>

// The ZooKeeper read-write lock (doc/zookeeper.md): the same recipe as zk_mutex, with two kinds
// of node; a read node waits only for the write nodes before it, a write node for every node.
namespace corolock {

/// A read-write lock on one ZooKeeper path of a `zk_connection`. Writers are exclusive; readers
/// share the lock with each other. Served in node order: a reader that arrives after a waiting
/// writer waits for that writer (no writer starvation). Each acquisition is its own `zk_lease`
/// (token: its node's czxid).
///
/// Thread safety: as zk_connection.
/// Lifetime: the connection must outlive the mutex; leases keep the session's state alive.
class COROLOCK_DECL zk_shared_mutex {
public:
    /// The executor of the connection.
    using executor_type = boost::asio::any_io_executor;
    /// The clock of deadlines and of `valid_until()`.
    using clock = std::chrono::steady_clock;
    /// Durations of waits.
    using duration = clock::duration;
    /// What an acquisition gives.
    using lease_type = zk_lease;
    /// As zk_mutex's.
    static constexpr lock_capabilities capabilities = zk_mutex::capabilities;

    /// No work. `path` is checked by the first acquire.
    zk_shared_mutex(zk_connection& conn, std::string path);
    /// Cancels the pending acquires (their nodes are deleted).
    ~zk_shared_mutex();
    zk_shared_mutex(const zk_shared_mutex&) = delete;
    zk_shared_mutex& operator=(const zk_shared_mutex&) = delete;

    /// The connection's executor.
    executor_type get_executor() const noexcept;
    /// The lock's path.
    const std::string& name() const noexcept { return path_; }

    /// Waits until this writer holds the lock alone.
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: the mutex and its connection must outlive the operation.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: terminal, partial, total: `operation_aborted`, its node deleted first.
    /// Errors: as `zk_mutex::async_acquire`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {}) {
        return initiate(true, clock::time_point::max(), false,
                        std::forward<CompletionToken>(token));
    }

    /// As async_acquire, giving up after `wait`.
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as `zk_mutex::async_acquire_for`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_for(duration wait, CompletionToken&& token = {}) {
        return initiate(true, detail::deadline_of(wait), false,
                        std::forward<CompletionToken>(token));
    }

    /// One attempt as a writer: an empty lease when any node is before ours.
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as `zk_mutex::async_try_acquire`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire(CompletionToken&& token = {}) {
        return initiate(true, clock::time_point::max(), true, std::forward<CompletionToken>(token));
    }

    /// Waits until this reader shares the lock (no earlier writer node is left).
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as async_acquire.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_shared(CompletionToken&& token = {}) {
        return initiate(false, clock::time_point::max(), false,
                        std::forward<CompletionToken>(token));
    }

    /// As async_acquire_shared, giving up after `wait`.
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as `zk_mutex::async_acquire_for`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire_shared_for(duration wait, CompletionToken&& token = {}) {
        return initiate(false, detail::deadline_of(wait), false,
                        std::forward<CompletionToken>(token));
    }

    /// One attempt as a reader: an empty lease when a writer node is before ours.
    ///
    /// Completion signature: `void(error_code, zk_lease)`.
    /// Object lifetimes: as async_acquire.
    /// Executor: as async_acquire.
    /// Cancellation: as async_acquire.
    /// Errors: as `zk_mutex::async_try_acquire`.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_try_acquire_shared(CompletionToken&& token = {}) {
        return initiate(false, clock::time_point::max(), true,
                        std::forward<CompletionToken>(token));
    }

    /// Cancels every pending acquire of this mutex (`operation_aborted`). Leases are untouched.
    void cancel();

private:
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, zk_lease)>;

    template <class CompletionToken>
    auto initiate(bool write, clock::time_point deadline, bool once, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, zk_lease)>(
            [](auto handler, zk_shared_mutex* self, bool write, clock::time_point deadline,
               bool once) { self->acquire_impl(write, deadline, once, std::move(handler)); },
            token, this, write, deadline, once);
    }
    void acquire_impl(bool write, clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::zk_session> session_;
    std::string path_;
    std::uint64_t id_;
};

} // namespace corolock

#endif
