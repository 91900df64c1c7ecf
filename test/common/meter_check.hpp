// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock_meter check, written once against the lock concept (include/corolock/
// lock_concepts.hpp) and run over every backend, as exclusion_check.hpp: unit/local_mutex.cpp
// (in-process), integration/lock_concept.cpp (Redis), zookeeper/zk_mutex.cpp,
// postgres/pg_mutex.cpp. It drives the metered with_lock forms through every path and asserts
// the exact counts after each.
#ifndef COROLOCK_TEST_COMMON_METER_CHECK_HPP
#define COROLOCK_TEST_COMMON_METER_CHECK_HPP

#include <corolock/lock_concepts.hpp>
#include <corolock/metrics.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace corolock::test {

// What a backend's test gives the check. `a` and `b` are two handles of one free lock name.
template <unfenced_lock_handle M>
struct meter_kit {
    M* a = nullptr;
    M* b = nullptr;
    M* bad = nullptr; // a handle whose acquisitions fail with an error (an argument refused)
    typename M::clock::duration short_wait{}; // a wait that runs out while `a` holds the lock
    // Lets an acquisition started meanwhile reach its wait (local: posted steps run).
    std::function<boost::asio::awaitable<void>()> progress;
    // Lets `d` of the handle's clock pass (local: advance; a server: nothing, real time passes).
    std::function<boost::asio::awaitable<void>(typename M::clock::duration)> pass;
    // Makes the held lease lost behind its holder's back (force-unlock, delete the key/row/node).
    std::function<boost::asio::awaitable<void>(typename M::lease_type&)> lose;
};

// The kit of a backend with a server, on steady_clock: real time passes by itself, and 50 ms
// lets an acquisition reach the server.
template <unfenced_lock_handle M>
meter_kit<M>
server_meter_kit(M& a, M& b, M& bad,
                 std::function<boost::asio::awaitable<void>(typename M::lease_type&)> lose) {
    meter_kit<M> kit;
    kit.a = &a;
    kit.b = &b;
    kit.bad = &bad;
    kit.short_wait = std::chrono::milliseconds(500); // answered well within it, even loaded
    kit.progress = []() -> boost::asio::awaitable<void> {
        boost::asio::steady_timer t(co_await boost::asio::this_coro::executor,
                                    std::chrono::milliseconds(50));
        co_await t.async_wait(boost::asio::use_awaitable);
    };
    kit.pass = [](typename M::clock::duration) -> boost::asio::awaitable<void> { co_return; };
    kit.lose = std::move(lose);
    return kit;
}

// The counts a meter must show: outcomes in acquire_outcome order, then losses.
struct meter_counts {
    std::uint64_t granted = 0, busy = 0, timeout = 0, cancelled = 0, error = 0, lost = 0;
};

inline void check_meter(const lock_meter& meter, const meter_counts& want, const char* step) {
    const lock_meter_stats s = meter.snapshot();
    BOOST_TEST_CONTEXT(step) {
        BOOST_TEST(s.acquired(acquire_outcome::granted) == want.granted);
        BOOST_TEST(s.acquired(acquire_outcome::busy) == want.busy);
        BOOST_TEST(s.acquired(acquire_outcome::timeout) == want.timeout);
        BOOST_TEST(s.acquired(acquire_outcome::cancelled) == want.cancelled);
        BOOST_TEST(s.acquired(acquire_outcome::error) == want.error);
        BOOST_TEST(s.acquired(acquire_outcome::server_timeout) == 0u);
        BOOST_TEST(s.leases_lost == want.lost);
        BOOST_TEST(s.acquire_wait.count == want.granted); // grants only
        BOOST_TEST(s.hold.count == want.granted);         // every grant ended
    }
}

// The error a call threw (none if it returned).
template <class F>
boost::asio::awaitable<error_code> thrown_by(F f) {
    try {
        co_await f();
    } catch (const boost::system::system_error& e) {
        co_return e.code();
    }
    co_return error_code{};
}

