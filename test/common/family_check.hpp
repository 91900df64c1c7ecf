// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The acquire family's rules (include/corolock/lock_handle_base.hpp), written once and run over
// every handle that has them: unit/local_mutex.cpp, integration/lock_concept.cpp (mutex,
// fair_mutex, shared_mutex's two sides, redlock), postgres/pg_mutex.cpp, zookeeper/zk_mutex.cpp.
// Only waits that are over when they begin: no sleep, so it runs on a manual clock too.
#ifndef COROLOCK_TEST_COMMON_FAMILY_CHECK_HPP
#define COROLOCK_TEST_COMMON_FAMILY_CHECK_HPP

#include <corolock/error.hpp>
#include <corolock/lock_concepts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string>
#include <vector>

namespace corolock::test {

// What broke the rules, one line each; empty when they held. `a` and `b` are two handles of
// one free lock name (two connections where the backend has them).
template <unfenced_lock_handle M>
boost::asio::awaitable<std::vector<std::string>> check_acquire_family(M& a, M& b) {
    constexpr auto as_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);
    using clock = typename M::clock;
    using duration = typename clock::duration;
    std::vector<std::string> bad;
    auto expect = [&](bool ok, const char* what, const error_code& ec) {
        if (!ok)
            bad.push_back(std::string(what) + " (got: " + ec.message() + ")");
    };

    // A deadline already past, min() included, is one attempt: a free lock is granted.
    {
        auto [ec, l] = co_await a.async_acquire_until(clock::time_point::min(), as_tuple);
        expect(!ec && l.owns(), "until(min()) on a free lock is granted", ec);
        if (l.owns())
            co_await l.async_release(as_tuple);
    }
    {
        auto [ec, l] = co_await a.async_acquire_for(duration(-1), as_tuple);
        expect(ec == error::invalid_wait && !l.owns(), "a negative wait is invalid_wait", ec);
    }
    auto [ec, held] = co_await a.async_acquire_for(duration::zero(), as_tuple);
    expect(!ec && held.owns(), "a zero wait on a free lock is granted", ec);
    if (!held.owns())
        co_return bad;
    {
        auto [ec, l] = co_await b.async_try_acquire(as_tuple);
        expect(!ec && !l.owns(), "a try on a held lock is an empty lease, no error", ec);
    }
    {
        auto [ec, l] = co_await b.async_acquire_for(duration::zero(), as_tuple);
        expect(ec == error::acquire_timeout && !l.owns(),
               "a zero wait on a held lock is acquire_timeout", ec);
    }
    {
        auto [ec, l] = co_await b.async_acquire_until(clock::time_point::min(), as_tuple);
        expect(ec == error::acquire_timeout && !l.owns(),
               "until(min()) on a held lock is acquire_timeout", ec);
    }
    {
        auto [ec] = co_await held.async_release(as_tuple);
        expect(!ec, "the holder's release", ec);
    }
    {
        auto [ec, l] = co_await b.async_try_acquire(as_tuple);
        expect(!ec && l.owns(), "a try on the released lock is granted", ec);
        if (l.owns())
            co_await l.async_release(as_tuple);
    }
    co_return bad;
}

} // namespace corolock::test

#endif
