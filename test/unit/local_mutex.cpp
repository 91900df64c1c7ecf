// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The in-process backend: the lock contract with no server, driven by the test's clock. No
// sleeps: time moves only through local_backend::advance.
#include "common/coro_test.hpp"
#include "common/exclusion_check.hpp"
#include "common/family_check.hpp"
#include "common/meter_check.hpp"
#include <corolock/local_mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <optional>
#include <utility>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_local_mutex {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::fencing_token;
using corolock::local_backend;
using corolock::local_lease;
using corolock::local_mutex_options;
using corolock::lock_backend;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

// Lets every posted completion run (each hop is one post).
awaitable<void> settle() {
    auto ex = co_await asio::this_coro::executor;
    for (int i = 0; i < 8; ++i)
        co_await asio::post(ex, asio::use_awaitable);
}

// An acquire started in the background; `done` once it completed.
struct pending {
    std::optional<std::pair<error_code, local_lease>> result;
    bool done() const { return result.has_value(); }
    error_code ec() const { return result->first; }
    local_lease& lease() { return result->second; }
};

template <class Op>
void start(pending& p, Op op) {
    std::move(op)([&p](error_code ec, local_lease l) { p.result.emplace(ec, std::move(l)); });
}

local_mutex_options fixed(std::chrono::nanoseconds lease) {
    return {.lease = lease, .watchdog = false};
}

struct fixture {
    asio::io_context ioc;
    local_backend backend{ioc.get_executor()};
    void run(std::function<awaitable<void>()> body) {
        corolock::test::run_coroutine_test(ioc, body(), 10s);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(local_mutex)

// The acquire family's rules (test/common/family_check.hpp), as every backend keeps them.
BOOST_FIXTURE_TEST_CASE(acquire_family_rules, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex a(backend, "family"), b(backend, "family");
        for (const auto& bad : co_await corolock::test::check_acquire_family(a, b))
            BOOST_ERROR(bad);
    });
}

BOOST_FIXTURE_TEST_CASE(acquire_try_release_and_tokens, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "orders"), other(backend, "orders");
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        BOOST_TEST(a.owns());
        BOOST_TEST(a.valid());
        BOOST_TEST(!a.lost());
        BOOST_TEST(a.name() == "orders");
        BOOST_TEST((a.token() == fencing_token(lock_backend::local, 1)));
        BOOST_TEST((a.valid_until() == backend.now() + 30s));
        // Another handle of the same name is the same lock: a try finds it held.
        auto [tec, none] = co_await other.async_try_acquire(tuple_awaitable);
        BOOST_TEST(!tec);
        BOOST_TEST(!none.owns());
        auto [rec] = co_await a.async_release(tuple_awaitable);
        BOOST_TEST(!rec);
        BOOST_TEST(!a.owns());
        auto [bec, b] = co_await other.async_try_acquire(tuple_awaitable);
        BOOST_TEST(!bec);
        BOOST_TEST(b.owns());
        BOOST_TEST((b.token() > fencing_token(lock_backend::local, 1)));
        // Another name is another lock, with its own sequence.
        corolock::local_mutex third(backend, "stock");
        local_lease c = co_await third.async_acquire(asio::use_awaitable);
        BOOST_TEST(c.token().value() == 1u);
    });
}

BOOST_FIXTURE_TEST_CASE(never_completes_inline, fixture) {
    corolock::local_mutex m(backend, "inline");
    pending p;
    start(p, [&](auto h) { m.async_acquire(std::move(h)); });
    BOOST_TEST(!p.done()); // posted, not run inside the call
    ioc.run();
    BOOST_REQUIRE(p.done());
    BOOST_TEST(!p.ec());
    BOOST_TEST(p.lease().owns());
}

BOOST_FIXTURE_TEST_CASE(fixed_lease_is_lost_when_the_clock_passes_its_deadline, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "fixed", fixed(1s));
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        const auto until = a.valid_until();
        BOOST_TEST((until == backend.now() + 1s));
        std::optional<error_code> lost;
        a.async_wait_lost([&](error_code ec) { lost = ec; });
        pending b;
        start(b, [&](auto h) { m.async_acquire(std::move(h)); });
        co_await settle();
        backend.advance(999ms);
        co_await settle();
        BOOST_TEST(a.valid());
        BOOST_TEST(!lost);
        BOOST_TEST(!b.done());
        backend.advance(1ms); // the deadline
        BOOST_TEST(!a.valid());
        BOOST_TEST(a.lost());
        co_await settle();
        BOOST_REQUIRE(lost);
        BOOST_TEST(*lost == error::lease_lost);
        // The lock went to the waiter at that very instant.
        BOOST_REQUIRE(b.done());
        BOOST_TEST(!b.ec());
        BOOST_TEST(b.lease().valid());
        BOOST_TEST((b.lease().token() > a.token()));
        BOOST_TEST((b.lease().valid_until() == until + 1s));
        // Releasing the lost lease says so, and leaves the new holder alone.
        auto [rec] = co_await a.async_release(tuple_awaitable);
        BOOST_TEST(rec == error::lease_lost);
        BOOST_TEST(b.lease().valid());
    });
}

