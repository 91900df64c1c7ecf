// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper lock against a real server, in one process: grants, tokens, try, deadlines,
// cancellation in every state, reentrant holds, fenced writes, bad arguments, the generic
// exclusion checker, and a node deleted by someone else.
#include "common/exclusion_check.hpp"
#include "common/family_check.hpp"
#include "common/fault_proxy.hpp"
#include "common/meter_check.hpp"
#include "common/redis_process.hpp"
#include "zk_test.hpp"
#include <corolock/with_lock.hpp>
#include <corolock/zk_mutex.hpp>
#include <corolock/zk_shared_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace zookeeper_zk_mutex {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::zk_lease;
using corolock::zk_mutex;
using corolock::test::running_zk;
using corolock::test::shared_zk;
using corolock::test::wait_ephemerals;
using corolock::test::zk_test_config;

static_assert(corolock::lock_handle<zk_mutex>);

namespace {

struct zk_fixture {
    asio::io_context ioc;
    template <class F>
    void run(F body, std::chrono::seconds limit = 30s) {
        shared_zk(); // started outside the timed body
        corolock::test::run_coroutine_test(ioc, body(), limit);
    }
};

constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

// Someone else (kazoo, another client) deletes `node`.
awaitable<void> delete_node(std::string node) {
    co_await corolock::test::off_loop([&] {
        const auto r =
            corolock::test::run_program({"/usr/bin/python3", "-c",
                                         "import sys\nfrom kazoo.client import "
                                         "KazooClient\nk=KazooClient(hosts=sys.argv[1])\n"
                                         "k.start()\nk.delete(sys.argv[2])\nk.stop()",
                                         shared_zk().connect_string(), node},
                                        20s);
        BOOST_TEST(r.exit_code == 0, r.output);
    });
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_mutex_suite)

BOOST_FIXTURE_TEST_CASE(acquire_release_token_and_node, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        zk_mutex m(*c, "/corolock/test/basic");
        auto l = co_await m.async_acquire(asio::use_awaitable);
        BOOST_TEST(l.owns());
        BOOST_TEST(l.valid());
        BOOST_TEST(!l.lost());
        BOOST_TEST((l.token().backend() == corolock::lock_backend::zookeeper));
        BOOST_TEST(l.token().value() > 0u);
        BOOST_TEST(l.name().rfind("/corolock/test/basic/", 0) == 0u);
        BOOST_TEST(l.name().find("-lock-") != std::string::npos);
        BOOST_TEST(c->state() == corolock::zk_session_state::connected);
        BOOST_TEST(c->session_timeout().count() == 2000);
        BOOST_TEST((l.valid_until() > std::chrono::steady_clock::now() + 1s));
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1);
        const auto first = l.token();
        co_await l.async_release(asio::use_awaitable);
        BOOST_TEST(!l.owns());
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
        auto l2 = co_await m.async_acquire(asio::use_awaitable);
        BOOST_TEST((l2.token() > first));
        co_await l2.async_release(asio::use_awaitable);
    });
}

