// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/child_process.hpp"
#include "common/coro_test.hpp"
#include "common/exclusion_check.hpp"
#include "common/family_check.hpp"
#include "common/meter_check.hpp"
#include "common/test_config.hpp"
#include "pg_test.hpp"
#include <corolock/postgres/mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace postgres_pg_mutex {

namespace asio = boost::asio;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::pg_lease;
using corolock::pg_mutex_options;
using corolock::pg_param;
using corolock::pg_result;
using corolock::test::eventually;
using corolock::test::off_loop;
using corolock::test::pg_config_for;
using corolock::test::pg_process;
using corolock::test::quiet;
using corolock::test::sleep_for;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

using mutex = corolock::pg_mutex;

// The generic code (with_lock, the exclusion checker) takes pg_mutex through the concept.
static_assert(corolock::lock_handle<mutex>);
static_assert(mutex::capabilities.backend == corolock::lock_backend::postgres);
static_assert(mutex::capabilities.fencing == corolock::fencing_kind::total_order);

pg_mutex_options lease_of(clock_type::duration d) {
    pg_mutex_options o;
    o.lease = d;
    return o;
}

// Installs the lock table (twice: it is idempotent) and a history table for fenced writes.
void install(pg_process& srv, asio::io_context& ioc) {
    corolock::pg_connection conn(ioc.get_executor(), pg_config_for(srv), quiet());
    conn.async_run(asio::detached);
    corolock::test::run_coroutine_test(ioc, [&]() -> awaitable<void> {
        mutex m(conn, "any");
        co_await m.async_install();
        co_await m.async_install();
        pg_result r;
        co_await conn.async_query("CREATE TABLE hist (token bigint PRIMARY KEY, pid int, "
                                  "t_in timestamptz, t_out timestamptz)",
                                  r);
        conn.cancel();
    }());
}

struct fixture {
    pg_process srv;
    asio::io_context ioc;
    fixture() { install(srv, ioc); }
    corolock::pg_config config() const { return pg_config_for(srv); }
    void run(awaitable<void> body, std::chrono::seconds limit = 60s) {
        corolock::test::run_coroutine_test(ioc, std::move(body), limit);
    }
    std::string rows_of(const std::string& name) const {
        return srv.sql("SELECT count(*) FROM corolock_locks WHERE name = '" + name + "'");
    }
};

// Each critical section: a fenced insert of (token, pid, entry time by the server's clock), a
// short pause, a fenced update of the exit time. Exclusion holds when no two rows' intervals
// overlap and tokens grow with entry times.
awaitable<bool> critical_section(pg_lease& l) {
    const auto token = std::to_string(l.token().value());
    const auto pid = std::to_string(::getpid());
    std::array<pg_param, 2> in{token, pid};
    pg_result r;
    auto [e1] = co_await l.async_fenced_query(
        "INSERT INTO hist VALUES ($1::bigint, $2::int, clock_timestamp(), NULL)", in, r,
        tuple_deferred);
    co_await sleep_for(2ms);
    std::array<pg_param, 1> out{token};
    auto [e2] = co_await l.async_fenced_query(
        "UPDATE hist SET t_out = clock_timestamp() WHERE token = $1::bigint", out, r,
        tuple_deferred);
    co_return !e1 && !e2 && r.affected_rows() == 1;
}

// The history check, run by the server over every critical section of every process.
void check_history(const pg_process& srv, int expected) {
    BOOST_TEST(srv.sql("SELECT count(*) FROM hist WHERE t_out IS NOT NULL") ==
               std::to_string(expected));
    BOOST_TEST(srv.sql("SELECT count(*) FROM hist a JOIN hist b ON a.token < b.token "
                       "AND b.t_in < a.t_out") == "0",
               "critical sections overlap");
    BOOST_TEST(srv.sql("SELECT count(*) FROM hist a JOIN hist b ON a.token < b.token "
                       "AND b.t_in < a.t_in") == "0",
               "a later token entered first");
}

// `coroutines` coroutines on one connection take the lock `rounds` times each and run the
// critical section; true if every one succeeded.
bool hammer(asio::io_context& ioc, const corolock::pg_config& cfg, int coroutines, int rounds) {
    corolock::pg_connection conn(ioc.get_executor(), cfg, quiet());
    conn.async_run(asio::detached);
    mutex m(conn, "hammer", lease_of(5s));
    int ok = 0, done = 0;
    for (int c = 0; c < coroutines; ++c)
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                for (int i = 0; i < rounds; ++i) {
                    auto [ec, l] = co_await m.async_acquire_for(60s, tuple_deferred);
                    if (ec)
                        continue;
                    if (co_await critical_section(l))
                        ++ok;
                    auto [rec] = co_await l.async_release(tuple_deferred);
                    if (rec)
                        --ok;
                }
                if (++done == coroutines)
                    conn.cancel();
            },
            asio::detached);
    ioc.run_for(90s);
    return ok == coroutines * rounds;
}

} // namespace