BOOST_FIXTURE_TEST_CASE(extend_pushes_the_deadline, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "extend", fixed(1s));
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        backend.advance(800ms);
        co_await a.async_extend(asio::use_awaitable);
        BOOST_TEST((a.valid_until() == backend.now() + 1s));
        backend.advance(800ms); // 1.6 s after the grant: lost without the extension
        BOOST_TEST(a.valid());
        backend.advance(200ms);
        BOOST_TEST(!a.valid());
        auto [eec] = co_await a.async_extend(tuple_awaitable);
        BOOST_TEST(eec == error::lease_lost); // never brought back
    });
}

BOOST_FIXTURE_TEST_CASE(watchdog_renews_until_renewals_pause, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "watched", {.lease = 3s});
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        backend.advance(1h);
        BOOST_TEST(a.valid());
        // Renewed every lease/3: the last renewal was at most 1 s ago.
        BOOST_TEST((a.valid_until() > backend.now() + 2s));
        BOOST_TEST((a.valid_until() <= backend.now() + 3s));
        backend.pause_renewals();
        const auto until = a.valid_until();
        std::optional<error_code> lost;
        a.async_wait_lost([&](error_code ec) { lost = ec; });
        backend.advance(until - backend.now() - 1ns);
        co_await settle();
        BOOST_TEST(a.valid());
        BOOST_TEST(!lost);
        backend.advance(1ns);
        co_await settle();
        BOOST_TEST(!a.valid());
        BOOST_TEST((lost && *lost == error::lease_lost));
        // After a resume a new lease is renewed again.
        backend.resume_renewals();
        local_lease b = co_await m.async_acquire(asio::use_awaitable);
        backend.advance(1h);
        BOOST_TEST(b.valid());
    });
}

BOOST_FIXTURE_TEST_CASE(max_hold_ends_a_watched_lease, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "bounded", {.lease = 1s, .max_hold = 5s});
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        backend.advance(4999ms);
        BOOST_TEST(a.valid());
        backend.advance(1ms);
        BOOST_TEST(a.lost());
        auto [ec] = co_await a.async_wait_lost(tuple_awaitable);
        BOOST_TEST(ec == error::max_hold_reached);
        auto [rec] = co_await a.async_release(tuple_awaitable);
        BOOST_TEST(rec == error::max_hold_reached);
    });
}

BOOST_FIXTURE_TEST_CASE(waiting_with_a_deadline_times_out_on_the_clock, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "deadline");
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        pending b, c;
        start(b, [&](auto h) { m.async_acquire_for(2s, std::move(h)); });
        start(c, [&](auto h) { m.async_acquire_until(backend.now() + 5s, std::move(h)); });
        backend.advance(1999ms);
        co_await settle();
        BOOST_TEST(!b.done());
        backend.advance(1ms);
        co_await settle();
        BOOST_REQUIRE(b.done());
        BOOST_TEST(b.ec() == error::acquire_timeout);
        BOOST_TEST(!b.lease().owns());
        // The next waiter gets the lock when it is released before its deadline.
        BOOST_TEST(!c.done());
        co_await a.async_release(asio::use_awaitable);
        co_await settle();
        BOOST_REQUIRE(c.done());
        BOOST_TEST(!c.ec());
        BOOST_TEST(c.lease().valid());
        // A zero wait on a held lock fails at once; a negative one is refused.
        auto [zec, z] = co_await m.async_acquire_for(0s, tuple_awaitable);
        BOOST_TEST(zec == error::acquire_timeout);
        auto [nec, n] = co_await m.async_acquire_for(-1s, tuple_awaitable);
        BOOST_TEST(nec == error::invalid_wait);
    });
}