BOOST_FIXTURE_TEST_CASE(try_and_deadline_leave_no_node, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        running_zk d(ex, zk_test_config());
        zk_mutex a(*c, "/corolock/test/try");
        zk_mutex b(*d, "/corolock/test/try");
        auto held = co_await a.async_acquire(asio::use_awaitable);
        auto [ec, none] = co_await b.async_try_acquire(tuple);
        BOOST_TEST(!ec);
        BOOST_TEST(!none.owns());
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec2, none2] = co_await b.async_acquire_for(200ms, tuple);
        BOOST_TEST(ec2 == corolock::error::acquire_timeout);
        BOOST_TEST(!none2.owns());
        BOOST_TEST((std::chrono::steady_clock::now() - t0 >= 200ms));
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1);
        co_await held.async_release(asio::use_awaitable);
        auto got = co_await b.async_try_acquire(asio::use_awaitable);
        BOOST_TEST(got.owns());
        co_await got.async_release(asio::use_awaitable);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_fail_before_anything_is_sent, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        // Not even running: nothing can be sent.
        corolock::zk_connection c(ex, zk_test_config());
        for (const char* bad : {"", "relative", "/trailing/", "/a//b", "/zookeeper/x", "/a/../b"}) {
            zk_mutex m(c, bad);
            auto [ec, l] = co_await m.async_acquire(tuple);
            BOOST_TEST(ec == corolock::error::invalid_name, bad);
            BOOST_TEST(!l.owns());
        }
        zk_mutex m(c, "/corolock/test/args");
        auto [ec, l] = co_await m.async_acquire_for(-1s, tuple);
        BOOST_TEST(ec == corolock::error::invalid_wait);
        zk_lease empty;
        auto [rec] = co_await empty.async_release(tuple);
        BOOST_TEST(rec == corolock::error::not_owner);
        auto [gec, data] = co_await c.async_get("bad path", tuple);
        BOOST_TEST(gec == corolock::error::invalid_name);
        BOOST_TEST(corolock::test::ephemerals(shared_zk()) == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(cancellation_in_every_state_leaves_no_node, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        running_zk d(ex, zk_test_config());
        zk_mutex a(*c, "/corolock/test/cancel");
        zk_mutex b(*d, "/corolock/test/cancel");
        auto held = co_await a.async_acquire(asio::use_awaitable);
        // At once (the create still in flight), after 1 ms (listing or watching), after 50 ms
        // (waiting on the watch), and through the mutex's cancel().
        for (auto after : {0ms, 1ms, 5ms, 50ms}) {
            asio::cancellation_signal sig;
            auto [ec, l] = co_await [&]() -> awaitable<std::tuple<corolock::error_code, zk_lease>> {
                asio::steady_timer t(ex, after);
                t.async_wait(
                    [&](corolock::error_code) { sig.emit(asio::cancellation_type::terminal); });
                co_return co_await b.async_acquire(asio::bind_cancellation_slot(sig.slot(), tuple));
            }();
            BOOST_TEST(ec == asio::error::operation_aborted, "after " << after.count() << " ms");
            BOOST_TEST(!l.owns());
            BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1);
        }
        {
            asio::steady_timer t(ex, 30ms);
            t.async_wait([&](corolock::error_code) { b.cancel(); });
            auto [ec, l] = co_await b.async_acquire(tuple);
            BOOST_TEST(ec == asio::error::operation_aborted);
            BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1);
        }
        co_await held.async_release(asio::use_awaitable);
        // A grant that arrives with the cancel: held or not, nothing is left after release.
        asio::cancellation_signal sig;
        sig.emit(asio::cancellation_type::terminal);
        auto [ec, l] = co_await b.async_acquire(asio::bind_cancellation_slot(sig.slot(), tuple));
        if (l)
            co_await l.async_release(asio::use_awaitable);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(holds_share_one_node, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        zk_mutex m(*c, "/corolock/test/hold");
        auto l = co_await m.async_acquire(asio::use_awaitable);
        auto h1 = l.hold();
        auto h2 = l.hold();
        BOOST_TEST((h1.token() == l.token()));
        BOOST_TEST(h2.valid());
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1);
        co_await l.async_release(asio::use_awaitable);
        h1.reset();
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1); // h2 still holds
        co_await h2.async_release(asio::use_awaitable);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(fenced_write_and_deletion_by_anyone, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        zk_mutex m(*c, "/corolock/test/fenced");
        auto l = co_await m.async_acquire(asio::use_awaitable);
        co_await l.async_fenced_write("/corolock/test/fenced-data", "one", asio::use_awaitable);
        co_await l.async_fenced_write("/corolock/test/fenced-data", "two", asio::use_awaitable);
        BOOST_TEST(co_await c->async_get("/corolock/test/fenced-data", asio::use_awaitable) ==
                   "two");
        // Someone else (kazoo, another client) deletes the lock node.
        co_await delete_node(l.name());
        auto [lost] = co_await l.async_wait_lost(tuple);
        BOOST_TEST(lost == corolock::error::lease_lost);
        BOOST_TEST(l.lost());
        BOOST_TEST(!l.valid());
        auto [wec] = co_await l.async_fenced_write("/corolock/test/fenced-data", "three", tuple);
        BOOST_TEST(wec == corolock::error::stale_token);
        BOOST_TEST(co_await c->async_get("/corolock/test/fenced-data", asio::use_awaitable) ==
                   "two");
        auto [rec] = co_await l.async_release(tuple);
        BOOST_TEST(rec == corolock::error::lease_lost);
    });
}

