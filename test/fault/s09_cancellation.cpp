// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S9: cancellation leaves no orphans (issue 4). 100 waiters on a held lock (acquires through
// one shared handle) are cancelled at random times, and 50 acquires are cancelled while their
// script is on the wire (held 100 ms in the fault proxy, cancelled 20 ms after it was sent).
// Every one completes promptly with operation_aborted and an empty lease; the grants that land
// after a cancel are given back at once (checked while their long lease would still keep the
// key), so no lock key, held lease, waiter or renewal remains, and the next acquire is
// immediate.
#include "common/coro_test.hpp"
#include "common/fault_proxy.hpp"
#include "common/redis_process.hpp"
#include "common/test_config.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s09_cancellation {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error_code;
using corolock::test::config_for;
using corolock::test::direction;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto lease = 1000ms;
// The acquires cancelled on the wire: a grant that was not given back would stay this long.
constexpr auto wire_lease = 10s;
constexpr auto prompt = 100ms; // a cancelled operation completes within this

long long us(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}
long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

corolock::mutex_options lease_opts(clock_type::duration l = lease) {
    corolock::mutex_options o;
    o.lease = l;
    return o;
}

// One cancellable acquire through `m` (shared with others, or its own), and when it was
// cancelled and completed.
struct cancellable {
    corolock::mutex* m = nullptr;
    asio::cancellation_signal signal;
    bool done = false;
    error_code ec;
    corolock::lease got; // must stay empty
    clock_type::time_point cancelled_at{}, finished{};

    void start() {
        m->async_acquire(
            asio::bind_cancellation_slot(signal.slot(), [this](error_code e, corolock::lease l) {
                ec = e;
                got = std::move(l);
                finished = clock_type::now();
                done = true;
            }));
    }
    void cancel() {
        cancelled_at = clock_type::now();
        signal.emit(asio::cancellation_type::terminal);
    }
};

awaitable<bool> all_done(std::vector<std::unique_ptr<cancellable>>& ops,
                         clock_type::duration limit) {
    const auto until = clock_type::now() + limit;
    for (;;) {
        const bool done = std::all_of(ops.begin(), ops.end(), [](auto& o) { return o->done; });
        if (done || clock_type::now() >= until)
            co_return done;
        co_await sleep_for(2ms);
    }
}