BOOST_AUTO_TEST_SUITE(pg_mutex)

// Two child processes and this one, 4 coroutines each, 10 rounds each: no two critical
// sections overlap and tokens grow in the order of entry (checked by the server over all).
BOOST_AUTO_TEST_CASE(exclusion_across_processes_with_increasing_tokens) {
    pg_process srv;
    corolock::test::start_gate g;
    std::vector<pid_t> children;
    const auto cfg = pg_config_for(srv);
    for (int p = 0; p < 2; ++p) {
        const pid_t child = ::fork();
        BOOST_REQUIRE(child >= 0);
        if (child == 0) {
            g.wait();
            asio::io_context ioc;
            ::_exit(hammer(ioc, cfg, 4, 10) ? 0 : 1);
        }
        children.push_back(child);
    }
    {
        // Only now: a coroutine test starts a (watchdog) thread.
        asio::io_context ioc;
        install(srv, ioc);
    }
    g.open(2);
    asio::io_context ioc;
    const auto start = clock_type::now();
    BOOST_TEST(hammer(ioc, cfg, 4, 10));
    for (pid_t c : children) {
        int status = 0;
        BOOST_REQUIRE(::waitpid(c, &status, 0) == c);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    BOOST_TEST_MESSAGE(
        "120 critical sections in 3 processes: "
        << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start).count()
        << " ms");
    check_history(srv, 120);
    BOOST_TEST(srv.sql("SELECT count(*) FROM corolock_locks") == "0");
}

// A try gets an empty lease while another owner holds; the holder's release wakes a waiter by
// NOTIFY (the fallback timer is 5 s here, so a prompt wake-up is the notification's).
BOOST_FIXTURE_TEST_CASE(release_wakes_a_waiter_by_notify, fixture) {
    corolock::pg_connection a(ioc.get_executor(), config(), quiet());
    corolock::pg_connection b(ioc.get_executor(), config(), quiet());
    a.async_run(asio::detached);
    b.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        auto opts = lease_of(10s);
        opts.retry_base = 5s;
        opts.retry_max = 5s;
        mutex ma(a, "wake", opts), mb(b, "wake", opts);
        auto held = co_await ma.async_acquire();
        BOOST_TEST(held.valid());
        BOOST_TEST(held.owner_id().size() == 32u);
        auto [e1, none] = co_await mb.async_try_acquire(tuple_deferred);
        BOOST_TEST(!e1);
        BOOST_TEST(!none.owns());
        pg_lease got;
        clock_type::time_point granted{};
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                auto [ec, l] = co_await mb.async_acquire(tuple_deferred);
                granted = clock_type::now();
                got = std::move(l);
            },
            asio::detached);
        co_await sleep_for(300ms); // the waiter has tried once and sleeps on its 5 s timer
        const auto released = clock_type::now();
        const auto first = held.token();
        co_await held.async_release();
        BOOST_TEST(co_await eventually([&] { return got.owns(); }, 3s));
        BOOST_TEST((granted - released < 1s));
        BOOST_TEST(got.token() > first);
        co_await got.async_release();
        a.cancel();
        b.cancel();
    }());
    BOOST_TEST(rows_of("wake") == "0");
}

// The watchdog keeps a short lease for many times its length; a row taken away from it is
// reported lost within about a lease; a fenced write after that is refused.
BOOST_FIXTURE_TEST_CASE(watchdog_and_loss, fixture) {
    corolock::pg_connection conn(ioc.get_executor(), config(), quiet());
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "watched", lease_of(300ms));
        auto l = co_await m.async_acquire();
        co_await sleep_for(1500ms);
        BOOST_TEST(l.valid());
        BOOST_TEST(!l.lost());
        BOOST_TEST((l.valid_until() > clock_type::now()));
        // Another owner takes the row over (as after an expiry).
        co_await off_loop([&] {
            srv.sql("UPDATE corolock_locks SET owner = 'someone else', "
                    "token = nextval('corolock_lock_tokens') WHERE name = 'watched'");
        });
        const auto taken = clock_type::now();
        auto [ec] = co_await l.async_wait_lost(tuple_deferred);
        BOOST_TEST(ec == error::lease_lost);
        BOOST_TEST((clock_type::now() - taken < 600ms));
        BOOST_TEST(l.lost());
        BOOST_TEST(!l.valid());
        std::array<pg_param, 2> in{"1", "1"};
        pg_result r;
        auto [ef] = co_await l.async_fenced_query("INSERT INTO hist VALUES ($1, $2)", in, r,
                                                  tuple_deferred);
        BOOST_TEST(ef == error::lease_lost); // known lost: nothing sent
        auto [er] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(er == error::lease_lost);
        BOOST_TEST(rows_of("watched") == "1"); // the other owner's row is untouched
        conn.cancel();
    }());
}