BOOST_FIXTURE_TEST_CASE(acquire_family_rules_over_zookeeper, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        running_zk d(ex, zk_test_config());
        zk_mutex a(*c, "/corolock/test/family"), b(*d, "/corolock/test/family");
        for (const auto& bad : co_await corolock::test::check_acquire_family(a, b))
            BOOST_ERROR(bad);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(generic_exclusion_checker_over_zookeeper, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        running_zk d(ex, zk_test_config());
        zk_mutex a(*c, "/corolock/test/concept");
        zk_mutex b(*d, "/corolock/test/concept");
        zk_mutex* const handles[] = {&a, &b};
        const auto r = co_await corolock::test::check_exclusion<zk_mutex>(
            handles, 3, 10, []() -> awaitable<void> { co_await corolock::test::sleep_for(1ms); });
        BOOST_TEST(r.exclusive(2 * 3 * 10), "zookeeper: " << r);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
        // with_lock, generic, hands the body a zk_lease.
        co_await corolock::with_lock(a, [&](zk_lease& l) -> awaitable<void> {
            BOOST_TEST(l.valid());
            co_return;
        });
    });
}

// A create whose reply is lost (the connection reset after the server created the node): after
// the reconnect the acquisition finds its node by its owner id and keeps it, or, cancelled
// meanwhile, deletes it. Never an orphan.
BOOST_FIXTURE_TEST_CASE(lost_create_reply_leaves_no_orphan, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        corolock::test::fault_proxy proxy(shared_zk().client_port(0));
        running_zk c(ex, zk_test_config("127.0.0.1:" + std::to_string(proxy.port()), 4s));
        zk_mutex m(*c, "/corolock/test/lost-reply");
        co_await (co_await m.async_acquire(asio::use_awaitable)).async_release(asio::use_awaitable);
        for (const bool cancel : {false, true}) {
            proxy.half_open();
            asio::cancellation_signal sig;
            bool done = false;
            corolock::error_code got;
            zk_lease l;
            asio::co_spawn(
                ex,
                [&]() -> awaitable<void> {
                    std::tie(got, l) =
                        co_await m.async_acquire(asio::bind_cancellation_slot(sig.slot(), tuple));
                    done = true;
                },
                asio::detached);
            BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1); // created, reply held
            proxy.reset_all();
            if (cancel)
                sig.emit(asio::cancellation_type::terminal);
            proxy.heal();
            for (int i = 0; i < 500 && !done; ++i)
                co_await corolock::test::sleep_for(10ms);
            BOOST_REQUIRE(done);
            if (cancel) {
                BOOST_TEST(got == asio::error::operation_aborted);
                BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
            } else {
                BOOST_TEST(!got);
                BOOST_TEST(l.valid());
                BOOST_TEST(corolock::test::ephemerals(shared_zk()) == 1); // its own, no second
                co_await l.async_release(asio::use_awaitable);
                BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
            }
        }
    });
}