BOOST_FIXTURE_TEST_CASE(per_operation_cancellation_and_cancel, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "cancel"), n(backend, "cancel");
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        asio::cancellation_signal sig;
        pending b, c, d;
        start(b, [&](auto h) {
            m.async_acquire(asio::bind_cancellation_slot(sig.slot(), std::move(h)));
        });
        start(c, [&](auto h) { n.async_acquire(std::move(h)); });
        start(d, [&](auto h) { m.async_acquire(std::move(h)); });
        co_await settle();
        sig.emit(asio::cancellation_type::terminal);
        co_await settle();
        BOOST_REQUIRE(b.done());
        BOOST_TEST(b.ec() == asio::error::operation_aborted);
        BOOST_TEST(!b.lease().owns());
        BOOST_TEST(!c.done());
        // cancel() ends the handle's own waits only.
        n.cancel();
        co_await settle();
        BOOST_REQUIRE(c.done());
        BOOST_TEST(c.ec() == asio::error::operation_aborted);
        BOOST_TEST(!d.done());
        // The lock skips the cancelled waiters.
        co_await a.async_release(asio::use_awaitable);
        co_await settle();
        BOOST_REQUIRE(d.done());
        BOOST_TEST(!d.ec());
        BOOST_TEST(d.lease().token().value() == 2u);
        // A cancelled wait for the loss completes with operation_aborted; the lease stays.
        asio::cancellation_signal lost_sig;
        std::optional<error_code> lost;
        d.lease().async_wait_lost(
            asio::bind_cancellation_slot(lost_sig.slot(), [&](error_code ec) { lost = ec; }));
        lost_sig.emit(asio::cancellation_type::terminal);
        co_await settle();
        BOOST_TEST((lost && *lost == asio::error::operation_aborted));
        BOOST_TEST(d.lease().valid());
    });
}

BOOST_FIXTURE_TEST_CASE(destroying_the_mutex_cancels_its_waits, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "gone");
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        pending b;
        {
            corolock::local_mutex doomed(backend, "gone");
            start(b, [&](auto h) { doomed.async_acquire(std::move(h)); });
        }
        co_await settle();
        BOOST_REQUIRE(b.done());
        BOOST_TEST(b.ec() == asio::error::operation_aborted);
        BOOST_TEST(a.valid());
    });
}

BOOST_FIXTURE_TEST_CASE(waiters_are_served_in_arrival_order, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "fifo");
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        std::vector<pending> waits(4);
        for (auto& p : waits)
            start(p, [&](auto h) { m.async_acquire(std::move(h)); });
        // A try never jumps the line.
        auto [tec, t] = co_await m.async_try_acquire(tuple_awaitable);
        BOOST_TEST(!t.owns());
        co_await a.async_release(asio::use_awaitable);
        for (std::size_t i = 0; i < waits.size(); ++i) {
            co_await settle();
            BOOST_REQUIRE(waits[i].done());
            for (std::size_t j = i + 1; j < waits.size(); ++j)
                BOOST_TEST(!waits[j].done());
            BOOST_TEST(waits[i].lease().token().value() == i + 2);
            co_await waits[i].lease().async_release(asio::use_awaitable);
        }
    });
}

BOOST_FIXTURE_TEST_CASE(nested_holds_keep_the_lock, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "nested");
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        const auto token = a.token();
        auto h = a.hold();
        BOOST_TEST(h.valid());
        BOOST_TEST((h.token() == token));
        co_await a.async_release(asio::use_awaitable); // completes, the hold keeps the lock
        auto [tec, t] = co_await m.async_try_acquire(tuple_awaitable);
        BOOST_TEST(!t.owns());
        auto [hec] = co_await h.async_release(tuple_awaitable);
        BOOST_TEST(!hec);
        auto [uec, u] = co_await m.async_try_acquire(tuple_awaitable);
        BOOST_TEST(u.owns());
        // A lease dropped with a hold alive: the hold's end releases.
        {
            auto h2 = u.hold();
            u = local_lease();
            auto [t2ec, t2] = co_await m.async_try_acquire(tuple_awaitable);
            BOOST_TEST(!t2.owns());
        }
        auto [vec, v] = co_await m.async_try_acquire(tuple_awaitable);
        BOOST_TEST(v.owns());
        BOOST_CHECK_THROW(local_lease().hold(), std::logic_error);
    });
}