// A fenced write with a superseded token is refused by the server and writes nothing.
BOOST_FIXTURE_TEST_CASE(a_fenced_write_needs_the_current_token, fixture) {
    corolock::pg_connection conn(ioc.get_executor(), config(), quiet());
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        pg_mutex_options fixed = lease_of(10s);
        fixed.watchdog = false;
        mutex m(conn, "fenced", fixed);
        auto l = co_await m.async_acquire();
        const auto token = std::to_string(l.token().value());
        std::array<pg_param, 1> ok{token};
        pg_result r;
        auto [e1] = co_await l.async_fenced_query(
            "INSERT INTO hist (token) VALUES ($1::bigint) RETURNING token", ok, r, tuple_deferred);
        BOOST_TEST(!e1, e1.message() << ": " << r.error_message());
        BOOST_REQUIRE(r.rows() == 1u);
        BOOST_TEST(r.value(0, 0) == *ok[0]);
        co_await off_loop([&] {
            srv.sql("UPDATE corolock_locks SET token = nextval('corolock_lock_tokens') "
                    "WHERE name = 'fenced'");
        });
        std::array<pg_param, 1> again{"1"};
        auto [e2] = co_await l.async_fenced_query("INSERT INTO hist (token) VALUES ($1::bigint)",
                                                  again, r, tuple_deferred);
        BOOST_TEST(e2 == error::stale_token, e2.message());
        BOOST_TEST(r.sqlstate() == "CL001");
        BOOST_TEST(srv.sql("SELECT count(*) FROM hist") == "1");
        // The statement's own failure rolls back and says why.
        pg_mutex_options o = lease_of(10s);
        mutex m2(conn, "fenced2", o);
        auto l2 = co_await m2.async_acquire();
        auto [e3] =
            co_await l2.async_fenced_query("INSERT INTO nowhere VALUES (1)", {}, r, tuple_deferred);
        BOOST_TEST(e3 == error::server_error);
        BOOST_TEST(r.sqlstate() == "42P01");
        co_await l2.async_release();
        conn.cancel();
    }());
}

// A token is drawn at the grant, after the row is won: an acquire that waited in the server on
// the row (a raw transaction's FOR UPDATE here, as a holder's fence, renewal or release holds
// it) gets a token larger than one drawn while it waited. Drawn when its statement began, it
// was smaller: the waiter was granted after a larger token (scale-out review K1).
BOOST_FIXTURE_TEST_CASE(a_token_drawn_while_an_acquire_waits_is_smaller_than_its_grant, fixture) {
    srv.sql("INSERT INTO corolock_locks VALUES ('drawn', 'someone else', "
            "nextval('corolock_lock_tokens'), clock_timestamp() + interval '1 hour')");
    corolock::test::raw_session y(srv.conninfo() + " application_name=raw-session");
    y.exec("BEGIN");
    y.exec("SELECT token FROM corolock_locks WHERE name = 'drawn' FOR UPDATE");
    corolock::pg_connection conn(ioc.get_executor(), config(), quiet());
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "drawn", lease_of(30s));
        bool done = false;
        error_code ec;
        pg_lease l;
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                auto [e, got] = co_await m.async_acquire_for(30s, tuple_deferred);
                ec = e;
                l = std::move(got);
                done = true;
            },
            asio::detached);
        // Its statement is in the server, waiting for y's row lock.
        bool waits = false;
        co_await off_loop([&] {
            const auto until = clock_type::now() + 10s;
            while (!waits && clock_type::now() < until) {
                waits = srv.sql("SELECT count(*) FROM pg_stat_activity WHERE "
                                "application_name = 'corolock-test' AND "
                                "wait_event_type = 'Lock'") == "1";
                if (!waits)
                    std::this_thread::sleep_for(10ms);
            }
        });
        BOOST_REQUIRE(waits);
        BOOST_TEST(!done);
        std::uint64_t drawn = 0;
        co_await off_loop([&] {
            drawn = std::stoull(y.exec("SELECT nextval('corolock_lock_tokens')"));
            y.exec("DELETE FROM corolock_locks WHERE name = 'drawn'");
            y.exec("COMMIT");
        });
        BOOST_REQUIRE(co_await eventually([&] { return done; }, 10s));
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(l.owns());
        BOOST_TEST(l.token().value() > drawn,
                   "granted token " << l.token().value() << " after token " << drawn);
        BOOST_TEST(srv.sql("SELECT token FROM corolock_locks WHERE name = 'drawn'") ==
                   std::to_string(l.token().value()));
        co_await l.async_release();
        conn.cancel();
    }());
}