// The session expires while its server is cut off (a partition longer than the timeout): the
// lease is lost at its valid_until, the server deletes the node, and after the partition heals
// the connection opens a new session by itself; an acquire queued meanwhile is granted in it.
BOOST_FIXTURE_TEST_CASE(session_expiry_and_a_new_session, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        corolock::test::fault_proxy proxy(shared_zk().client_port(0));
        running_zk c(ex, zk_test_config("127.0.0.1:" + std::to_string(proxy.port()), 1s));
        zk_mutex m(*c, "/corolock/test/expiry");
        auto l = co_await m.async_acquire(asio::use_awaitable);
        BOOST_TEST(c->sessions() == 1u);
        proxy.blackhole();
        auto [lost] = co_await l.async_wait_lost(tuple);
        BOOST_TEST(lost == corolock::error::lease_lost);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0); // expired by the server
        bool done = false;
        corolock::error_code got;
        zk_lease l2;
        asio::co_spawn(
            ex,
            [&]() -> awaitable<void> {
                std::tie(got, l2) = co_await m.async_acquire(tuple);
                done = true;
            },
            asio::detached);
        co_await corolock::test::sleep_for(200ms);
        BOOST_TEST(!done);
        proxy.heal();
        for (int i = 0; i < 500 && !done; ++i)
            co_await corolock::test::sleep_for(10ms);
        BOOST_REQUIRE(done);
        BOOST_TEST(!got);
        BOOST_TEST(l2.valid());
        BOOST_TEST(c->sessions() == 2u);
        BOOST_TEST(c->state() == corolock::zk_session_state::connected);
        auto [rec] = co_await l.async_release(tuple);
        BOOST_TEST(rec == corolock::error::lease_lost);
        co_await l2.async_release(asio::use_awaitable);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

// No herd: five waiters in line, and each release makes exactly one of them list the children
// again (the lock's debug log has a line per decision).
BOOST_FIXTURE_TEST_CASE(one_waiter_woken_per_release, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto cfg = zk_test_config();
        int decisions = 0;
        cfg.log.lvl = corolock::logger::level::debug;
        cfg.log.fn = [&](corolock::logger::level, std::string_view line) {
            decisions += line.find(" children: ") != std::string_view::npos ? 1 : 0;
        };
        running_zk c(ex, cfg);
        zk_mutex m(*c, "/corolock/test/herd");
        auto holder = co_await m.async_acquire(asio::use_awaitable);
        std::vector<zk_lease> got(5);
        int granted = 0;
        for (auto& l : got)
            asio::co_spawn(
                ex,
                [&]() -> awaitable<void> {
                    l = co_await m.async_acquire(asio::use_awaitable);
                    ++granted;
                },
                asio::detached);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 6) == 6);
        co_await corolock::test::sleep_for(100ms);
        BOOST_TEST(decisions == 1 + 5); // each listed once, then watched its predecessor
        decisions = 0;
        co_await holder.async_release(asio::use_awaitable);
        for (int round = 1; round <= 5; ++round) {
            for (int i = 0; i < 300 && granted < round; ++i)
                co_await corolock::test::sleep_for(5ms);
            co_await corolock::test::sleep_for(50ms); // room for a herd, if there were one
            BOOST_TEST(granted == round);
            BOOST_TEST(decisions == round,
                       "release " << round << ": " << decisions << " waiters listed again");
            for (auto& l : got)
                if (l && l.valid()) {
                    co_await l.async_release(asio::use_awaitable);
                    break;
                }
        }
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

