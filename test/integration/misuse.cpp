// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Natural misuses of the lock API, each committed on purpose against a real redis-server: the
// guard the library puts in their way must hold (issue 17 section 4: a timed-out claim retried,
// a blocking command beside leases, a try against a stalled server, a key deleted behind its
// holder, a loss after the last nested hold).
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include <corolock/claim.hpp>
#include <corolock/mutex.hpp>
#include <corolock/redlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_misuse {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::lease;
using corolock::test::eventually;
using corolock::test::lease_of;
using corolock::test::tuple_deferred;

namespace {

// The shared fixture with no health check on `conn`: these tests pause the server on purpose,
// and decide themselves when the connection may drop.
struct fixture : corolock::test::server_fixture {
    fixture()
        : server_fixture([](corolock::connection_config& c) {
              c.health_check_interval = std::chrono::steady_clock::duration::zero();
          }) {}
    corolock::lock_stats stats() { return corolock::get_lock_stats(conn); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(misuse)

// A try ("one attempt, no waiting") waited 3.8-5 s against a stalled server, until the health
// check dropped the connection: it is bounded by try_timeout. A bounded acquire that ran out
// said acquire_timeout whether the lock was busy or the server stalled: a stalled server now
// says server_timeout (a connection failure), and the metrics count it apart.
BOOST_FIXTURE_TEST_CASE(a_stalled_server_bounds_a_try_and_is_told_from_a_busy_lock, fixture) {
    run([&]() -> awaitable<void> {
        auto opts = lease_of(3s);
        opts.try_timeout = 150ms;
        corolock::mutex m(conn, "lock:stalled", opts);
        const auto before = stats();
        srv.pause();
        auto [try_ec, l1] = co_await m.async_try_acquire(tuple_deferred);
        auto [for_ec, l2] = co_await m.async_acquire_for(150ms, tuple_deferred);
        srv.resume();
        BOOST_TEST(try_ec == error::server_timeout);
        BOOST_TEST(try_ec == corolock::condition::connection_failure);
        BOOST_TEST(!l1.owns());
        BOOST_TEST(for_ec == error::server_timeout);
        BOOST_TEST(!l2.owns());
        const auto after = stats();
        BOOST_TEST(after.acquired(corolock::acquire_outcome::server_timeout) -
                       before.acquired(corolock::acquire_outcome::server_timeout) ==
                   2u);
        BOOST_TEST(after.acquired(corolock::acquire_outcome::timeout) ==
                   before.acquired(corolock::acquire_outcome::timeout));
        // Both attempts ran at the resume; whatever they took is undone.
        BOOST_TEST(co_await eventually([&] { return !exists("lock:stalled"); }, 2s));
        // The same acquire against a busy lock is contention.
        corolock::mutex other(peer, "lock:stalled", opts);
        lease held = co_await other.async_acquire();
        auto [busy_ec, l3] = co_await m.async_acquire_for(150ms, tuple_deferred);
        BOOST_TEST(busy_ec == error::acquire_timeout);
        co_await held.async_release();
    });
}

// A BLPOP on the connection that carries leases held every renewal behind it: a 3 s lease was
// lost to `BLPOP jobs 5`. While a lease is held the connection refuses blocking commands before
// sending them; without leases, or with allow_blocking_commands, they run.
BOOST_FIXTURE_TEST_CASE(a_blocking_command_beside_a_lease_is_refused, fixture) {
    run([&]() -> awaitable<void> {
        corolock::request blpop;
        blpop.push("BLPOP", "jobs", "0.05");
        corolock::generic_response resp;
        // No lease: it runs (and times out at the server).
        auto [free_ec, n0] = co_await conn.async_exec(blpop, resp, tuple_deferred);
        BOOST_TEST(!free_ec);
        corolock::mutex m(conn, "lock:blpop", lease_of(3s));
        lease l = co_await m.async_acquire();
        srv.command({"RPUSH", "jobs", "job-1"});

        auto [ec, n] = co_await conn.async_exec(blpop, resp, tuple_deferred);
        BOOST_TEST(ec == error::blocking_command);
        BOOST_TEST(ec == corolock::condition::invalid_argument);
        BOOST_TEST(srv.command({"LLEN", "jobs"}) == ":1\r\n"); // nothing was sent
        corolock::request xread;
        xread.push("XREAD", "BLOCK", 50, "STREAMS", "s", "$");
        auto [xec, xn] = co_await conn.async_exec(xread, corolock::ignore, tuple_deferred);
        BOOST_TEST(xec == error::blocking_command);
        // Another connection is the answer: the lease is untouched.
        auto [peer_ec, pn] = co_await peer.async_exec(blpop, resp, tuple_deferred);
        BOOST_TEST(!peer_ec);
        BOOST_TEST(srv.command({"LLEN", "jobs"}) == ":0\r\n");
        // Inside MULTI ... EXEC the server never blocks: the same BLPOP runs beside the lease.
        srv.command({"RPUSH", "jobs", "job-2"});
        corolock::request tx;
        tx.push("MULTI");
        tx.push("BLPOP", "jobs", 5);
        tx.push("EXEC");
        auto [tx_ec, tn] = co_await conn.async_exec(tx, corolock::ignore, tuple_deferred);
        BOOST_TEST(!tx_ec);
        BOOST_TEST(srv.command({"LLEN", "jobs"}) == ":0\r\n"); // it ran
        BOOST_TEST(l.valid());
        co_await l.async_release();
        auto [after_ec, n2] = co_await conn.async_exec(blpop, resp, tuple_deferred);
        BOOST_TEST(!after_ec);
    });
}

// Also while an acquisition is in progress: its attempts (and the renewals of the lease it gets)
// would wait behind the block.
BOOST_FIXTURE_TEST_CASE(a_blocking_command_beside_a_waiting_acquire_is_refused, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex theirs(peer, "lock:blpop-wait", lease_of(3s));
        corolock::mutex mine(conn, "lock:blpop-wait", lease_of(3s));
        lease held = co_await theirs.async_acquire();
        bool done = false;
        lease got;
        mine.async_acquire_for(5s, [&](error_code, lease l) {
            got = std::move(l);
            done = true;
        });
        co_await corolock::test::sleep_for(20ms); // waiting, no lease on conn
        BOOST_TEST(corolock::get_lock_stats(conn).leases_held == 0u);
        corolock::request blpop;
        blpop.push("BLPOP", "jobs", "0.05");
        auto [ec, n] = co_await conn.async_exec(blpop, corolock::ignore, tuple_deferred);
        BOOST_TEST(ec == error::blocking_command);
        co_await held.async_release();
        BOOST_TEST(co_await eventually([&] { return done; }, 2s));
        BOOST_TEST(got.valid());
        co_await got.async_release();
    });
}

// A RedLock lease is carried by every node's connection: a blocking command there would hold
// back its extensions just the same.
BOOST_FIXTURE_TEST_CASE(a_blocking_command_beside_a_redlock_lease_is_refused, fixture) {
    run([&]() -> awaitable<void> {
        // Three connections to one server: enough nodes for RedLock, one key for all of them.
        auto& third = add_connection(corolock::test::config_for(srv), corolock::test::quiet());
        corolock::connection* nodes[] = {&conn, &peer, &third};
        corolock::request blpop;
        blpop.push("BLPOP", "jobs", "0.05");
        {
            corolock::redlock_options o;
            o.lease = 3s;
            corolock::redlock rl(nodes, "lock:blpop-redlock", o);
            corolock::redlock_lease l = co_await rl.async_acquire();
            BOOST_TEST_REQUIRE(l.owns());
            auto [ec, n] = co_await conn.async_exec(blpop, corolock::ignore, tuple_deferred);
            BOOST_TEST(ec == error::blocking_command);
            // Three nodes, one key: the first release deletes it and the others find nothing,
            // so the release reports lease_lost here. Only what comes after matters.
            co_await l.async_release(tuple_deferred);
        }
        // The lease object gone (its state is freed on the redlock's strand): allowed again.
        error_code after = error::blocking_command;
        for (int i = 0; i < 50 && after == error::blocking_command; ++i) {
            co_await corolock::test::sleep_for(10ms);
            auto [ec, n] = co_await conn.async_exec(blpop, corolock::ignore, tuple_deferred);
            after = ec;
        }
        BOOST_TEST(!after);
    });
}

BOOST_AUTO_TEST_CASE(allow_blocking_commands_lets_them_through) {
    corolock::test::server_fixture f(
        [](corolock::connection_config& c) { c.allow_blocking_commands = true; });
    f.run([&]() -> awaitable<void> {
        corolock::mutex m(f.conn, "lock:blpop-allowed", lease_of(3s));
        lease l = co_await m.async_acquire();
        corolock::request blpop;
        blpop.push("BLPOP", "jobs", "0.05");
        auto [ec, n] = co_await f.conn.async_exec(blpop, corolock::ignore, tuple_deferred);
        BOOST_TEST(!ec);
        co_await l.async_release();
    });
}

// A lock key deleted behind its holder left two holders that both saw valid() for up to lease/3.
// A force-unlock publishes the deleted owner, and the holder's connection reports the lease lost
// at once: with a 30 s lease (renewal due in 10 s) the loss comes within a second.
BOOST_FIXTURE_TEST_CASE(a_force_unlock_tells_the_holder_at_once, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:forced", lease_of(30s));
        corolock::mutex other(conn, "lock:forced-other", lease_of(30s));
        corolock::mutex admin(peer, "lock:forced");
        lease l = co_await m.async_acquire();
        lease bystander = co_await other.async_acquire();
        // The holder's connection listens for force-unlocks from its first lease on.
        BOOST_REQUIRE(co_await eventually(
            [&] {
                return srv.command({"PUBSUB", "NUMSUB", "corolock:forced"}).find(":1\r\n") !=
                       std::string::npos;
            },
            2s));
        BOOST_TEST(co_await admin.async_force_unlock());
        BOOST_TEST(co_await eventually([&] { return l.lost(); }, 1s));
        BOOST_TEST(!l.valid());
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST(bystander.valid()); // another lock of the same connection is untouched
        BOOST_TEST(stats().lost_by(corolock::lease_loss::renewal_refused) == 1u);
        co_await bystander.async_release();
    });
}