// A database installed by an older corolock has no corolock_acquire: the acquire fails with
// server_error and the log keeps the server's message and says to run async_install, which
// upgrades the schema in place (a held row stays held).
BOOST_FIXTURE_TEST_CASE(an_acquire_on_an_older_schema_says_to_run_async_install, fixture) {
    srv.sql("DROP FUNCTION corolock_acquire(text, text, bigint)");
    corolock::test::log_capture log;
    corolock::pg_connection conn(ioc.get_executor(), config(),
                                 log.make(corolock::logger::level::info));
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "older", lease_of(10s));
        auto [ec, l] = co_await m.async_acquire_for(5s, tuple_deferred);
        BOOST_TEST(ec == error::server_error, ec.message());
        BOOST_TEST(!l.owns());
        std::size_t said = 0;
        {
            std::lock_guard g(log.m);
            for (const auto& line : log.lines)
                said += line.find("acquire of older failed") != std::string::npos &&
                        line.find("function corolock_acquire(") != std::string::npos &&
                        line.find("does not exist") != std::string::npos &&
                        line.find("SQLSTATE 42883") != std::string::npos &&
                        line.find("run pg_mutex::async_install") != std::string::npos;
        }
        BOOST_TEST(said == 1u);
        co_await m.async_install();
        auto [ec2, l2] = co_await m.async_acquire_for(5s, tuple_deferred);
        BOOST_TEST(!ec2, ec2.message());
        BOOST_TEST(l2.owns());
        if (l2.owns())
            co_await l2.async_release();
        conn.cancel();
    }());
}

// A holder SIGKILLed: its row expires within its lease and another process gets the lock.
BOOST_FIXTURE_TEST_CASE(a_killed_holder_expires_within_its_lease, fixture) {
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const auto cfg = config();
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        asio::io_context cioc;
        corolock::pg_connection conn(cioc.get_executor(), cfg, quiet());
        conn.async_run(asio::detached);
        mutex m(conn, "killed", lease_of(1s));
        m.async_acquire([&](error_code ec, pg_lease l) {
            static pg_lease keep;
            keep = std::move(l);
            [[maybe_unused]] auto n = ::write(ready[1], ec ? "n" : "y", 1);
        });
        cioc.run_for(60s);
        ::_exit(0);
    }
    char c = 0;
    BOOST_REQUIRE(::read(ready[0], &c, 1) == 1);
    BOOST_REQUIRE(c == 'y');
    ::close(ready[0]);
    ::close(ready[1]);
    ::kill(child, SIGKILL);
    const auto killed = clock_type::now();
    int status = 0;
    ::waitpid(child, &status, 0);
    corolock::pg_connection conn(ioc.get_executor(), config(), quiet());
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "killed", lease_of(5s));
        auto [ec, l] = co_await m.async_acquire_for(5s, tuple_deferred);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(l.valid());
        const auto waited = clock_type::now() - killed;
        BOOST_TEST_MESSAGE("got the lock "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                           << " ms after its holder was killed (lease 1 s)");
        BOOST_TEST((waited < 1500ms));
        co_await l.async_release();
        conn.cancel();
    }());
}

// pg_terminate_backend of the holder's session: its in-flight statement fails, the connection
// comes back, the row (still its own) is renewed; nobody else gets the lock meanwhile.
BOOST_FIXTURE_TEST_CASE(a_terminated_backend_leaves_no_two_holders, fixture) {
    corolock::pg_connection a(ioc.get_executor(), config(), quiet());
    corolock::pg_connection b(ioc.get_executor(), config(), quiet());
    a.async_run(asio::detached);
    b.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex ma(a, "terminated", lease_of(600ms)), mb(b, "terminated", lease_of(600ms));
        auto held = co_await ma.async_acquire();
        pg_result pid;
        co_await a.async_query("SELECT pg_backend_pid()", pid);
        corolock::test::background_query slow;
        slow.start(ioc, a, "SELECT pg_sleep(0.2)");
        co_await sleep_for(50ms);
        const std::string victim(pid.value(0, 0));
        co_await off_loop([&] { srv.sql("SELECT pg_terminate_backend(" + victim + ")"); });
        BOOST_TEST(co_await eventually([&] { return slow.done; }, 3s));
        BOOST_TEST(slow.ec == error::connection_lost);
        bool other_got_it = false;
        for (int i = 0; i < 20; ++i) {
            auto [e, l] = co_await mb.async_try_acquire(tuple_deferred);
            other_got_it = other_got_it || l.owns();
            co_await sleep_for(100ms);
        }
        BOOST_TEST(!other_got_it);
        BOOST_TEST(held.valid(), "the lease outlives its session: the row is still its own");
        co_await held.async_release();
        auto [e2, l2] = co_await mb.async_try_acquire(tuple_deferred);
        BOOST_TEST(l2.owns());
        co_await l2.async_release();
        a.cancel();
        b.cancel();
    }());
}