// Chroot and digest authentication: the same lock seen through a chroot and without one.
BOOST_FIXTURE_TEST_CASE(chroot_and_digest_auth, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk plain(ex, zk_test_config());
        zk_mutex outer(*plain, "/corolock-chroot/app/lock");
        auto l = co_await outer.async_acquire(asio::use_awaitable); // creates the chroot's node
        auto cfg = zk_test_config();
        cfg.chroot = "/corolock-chroot/app";
        cfg.digest_user = "app";
        cfg.digest_password = "secret";
        running_zk rooted(ex, cfg);
        zk_mutex inner(*rooted, "/lock");
        auto [ec, none] = co_await inner.async_try_acquire(tuple);
        BOOST_TEST(!ec);
        BOOST_TEST(!none.owns()); // the same lock
        co_await l.async_release(asio::use_awaitable);
        auto mine = co_await inner.async_acquire(asio::use_awaitable);
        BOOST_TEST(mine.name().rfind("/lock/", 0) == 0u);
        co_await mine.async_release(asio::use_awaitable);
        // A chroot that is not a path fails the run before anything is sent.
        auto bad = zk_test_config();
        bad.chroot = "no-slash";
        corolock::zk_connection conn(ex, bad);
        auto [rec] = co_await conn.async_run(tuple);
        BOOST_TEST(rec == corolock::error::invalid_argument);
        // A chroot that does not exist: the first call's refusal names it (issue 28).
        auto missing = zk_test_config();
        missing.chroot = "/corolock-no-such-chroot";
        std::vector<std::string> errors;
        missing.log.lvl = corolock::logger::level::error;
        missing.log.fn = [&](corolock::logger::level, std::string_view line) {
            errors.emplace_back(line);
        };
        running_zk nowhere(ex, missing);
        zk_mutex lost(*nowhere, "/locks/a");
        auto [mec, ml] = co_await lost.async_acquire_for(5s, tuple);
        BOOST_TEST(mec == corolock::error::server_error, mec.message());
        BOOST_TEST(!ml.owns());
        bool named = false;
        for (const auto& e : errors)
            named = named || e.find("the chroot '/corolock-no-such-chroot' does not exist") !=
                                 std::string::npos;
        BOOST_TEST(named, errors.size() << " error lines, none names the chroot");
    });
}

// Digest ACLs: the nodes a client with credentials creates are its own (creator-only ACL), so a
// path made by `app:secret` refuses anyone else at once (auth_failed, and the reason in the log),
// never leaving a waiter behind; the same credentials on another session get in.
BOOST_FIXTURE_TEST_CASE(digest_acl_refuses_wrong_credentials, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string path = "/corolock-acl/app/lock";
        auto with_credentials = [](const std::string& password) {
            auto cfg = zk_test_config();
            cfg.digest_user = "app";
            cfg.digest_password = password;
            return cfg;
        };
        running_zk owner(ex, with_credentials("secret"));
        zk_mutex mine(*owner, path);
        auto held = co_await mine.async_acquire(asio::use_awaitable); // creates the parents
        BOOST_TEST(held.valid());

        auto refusals = std::make_shared<std::vector<std::string>>();
        auto collect = [refusals](corolock::zk_config cfg) {
            cfg.log.fn = [refusals](corolock::logger::level, std::string_view msg) {
                if (msg.find("refused") != std::string_view::npos)
                    refusals->emplace_back(msg);
            };
            return cfg;
        };
        running_zk wrong(ex, collect(with_credentials("wrong")));
        running_zk anonymous(ex, collect(zk_test_config()));
        running_zk* const others[] = {&wrong, &anonymous};
        for (auto* conn : others) {
            zk_mutex theirs(**conn, path);
            const auto start = std::chrono::steady_clock::now();
            auto [ec, none] = co_await theirs.async_acquire_for(5s, tuple);
            BOOST_TEST(ec == corolock::error::auth_failed, ec.message());
            BOOST_TEST(!none.owns());
            BOOST_TEST((std::chrono::steady_clock::now() - start < 3s)); // refused, not timed out
            auto [tec, tnone] = co_await theirs.async_try_acquire(tuple);
            BOOST_TEST(tec == corolock::error::auth_failed, tec.message());
            // The session is not at fault: it stays connected, and nothing of it was left.
            BOOST_TEST(((*conn)->state() == corolock::zk_session_state::connected));
        }
        BOOST_TEST(refusals->size() == 4u); // each refused acquire, once
        for (const auto& line : *refusals)
            BOOST_TEST(line.find(path) != std::string::npos, line);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 1) == 1); // only the holder's node

        // The right credentials on another session wait their turn and get the lock.
        running_zk same(ex, with_credentials("secret"));
        zk_mutex again(*same, path);
        auto [busy_ec, busy] = co_await again.async_try_acquire(tuple);
        BOOST_TEST(!busy_ec, busy_ec.message());
        BOOST_TEST(!busy.owns());
        co_await held.async_release(asio::use_awaitable);
        auto next = co_await again.async_acquire(asio::use_awaitable);
        BOOST_TEST(next.valid());
        co_await next.async_release(asio::use_awaitable);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

