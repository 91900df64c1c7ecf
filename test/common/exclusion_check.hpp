// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The exclusion checker, written once against the lock concept (include/corolock/
// lock_concepts.hpp) and run over every backend: unit/local_mutex.cpp (in-process),
// integration/lock_concept.cpp (Redis), zookeeper/zk_mutex.cpp, postgres/pg_mutex.cpp.
#ifndef COROLOCK_TEST_COMMON_EXCLUSION_CHECK_HPP
#define COROLOCK_TEST_COMMON_EXCLUSION_CHECK_HPP

#include <corolock/lock_concepts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <exception>
#include <functional>
#include <ostream>
#include <span>

namespace corolock::test {

// What the workers saw. Exclusion held when max_inside is 1 and every count of trouble is 0.
struct exclusion_report {
    int grants = 0;
    int max_inside = 0;            // holders inside at once, at most
    int not_valid_inside = 0;      // a lease found not valid() inside its section
    int tokens_not_increasing = 0; // a grant whose token was not above the previous grant's
    int acquire_errors = 0;
    int release_errors = 0;
    int exceptions = 0;

    // Every round granted, one holder at a time, tokens increasing, nothing went wrong.
    bool exclusive(int expected_grants) const {
        return grants == expected_grants && max_inside == 1 && not_valid_inside == 0 &&
               tokens_not_increasing == 0 && acquire_errors == 0 && release_errors == 0 &&
               exceptions == 0;
    }
};

inline std::ostream& operator<<(std::ostream& os, const exclusion_report& r) {
    return os << "{grants " << r.grants << ", max inside " << r.max_inside << ", not valid "
              << r.not_valid_inside << ", tokens not increasing " << r.tokens_not_increasing
              << ", acquire errors " << r.acquire_errors << ", release errors " << r.release_errors
              << ", exceptions " << r.exceptions << "}";
}

// Runs `workers` coroutines on each of `handles` (handles of one lock name), each acquiring
// `rounds` times and staying inside for `inside()` (an awaitable that yields: other workers run
// meanwhile). Grants under exclusion are sequential, so their tokens must increase in the order
// the holders see them. Single-threaded: run it on an io_context run by one thread.
template <lock_handle M>
boost::asio::awaitable<exclusion_report>
check_exclusion(std::span<M* const> handles, int workers, int rounds,
                std::function<boost::asio::awaitable<void>()> inside) {
    namespace asio = boost::asio;
    auto ex = co_await asio::this_coro::executor;
    exclusion_report r;
    int in = 0;
    auto last = fencing_token(M::capabilities.backend, 0);
    auto left = static_cast<int>(handles.size()) * workers;
    asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
    auto worker = [&](M& m) -> asio::awaitable<void> {
        for (int i = 0; i < rounds; ++i) {
            auto [ec, l] = co_await m.async_acquire(asio::as_tuple(asio::use_awaitable));
            if (ec || !l.valid()) {
                ++r.acquire_errors;
                continue;
            }
            ++r.grants;
            r.max_inside = std::max(r.max_inside, ++in);
            if (!(l.token() > last))
                ++r.tokens_not_increasing;
            last = l.token();
            co_await inside();
            if (!l.valid())
                ++r.not_valid_inside;
            --in;
            auto [rec] = co_await l.async_release(asio::as_tuple(asio::use_awaitable));
            if (rec)
                ++r.release_errors;
        }
    };
    for (M* h : handles)
        for (int w = 0; w < workers; ++w)
            asio::co_spawn(ex, worker(*h), [&](std::exception_ptr e) {
                if (e)
                    ++r.exceptions;
                if (--left == 0)
                    all_done.cancel();
            });
    co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable)); // woken by the last one
    co_return r;
}

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_EXCLUSION_CHECK_HPP
