// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// with_lock's value, its bounded forms and their failure paths, over the local backend (no
// server; time moves only through local_backend::advance). The Redis mutex runs the same
// template in test/integration/lock_concept.cpp.
#include "common/coro_test.hpp"
#include <corolock/local_mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_with_lock {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::local_lease;

namespace {

// A result type with no default constructor: with_lock must not need one.
struct receipt {
    explicit receipt(int n) : number(n) {}
    int number;
};

struct lock_fixture {
    asio::io_context ioc;
    corolock::local_backend backend{ioc.get_executor()};
    corolock::local_mutex m{backend, "with_lock"};

    void run(std::function<awaitable<void>()> body) {
        corolock::test::run_coroutine_test(ioc, body(), 10s);
    }
    // Lets posted completions run.
    static awaitable<void> yield_a_few() {
        for (int i = 0; i < 8; ++i)
            co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    }
    // Whether the lock is free now (takes and gives back a lease).
    awaitable<bool> free_now() {
        auto [ec, l] = co_await m.async_try_acquire(asio::as_tuple(asio::use_awaitable));
        const bool free = !ec && l.owns();
        if (free)
            co_await l.async_release(asio::use_awaitable);
        co_return free;
    }
};

// Runs `op` in the background; `out` gets its exception (or nullptr) when it ends.
template <class T>
void spawn_bg(asio::io_context& ioc, awaitable<T> op, std::optional<std::exception_ptr>& out,
              asio::cancellation_signal* cancel = nullptr) {
    auto done = [&out](std::exception_ptr e, auto&&...) { out = e; };
    if (cancel)
        asio::co_spawn(ioc, std::move(op), asio::bind_cancellation_slot(cancel->slot(), done));
    else
        asio::co_spawn(ioc, std::move(op), done);
}

error_code code_of(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const boost::system::system_error& se) {
        return se.code();
    } catch (...) {
        return {};
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(with_lock)

BOOST_FIXTURE_TEST_CASE(returns_the_body_value_and_keeps_void_bodies, lock_fixture) {
    run([&]() -> awaitable<void> {
        const int n = co_await corolock::with_lock(m, [](local_lease& l) -> awaitable<int> {
            co_return static_cast<int>(l.token().value()) + 41;
        });
        BOOST_TEST(n == 42);
        auto text = co_await corolock::with_lock(
            m, [](local_lease&) -> awaitable<std::string> { co_return std::string(100, 'x'); });
        BOOST_TEST(text.size() == 100u);
        auto r = co_await corolock::with_lock(
            m, [](local_lease&) -> awaitable<receipt> { co_return receipt(7); });
        BOOST_TEST(r.number == 7);
        auto owned =
            co_await corolock::with_lock(m, [](local_lease&) -> awaitable<std::unique_ptr<int>> {
                co_return std::make_unique<int>(5); // move-only
            });
        BOOST_TEST(*owned == 5);
        bool ran = false;
        co_await corolock::with_lock(m, [&](local_lease&) -> awaitable<void> {
            ran = true;
            co_return;
        });
        BOOST_TEST(ran);
        BOOST_TEST(co_await free_now());
    });
}

// A body may release its own lease early (the rest of its work needs no lock): that is not a
// loss, so the body runs to its end and its value comes back.
BOOST_FIXTURE_TEST_CASE(a_body_that_releases_early_runs_to_its_end, lock_fixture) {
    run([&]() -> awaitable<void> {
        bool after_release = false;
        const int n = co_await corolock::with_lock(m, [&](local_lease& l) -> awaitable<int> {
            co_await l.async_release(asio::use_awaitable);
            co_await yield_a_few(); // the lease's wait has completed by now
            after_release = true;
            co_return 42;
        });
        BOOST_TEST(n == 42);
        BOOST_TEST(after_release);
        BOOST_TEST(co_await free_now());
        // The same for a void body and for a body that moves the lease out.
        bool ran = false;
        co_await corolock::with_lock(m, [&](local_lease& l) -> awaitable<void> {
            local_lease mine = std::move(l);
            co_await mine.async_release(asio::use_awaitable);
            co_await yield_a_few();
            ran = true;
        });
        BOOST_TEST(ran);
        BOOST_TEST(co_await free_now());
    });
}

BOOST_FIXTURE_TEST_CASE(a_throwing_body_is_rethrown_after_the_release, lock_fixture) {
    run([&]() -> awaitable<void> {
        bool caught = false;
        try {
            co_await corolock::with_lock(m, [&](local_lease&) -> awaitable<int> {
                BOOST_TEST(!co_await free_now()); // held inside
                throw std::runtime_error("payment refused");
                co_return 1;
            });
        } catch (const std::runtime_error& e) {
            caught = std::string(e.what()) == "payment refused";
        }
        BOOST_TEST(caught);
        BOOST_TEST(co_await free_now());
        // The bounded form too.
        caught = false;
        try {
            co_await corolock::with_lock_for(m, 1s, [&](local_lease&) -> awaitable<void> {
                throw std::logic_error("bug");
                co_return;
            });
        } catch (const std::logic_error&) {
            caught = true;
        }
        BOOST_TEST(caught);
        BOOST_TEST(co_await free_now());
        // A plain function returning an awaitable throws when called, before any suspension:
        // the same release, the same rethrow (and a meter counts its hold).
        caught = false;
        corolock::lock_meter meter;
        try {
            co_await corolock::with_lock(
                m, [](local_lease&) -> awaitable<void> { throw std::logic_error("at once"); },
                &meter);
        } catch (const std::logic_error&) {
            caught = true;
        }
        BOOST_TEST(caught);
        BOOST_TEST(co_await free_now());
        BOOST_TEST(meter.snapshot().hold.count == 1u);
    });
}

BOOST_FIXTURE_TEST_CASE(a_bounded_wait_times_out_without_running_the_body, lock_fixture) {
    run([&]() -> awaitable<void> {
        local_lease holder = co_await m.async_acquire(asio::use_awaitable);
        bool ran = false;
        std::optional<std::exception_ptr> for_out, until_out;
        spawn_bg(ioc,
                 corolock::with_lock_for(m, 2s,
                                         [&](local_lease&) -> awaitable<int> {
                                             ran = true;
                                             co_return 1;
                                         }),
                 for_out);
        spawn_bg(ioc,
                 corolock::with_lock_until(m, backend.now() + 3s,
                                           [&](local_lease&) -> awaitable<void> {
                                               ran = true;
                                               co_return;
                                           }),
                 until_out);
        co_await yield_a_few();
        backend.advance(1999ms);
        co_await yield_a_few();
        BOOST_TEST(!for_out.has_value()); // not before its wait
        backend.advance(1ms);
        co_await yield_a_few();
        BOOST_REQUIRE(for_out.has_value());
        BOOST_TEST(code_of(*for_out) == error::acquire_timeout);
        BOOST_TEST(!until_out.has_value());
        backend.advance(1s);
        co_await yield_a_few();
        BOOST_REQUIRE(until_out.has_value());
        BOOST_TEST(code_of(*until_out) == error::acquire_timeout);
        BOOST_TEST(!ran);
        // A negative wait is refused before anything is tried.
        std::optional<std::exception_ptr> neg;
        spawn_bg(
            ioc,
            corolock::with_lock_for(m, -1s, [&](local_lease&) -> awaitable<void> { co_return; }),
            neg);
        co_await yield_a_few();
        BOOST_REQUIRE(neg.has_value());
        BOOST_TEST(code_of(*neg) == error::invalid_wait);
        co_await holder.async_release(asio::use_awaitable);
        BOOST_TEST(co_await free_now());
    });
}

BOOST_FIXTURE_TEST_CASE(the_bound_is_on_the_wait_not_on_the_body, lock_fixture) {
    run([&]() -> awaitable<void> {
        // Granted within its 1 s wait, the body then runs 10 s (of a 30 s lease) to its end.
        const int v =
            co_await corolock::with_lock_for(m, 1s, [&](local_lease& l) -> awaitable<int> {
                backend.advance(10s);
                co_await yield_a_few();
                BOOST_TEST(l.valid());
                co_return 3;
            });
        BOOST_TEST(v == 3);
        BOOST_TEST(co_await free_now());
    });
}

BOOST_FIXTURE_TEST_CASE(cancellation_while_waiting_and_while_running, lock_fixture) {
    run([&]() -> awaitable<void> {
        local_lease holder = co_await m.async_acquire(asio::use_awaitable);
        // Cancelled while waiting: operation_aborted, no body, nothing acquired later.
        asio::cancellation_signal waiting;
        bool ran = false;
        std::optional<std::exception_ptr> out;
        spawn_bg(ioc,
                 corolock::with_lock_for(m, 1h,
                                         [&](local_lease&) -> awaitable<void> {
                                             ran = true;
                                             co_return;
                                         }),
                 out, &waiting);
        co_await yield_a_few();
        waiting.emit(asio::cancellation_type::terminal);
        co_await yield_a_few();
        BOOST_REQUIRE(out.has_value());
        BOOST_TEST(code_of(*out) == asio::error::operation_aborted);
        BOOST_TEST(!ran);
        co_await holder.async_release(asio::use_awaitable);
        BOOST_TEST(co_await free_now()); // the cancelled wait left nothing behind
        // Cancelled while the body runs: the body sees the cancellation, the lock is released.
        asio::cancellation_signal running;
        std::optional<std::exception_ptr> out2;
        bool body_cancelled = false;
        spawn_bg(ioc,
                 corolock::with_lock(
                     m,
                     [&](local_lease&) -> awaitable<int> {
                         asio::steady_timer forever(co_await asio::this_coro::executor,
                                                    asio::steady_timer::time_point::max());
                         auto [ec] =
                             co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
                         body_cancelled = ec == asio::error::operation_aborted;
                         co_return 0;
                     }),
                 out2, &running);
        co_await yield_a_few();
        BOOST_TEST(!co_await free_now());
        running.emit(asio::cancellation_type::terminal);
        co_await yield_a_few();
        BOOST_REQUIRE(out2.has_value());
        BOOST_TEST(body_cancelled);
        BOOST_TEST(co_await free_now());
    });
}

BOOST_FIXTURE_TEST_CASE(a_loss_inside_a_value_body_throws_lease_lost, lock_fixture) {
    corolock::local_mutex fixed_lease(backend, "short", {.lease = 1s, .watchdog = false});
    run([&]() -> awaitable<void> {
        bool threw = false;
        try {
            co_await corolock::with_lock(fixed_lease, [&](local_lease&) -> awaitable<receipt> {
                backend.advance(1s);
                asio::steady_timer forever(co_await asio::this_coro::executor,
                                           asio::steady_timer::time_point::max());
                co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
                co_return receipt(1);
            });
        } catch (const boost::system::system_error& e) {
            threw = e.code() == error::lease_lost;
        }
        BOOST_TEST(threw);
    });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_with_lock