struct summary {
    int aborted = 0, other = 0;
    clock_type::duration worst{};
};
summary summarise(const std::vector<std::unique_ptr<cancellable>>& ops) {
    summary s;
    for (auto& o : ops) {
        if (o->ec == asio::error::operation_aborted)
            ++s.aborted;
        else
            ++s.other;
        s.worst = std::max(s.worst, o->finished - o->cancelled_at);
    }
    return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(s09_cancellation)

BOOST_AUTO_TEST_CASE(cancelled_waiters_and_wire_acquires_leave_nothing) {
    redis_process srv;
    corolock::test::fault_proxy proxy(srv.port());
    asio::io_context ioc;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            auto pcfg = config_for(srv);
            pcfg.port = std::to_string(proxy.port());
            pcfg.health_check_interval = 1s; // a 200 ms round trip is slow, not dead
            corolock::connection slow(ex, pcfg, quiet()), direct(ex, config_for(srv), quiet());
            slow.async_run(asio::detached);
            direct.async_run(asio::detached);
            std::mt19937 rng(20260409);
            BOOST_TEST_MESSAGE("seed 20260409");

            // 1. 100 waiters on a held lock (through the proxy, 5-25 ms each way, so some are
            //    cancelled while an attempt is on the wire), cancelled at random times.
            corolock::mutex holder(direct, "s9:lock", lease_opts());
            corolock::lease held = co_await holder.async_acquire();
            proxy.delay(direction::client_to_server, 15ms, 10ms);
            proxy.delay(direction::server_to_client, 15ms, 10ms);
            // The waiting client's one handle on the lock, shared by its 100 acquires.
            corolock::mutex shared(slow, "s9:lock", lease_opts());
            std::vector<std::unique_ptr<cancellable>> waiters;
            for (int i = 0; i < 100; ++i) {
                waiters.push_back(std::make_unique<cancellable>());
                waiters.back()->m = &shared;
                waiters.back()->start();
            }
            std::vector<std::size_t> order(waiters.size());
            for (std::size_t i = 0; i < order.size(); ++i)
                order[i] = i;
            std::shuffle(order.begin(), order.end(), rng);
            for (auto i : order) {
                co_await sleep_for(std::chrono::microseconds(rng() % 6000)); // over ~300 ms
                waiters[i]->cancel();
            }
            BOOST_TEST(co_await all_done(waiters, 5s));
            const auto w = summarise(waiters);
            BOOST_TEST_MESSAGE("100 waiters: " << w.aborted << " operation_aborted, " << w.other
                                               << " other; worst completion " << us(w.worst)
                                               << " us after cancel");
            BOOST_TEST(w.aborted == 100);
            BOOST_TEST(ms(w.worst) < ms(prompt));
            for (auto& o : waiters)
                BOOST_TEST(!o->got.owns());
            BOOST_TEST(corolock::get_lock_stats(slow).waiters == 0u);
            co_await held.async_release();

            // 2. 50 acquires of free locks, cancelled 20 ms after their script was sent, while
            //    the proxy holds it for 100 ms: the server grants each lock after the cancel,
            //    and the library must give it back when the reply comes.
            proxy.delay(direction::client_to_server, 100ms);
            proxy.delay(direction::server_to_client, 0ms);
            std::vector<std::unique_ptr<corolock::mutex>> wire_locks;
            std::vector<std::unique_ptr<cancellable>> wire;
            int seen_on_wire = 0;
            for (int i = 0; i < 50; ++i) {
                wire_locks.push_back(std::make_unique<corolock::mutex>(
                    slow, "s9:wire:" + std::to_string(i), lease_opts(wire_lease)));
                auto op = std::make_unique<cancellable>();
                op->m = wire_locks.back().get();
                const auto read_before = proxy.stats().bytes_read[0];
                op->start();
                co_await sleep_for(20ms);
                // The script is in the proxy: written by the client, not yet run by the server.
                const auto st = proxy.stats();
                if (st.bytes_read[0] > read_before && st.bytes_held[0] > 0)
                    ++seen_on_wire;
                op->cancel();
                wire.push_back(std::move(op));
            }
            BOOST_TEST(co_await all_done(wire, 5s));
            const auto t_done = clock_type::now();
            // The last grants have landed (100 ms after their send), their give-backs not yet.
            co_await sleep_for(90ms);
            const auto granted_late = srv.command({"KEYS", "s9:wire:*"});
            BOOST_TEST_MESSAGE("granted after their cancel, still to be given back: "
                               << granted_late.substr(0, granted_late.find('\r')));
            // Each give-back is sent when its grant's reply arrives and spends 100 ms in the
            // proxy. Well within the 10 s lease of those grants, none may be left.
            co_await sleep_for(t_done + 400ms - clock_type::now());
            const auto left_wire = srv.command({"KEYS", "s9:wire:*"});
            BOOST_TEST(left_wire == "*0\r\n", "keys left by acquires cancelled on the wire "
                                                  << ms(clock_type::now() - t_done)
                                                  << " ms after the last completed: " << left_wire);
            const auto c = summarise(wire);
            BOOST_TEST_MESSAGE("50 acquires cancelled on the wire ("
                               << seen_on_wire << " seen in the proxy): " << c.aborted
                               << " operation_aborted, " << c.other << " other; worst completion "
                               << us(c.worst) << " us after cancel");
            BOOST_TEST(seen_on_wire >= 45);
            BOOST_TEST(c.aborted == 50);
            BOOST_TEST(ms(c.worst) < ms(prompt));
            for (auto& o : wire)
                BOOST_TEST(!o->got.owns());

            // The grants land 100 ms after each send and are given back one round trip later.
            co_await sleep_for(t_done + lease + 100ms - clock_type::now());
            proxy.heal();
            std::string left = srv.command({"KEYS", "s9:*"});
            BOOST_TEST(left == "*0\r\n");
            for (auto* conn : {&slow, &direct}) {
                const auto st = corolock::get_lock_stats(*conn);
                BOOST_TEST(st.leases_held == 0u);
                BOOST_TEST(st.waiters == 0u);
            }
            const auto r0 =
                corolock::get_lock_stats(slow).renewals + corolock::get_lock_stats(direct).renewals;
            co_await sleep_for(lease);
            const auto r1 =
                corolock::get_lock_stats(slow).renewals + corolock::get_lock_stats(direct).renewals;
            BOOST_TEST_MESSAGE("renewals over one lease after the cancellations: " << r1 - r0);
            BOOST_TEST(r1 == r0); // no watchdog left running

            // The next acquire is immediate, through either connection's handle.
            for (auto* m : {&holder, &shared}) {
                const auto t0 = clock_type::now();
                corolock::lease next = co_await m->async_acquire();
                const auto took = clock_type::now() - t0;
                BOOST_TEST_MESSAGE("next acquire took " << us(took) << " us");
                BOOST_TEST(ms(took) < 50);
                co_await next.async_release();
            }
            for (int i = 0; i < 50; i += 7) {
                corolock::mutex again(direct, "s9:wire:" + std::to_string(i), lease_opts());
                corolock::lease l = co_await again.async_try_acquire();
                BOOST_TEST(l.owns());
                if (l)
                    co_await l.async_release();
            }
            slow.cancel();
            direct.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s09_cancellation
