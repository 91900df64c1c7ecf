// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_CORO_TEST_HPP
#define COROLOCK_TEST_COMMON_CORO_TEST_HPP

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>

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

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_CORO_TEST_HPP