// Anyone may PUBLISH on corolock:forced: a message naming a live lease (its owner id can be read
// with HGET) must not make its holder drop it; the holder verifies with a renewal.
BOOST_FIXTURE_TEST_CASE(a_forged_force_unlock_message_is_verified_not_trusted, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:forged", lease_of(30s));
        lease l = co_await m.async_acquire();
        BOOST_REQUIRE(co_await eventually(
            [&] {
                return srv.command({"PUBSUB", "NUMSUB", "corolock:forced"}).find(":1\r\n") !=
                       std::string::npos;
            },
            2s));
        const auto renewals = stats().renewals;
        srv.command({"PUBLISH", "corolock:forced", std::string(l.owner_id())});
        BOOST_TEST(co_await eventually([&] { return stats().renewals > renewals; }, 2s));
        BOOST_TEST(l.valid());
        BOOST_TEST(!l.lost());
        BOOST_TEST(exists("lock:forged"));
        co_await l.async_release();
    });
}

// A lock server must not evict (a key evicted behind its holder is noticed only at the next
// renewal): the lock layer looks at the policy once, at its first lease, and warns.
BOOST_FIXTURE_TEST_CASE(an_evicting_server_is_named_in_the_log, fixture) {
    run([&]() -> awaitable<void> {
        corolock::test::log_capture quiet_log, evict_log;
        auto cfg = corolock::test::config_for(srv);
        auto& calm = add_connection(cfg, quiet_log.make(corolock::logger::level::warning));
        corolock::mutex a(calm, "lock:evict-a", lease_of(3s));
        lease la = co_await a.async_acquire();
        co_await la.async_release();
        srv.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
        auto& evicting = add_connection(cfg, evict_log.make(corolock::logger::level::warning));
        corolock::mutex b(evicting, "lock:evict-b", lease_of(3s));
        lease lb = co_await b.async_acquire();
        BOOST_TEST(co_await eventually(
            [&] { return evict_log.contains("maxmemory-policy is 'allkeys-lru'"); }, 2s));
        co_await lb.async_release();
        lease lb2 = co_await b.async_acquire(); // once per connection
        co_await lb2.async_release();
        srv.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
        BOOST_TEST(evict_log.count("maxmemory-policy") == 1u);
        BOOST_TEST(quiet_log.count("maxmemory-policy") == 0u);
    });
}