// Cancelling a waiter, or an acquire whose attempt is on the wire and takes the lock, leaves
// no row behind.
BOOST_FIXTURE_TEST_CASE(cancellation_leaves_no_row, fixture) {
    corolock::pg_connection conn(ioc.get_executor(), config(), quiet());
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "cancelled", lease_of(10s));
        {
            // In flight, free lock: the grant that arrives after the cancellation is undone.
            asio::cancellation_signal sig;
            // Emitted once the acquire has started (an awaitable starts when awaited).
            asio::post(ioc, [&] { sig.emit(asio::cancellation_type::terminal); });
            auto [ec, l] = co_await m.async_acquire(
                asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
            BOOST_TEST(ec == asio::error::operation_aborted);
            BOOST_TEST(!l.owns());
        }
        auto held = co_await m.async_acquire();
        {
            // Waiting behind a holder.
            asio::cancellation_signal sig;
            asio::steady_timer t(ioc, 200ms);
            t.async_wait([&](error_code) { sig.emit(asio::cancellation_type::terminal); });
            auto [ec, l] = co_await m.async_acquire(
                asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
            BOOST_TEST(ec == asio::error::operation_aborted);
        }
        {
            // mutex::cancel.
            asio::steady_timer t(ioc, 100ms);
            t.async_wait([&](error_code) { m.cancel(); });
            auto [ec, l] = co_await m.async_acquire_for(10s, tuple_deferred);
            BOOST_TEST(ec == asio::error::operation_aborted);
        }
        auto [et, none] = co_await m.async_acquire_for(100ms, tuple_deferred);
        BOOST_TEST(et == error::acquire_timeout);
        co_await held.async_release();
        co_await sleep_for(100ms);
        BOOST_TEST(rows_of("cancelled") == "0");
        conn.cancel();
    }());
}

// Invalid names, options and waits fail before anything is sent.
BOOST_FIXTURE_TEST_CASE(invalid_arguments_send_nothing, fixture) {
    corolock::pg_connection conn(ioc.get_executor(), config(), quiet());
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        pg_result r;
        co_await conn.async_query("SELECT 1", r);
        const auto sent = conn.stats().statements;
        mutex empty(conn, ""), bad_utf8(conn, "\xff"), short_lease(conn, "x", lease_of(1ms));
        auto [e1, l1] = co_await empty.async_acquire(tuple_deferred);
        BOOST_TEST(e1 == error::invalid_name);
        auto [e2, l2] = co_await bad_utf8.async_try_acquire(tuple_deferred);
        BOOST_TEST(e2 == error::invalid_name);
        auto [e3, l3] = co_await short_lease.async_acquire(tuple_deferred);
        BOOST_TEST(e3 == error::invalid_lease);
        mutex fine(conn, "x");
        auto [e4, l4] = co_await fine.async_acquire_for(-1ms, tuple_deferred);
        BOOST_TEST(e4 == error::invalid_wait);
        pg_lease empty_lease;
        auto [e5] = co_await empty_lease.async_release(tuple_deferred);
        BOOST_TEST(e5 == error::not_owner);
        BOOST_TEST(conn.stats().statements == sent);
        conn.cancel();
    }());
}

// A server killed and restarted while a lease is held and a waiter waits: the holder's lease is
// renewed after the restart (the table survived) or reported lost, never both held; the waiter
// gets the lock after the release; no row is left behind.
BOOST_FIXTURE_TEST_CASE(a_server_restart_is_ridden_out, fixture) {
    corolock::pg_connection a(ioc.get_executor(), config(), quiet());
    corolock::pg_connection b(ioc.get_executor(), config(), quiet());
    a.async_run(asio::detached);
    b.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex ma(a, "restart", lease_of(3s)), mb(b, "restart", lease_of(3s));
        auto held = co_await ma.async_acquire();
        pg_lease got;
        bool waited = false;
        asio::co_spawn(
            ioc,
            [&]() -> awaitable<void> {
                auto [ec, l] = co_await mb.async_acquire_for(20s, tuple_deferred);
                got = std::move(l);
                waited = true;
            },
            asio::detached);
        co_await sleep_for(100ms);
        co_await off_loop([&] {
            srv.kill();
            srv.start();
        });
        co_await sleep_for(500ms);
        BOOST_TEST(!(held.valid() && got.valid()), "two holders");
        if (held.valid())
            co_await held.async_release();
        BOOST_TEST(co_await eventually([&] { return waited; }, 10s));
        BOOST_TEST(got.owns());
        if (got.owns())
            co_await got.async_release();
        co_await sleep_for(100ms);
        BOOST_TEST(rows_of("restart") == "0");
        a.cancel();
        b.cancel();
    }());
}

namespace {

// An acquire (waiting up to 20 s) left running while the test provokes a fault: when it ends,
// `done`, its error and its lease.
struct background_acquire {
    bool done = false;
    error_code ec;
    pg_lease got;

    void start(asio::io_context& ioc, mutex& m) {
        asio::co_spawn(
            ioc,
            [this, &m]() -> awaitable<void> {
                auto [e, l] = co_await m.async_acquire_for(20s, tuple_deferred);
                ec = e;
                got = std::move(l);
                done = true;
            },
            asio::detached);
    }
};

} // namespace

