// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The multi-lock against a real redis-server: arguments checked before anything is sent; the
// all-or-nothing rule under a try, a timeout, cancellation at random points and an error (no key
// of ours left once the releases have settled); overlapping sets taken in opposite orders by many
// coroutines never deadlock and never overlap; a member lost tells the multi_lease; the first
// round costs one write. The multi-process stress test is test/fault/s14_multi_lock.cpp.
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/multi_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_multi_lock {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::lease;
using corolock::multi_lease;
using corolock::mutex_options;
using corolock::test::config_for;
using corolock::test::lease_of;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace {

using corolock::test::tuple_deferred;

long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

awaitable<bool> eventually(std::function<bool()> done, clock_type::duration within,
                           clock_type::duration step = 5ms) {
    const auto until = clock_type::now() + within;
    for (;;) {
        if (done())
            co_return true;
        if (clock_type::now() >= until)
            co_return false;
        co_await sleep_for(step);
    }
}

awaitable<void> ping(corolock::connection& c) {
    corolock::request req;
    req.push("PING");
    co_await c.async_exec(req, corolock::ignore);
}

std::string bulk(std::string_view s) {
    return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

// `conn` for the multi-locks (health check off: the counted writes are ours alone) and `peer`,
// "another process".
struct fixture : corolock::test::server_fixture {
    // `conn` without health checks.
    fixture()
        : server_fixture([](corolock::connection_config& cfg) {
              cfg.health_check_interval = clock_type::duration::zero();
          }) {}
    // Lock keys matching `pattern` (fence keys are `{name}:fence` and never match `ml:...`).
    std::string keys(const std::string& pattern) { return srv.command({"KEYS", pattern}); }
    // How many lock keys are left (the reply starts with `*<count>`).
    int lock_keys() { return std::stoi(keys("ml:*").substr(1)); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(multi_lock)

BOOST_FIXTURE_TEST_CASE(invalid_arguments_fail_before_redis, fixture) {
    run([&]() -> awaitable<void> {
        co_await ping(conn); // connected
        const auto commands = conn.stats().commands;
        struct bad_case {
            std::vector<std::string> names;
            mutex_options opts;
            error expected;
        };
        const std::vector<bad_case> cases{
            {{}, {}, error::invalid_argument},
            {{"ml:a", "ml:b", "ml:a"}, {}, error::invalid_argument},
            {{"ml:a", ""}, {}, error::invalid_name},
            {{"ml:a", "ml:b"}, lease_of(1ms), error::invalid_lease},
        };
        for (const auto& c : cases) {
            corolock::multi_lock m(conn, c.names, c.opts);
            auto [ec1, l1] = co_await m.async_acquire(tuple_deferred);
            BOOST_TEST(ec1 == c.expected);
            BOOST_TEST(ec1 == corolock::condition::invalid_argument);
            BOOST_TEST(!l1.owns());
            auto [ec2, l2] = co_await m.async_try_acquire(tuple_deferred);
            BOOST_TEST(ec2 == c.expected);
            auto [ec3, l3] = co_await m.async_acquire_for(1s, tuple_deferred);
            BOOST_TEST(ec3 == c.expected);
        }
        corolock::multi_lock ok(conn, {"ml:a"});
        auto [ec4, l4] = co_await ok.async_acquire_for(-1ms, tuple_deferred);
        BOOST_TEST(ec4 == error::invalid_wait);
        BOOST_TEST(conn.stats().commands == commands); // nothing was sent
        BOOST_TEST(srv.command({"DBSIZE"}) == ":0\r\n");

        // An empty multi_lease: not_owner, on the token's executor.
        multi_lease empty;
        BOOST_TEST(!empty.owns());
        BOOST_TEST(!empty.valid());
        BOOST_TEST((empty.valid_until() == clock_type::time_point::min()));
        auto [rel] = co_await empty.async_release(tuple_deferred);
        BOOST_TEST(rel == error::not_owner);
        auto [wl] = co_await empty.async_wait_lost(tuple_deferred);
        BOOST_TEST(wl == error::not_owner);
    });
}

BOOST_FIXTURE_TEST_CASE(acquire_holds_every_name_with_its_token_in_one_write, fixture) {
    run([&]() -> awaitable<void> {
        corolock::multi_lock m(conn, {"ml:c", "ml:a", "ml:b"});
        const std::vector<std::string> sorted{"ml:a", "ml:b", "ml:c"};
        BOOST_TEST(m.names() == sorted, boost::test_tools::per_element());
        // Once, to load the scripts (a cold cache answers NOSCRIPT and the EVAL follows).
        co_await (co_await m.async_acquire()).async_release();

        // All free: one try per name, all in one write, one round trip.
        auto st = conn.stats();
        multi_lease l = co_await m.async_acquire();
        BOOST_TEST(conn.stats().writes - st.writes == 1u);
        BOOST_TEST(conn.stats().commands - st.commands == 3u);
        BOOST_REQUIRE(l.owns());
        BOOST_TEST(l.valid());
        BOOST_TEST(!l.lost());
        BOOST_TEST(l.members().size() == 3u);
        const auto tokens = l.tokens();
        for (std::size_t i = 0; i < 3; ++i) {
            const auto& member = l.members()[i];
            BOOST_TEST(member.name() == sorted[i]);
            BOOST_TEST(member.token().value() > 0u);
            BOOST_TEST(tokens[i] == member.token());
            BOOST_TEST(l.token(sorted[i]) == member.token());
            BOOST_TEST(owner(sorted[i]) == bulk(member.owner_id()));
            BOOST_TEST((l.valid_until() <= member.valid_until()));
        }
        BOOST_TEST(l.token("ml:zzz").value() == 0u);
        BOOST_TEST((l.valid_until() > clock_type::now() + 25s));

        // Held: a try through another handle (or the same) gets nothing, and takes nothing.
        corolock::multi_lock other(peer, {"ml:b", "ml:d"});
        multi_lease none = co_await other.async_try_acquire();
        BOOST_TEST(!none.owns());
        BOOST_TEST(co_await eventually([&] { return !exists("ml:d"); }, 2s));

        // Moves like a unique_lock; the release is one write for every member.
        multi_lease moved = std::move(l);
        BOOST_TEST(!l.owns()); // NOLINT(bugprone-use-after-move)
        st = conn.stats();
        co_await moved.async_release();
        BOOST_TEST(conn.stats().writes - st.writes == 1u);
        BOOST_TEST(conn.stats().commands - st.commands == 3u);
        BOOST_TEST(!moved.owns());
        BOOST_TEST(lock_keys() == 0);
        auto [again] = co_await moved.async_release(tuple_deferred);
        BOOST_TEST(again == error::not_owner);

        // Tokens grow per name; dropping a multi_lease releases every member without waiting.
        multi_lease next = co_await m.async_acquire();
        BOOST_TEST(next.token("ml:a") > tokens[0]);
        next = multi_lease{};
        BOOST_TEST(co_await eventually([&] { return lock_keys() == 0; }, 2s));
    });
}

BOOST_FIXTURE_TEST_CASE(a_try_finding_one_name_held_leaves_no_key_of_ours, fixture) {
    run([&]() -> awaitable<void> {
        const std::vector<std::string> names{"ml:a", "ml:b", "ml:c"};
        for (const auto& held_name : names) {
            corolock::mutex holder(peer, held_name);
            lease h = co_await holder.async_acquire();
            const auto holder_owner = owner(held_name);
            corolock::multi_lock m(conn, names);
            auto [ec, l] = co_await m.async_try_acquire(tuple_deferred);
            BOOST_TEST(!ec);
            BOOST_TEST(!l.owns());
            // The other names were granted in the same round and are given back at once.
            BOOST_TEST(co_await eventually([&] { return lock_keys() == 1; }, 2s),
                       "held " << held_name << ": " << keys("ml:*"));
            BOOST_TEST(owner(held_name) == holder_owner);
            co_await h.async_release();
            BOOST_TEST(lock_keys() == 0);
        }
        // A foreign key at one name: the error, and nothing of ours left either.
        BOOST_TEST(srv.command({"SET", "ml:b", "user data"}) == "+OK\r\n");
        corolock::multi_lock m(conn, names);
        for (bool once : {true, false}) {
            auto [ec, l] = once ? co_await m.async_try_acquire(tuple_deferred)
                                : co_await m.async_acquire(tuple_deferred);
            BOOST_TEST(ec == error::wrong_type);
            BOOST_TEST(!l.owns());
            BOOST_TEST(co_await eventually([&] { return lock_keys() == 1; }, 2s));
        }
        BOOST_TEST(srv.command({"GET", "ml:b"}) == "$9\r\nuser data\r\n");
    });
}

BOOST_FIXTURE_TEST_CASE(a_waiting_acquire_holds_only_the_names_below_the_held_one, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex holder(peer, "ml:b");
        lease h = co_await holder.async_acquire();
        corolock::multi_lock m(conn, {"ml:a", "ml:b", "ml:c"});
        bool done = false;
        error_code got_ec;
        multi_lease got;
        m.async_acquire([&](error_code ec, multi_lease l) {
            got_ec = ec;
            got = std::move(l);
            done = true;
        });
        // It holds a (below b) and waits for b; c, granted in the first round, was given back.
        BOOST_TEST(co_await eventually([&] { return exists("ml:a") && !exists("ml:c"); }, 2s));
        co_await sleep_for(100ms);
        BOOST_TEST(!done);
        BOOST_TEST(!exists("ml:c"));
        const auto t0 = clock_type::now();
        co_await h.async_release();
        BOOST_TEST(co_await eventually([&] { return done; }, 2s));
        BOOST_TEST_MESSAGE("granted " << ms(clock_type::now() - t0) << " ms after the release");
        BOOST_TEST(!got_ec);
        BOOST_TEST(got.valid());
        for (const auto& member : got.members())
            BOOST_TEST(owner(std::string(member.name())) == bulk(member.owner_id()));
        co_await got.async_release();
        BOOST_TEST(lock_keys() == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(a_timeout_releases_every_name_taken, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex holder(peer, "ml:c");
        lease h = co_await holder.async_acquire();
        corolock::multi_lock m(conn, {"ml:a", "ml:b", "ml:c"});
        const auto t0 = clock_type::now();
        auto [ec, l] = co_await m.async_acquire_for(300ms, tuple_deferred);
        const auto took = clock_type::now() - t0;
        BOOST_TEST(ec == error::acquire_timeout);
        BOOST_TEST(!l.owns());
        BOOST_TEST(ms(took) >= 290);
        BOOST_TEST(ms(took) < 600);
        BOOST_TEST(co_await eventually([&] { return lock_keys() == 1; }, 2s));
        BOOST_TEST(exists("ml:c"));
        BOOST_TEST(corolock::get_lock_stats(conn).leases_held == 0u);
        co_await h.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(cancellation_at_random_points_leaves_no_key, fixture) {
    run([&]() -> awaitable<void> {
        std::mt19937 rng(20261123);
        BOOST_TEST_MESSAGE("seed 20261123");
        const std::vector<std::string> names{"ml:a", "ml:b", "ml:c", "ml:d"};
        corolock::mutex holder(peer, "ml:c");
        int aborted = 0, granted = 0;
        for (int i = 0; i < 200; ++i) {
            // Half of the rounds find c held (the acquire then waits in order), half find all
            // free; the cancel lands anywhere from before the first write to after the grant.
            lease h;
            if (i % 2 == 0)
                h = co_await holder.async_acquire();
            corolock::multi_lock m(conn, names);
            asio::cancellation_signal sig;
            bool done = false;
            error_code got_ec;
            multi_lease got;
            m.async_acquire(
                asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, multi_lease l) {
                    got_ec = ec;
                    got = std::move(l);
                    done = true;
                }));
            co_await sleep_for(std::chrono::microseconds(rng() % 1500));
            const auto t_cancel = clock_type::now();
            sig.emit(i % 3 == 0 ? asio::cancellation_type::terminal
                                : asio::cancellation_type::total);
            BOOST_REQUIRE(co_await eventually([&] { return done; }, 2s));
            BOOST_TEST(ms(clock_type::now() - t_cancel) < 100);
            if (got_ec == asio::error::operation_aborted) {
                ++aborted;
                BOOST_TEST(!got.owns());
            } else {
                BOOST_TEST(!got_ec); // completed before the cancel
                BOOST_TEST(got.valid());
                ++granted;
                co_await got.async_release();
            }
            if (h)
                co_await h.async_release();
        }
        BOOST_TEST_MESSAGE(aborted << " aborted, " << granted << " granted before the cancel");
        BOOST_TEST(aborted > 50);
        // Grants that landed after their cancel are given back when their replies arrive.
        BOOST_TEST(co_await eventually([&] { return lock_keys() == 0; }, 2s), keys("ml:*"));
        const auto st = corolock::get_lock_stats(conn);
        BOOST_TEST(st.leases_held == 0u);
        BOOST_TEST(st.waiters == 0u);
    });
}

BOOST_FIXTURE_TEST_CASE(overlapping_sets_in_opposite_orders_never_deadlock, fixture) {
    // 100 coroutines on two connections take random sets of 2 or 3 of 5 names, each listing
    // its names in a random order (a set and its reverse are both common), and hold them while
    // they check that no one else holds any of them. No cycle may form: every acquire
    // completes well before its 20 s deadline.
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::vector<std::string> pool{"ml:a", "ml:b", "ml:c", "ml:d", "ml:e"};
        std::map<std::string, int> inside;
        int overlaps = 0, ok = 0, failed = 0;
        auto worker = [&](corolock::connection& c, unsigned seed) -> awaitable<void> {
            std::mt19937 rng(seed);
            for (int round = 0; round < 20; ++round) {
                auto names = pool;
                std::shuffle(names.begin(), names.end(), rng);
                names.resize(2 + rng() % 2);
                corolock::multi_lock m(c, names, lease_of(2s));
                auto [ec, l] = co_await m.async_acquire_for(20s, tuple_deferred);
                if (ec) {
                    ++failed;
                    continue;
                }
                for (const auto& n : names)
                    overlaps += inside[n]++ != 0;
                co_await sleep_for(std::chrono::microseconds(rng() % 2000));
                for (const auto& n : names)
                    --inside[n];
                co_await l.async_release();
                ++ok;
            }
        };
        using op = decltype(asio::co_spawn(ex, worker(conn, 0), asio::deferred));
        std::vector<op> ops;
        for (unsigned i = 0; i < 100; ++i)
            ops.push_back(asio::co_spawn(ex, worker(i % 2 ? conn : peer, i), asio::deferred));
        const auto t0 = clock_type::now();
        auto [order, errors] = co_await asio::experimental::make_parallel_group(std::move(ops))
                                   .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        BOOST_TEST_MESSAGE("2000 multi-lock sections in " << ms(clock_type::now() - t0) << " ms");
        for (auto& e : errors)
            BOOST_TEST(!e);
        BOOST_TEST(ok == 2000);
        BOOST_TEST(failed == 0);
        BOOST_TEST(overlaps == 0);
        BOOST_TEST(lock_keys() == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(a_lost_member_tells_the_multi_lease, fixture) {
    run([&]() -> awaitable<void> {
        corolock::multi_lock m(conn, {"ml:a", "ml:b", "ml:c"}, lease_of(300ms));
        multi_lease l = co_await m.async_acquire();
        BOOST_REQUIRE(l.valid());
        bool told = false;
        error_code lost_ec;
        l.async_wait_lost([&](error_code ec) {
            lost_ec = ec;
            told = true;
        });
        co_await sleep_for(50ms);
        BOOST_TEST(!told);
        const auto t0 = clock_type::now();
        BOOST_TEST(srv.command({"DEL", "ml:b"}) == ":1\r\n"); // from outside
        // The next renewal (every lease/3) finds it gone.
        BOOST_TEST(co_await eventually([&] { return told; }, 1s));
        BOOST_TEST_MESSAGE("told " << ms(clock_type::now() - t0) << " ms after the DEL");
        BOOST_TEST(lost_ec == error::lease_lost);
        BOOST_TEST(l.lost());
        BOOST_TEST(!l.valid());
        BOOST_TEST(l.members()[1].lost());
        BOOST_TEST(!l.members()[0].lost());
        auto [again] = co_await l.async_wait_lost(tuple_deferred); // already lost: at once
        BOOST_TEST(again == error::lease_lost);
        auto [rel] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(rel == error::lease_lost);
        BOOST_TEST(lock_keys() == 0); // the others were released

        // Released or cancelled first: operation_aborted.
        multi_lease r = co_await m.async_acquire();
        bool aborted = false;
        r.async_wait_lost([&](error_code ec) { aborted = ec == asio::error::operation_aborted; });
        co_await sleep_for(10ms);
        co_await r.async_release();
        BOOST_TEST(co_await eventually([&] { return aborted; }, 1s));
        multi_lease c = co_await m.async_acquire();
        asio::cancellation_signal sig;
        bool cancelled = false;
        c.async_wait_lost(asio::bind_cancellation_slot(
            sig.slot(), [&](error_code ec) { cancelled = ec == asio::error::operation_aborted; }));
        co_await sleep_for(10ms);
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&] { return cancelled; }, 1s));
        BOOST_TEST(c.valid());
        co_await c.async_release();
    });
}

BOOST_FIXTURE_TEST_CASE(destroying_or_cancelling_the_handle_aborts_its_acquires, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex holder(peer, "ml:b");
        lease h = co_await holder.async_acquire();
        int aborted = 0;
        auto count = [&](error_code ec, multi_lease l) {
            aborted += ec == asio::error::operation_aborted && !l.owns();
        };
        {
            corolock::multi_lock m(conn, {"ml:a", "ml:b"});
            for (int i = 0; i < 5; ++i)
                m.async_acquire(count);
            co_await sleep_for(50ms);
        } // destroyed while they wait
        BOOST_TEST(co_await eventually([&] { return aborted == 5; }, 1s));
        corolock::multi_lock m(conn, {"ml:a", "ml:b"});
        for (int i = 0; i < 5; ++i)
            m.async_acquire(count);
        co_await sleep_for(50ms);
        m.cancel();
        BOOST_TEST(co_await eventually([&] { return aborted == 10; }, 1s));
        BOOST_TEST(co_await eventually([&] { return lock_keys() == 1; }, 2s));
        co_await h.async_release();
    });
}

BOOST_AUTO_TEST_CASE(io_context_destroyed_with_a_holder_and_a_waiter_frees_both) {
    // As the single-name case
    // (mutex/release/io_context_destroyed_with_a_holder_and_a_waiter_frees_both):
    // coroutines that own their multi-lock and multi-lease, one holding {a, b} and waiting for
    // its loss, one waiting for b of {b, c}, when the io_context is stopped and destroyed. The
    // members' waits and acquisitions are the lock layer's, which frees them at shutdown.
    redis_process srv;
    corolock::test::orphaned_pair pair;
    {
        asio::io_context ioc;
        corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
        conn.async_run(asio::detached);
        pair.run(
            ioc,
            [&](bool& held) -> awaitable<void> {
                corolock::multi_lock m(conn, {"ml:orphaned:a", "ml:orphaned:b"}, lease_of(2s));
                multi_lease l = co_await m.async_acquire();
                held = true;
                co_await l.async_wait_lost(tuple_deferred);
            },
            [&]() -> awaitable<void> {
                corolock::multi_lock m(conn, {"ml:orphaned:b", "ml:orphaned:c"}, lease_of(2s));
                co_await m.async_acquire(tuple_deferred);
            });
    }
    pair.check();
    for (const char* key : {"ml:orphaned:a", "ml:orphaned:b"}) { // held, left to expire
        const auto pttl = srv.command({"PTTL", key});
        BOOST_REQUIRE(pttl.starts_with(":"));
        BOOST_TEST(std::stoll(pttl.substr(1)) > 0);
    }
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_multi_lock