// A claim timed out by its caller (its SET written, no reply yet) and retried at once: the retry
// was refused as taken, and then the first attempt's claim was given back, so nobody processed
// the order. The retry now takes over the first attempt's outcome: exactly one owner.
BOOST_FIXTURE_TEST_CASE(a_timed_out_claim_retried_at_once_is_owned_by_the_retry, fixture) {
    run([&]() -> awaitable<void> {
        co_await corolock::async_claim(conn, "claim:warm", 1s); // connected
        for (int i = 0; i < 5; ++i) {
            const std::string key = "order:" + std::to_string(i);
            srv.pause(); // a slow reply
            const auto written = conn.stats().commands;
            asio::cancellation_signal sig;
            bool first_done = false;
            error_code first_ec;
            corolock::async_claim(
                conn, key, 60s,
                asio::bind_cancellation_slot(sig.slot(), [&](error_code e, corolock::claim) {
                    first_ec = e;
                    first_done = true;
                }));
            BOOST_REQUIRE(co_await eventually([&] { return conn.stats().commands > written; },
                                              5s));      // the SET is written
            sig.emit(asio::cancellation_type::terminal); // the caller's timeout
            BOOST_REQUIRE(co_await eventually([&] { return first_done; }, 2s));
            BOOST_TEST(first_ec == asio::error::operation_aborted);
            bool retry_done = false;
            error_code retry_ec;
            corolock::claim retry;
            corolock::async_claim(conn, key, 60s, [&](error_code e, corolock::claim c) {
                retry_ec = e;
                retry = std::move(c);
                retry_done = true;
            });
            co_await corolock::test::sleep_for(20ms);
            srv.resume();
            BOOST_REQUIRE(co_await eventually([&] { return retry_done; }, 2s));
            BOOST_TEST(!retry_ec);
            BOOST_TEST(static_cast<bool>(retry), "the retry of " << key << " owns no claim");
            co_await corolock::test::sleep_for(50ms); // a give-back would have run by now
            BOOST_TEST(srv.command({"EXISTS", key}) == ":1\r\n");
            if (retry) {
                auto [gec] = co_await retry.async_give_back(tuple_deferred);
                BOOST_TEST(!gec); // it is the retry's claim
            }
            BOOST_TEST(srv.command({"EXISTS", key}) == ":0\r\n");
        }
    });
}