// Readers share; a writer waits for the readers before it and excludes everyone; a reader that
// comes after a waiting writer waits for it.
BOOST_FIXTURE_TEST_CASE(read_write_lock_on_the_same_recipe, zk_fixture) {
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk c(ex, zk_test_config());
        running_zk d(ex, zk_test_config());
        corolock::zk_shared_mutex a(*c, "/corolock/test/rw");
        corolock::zk_shared_mutex b(*d, "/corolock/test/rw");
        auto r1 = co_await a.async_acquire_shared(asio::use_awaitable);
        auto r2 = co_await b.async_acquire_shared(asio::use_awaitable);
        BOOST_TEST((r1.valid() && r2.valid()));
        auto [ec, none] = co_await b.async_try_acquire(tuple);
        BOOST_TEST(!none.owns());
        bool writer_in = false, late_reader_in = false;
        zk_lease w, r3;
        asio::co_spawn(
            ex,
            [&]() -> awaitable<void> {
                w = co_await b.async_acquire(asio::use_awaitable);
                writer_in = true;
            },
            asio::detached);
        co_await corolock::test::sleep_for(100ms);
        asio::co_spawn(
            ex,
            [&]() -> awaitable<void> {
                r3 = co_await a.async_acquire_shared(asio::use_awaitable);
                late_reader_in = true;
            },
            asio::detached);
        co_await corolock::test::sleep_for(100ms);
        BOOST_TEST(!writer_in);
        BOOST_TEST(!late_reader_in); // behind the waiting writer
        co_await r1.async_release(asio::use_awaitable);
        co_await corolock::test::sleep_for(50ms);
        BOOST_TEST(!writer_in);
        co_await r2.async_release(asio::use_awaitable);
        for (int i = 0; i < 100 && !writer_in; ++i)
            co_await corolock::test::sleep_for(10ms);
        BOOST_TEST(writer_in);
        BOOST_TEST(!late_reader_in);
        const auto writer_token = w.token();
        co_await w.async_release(asio::use_awaitable);
        for (int i = 0; i < 100 && !late_reader_in; ++i)
            co_await corolock::test::sleep_for(10ms);
        BOOST_TEST(late_reader_in);
        BOOST_TEST((r3.token() > writer_token));
        co_await r3.async_release(asio::use_awaitable);
        BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
    });
}

// The lock_meter check (test/common/meter_check.hpp) over two sessions: the holder's lease is
// lost when another client deletes its node.
BOOST_FIXTURE_TEST_CASE(generic_lock_meter_check_over_zookeeper, zk_fixture) {
    run(
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            running_zk c(ex, zk_test_config());
            running_zk d(ex, zk_test_config());
            zk_mutex a(*c, "/corolock/test/metered");
            zk_mutex b(*d, "/corolock/test/metered");
            zk_mutex bad(*c, "relative");
            auto lose = [](zk_lease& l) -> awaitable<void> { co_await delete_node(l.name()); };
            co_await corolock::test::check_lock_meter(
                corolock::test::server_meter_kit<zk_mutex>(a, b, bad, lose));
            BOOST_TEST(co_await wait_ephemerals(shared_zk(), 0) == 0);
        },
        60s);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace zookeeper_zk_mutex
