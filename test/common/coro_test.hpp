// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_CORO_TEST_HPP
#define COROLOCK_TEST_COMMON_CORO_TEST_HPP

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace corolock::test {

// Whether run_coroutine_test insists that the io_context runs out of work once the body is done.
enum class drain_check {
    on, // anything still queued or pending afterwards (a timer, a read, a detached coroutine)
        // is a leak and fails the test
    off // the body's end stops the io_context: for tests that leave a run loop on purpose
};

// Runs `body` on `ioc` (restarted first) from the calling thread plus `threads - 1` more, and
// turns what goes wrong into Boost.Test failures:
// - the body throws: BOOST_FAIL with the exception's text;
// - the body has not finished after `timeout`: the io_context is stopped, then BOOST_FAIL;
// - with drain_check::on, the io_context has not run out of work within 5 s after the body
//   finished (and within `timeout` in all), or it ran out of work while the body was still
//   waiting (a completion handler was dropped): BOOST_ERROR;
// - an exception escaped io_context::run (a detached coroutine threw): BOOST_ERROR.
// Suspended work is left in `ioc` after a failure; destroying `ioc` cleans it up.
// Boost.Test's assertions are not thread-safe: with threads > 1, check results after this
// returns (or under a mutex), not from inside handlers running on the extra threads.
void run_coroutine_test(boost::asio::io_context& ioc, boost::asio::awaitable<void> body,
                        std::chrono::steady_clock::duration timeout = std::chrono::seconds(30),
                        unsigned threads = 1, drain_check drain = drain_check::on);

// Runs `f`, a blocking call (a server's start or restart, which waits until it answers), on a
// thread of its own and resumes the calling coroutine when it returns; its exception is rethrown.
// The io_context keeps running meanwhile: a start that takes seconds under load would otherwise
// freeze every timer of the test, renewals included, and a lease would expire for the test's
// sake.
boost::asio::awaitable<void> off_loop(std::function<void()> f);

// The io_context-shutdown case of each lock primitive: a coroutine holds a lock and waits for its
// lease's loss, another waits for the same lock, when their io_context is stopped and destroyed.
// Each frame is then held only by a handler queued inside corolock, which the primitive's state
// holds in turn: the context's shutdown must free both.
//
//     orphaned_pair pair;
//     {
//         asio::io_context ioc;
//         ... connections on ioc, running ...
//         pair.run(ioc, [&](bool& held) -> awaitable<void> { acquire; held = true; wait lost },
//                  [&]() -> awaitable<void> { acquire the same lock });
//     } // ioc destroyed here
//     pair.check();
class orphaned_pair {
public:
    // Spawns both (the waiter once `held` is set), each owning a token, runs `ioc` for 500 ms
    // and stops it.
    void run(boost::asio::io_context& ioc, std::function<boost::asio::awaitable<void>(bool&)> hold,
             std::function<boost::asio::awaitable<void>()> wait);
    // After the context's destruction: the holder held, the waiter never completed, and both
    // coroutine frames are gone.
    void check() const;

private:
    bool held_ = false, waiter_done_ = false;
    std::weak_ptr<int> holder_alive_, waiter_alive_;
};

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_CORO_TEST_HPP