// Adopters chained and cancelled (found by review): A's SET written and A cancelled; B adopts A;
// C sends its own SET (A has a live adopter) and is cancelled; B is cancelled. B sent nothing, so
// it must never stand as an orphan: a later claim D completed only when cancelled, or had its
// handler dropped uncalled.
BOOST_FIXTURE_TEST_CASE(cancelled_adopters_never_stand_as_orphans, fixture) {
    run([&]() -> awaitable<void> {
        co_await corolock::async_claim(conn, "claim:warm3", 1s);
        const std::string key = "claim:chain";
        struct call {
            asio::cancellation_signal sig;
            bool done = false;
            error_code ec;
            corolock::claim c;
        };
        auto start = [&](call& x) {
            corolock::async_claim(
                conn, key, 60s,
                asio::bind_cancellation_slot(x.sig.slot(), [&x](error_code e, corolock::claim c) {
                    x.ec = e;
                    x.c = std::move(c);
                    x.done = true;
                }));
        };
        srv.pause();
        call a, b, c, d;
        auto written = conn.stats().commands;
        start(a);
        BOOST_REQUIRE(co_await eventually([&] { return conn.stats().commands > written; }, 5s));
        a.sig.emit(asio::cancellation_type::terminal);
        start(b); // adopts A
        co_await corolock::test::sleep_for(10ms);
        written = conn.stats().commands;
        start(c); // A has a live adopter: its own SET
        BOOST_REQUIRE(co_await eventually([&] { return conn.stats().commands > written; }, 5s));
        c.sig.emit(asio::cancellation_type::terminal);
        co_await corolock::test::sleep_for(10ms);
        b.sig.emit(asio::cancellation_type::terminal);
        BOOST_REQUIRE(co_await eventually([&] { return a.done && b.done && c.done; }, 2s));
        srv.resume();
        co_await corolock::test::sleep_for(100ms); // A's and C's replies, their give-backs
        start(d);
        BOOST_TEST(co_await eventually([&] { return d.done; }, 3s), "D never completed");
        BOOST_TEST(!d.ec);
        BOOST_TEST(static_cast<bool>(d.c)); // the key was given back: D owns it
        if (!d.done)
            d.sig.emit(asio::cancellation_type::terminal);
        co_await corolock::test::sleep_for(10ms);
        if (d.c)
            co_await d.c.async_give_back(tuple_deferred);
    });
}