// An attempt whose answer is lost (the server froze with it on the wire, the health check
// dropped the connection) is undone by an owner-checked delete queued before the next attempt.
// The frozen backend is a process of its own that runs the attempt when it thaws, whenever the
// machine schedules it: the new session ends it (or finds it gone) before the undo can run, so
// its grant never outlives the undo.
BOOST_FIXTURE_TEST_CASE(an_unknown_outcome_is_undone_before_the_next_attempt, fixture) {
    corolock::test::log_capture log;
    corolock::pg_connection conn(ioc.get_executor(), config(),
                                 log.make(corolock::logger::level::info));
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "unknown", lease_of(3s));
        for (std::size_t round = 1; round <= 3; ++round) {
            pg_result r;
            co_await conn.async_query("SELECT 1", r); // connected, listening
            srv.pause();
            background_acquire a;
            a.start(ioc, m);
            // The health check (300 ms) drops the connection after two silent intervals.
            BOOST_TEST(co_await eventually(
                [&] { return log.count("no answer within the health check") == round; }, 5s));
            const auto thawed = clock_type::now();
            srv.resume();
            BOOST_TEST(co_await eventually([&] { return a.done; }, 10s));
            BOOST_TEST(!a.ec, a.ec.message());
            BOOST_TEST(a.got.valid());
            // Well within the 3 s lease the frozen grant would otherwise have kept.
            BOOST_TEST((clock_type::now() - thawed < 2s));
            BOOST_TEST(log.count("undid an attempt") >= round);
            BOOST_TEST(log.count("ending the previous session") >= round);
            if (a.got.valid())
                co_await a.got.async_release();
            BOOST_TEST(rows_of("unknown") == "0", "round " << round);
        }
        BOOST_TEST(!log.contains("did not end"));
        BOOST_TEST(!log.contains("cannot end"));
        conn.cancel();
    }());
}

namespace {

// Whether `pid` has a SIGTERM pending (sent while it was stopped, not yet handled).
bool sigterm_pending(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("ShdPnd:", 0) == 0 || line.rfind("SigPnd:", 0) == 0)
            if (std::stoull(line.substr(7), nullptr, 16) & (1ull << (SIGTERM - 1)))
                return true;
    return false;
}

} // namespace

// The same, made deterministic: only the session's backend is stopped (the server takes new
// sessions), and it is let go only once the next session's terminate has reached it. Without the
// terminate it would run the attempt after the undo; with it, it ends without running anything.
// Three rounds on one connection, so each new session ends the one before.
BOOST_FIXTURE_TEST_CASE(the_next_session_ends_a_frozen_backend_before_the_undo, fixture) {
    corolock::test::log_capture log;
    auto cfg = config();
    cfg.health_check_interval = 1s; // the terminate waits for up to this
    corolock::pg_connection conn(ioc.get_executor(), cfg, log.make(corolock::logger::level::info));
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "frozen", lease_of(5s));
        for (std::size_t round = 1; round <= 3; ++round) {
            pg_result r;
            co_await conn.async_query("SELECT pg_backend_pid()", r);
            const auto pid = static_cast<pid_t>(std::stol(std::string(r.value(0, 0))));
            const auto tag = "previous session (pid " + std::to_string(pid) + ")";
            ::kill(pid, SIGSTOP);
            background_acquire a;
            a.start(ioc, m);
            BOOST_TEST(co_await eventually([&] { return log.contains("ending the " + tag); }, 10s));
            BOOST_TEST(co_await eventually([&] { return sigterm_pending(pid); }, 10s));
            ::kill(pid, SIGCONT);
            BOOST_TEST(co_await eventually([&] { return a.done; }, 10s));
            BOOST_TEST(!a.ec, a.ec.message());
            BOOST_TEST(a.got.valid());
            BOOST_TEST(log.count("ended the " + tag) == 1u);
            BOOST_TEST(log.count("undid an attempt") == round);
            if (a.got.valid())
                co_await a.got.async_release();
            BOOST_TEST(rows_of("frozen") == "0", "round " << round);
        }
        BOOST_TEST(!log.contains("did not end"));
        BOOST_TEST(!log.contains("cannot end"));
        conn.cancel();
    }());
}

// A bounded wait ends at its deadline though the server does not answer: `server_timeout`, since
// nothing was answered after the attempt went out. The grant that the frozen attempt makes once
// the server thaws is given back (owner-checked), so the name is free again.
BOOST_FIXTURE_TEST_CASE(a_bounded_wait_ends_at_its_deadline_on_a_silent_server, fixture) {
    corolock::test::log_capture log;
    corolock::pg_connection conn(ioc.get_executor(), config(),
                                 log.make(corolock::logger::level::info));
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "silent", lease_of(5s));
        pg_result r;
        co_await conn.async_query("SELECT 1", r); // connected, listening
        srv.pause();
        const auto asked = clock_type::now();
        auto [ec, l] = co_await m.async_acquire_for(200ms, tuple_deferred);
        const auto waited = clock_type::now() - asked;
        srv.resume();
        BOOST_TEST(ec == corolock::error::server_timeout, ec.message());
        BOOST_TEST(!l.owns());
        BOOST_TEST((waited < 250ms + 500ms)); // its deadline, not the server's silence
        BOOST_TEST(co_await eventually([&] { return log.count("undid an attempt") == 1; }, 10s));
        BOOST_TEST(rows_of("silent") == "0");
        auto [e2, l2] = co_await m.async_acquire_for(10s, tuple_deferred);
        BOOST_TEST(!e2, e2.message());
        BOOST_TEST(l2.owns());
        if (l2.owns())
            co_await l2.async_release();
        conn.cancel();
    }());
}

