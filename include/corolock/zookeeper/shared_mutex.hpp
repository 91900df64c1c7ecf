// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ZOOKEEPER_SHARED_MUTEX_HPP
#define COROLOCK_ZOOKEEPER_SHARED_MUTEX_HPP

#include <corolock/lock_handle_base.hpp>
#include <corolock/zookeeper/mutex.hpp>

// The ZooKeeper read-write lock (doc/zookeeper.md): the same recipe as zk_mutex, with two kinds
// of node; a read node waits only for the write nodes before it, a write node for every node.
namespace corolock {

/// A read-write lock on one ZooKeeper path of a `zk_connection`. Writers are exclusive; readers
/// share the lock with each other. Served in node order: a reader that arrives after a waiting
/// writer waits for that writer (no writer starvation). Each acquisition is its own `zk_lease`
/// (token: its node's czxid).
///
/// Acquiring, as a writer (`lock_handle_base`: async_acquire, _for, _until, async_try_acquire)
/// and as a reader (`shared_lock_handle_base`: async_acquire_shared, _shared_for, _shared_until,
/// async_try_acquire_shared): as `zk_mutex`'s. A writer waits for every earlier node, a reader
/// for the earlier write nodes only.
///
/// Thread safety: as zk_connection.
/// Lifetime: the connection must outlive the mutex; leases keep the session's state alive.
class COROLOCK_DECL zk_shared_mutex : public lock_handle_base<zk_shared_mutex, zk_lease>,
                                      public shared_lock_handle_base<zk_shared_mutex, zk_lease> {
public:
    /// The executor of the connection.
    using executor_type = boost::asio::any_io_executor;
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

    /// Cancels every pending acquire of this mutex (`operation_aborted`). Leases are untouched.
    void cancel();

private:
    friend class lock_handle_base<zk_shared_mutex, zk_lease>;
    friend class shared_lock_handle_base<zk_shared_mutex, zk_lease>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, zk_lease)>;

    void acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
        start(true, deadline, once, std::move(h));
    }
    void acquire_shared_impl(clock::time_point deadline, bool once, acquire_handler h) {
        start(false, deadline, once, std::move(h));
    }
    void start(bool write, clock::time_point deadline, bool once, acquire_handler h);

    std::shared_ptr<detail::zk_session> session_;
    std::string path_;
    std::uint64_t id_;
};

} // namespace corolock

#endif