// An adopted attempt that another client's claim beat: the retry hears "taken", as it should.
BOOST_FIXTURE_TEST_CASE(a_retry_adopting_a_refused_claim_hears_taken, fixture) {
    run([&]() -> awaitable<void> {
        co_await corolock::async_claim(conn, "claim:warm2", 1s);
        auto theirs = co_await corolock::async_claim(peer, "order:theirs", 60s);
        BOOST_REQUIRE(static_cast<bool>(theirs));
        srv.pause();
        const auto written = conn.stats().commands;
        asio::cancellation_signal sig;
        corolock::async_claim(
            conn, "order:theirs", 60s,
            asio::bind_cancellation_slot(sig.slot(), [](error_code, corolock::claim) {}));
        BOOST_REQUIRE(co_await eventually([&] { return conn.stats().commands > written; }, 5s));
        sig.emit(asio::cancellation_type::terminal);
        bool done = false;
        error_code ec;
        corolock::claim mine;
        corolock::async_claim(conn, "order:theirs", 60s, [&](error_code e, corolock::claim c) {
            ec = e;
            mine = std::move(c);
            done = true;
        });
        co_await corolock::test::sleep_for(20ms);
        srv.resume();
        BOOST_REQUIRE(co_await eventually([&] { return done; }, 2s));
        BOOST_TEST(!ec);
        BOOST_TEST(!mine);
        auto [gec] = co_await theirs.async_give_back(tuple_deferred);
        BOOST_TEST(!gec); // theirs was never touched
    });
}

// The release made when the last nested hold ends reported a loss only in the log: the code that
// held it could not learn that its section may have overlapped. nested_hold::async_release
// sends that release and completes with its outcome.
BOOST_FIXTURE_TEST_CASE(the_last_nested_hold_hears_the_release_outcome, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:lasthold", lease_of(3s));
        // The key deleted behind the holder while the hold outlives the lease's release.
        {
            lease l = co_await m.async_acquire();
            auto h = l.hold();
            auto [rec] = co_await l.async_release(tuple_deferred);
            BOOST_TEST(!rec); // completes at once: the hold still holds the lock
            BOOST_TEST(exists("lock:lasthold"));
            srv.command({"DEL", "lock:lasthold"});
            auto [hec] = co_await h.async_release(tuple_deferred);
            BOOST_TEST(hec == error::lease_lost);
            BOOST_TEST(!h.owns());
        }
        // The usual case: the last hold's release succeeds and frees the lock.
        {
            lease l = co_await m.async_acquire();
            auto h1 = l.hold(), h2 = l.hold();
            co_await l.async_release();
            auto [e1] = co_await h1.async_release(tuple_deferred); // not the last: at once
            BOOST_TEST(!e1);
            BOOST_TEST(exists("lock:lasthold"));
            auto [e2] = co_await h2.async_release(tuple_deferred);
            BOOST_TEST(!e2);
            BOOST_TEST(!exists("lock:lasthold"));
            auto [e3] = co_await h2.async_release(tuple_deferred);
            BOOST_TEST(e3 == error::not_owner);
        }
    });
}

