// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Freeing what corolock queues when its execution context is destroyed with operations pending.
#ifndef COROLOCK_SRC_IO_CONTEXT_SHUTDOWN_HPP
#define COROLOCK_SRC_IO_CONTEXT_SHUTDOWN_HPP

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <utility>

namespace corolock::detail {

// What a connection or cluster does when its execution context is destroyed (or shut down) with
// operations still queued. The context destroys the handlers in its own queues; those queued
// inside corolock (a request waiting for its reply, a lock waiter) it never sees, and they may
// hold the very object that holds them (a coroutine owning its connection, a cluster's routing
// coroutine): `abandon` destroys them, never invoking them, so that such cycles are freed.
class context_shutdown_hook {
public:
    virtual void abandon() noexcept = 0;
    virtual ~context_shutdown_hook() = default;
};

// Registers `hook` with the execution context of `ex` (any thread): `abandon()` is called when
// that context shuts down, if the object is still alive then.
void abandon_at_shutdown(const boost::asio::any_io_executor& ex,
                         std::weak_ptr<context_shutdown_hook> hook);

// std::make_shared<T>(args...), registered with abandon_at_shutdown on `ex`'s context.
template <class T, class... Args>
std::shared_ptr<T> make_abandonable(const boost::asio::any_io_executor& ex, Args&&... args) {
    auto p = std::make_shared<T>(std::forward<Args>(args)...);
    abandon_at_shutdown(ex, p);
    return p;
}

} // namespace corolock::detail

#endif