// The waiters of one name on one connection queue in arrival order: each release grants the
// next of them.
BOOST_FIXTURE_TEST_CASE(local_waiters_are_granted_in_arrival_order, fixture) {
    corolock::pg_connection a(ioc.get_executor(), config(), quiet());
    corolock::pg_connection b(ioc.get_executor(), config(), quiet());
    a.async_run(asio::detached);
    b.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex ma(a, "fifo", lease_of(10s)), mb(b, "fifo", lease_of(10s));
        auto held = co_await ma.async_acquire();
        std::vector<int> order;
        for (int i = 0; i < 5; ++i) {
            asio::co_spawn(
                ioc,
                [&, i]() -> awaitable<void> {
                    auto [ec, l] = co_await mb.async_acquire_for(20s, tuple_deferred);
                    BOOST_TEST(!ec, ec.message());
                    order.push_back(i);
                    if (l.owns())
                        co_await l.async_release();
                },
                asio::detached);
            co_await sleep_for(100ms); // refused and queued before the next one asks
        }
        co_await held.async_release();
        BOOST_TEST(co_await eventually([&] { return order.size() == 5; }, 10s));
        BOOST_TEST((order == std::vector<int>{0, 1, 2, 3, 4}));
        BOOST_TEST(rows_of("fifo") == "0");
        a.cancel();
        b.cancel();
    }());
}

// Nested holds: the lease's release sends nothing while a hold lives; the last hold releases.
BOOST_FIXTURE_TEST_CASE(nested_holds_release_with_the_last, fixture) {
    corolock::pg_connection conn(ioc.get_executor(), config(), quiet());
    conn.async_run(asio::detached);
    run([&]() -> awaitable<void> {
        mutex m(conn, "nested");
        auto l = co_await m.async_acquire();
        auto h1 = l.hold();
        auto h2 = l.hold();
        BOOST_TEST(h1.valid());
        BOOST_TEST(h2.token() == l.token());
        auto [e1] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(!e1);
        BOOST_TEST(rows_of("nested") == "1");
        h1.reset();
        co_await sleep_for(50ms);
        BOOST_TEST(rows_of("nested") == "1");
        auto [e2] = co_await h2.async_release(tuple_deferred);
        BOOST_TEST(!e2);
        BOOST_TEST(rows_of("nested") == "0");
        corolock::pg_nested_hold none;
        auto [e3] = co_await none.async_release(tuple_deferred);
        BOOST_TEST(e3 == error::not_owner);
        conn.cancel();
    }());
}

// Failover to a synchronous standby (synchronous_commit = remote_apply): a grant the client saw
// is on the standby when it is promoted, so the holder's watchdog goes on renewing there and
// nobody else gets the lock while the lease is valid. Clients name both servers; libpq picks
// the one that accepts writes (target_session_attrs=read-write).
BOOST_AUTO_TEST_CASE(a_grant_survives_failover_to_a_synchronous_standby) {
    corolock::test::pg_options popts;
    popts.settings = {"synchronous_commit=remote_apply"};
    pg_process primary(popts);
    {
        asio::io_context ioc;
        install(primary, ioc);
    }
    corolock::test::pg_options sopts;
    sopts.standby_of = &primary;
    pg_process standby(sopts);
    // Synchronous from now on (with no standby named yet, commits would wait for ever).
    primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'");
    primary.sql("SELECT pg_reload_conf()");
    std::string state;
    for (int i = 0; i < 200 && state != "sync"; ++i) {
        state = primary.sql("SELECT sync_state FROM pg_stat_replication");
        if (state != "sync")
            std::this_thread::sleep_for(50ms);
    }
    BOOST_REQUIRE(state == "sync");

    auto cfg = pg_config_for(primary);
    cfg.conninfo = "host=127.0.0.1,127.0.0.1 port=" + std::to_string(primary.port()) + "," +
                   std::to_string(standby.port()) +
                   " user=postgres dbname=postgres target_session_attrs=read-write";
    asio::io_context ioc;
    corolock::test::log_capture log;
    corolock::pg_connection a(ioc.get_executor(), cfg, log.make(corolock::logger::level::info));
    corolock::pg_connection b(ioc.get_executor(), cfg, log.make(corolock::logger::level::info));
    a.async_run(asio::detached);
    b.async_run(asio::detached);
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            mutex ma(a, "failover", lease_of(10s)), mb(b, "failover", lease_of(10s));
            auto held = co_await ma.async_acquire();
            BOOST_TEST(standby.sql("SELECT owner FROM corolock_locks WHERE name = 'failover'") ==
                       std::string(held.owner_id()));
            co_await off_loop([&] {
                primary.kill();
                standby.promote();
            });
            // The grant is on the new primary, and the holder's watchdog renews it there.
            const auto before = held.valid_until();
            BOOST_TEST(standby.sql("SELECT owner FROM corolock_locks WHERE name = 'failover'") ==
                       std::string(held.owner_id()));
            BOOST_TEST(co_await eventually([&] { return held.valid_until() > before; }, 8s));
            BOOST_TEST(held.valid());
            BOOST_TEST(!held.lost());
            auto [e1, none] = co_await mb.async_try_acquire(tuple_deferred);
            BOOST_TEST(!e1, e1.message());
            BOOST_TEST(!none.owns());
            const auto first = held.token();
            auto [er] = co_await held.async_release(tuple_deferred);
            BOOST_TEST(!er, er.message());
            auto [e2, got] = co_await mb.async_acquire_for(5s, tuple_deferred);
            BOOST_TEST(!e2, e2.message());
            BOOST_TEST(got.token() > first);
            auto [er2] = co_await got.async_release(tuple_deferred);
            BOOST_TEST(!er2, er2.message());
            a.cancel();
            b.cancel();
        }(),
        60s);
    for (const auto& line : log.lines) // the failover as the clients saw it
        BOOST_TEST_MESSAGE(line);
}