// Grant, try that finds the lock held, try that grants, timeout, cancellation, error, a body
// that throws, a lease lost during the body or as it returns; after each step the meter's
// counts are exact.
template <unfenced_lock_handle M>
boost::asio::awaitable<void> check_lock_meter(meter_kit<M> kit) {
    namespace asio = boost::asio;
    using lease_type = typename M::lease_type;
    auto ex = co_await asio::this_coro::executor;
    M& a = *kit.a;
    M& b = *kit.b;
    lock_meter meter;
    meter_counts want;

    // A grant whose body, inside, tries the other handle: busy, and its body never runs.
    bool inner_ran = false;
    const int value = co_await with_lock(
        a,
        [&](lease_type&) -> asio::awaitable<int> {
            const bool got = co_await try_with_lock(
                b,
                [&](lease_type&) -> asio::awaitable<void> {
                    inner_ran = true;
                    co_return;
                },
                &meter);
            BOOST_TEST(!got);
            co_return 7;
        },
        &meter);
    BOOST_TEST(value == 7);
    BOOST_TEST(!inner_ran);
    want.granted = 1;
    want.busy = 1;
    check_meter(meter, want, "grant, then a try that finds it held");

    // A try on the free lock grants and returns the body's value.
    const std::optional<int> tried = co_await try_with_lock(
        b, [](lease_type&) -> asio::awaitable<int> { co_return 8; }, &meter);
    BOOST_TEST((tried == std::optional<int>(8)));
    want.granted = 2;
    check_meter(meter, want, "a try that grants");

    // A bounded wait that runs out while another owner holds the lock.
    lease_type held = co_await a.async_acquire(asio::use_awaitable);
    bool ran = false;
    auto [order, waited_ex, waited, passed] =
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ex, thrown_by([&]() -> asio::awaitable<void> {
                               co_await with_lock_for(
                                   b, kit.short_wait,
                                   [&](lease_type&) -> asio::awaitable<void> {
                                       ran = true;
                                       co_return;
                                   },
                                   &meter);
                           }),
                           asio::deferred),
            asio::co_spawn(ex, kit.pass(kit.short_wait), asio::deferred))
            .async_wait(asio::experimental::wait_for_all(), asio::deferred);
    BOOST_TEST(!waited_ex);
    BOOST_TEST(!passed);
    BOOST_TEST(waited == error::acquire_timeout, waited.message());
    BOOST_TEST(!ran);
    want.timeout = 1;
    check_meter(meter, want, "timeout");

    // A wait cancelled through the handle's cancel().
    auto [corder, cancelled_ex, cancelled, cpassed] =
        co_await asio::experimental::make_parallel_group(
            asio::co_spawn(ex, thrown_by([&]() -> asio::awaitable<void> {
                               co_await with_lock(
                                   b,
                                   [&](lease_type&) -> asio::awaitable<void> {
                                       ran = true;
                                       co_return;
                                   },
                                   &meter);
                           }),
                           asio::deferred),
            asio::co_spawn(
                ex,
                [&]() -> asio::awaitable<void> {
                    co_await kit.progress();
                    b.cancel();
                },
                asio::deferred))
            .async_wait(asio::experimental::wait_for_all(), asio::deferred);
    BOOST_TEST(!cancelled_ex);
    BOOST_TEST(!cpassed);
    BOOST_TEST(cancelled == asio::error::operation_aborted, cancelled.message());
    BOOST_TEST(!ran);
    want.cancelled = 1;
    check_meter(meter, want, "cancellation");
    co_await held.async_release(asio::use_awaitable);

    // An acquisition refused with an error.
    const error_code refused = co_await thrown_by([&]() -> asio::awaitable<void> {
        co_await with_lock(
            *kit.bad,
            [&](lease_type&) -> asio::awaitable<void> {
                ran = true;
                co_return;
            },
            &meter);
    });
    BOOST_TEST(static_cast<bool>(refused));
    BOOST_TEST(!ran);
    want.error = 1;
    check_meter(meter, want, "error");

    // A body that throws: released, counted as a hold, not as a loss.
    bool threw = false;
    try {
        co_await with_lock(
            a,
            [&](lease_type&) -> asio::awaitable<void> {
                co_await kit.progress();
                throw std::runtime_error("body");
            },
            &meter);
    } catch (const std::runtime_error&) {
        threw = true;
    }
    BOOST_TEST(threw);
    want.granted = 3;
    check_meter(meter, want, "body throws");

    // A lease lost during the body: the body is cut, lease_lost thrown, the loss counted once
    // (the release that follows also finds it lost).
    const error_code lost = co_await thrown_by([&]() -> asio::awaitable<void> {
        co_await with_lock(
            a,
            [&](lease_type& l) -> asio::awaitable<void> {
                co_await kit.lose(l);
                asio::steady_timer forever(co_await asio::this_coro::executor,
                                           asio::steady_timer::time_point::max());
                co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
            },
            &meter);
    });
    BOOST_TEST(lost == condition::lock_lost, lost.message());
    want.granted = 4;
    want.lost = 1;
    check_meter(meter, want, "lease lost during the body");

    // A lease lost while the body returns at once: whether the loss or the body's end is seen
    // first (the release then finds the lease lost), it is thrown and counted once.
    const error_code lost_at_end = co_await thrown_by([&]() -> asio::awaitable<void> {
        co_await with_lock(
            a, [&](lease_type& l) -> asio::awaitable<void> { co_await kit.lose(l); }, &meter);
    });
    BOOST_TEST(lost_at_end == condition::lock_lost, lost_at_end.message());
    want.granted = 5;
    want.lost = 2;
    check_meter(meter, want, "lease lost as the body returns");

    // Whatever happened, the lock is free again.
    const bool free =
        co_await try_with_lock(b, [](lease_type&) -> asio::awaitable<void> { co_return; });
    BOOST_TEST(free);
    check_meter(meter, want, "an unmetered call counts nothing");
}

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_METER_CHECK_HPP