BOOST_FIXTURE_TEST_CASE(force_unlock_loses_the_holder_s_lease, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "forced");
        local_lease a = co_await m.async_acquire(asio::use_awaitable);
        pending b;
        start(b, [&](auto h) { m.async_acquire(std::move(h)); });
        co_await settle();
        BOOST_TEST(m.force_unlock());
        BOOST_TEST(a.lost());
        co_await settle();
        BOOST_REQUIRE(b.done());
        BOOST_TEST(b.lease().valid());
        auto [ec] = co_await a.async_wait_lost(tuple_awaitable);
        BOOST_TEST(ec == error::lease_lost);
        co_await b.lease().async_release(asio::use_awaitable);
        BOOST_TEST(!m.force_unlock());
    });
}

BOOST_FIXTURE_TEST_CASE(invalid_arguments_fail_first, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex unnamed(backend, "");
        auto [nec, n] = co_await unnamed.async_acquire(tuple_awaitable);
        BOOST_TEST(nec == error::invalid_name);
        corolock::local_mutex short_lease(backend, "short", {.lease = 1ms});
        auto [lec, l] = co_await short_lease.async_try_acquire(tuple_awaitable);
        BOOST_TEST(lec == error::invalid_lease);
        corolock::local_mutex bad_hold(backend, "hold", {.max_hold = -1s});
        auto [hec, h] = co_await bad_hold.async_acquire(tuple_awaitable);
        BOOST_TEST(hec == error::invalid_argument);
        auto [eec] = co_await local_lease().async_release(tuple_awaitable);
        BOOST_TEST(eec == error::not_owner);
        BOOST_CHECK_THROW(backend.advance(-1ns), std::invalid_argument);
    });
}

BOOST_FIXTURE_TEST_CASE(with_lock_over_the_local_backend, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex m(backend, "scoped", fixed(1s));
        fencing_token seen;
        co_await corolock::with_lock(m, [&](local_lease& l) -> awaitable<void> {
            seen = l.token();
            auto [tec, t] = co_await m.async_try_acquire(tuple_awaitable);
            BOOST_TEST(!t.owns()); // held inside
        });
        BOOST_TEST((seen == fencing_token(lock_backend::local, 1)));
        auto [fec, free] = co_await m.async_try_acquire(tuple_awaitable);
        BOOST_TEST(free.owns()); // released on the way out
        co_await free.async_release(asio::use_awaitable);
        // A lease lost inside cancels the body and throws lease_lost.
        bool body_cancelled = false;
        try {
            co_await corolock::with_lock(m, [&](local_lease&) -> awaitable<void> {
                backend.advance(1s); // the fixed lease runs out
                asio::steady_timer forever(co_await asio::this_coro::executor,
                                           asio::steady_timer::time_point::max());
                auto [ec] = co_await forever.async_wait(tuple_awaitable);
                body_cancelled = ec == asio::error::operation_aborted;
            });
            BOOST_ERROR("with_lock did not throw");
        } catch (const boost::system::system_error& e) {
            BOOST_TEST(e.code() == error::lease_lost);
        }
        BOOST_TEST(body_cancelled);
    });
}

BOOST_FIXTURE_TEST_CASE(generic_exclusion_checker, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex a(backend, "excl"), b(backend, "excl"), c(backend, "excl");
        corolock::local_mutex* const handles[] = {&a, &b, &c};
        const auto r = co_await corolock::test::check_exclusion<corolock::local_mutex>(
            handles, 3, 20, []() -> awaitable<void> { co_await settle(); });
        BOOST_TEST(r.exclusive(3 * 3 * 20), "local: " << r);
    });
}

// The lock_meter check written once against the concept (test/common/meter_check.hpp): every
// path of the metered with_lock forms, counted exactly, with time moved only by advance.
BOOST_FIXTURE_TEST_CASE(generic_lock_meter_check, fixture) {
    run([&]() -> awaitable<void> {
        corolock::local_mutex a(backend, "metered"), b(backend, "metered"), bad(backend, "");
        corolock::test::meter_kit<corolock::local_mutex> kit;
        kit.a = &a;
        kit.b = &b;
        kit.bad = &bad;
        kit.short_wait = 100ms;
        kit.progress = settle;
        kit.pass = [&](local_lease::clock::duration d) -> awaitable<void> {
            co_await settle();
            backend.advance(d);
            co_await settle();
        };
        kit.lose = [&](local_lease&) -> awaitable<void> {
            BOOST_TEST(a.force_unlock());
            co_return;
        };
        co_await corolock::test::check_lock_meter(kit);
    });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_local_mutex