// The acquire family's rules (test/common/family_check.hpp), as every backend keeps them.
BOOST_FIXTURE_TEST_CASE(acquire_family_rules_over_postgres, fixture) {
    corolock::test::pg_clients c(ioc, {config(), config()});
    run([&]() -> awaitable<void> {
        mutex a(c[0], "family", lease_of(5s)), b(c[1], "family", lease_of(5s));
        for (const auto& bad : co_await corolock::test::check_acquire_family(a, b))
            BOOST_ERROR(bad);
        BOOST_TEST(rows_of("family") == "0");
        c.stop();
    }());
}

// The exclusion checker written once against the concept (test/common/exclusion_check.hpp), over
// two connections, then with_lock and with_lock_for through the concept.
BOOST_FIXTURE_TEST_CASE(generic_exclusion_checker_and_with_lock_over_postgres, fixture) {
    corolock::test::pg_clients c(ioc, {config(), config()});
    auto &a = c[0], &b = c[1];
    run([&]() -> awaitable<void> {
        mutex ma(a, "concept", lease_of(5s)), mb(b, "concept", lease_of(5s));
        mutex* const handles[] = {&ma, &mb};
        const auto r = co_await corolock::test::check_exclusion<mutex>(
            handles, 3, 10, []() -> awaitable<void> { co_await sleep_for(1ms); });
        BOOST_TEST(r.exclusive(2 * 3 * 10), "postgres: " << r);
        BOOST_TEST(rows_of("concept") == "0");

        // with_lock hands the body a pg_lease and releases after it.
        const auto token = co_await corolock::with_lock(
            ma, [&](pg_lease& l) -> awaitable<corolock::fencing_token> {
                BOOST_TEST(l.valid());
                BOOST_TEST(rows_of("concept") == "1");
                co_return l.token();
            });
        BOOST_TEST(token.backend() == corolock::lock_backend::postgres);
        BOOST_TEST(token.value() > 0u);
        BOOST_TEST(rows_of("concept") == "0");

        // with_lock_for gives up on a lock held elsewhere, and the body never runs.
        auto held = co_await mb.async_acquire();
        bool ran = false;
        error_code got;
        try {
            co_await corolock::with_lock_for(ma, 200ms, [&](pg_lease&) -> awaitable<void> {
                ran = true;
                co_return;
            });
        } catch (const boost::system::system_error& e) {
            got = e.code();
        }
        BOOST_TEST(got == error::acquire_timeout, got.message());
        BOOST_TEST(!ran);
        co_await held.async_release();
        // ... and runs the body once the lock is free.
        co_await corolock::with_lock_for(ma, 5s, [&](pg_lease& l) -> awaitable<void> {
            ran = l.valid();
            co_return;
        });
        BOOST_TEST(ran);
        BOOST_TEST(rows_of("concept") == "0");
        c.stop();
    }());
}

// The lock_meter check (test/common/meter_check.hpp) over two connections: the holder's lease
// is lost when its row is deleted behind its back (an administrator's force-unlock).
BOOST_FIXTURE_TEST_CASE(generic_lock_meter_check_over_postgres, fixture) {
    corolock::test::pg_clients c(ioc, {config(), config()});
    auto &a = c[0], &b = c[1];
    run([&]() -> awaitable<void> {
        mutex ma(a, "metered", lease_of(1s)), mb(b, "metered", lease_of(1s)), bad(a, "");
        auto lose = [&](pg_lease&) -> awaitable<void> {
            co_await off_loop(
                [&] { srv.sql("DELETE FROM corolock_locks WHERE name = 'metered'"); });
        };
        co_await corolock::test::check_lock_meter(
            corolock::test::server_meter_kit<mutex>(ma, mb, bad, lose));
        BOOST_TEST(rows_of("metered") == "0");
        c.stop();
    }());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace postgres_pg_mutex