// An invalid argument fails before anything is sent and says which field or rule (issue 28:
// `retry_base = 0` and `fence_retention = 0` both said only "invalid argument"; a name `a}b`
// got 271 characters listing the rules of two backends). The error's text is short and names
// no backend; the warning names the field, its value and the range.
BOOST_FIXTURE_TEST_CASE(an_invalid_argument_names_its_field, fixture) {
    run([&]() -> awaitable<void> {
        corolock::test::log_capture log;
        auto& c = add_connection(corolock::test::config_for(srv),
                                 log.make(corolock::logger::level::warning));
        corolock::request ping;
        ping.push("PING");
        co_await c.async_exec(ping, corolock::ignore); // connected: the handshake is counted
        const auto commands = c.stats().commands;
        using opts = corolock::mutex_options;
        struct bad {
            const char* what;
            std::function<void(opts&)> set;
            error expect;
        };
        const bad cases[] = {
            {"mutex_options::retry_base is 0 ms, not 1 ms to 365 days",
             [](opts& o) { o.retry_base = 0ms; }, error::invalid_argument},
            {"mutex_options::fence_retention is 0 ms, not 1 ms to 365 days",
             [](opts& o) { o.fence_retention = 0ms; }, error::invalid_argument},
            {"mutex_options::retry_max is 10 ms, not retry_base to 365 days",
             [](opts& o) { o.retry_base = 50ms, o.retry_max = 10ms; }, error::invalid_argument},
            {"mutex_options::try_timeout is 0 ms, not 1 ms to 365 days",
             [](opts& o) { o.try_timeout = 0ms; }, error::invalid_argument},
            {"mutex_options::max_hold is -1 ms, not 0 (no limit) to 365 days",
             [](opts& o) { o.max_hold = -1ms; }, error::invalid_argument},
            {"the lease (mutex_options::lease, or acquire_options::lease for one call) is 1500 us, "
             "not 100 ms to 365 days",
             [](opts& o) { o.lease = 1500us; }, error::invalid_lease},
        };
        for (const auto& b : cases) {
            opts o;
            b.set(o);
            corolock::mutex m(c, "lock:bad-arg", o);
            auto [ec, l] = co_await m.async_acquire(tuple_deferred);
            BOOST_TEST(ec == b.expect, b.what << ": " << ec.message());
            BOOST_TEST(log.contains(b.what), b.what);
        }
        corolock::mutex odd(c, "a}b");
        auto [nec, n] = co_await odd.async_acquire(tuple_deferred);
        BOOST_TEST(nec == error::invalid_name);
        BOOST_TEST(nec.message().size() < 80u, nec.message());
        BOOST_TEST(nec.message().find("ZooKeeper") == std::string::npos);
        BOOST_TEST(log.contains("'a}b': invalid lock name"));
        BOOST_TEST(log.contains("the name is not hash-tagged but contains '}'"));
        BOOST_TEST(error_code(error::invalid_argument).message().find("field") !=
                   std::string::npos);
        BOOST_TEST(c.stats().commands == commands); // nothing was sent
    });
}

// An acquire on a connection that cannot connect ends with the connect's cause, not
// server_timeout ("slow, stalled or unreachable"): a wrong password says auth_failed, a port
// nobody listens on says connection_refused.
BOOST_AUTO_TEST_CASE(an_acquire_on_a_connection_that_cannot_connect_says_why) {
    corolock::test::redis_process locked({"--requirepass", "right"});
    asio::io_context ioc;
    auto wrong = corolock::test::config_for(locked);
    wrong.password = "wrong";
    auto refused = corolock::test::config_for(locked);
    {
        // A port that was free a moment ago, and nobody listens on it now.
        asio::ip::tcp::acceptor probe(ioc, {asio::ip::make_address("127.0.0.1"), 0});
        refused.port = std::to_string(probe.local_endpoint().port());
    }
    for (auto* cfg : {&wrong, &refused}) {
        cfg->reconnect_wait = 20ms;
        cfg->reconnect_wait_max = 50ms;
    }
    corolock::connection a(ioc, wrong, corolock::test::quiet());
    corolock::connection b(ioc, refused, corolock::test::quiet());
    a.async_run(asio::detached);
    b.async_run(asio::detached);
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex ma(a, "lock:cause"), mb(b, "lock:cause");
            auto [aec, al] = co_await ma.async_acquire_for(1s, tuple_deferred);
            BOOST_TEST(aec == error::auth_failed, aec.message());
            auto [bec, bl] = co_await mb.async_acquire_for(1s, tuple_deferred);
            BOOST_TEST(bec == asio::error::connection_refused, bec.message());
            a.cancel();
            b.cancel();
        }(),
        30s);
}

// A server's refusal keeps its text: an ACL user without EVALSHA gets server_error, and the
// NOPERM line is in the log (it was nowhere, even at debug level).
BOOST_FIXTURE_TEST_CASE(a_refused_script_keeps_the_servers_text, fixture) {
    run([&]() -> awaitable<void> {
        srv.command({"ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-evalsha"});
        corolock::test::log_capture log;
        auto cfg = corolock::test::config_for(srv);
        cfg.username = "noeval";
        cfg.password = "pw";
        auto& c = add_connection(cfg, log.make(corolock::logger::level::warning));
        corolock::mutex m(c, "lock:noperm");
        auto [ec, l] = co_await m.async_acquire_for(2s, tuple_deferred);
        BOOST_TEST(ec == error::server_error, ec.message());
        BOOST_TEST(log.contains("'lock:noperm': the server refused the acquire script: NOPERM"));
    });
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_misuse
