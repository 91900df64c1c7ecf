// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S10 (issue 4): bad input and hostile server states. Every case must end in a typed error (or
// in documented success), never in "acquired" by mistake, a hang or a key left behind.
//
// Every argument error of mutex_options and of the waits is here (invalid_lease,
// invalid_argument, invalid_wait, invalid_name), as are empty leases, nested holds that outlive
// their lease's release, double releases and the release of a lost lease.
// Already covered in test/integration/mutex/ and connection.cpp, not repeated here:
// a '}' name without a hash tag; a string at the lock name for acquire, try_acquire and
// force_unlock (wrong_type_key_is_left_untouched); release after the key was deleted and
// retaken (key_deleted_from_outside_signals_lost); a wrong password
// (wrong_password_fails_clearly_without_retry_storm); async_run on a closed port and an exec
// after it ended (closed_port_fails_fast); binary-safe SET/GET of a key with \0 and \r\n
// (set_get_round_trip_binary_safe).
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include "core/lock_scripts.hpp"
#include <corolock/connection.hpp> // before lease.hpp, which uses `request` without including it
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s10_bad_input {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
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

long long ms_since(clock_type::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
}

// A RESP2 bulk string, as redis_process::command returns it.
std::string bulk(std::string_view s) {
    return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

// The integer a redis_process::command reply carries (":42\r\n" -> 42).
long long integer_of(const std::string& reply) {
    BOOST_REQUIRE_MESSAGE(!reply.empty() && reply[0] == ':', "not an integer reply: " << reply);
    return std::stoll(reply.substr(1));
}

long long info_field(const redis_process& srv, const char* section, const std::string& field) {
    const auto info = srv.command({"INFO", section});
    const auto pos = info.find(field + ":");
    BOOST_REQUIRE(pos != std::string::npos);
    return std::stoll(info.substr(pos + field.size() + 1));
}

// A connection running on an io_context for the length of a test body.
struct fixture : corolock::test::server_fixture {
    std::string hget(std::string_view key, std::string_view field) {
        return srv.command({"HGET", key, field});
    }
};

// A loopback port nobody listens on.
std::uint16_t closed_port() {
    asio::io_context probe;
    asio::ip::tcp::acceptor a(probe, {asio::ip::make_address("127.0.0.1"), 0});
    const auto port = a.local_endpoint().port();
    a.close();
    return port;
}

// Test timings (as config_for) for a server that is not there: a connection on it never runs,
// or never gets through.
corolock::connection_config config_for_port(std::uint16_t port) {
    corolock::connection_config cfg;
    cfg.port = std::to_string(port);
    cfg.health_check_interval = 200ms;
    cfg.connect_timeout = 1s;
    cfg.reconnect_wait = 20ms;
    cfg.reconnect_wait_max = 200ms;
    cfg.max_wait_for_connection = 5s;
    return cfg;
}

} // namespace

BOOST_AUTO_TEST_SUITE(s10_bad_input)

BOOST_AUTO_TEST_CASE(leases_out_of_range_fail_before_redis) {
    // A connection that never runs: a request would wait for it, so a prompt typed error proves
    // the check came first. steady_clock::duration is nanoseconds in an int64, so no lease it
    // can hold overflows int64 milliseconds; the overflow risk is `now + lease` in the deadline
    // arithmetic, which validation must head off. (std::chrono::hours::max() cannot even be
    // converted to nanoseconds without signed overflow, i.e. UB in the caller's own code.)
    const clock_type::duration bad[] = {
        clock_type::duration::max(),        // ~292 years: deadline would overflow
        clock_type::duration::min(),        // most negative
        std::chrono::hours(24 * 365) + 1ns, // just past the one-year cap
        std::chrono::duration_cast<clock_type::duration>(std::chrono::hours(24 * 365 * 100)),
        999us, // rounds down to PX 0
        1ns,
        -1ns,
    };
    asio::io_context idle;
    corolock::connection offline(idle.get_executor(), config_for_port(closed_port()), quiet());
    std::vector<std::unique_ptr<corolock::mutex>> ms;
    std::vector<error_code> got;
    int leases = 0;
    for (const auto lease : bad) {
        for (const bool watchdog : {true, false}) {
            ms.push_back(std::make_unique<corolock::mutex>(offline, "lock:lease",
                                                           lease_of(lease, watchdog)));
            auto& m = *ms.back();
            auto done = [&](error_code ec, corolock::lease l) {
                got.push_back(ec);
                leases += l.owns();
            };
            m.async_acquire(done);
            m.async_acquire_for(1s, done);
            m.async_try_acquire(done);
        }
    }
    // An empty name and a bad lease: either is a typed argument error.
    corolock::mutex both(offline, "", lease_of(clock_type::duration::max()));
    error_code both_ec;
    both.async_acquire([&](error_code ec, corolock::lease) { both_ec = ec; });
    BOOST_TEST(got.empty()); // never completed inside the initiating call
    const auto t0 = clock_type::now();
    idle.run_for(2s);
    BOOST_TEST_MESSAGE(got.size() << " bad-lease operations completed in " << ms_since(t0)
                                  << " ms");
    BOOST_REQUIRE_EQUAL(got.size(), std::size(bad) * 2 * 3);
    for (const auto& ec : got) {
        BOOST_TEST(ec == error::invalid_lease);
        BOOST_TEST(ec == corolock::condition::invalid_argument);
    }
    BOOST_TEST(leases == 0);
    BOOST_TEST(both_ec == corolock::condition::invalid_argument);
    BOOST_TEST(offline.stats().commands == 0u);
    BOOST_TEST(offline.stats().bytes_written == 0u);
}

BOOST_AUTO_TEST_CASE(other_options_and_waits_out_of_range_fail_before_redis) {
    // The rest of mutex_options, and the wait: checked by the first acquire, before anything is
    // sent, on a connection that never runs.
    constexpr auto year = std::chrono::hours(24 * 365);
    struct bad_case {
        const char* what;
        mutex_options opts;
        error expected;
    };
    std::vector<bad_case> cases;
    auto add = [&](const char* what, auto change) {
        mutex_options o;
        o.lease = 1s;
        change(o);
        cases.push_back({what, o, error::invalid_argument});
    };
    add("retry_base 0", [](mutex_options& o) { o.retry_base = 0s; });
    add("retry_base 999 us", [](mutex_options& o) { o.retry_base = 999us; });
    add("retry_base negative", [](mutex_options& o) { o.retry_base = -1ms; });
    add("retry_max below retry_base", [](mutex_options& o) {
        o.retry_base = 100ms;
        o.retry_max = 99ms;
    });
    add("retry_max past a year", [&](mutex_options& o) { o.retry_max = year + 1ns; });
    add("max_hold past a year", [&](mutex_options& o) { o.max_hold = year + 1ns; });
    add("max_hold max", [](mutex_options& o) { o.max_hold = clock_type::duration::max(); });
    add("max_hold negative", [](mutex_options& o) { o.max_hold = -1ns; });
    add("fence_retention 0", [](mutex_options& o) { o.fence_retention = 0s; });
    add("fence_retention negative", [](mutex_options& o) { o.fence_retention = -1s; });
    add("fence_retention past a year", [&](mutex_options& o) { o.fence_retention = year + 1ns; });

    asio::io_context idle;
    corolock::connection offline(idle.get_executor(), config_for_port(closed_port()), quiet());
    std::vector<std::unique_ptr<corolock::mutex>> ms;
    struct outcome {
        std::string what;
        error expected;
        error_code ec;
        bool done = false, leased = false;
    };
    std::vector<std::unique_ptr<outcome>> outcomes;
    auto expect = [&](corolock::mutex& m, std::string what, error e, auto initiate) {
        outcomes.push_back(std::make_unique<outcome>(outcome{std::move(what), e, {}}));
        auto* o = outcomes.back().get();
        initiate(m, [o](error_code ec, corolock::lease l) {
            o->ec = ec;
            o->leased = l.owns();
            o->done = true;
        });
    };
    for (const auto& c : cases) {
        ms.push_back(std::make_unique<corolock::mutex>(offline, "lock:options", c.opts));
        auto& m = *ms.back();
        expect(m, std::string(c.what) + ", acquire", c.expected,
               [](auto& m, auto h) { m.async_acquire(std::move(h)); });
        expect(m, std::string(c.what) + ", acquire_for", c.expected,
               [](auto& m, auto h) { m.async_acquire_for(1s, std::move(h)); });
        expect(m, std::string(c.what) + ", try_acquire", c.expected,
               [](auto& m, auto h) { m.async_try_acquire(std::move(h)); });
    }
    // Negative waits on a valid mutex: invalid_wait, for any negative amount.
    ms.push_back(std::make_unique<corolock::mutex>(offline, "lock:wait", lease_of(1s)));
    auto& valid = *ms.back();
    for (const clock_type::duration w :
         {clock_type::duration(-1ns), clock_type::duration(-1s), clock_type::duration::min()})
        expect(valid, "acquire_for " + std::to_string(w.count()) + " ns", error::invalid_wait,
               [w](auto& m, auto h) { m.async_acquire_for(w, std::move(h)); });
    // Both wrong: the options are reported first (they are wrong for every call).
    expect(*ms.front(), "retry_base 0, acquire_for -1 s", error::invalid_argument,
           [](auto& m, auto h) { m.async_acquire_for(-1s, std::move(h)); });

    for (const auto& o : outcomes)
        BOOST_TEST(!o->done, o->what << ": completed inside the initiating call");
    const auto t0 = clock_type::now();
    idle.run_for(2s);
    BOOST_TEST_MESSAGE(outcomes.size()
                       << " operations with bad arguments completed in " << ms_since(t0) << " ms");
    for (const auto& o : outcomes) {
        BOOST_TEST_CONTEXT(o->what) {
            BOOST_TEST(o->done);
            BOOST_TEST(o->ec == o->expected);
            BOOST_TEST(o->ec == corolock::condition::invalid_argument);
            BOOST_TEST(!o->leased);
        }
    }
    BOOST_TEST(offline.stats().commands == 0u);
    BOOST_TEST(offline.stats().bytes_written == 0u);
}

BOOST_AUTO_TEST_CASE(empty_name_and_empty_lease_fail_before_redis) {
    asio::io_context idle;
    corolock::connection offline(idle.get_executor(), config_for_port(closed_port()), quiet());
    corolock::mutex empty(offline, "");
    error_code acquire_for_ec, try_ec, force_ec, ttl_ec;
    bool deleted = true, leased = false;
    auto run = [&] {
        idle.restart();
        idle.run_for(1s);
    };
    empty.async_acquire_for(1s, [&](error_code ec, corolock::lease l) {
        acquire_for_ec = ec;
        leased = leased || l.owns();
    });
    run();
    empty.async_try_acquire([&](error_code ec, corolock::lease l) {
        try_ec = ec;
        leased = leased || l.owns();
    });
    run();
    empty.async_force_unlock([&](error_code ec, bool d) { force_ec = ec, deleted = d; });
    run();
    empty.async_remaining_ttl([&](error_code ec, std::int64_t) { ttl_ec = ec; });
    run();
    BOOST_TEST(acquire_for_ec == error::invalid_name);
    BOOST_TEST(try_ec == error::invalid_name);
    BOOST_TEST(!leased);
    BOOST_TEST(force_ec == error::invalid_name);
    BOOST_TEST(!deleted);
    BOOST_TEST(ttl_ec == error::invalid_name);

    // An empty lease (what a failed or contended acquire gives) owns nothing: every operation
    // of it answers not_owner and sends nothing. Its handlers are bound to `idle`: an empty
    // lease knows no connection to complete on.
    corolock::lease none;
    BOOST_TEST(!none.owns());
    BOOST_TEST(!none.valid());
    BOOST_TEST(!none.lost());
    BOOST_TEST(none.token().value() == 0u);
    BOOST_TEST((none.valid_until() == clock_type::time_point::min()));
    BOOST_TEST(none.owner_id().empty());
    BOOST_CHECK_THROW((void)none.hold(), std::logic_error);
    error_code release_ec, lost_ec, extend_ec, fenced_ec;
    const corolock::fenced_script noop("return 1");
    corolock::generic_response resp;
    none.async_wait_lost(asio::bind_executor(idle, [&](error_code ec) { lost_ec = ec; }));
    none.async_extend(asio::bind_executor(idle, [&](error_code ec) { extend_ec = ec; }));
    none.async_fenced_eval(noop, {}, {}, resp,
                           asio::bind_executor(idle, [&](error_code ec) { fenced_ec = ec; }));
    none.async_release(asio::bind_executor(idle, [&](error_code ec) { release_ec = ec; }));
    run();
    BOOST_TEST(release_ec == error::not_owner); // nothing held: nothing to send
    BOOST_TEST(lost_ec == error::not_owner);
    BOOST_TEST(extend_ec == error::not_owner);
    BOOST_TEST(fenced_ec == error::not_owner);
    BOOST_TEST(offline.stats().commands == 0u);
}

BOOST_FIXTURE_TEST_CASE(lease_bounds_are_accepted_and_honoured, fixture) {
    run([&]() -> awaitable<void> {
        // The largest lease accepted: one year, sent as PX 31536000000.
        corolock::mutex year(conn, "lock:year", lease_of(std::chrono::hours(24 * 365)));
        corolock::lease y = co_await year.async_acquire();
        const auto pttl = integer_of(srv.command({"PTTL", "lock:year"}));
        BOOST_TEST(pttl > 31'535'990'000LL);
        BOOST_TEST(pttl <= 31'536'000'000LL);
        co_await y.async_release();
        BOOST_TEST(!exists("lock:year"));

        // Below the smallest (100 ms): refused before anything is sent.
        for (const bool watchdog : {false, true}) {
            corolock::mutex tiny(conn, "lock:tiny", lease_of(99ms, watchdog));
            auto [ec, l] = co_await tiny.async_acquire_for(1s, tuple_deferred);
            BOOST_TEST(ec == error::invalid_lease);
            BOOST_TEST(!l.owns());
            BOOST_TEST(!exists("lock:tiny"));
        }
        // The other options at their bounds are accepted: retry 1 ms, max_hold one year, a fence
        // kept 1 ms past the lease (its key's TTL shows it).
        mutex_options edge = lease_of(1s);
        edge.retry_base = 1ms;
        edge.retry_max = 1ms;
        edge.max_hold = std::chrono::hours(24 * 365);
        edge.fence_retention = 1ms;
        corolock::mutex bounds(conn, "lock:bounds", edge);
        corolock::lease b = co_await bounds.async_acquire_for(1s);
        BOOST_TEST(b.valid());
        const auto fence_ttl = integer_of(srv.command({"PTTL", "{lock:bounds}:fence"}));
        BOOST_TEST(fence_ttl > 900);
        BOOST_TEST(fence_ttl <= 1001);
        co_await b.async_release();
        BOOST_TEST(!exists("lock:bounds"));

        // The smallest: 100 ms is accepted and runs out by itself (fixed lease).
        corolock::mutex small(conn, "lock:small", lease_of(100ms, false));
        corolock::lease s = co_await small.async_acquire_for(1s);
        co_await sleep_for(150ms);
        BOOST_TEST(!s.valid());
        BOOST_TEST(s.lost());
        BOOST_TEST(!exists("lock:small"));
        auto [rec] = co_await s.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost);
    });
}

BOOST_FIXTURE_TEST_CASE(names_with_nul_and_crlf_are_binary_safe, fixture) {
    run([&]() -> awaitable<void> {
        const std::string names[] = {
            std::string("a\0b", 3),
            std::string("\0", 1),
            std::string("x\r\ny", 4),
            std::string("\r\n", 2),
            "with space",
            std::string("{t\0g}\r\n", 7),
            std::string("\r\n*1\r\n$4\r\nPING\r\n", 16), // RESP-looking bytes
        };
        for (const auto& name : names) {
            // One handle per name, shared by the holder and the waiter.
            corolock::mutex m(conn, name, lease_of(300ms));
            BOOST_TEST(m.name() == name);
            corolock::lease a = co_await m.async_acquire();
            BOOST_TEST(a.name() == name);
            BOOST_TEST(exists(name));
            BOOST_TEST(hget(name, "owner") == bulk(a.owner_id()));
            const auto fence = corolock::detail::derived_key(name, "fence");
            BOOST_TEST(srv.command({"GET", fence}) == bulk(std::to_string(a.token().value())));
            // A prefix up to the first NUL or CR must not have been touched.
            const auto cut = name.find_first_of(std::string("\0\r", 2));
            if (cut != std::string::npos && cut > 0)
                BOOST_TEST(!exists(std::string_view(name).substr(0, cut)));
            // The watchdog renews the binary key (several renewals at 100 ms) ...
            co_await sleep_for(450ms);
            BOOST_TEST(a.valid());
            BOOST_TEST(!a.lost());
            // ... and a waiter is handed the lock by the release message on the binary channel.
            BOOST_TEST(!(co_await m.async_try_acquire()).owns());
            error_code waited = asio::error::would_block;
            corolock::lease b;
            m.async_acquire_for(5s, [&](error_code ec, corolock::lease l) {
                b = std::move(l);
                waited = ec;
            });
            co_await sleep_for(30ms);
            const auto pubsub = corolock::get_lock_stats(conn).pubsub_wakeups;
            const auto t0 = clock_type::now();
            // Freed by force_unlock, not by a release of this connection (that one would hand
            // the lock over without the message): the wake-up must come through the channel.
            BOOST_TEST(co_await m.async_force_unlock());
            a = {}; // its owner-checked release leaves b's key alone
            while (waited == asio::error::would_block)
                co_await sleep_for(1ms);
            BOOST_TEST(!waited);
            BOOST_TEST(ms_since(t0) < 200); // not the fallback timer
            BOOST_TEST(corolock::get_lock_stats(conn).pubsub_wakeups > pubsub);
            BOOST_TEST(hget(name, "owner") == bulk(b.owner_id()));
            co_await b.async_release();
            BOOST_TEST(!exists(name));
        }
        // Nothing but the fence keys is left, each with the exact bytes of its name.
        const auto keys = srv.command({"DBSIZE"});
        BOOST_TEST(integer_of(keys) == static_cast<long long>(std::size(names)));
    });
}

BOOST_FIXTURE_TEST_CASE(one_mebibyte_name_works, fixture) {
    // Works: Redis takes keys and channel names up to proto-max-bulk-len (512 MiB) and the
    // library copies the name once per handle; each script call carries the name (twice for the
    // acquire: the key and its fence key), so a renewal round costs about 1 MiB on the wire.
    run([&]() -> awaitable<void> {
        std::string name(1024 * 1024, 'k');
        for (std::size_t i = 0; i < name.size(); i += 4096)
            name[i] = static_cast<char>('a' + (i / 4096) % 26);
        corolock::mutex m(conn, name, lease_of(300ms));
        auto t0 = clock_type::now();
        corolock::lease a = co_await m.async_acquire();
        BOOST_TEST_MESSAGE("1 MiB name: acquired in " << ms_since(t0) << " ms");
        BOOST_TEST(
            integer_of(srv.command({"STRLEN", corolock::detail::derived_key(name, "fence")})) > 0);
        BOOST_TEST(hget(name, "owner") == bulk(a.owner_id()));
        const auto renewals = corolock::get_lock_stats(conn).renewals;
        co_await sleep_for(700ms);
        BOOST_TEST(a.valid());
        BOOST_TEST(!a.lost());
        BOOST_TEST(corolock::get_lock_stats(conn).renewals >= renewals + 4);
        BOOST_TEST(!(co_await m.async_try_acquire()).owns());
        error_code waited = asio::error::would_block;
        corolock::lease b;
        m.async_acquire_for(5s, [&](error_code ec, corolock::lease l) {
            b = std::move(l);
            waited = ec;
        });
        co_await sleep_for(50ms);
        t0 = clock_type::now();
        co_await a.async_release();
        while (waited == asio::error::would_block)
            co_await sleep_for(1ms);
        BOOST_TEST(!waited);
        BOOST_TEST_MESSAGE("1 MiB name: handed over in " << ms_since(t0) << " ms");
        co_await b.async_release();
        BOOST_TEST(!exists(name));
    });
}

BOOST_FIXTURE_TEST_CASE(foreign_hash_without_owner_is_wrong_type_and_untouched, fixture) {
    run([&]() -> awaitable<void> {
        // A user's hash, and one that looks like a lock but has no owner field.
        BOOST_TEST(srv.command({"HSET", "lock:hash", "field", "value"}) == ":1\r\n");
        BOOST_TEST(srv.command({"HSET", "lock:ownerless", "count", "1", "token", "7"}) == ":2\r\n");
        BOOST_TEST(srv.command({"PEXPIRE", "lock:ownerless", "600000"}) == ":1\r\n");
        for (const char* name : {"lock:hash", "lock:ownerless"}) {
            corolock::mutex m(conn, name);
            const auto before = srv.command({"HGETALL", name});
            auto [ec, l] = co_await m.async_try_acquire(tuple_deferred);
            BOOST_TEST(ec == error::wrong_type);
            BOOST_TEST(ec == corolock::condition::server_failure);
            BOOST_TEST(!l.owns());
            const auto t0 = clock_type::now();
            auto [ec2, l2] = co_await m.async_acquire_for(5s, tuple_deferred);
            BOOST_TEST(ec2 == error::wrong_type); // final at once, not retried until 5 s
            BOOST_TEST(ms_since(t0) < 500);
            BOOST_TEST(!l2.owns());
            auto [ec3, deleted] = co_await m.async_force_unlock(tuple_deferred);
            BOOST_TEST(!ec3);
            BOOST_TEST(!deleted);
            BOOST_TEST(srv.command({"HGETALL", name}) == before);
        }
        BOOST_TEST(srv.command({"PTTL", "lock:hash"}) == ":-1\r\n"); // no TTL was added
        const auto pttl = integer_of(srv.command({"PTTL", "lock:ownerless"}));
        BOOST_TEST(pttl > 500'000); // its own TTL, not a lease of ours
        BOOST_TEST(!exists("{lock:hash}:fence"));

        // The key turns into a string while held: the next renewal reports the lease lost
        // (the renew script only extends a hash owned by us) and the string stays as it is;
        // the release then answers lease_lost without touching it.
        corolock::mutex m(conn, "lock:replaced", lease_of(300ms));
        corolock::lease held = co_await m.async_acquire();
        BOOST_TEST(srv.command({"SET", "lock:replaced", "user data"}) == "+OK\r\n");
        auto [lost] = co_await held.async_wait_lost(tuple_deferred);
        BOOST_TEST(lost == error::lease_lost);
        BOOST_TEST(held.lost());
        auto [rel] = co_await held.async_release(tuple_deferred);
        BOOST_TEST(rel == error::lease_lost);
        BOOST_TEST(srv.command({"GET", "lock:replaced"}) == bulk("user data"));
        BOOST_TEST(srv.command({"PTTL", "lock:replaced"}) == ":-1\r\n");
    });
}

BOOST_FIXTURE_TEST_CASE(foreign_and_double_release_send_nothing_and_change_nothing, fixture) {
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:rel");
        corolock::lease owner = co_await m.async_acquire();
        const auto before = srv.command({"HGETALL", "lock:rel"});
        // A contender's empty lease (it never held): not_owner, and nothing goes to the server.
        corolock::lease stranger = co_await m.async_try_acquire();
        BOOST_TEST(!stranger.owns());
        const auto commands = conn.stats().commands;
        auto [ec] = co_await stranger.async_release(tuple_deferred);
        BOOST_TEST(ec == error::not_owner);
        BOOST_TEST(conn.stats().commands == commands);
        BOOST_TEST(srv.command({"HGETALL", "lock:rel"}) == before);

        // A nested hold outlives its lease's release: that release sends nothing and succeeds,
        // the lock stays until the hold ends, and then it goes without a call to wait for.
        auto hold = owner.hold();
        BOOST_TEST(hold.valid());
        BOOST_TEST(hold.token() == owner.token());
        co_await owner.async_release();
        BOOST_TEST(!owner.owns());
        BOOST_TEST(conn.stats().commands == commands);
        BOOST_TEST(exists("lock:rel"));
        BOOST_TEST(srv.command({"HGETALL", "lock:rel"}) == before);
        BOOST_TEST(hold.valid());
        hold.reset();
        for (int i = 0; i < 200 && exists("lock:rel"); ++i)
            co_await sleep_for(1ms);
        BOOST_TEST(!exists("lock:rel"));
        // Released twice: the lease was consumed by the first.
        auto [ec2] = co_await owner.async_release(tuple_deferred);
        BOOST_TEST(ec2 == error::not_owner);

        // A fixed lease runs out and someone else takes the lock: the old holder's release
        // (and its double) must leave the new holder's key exactly as it is.
        corolock::mutex fixed(conn, "lock:rel", lease_of(150ms, false));
        corolock::lease late = co_await fixed.async_acquire();
        co_await sleep_for(250ms);
        corolock::mutex other(conn, "lock:rel", lease_of(10s, false));
        corolock::lease next = co_await other.async_try_acquire();
        BOOST_REQUIRE(next.owns());
        BOOST_TEST(next.token() > late.token());
        const auto taken = srv.command({"HGETALL", "lock:rel"});
        const auto ttl_before = integer_of(srv.command({"PTTL", "lock:rel"}));
        auto [rec] = co_await late.async_release(tuple_deferred);
        BOOST_TEST(rec == error::lease_lost); // lost before the release: nothing sent
        auto [rec2] = co_await late.async_release(tuple_deferred);
        BOOST_TEST(rec2 == error::not_owner);
        BOOST_TEST(srv.command({"HGETALL", "lock:rel"}) == taken);
        BOOST_TEST(integer_of(srv.command({"PTTL", "lock:rel"})) <= ttl_before);
        BOOST_TEST(hget("lock:rel", "owner") == bulk(next.owner_id()));

        // Destroying a lease releases without waiting; a lease moved over another releases
        // the one it replaces.
        { corolock::lease gone = std::move(next); }
        for (int i = 0; i < 200 && exists("lock:rel"); ++i)
            co_await sleep_for(1ms);
        BOOST_TEST(!exists("lock:rel"));
        corolock::lease first = co_await m.async_acquire();
        corolock::mutex second_name(conn, "lock:rel2");
        corolock::lease second = co_await second_name.async_acquire();
        second = std::move(first);
        BOOST_TEST(second.name() == "lock:rel");
        for (int i = 0; i < 200 && exists("lock:rel2"); ++i)
            co_await sleep_for(1ms);
        BOOST_TEST(!exists("lock:rel2"));
        BOOST_TEST(exists("lock:rel"));
        co_await second.async_release();
        BOOST_TEST(!exists("lock:rel"));
    });
}

BOOST_FIXTURE_TEST_CASE(extend_after_expiry_does_not_resurrect_the_lease, fixture) {
    run([&]() -> awaitable<void> {
        // Fixed lease, with a nested hold, sleep past it.
        corolock::mutex fixed(conn, "lock:expired", lease_of(200ms, false));
        corolock::lease l = co_await fixed.async_acquire();
        auto hold = l.hold();
        const auto old_token = l.token();
        const std::string old_owner(l.owner_id());
        co_await sleep_for(350ms);
        BOOST_TEST(!exists("lock:expired"));
        BOOST_TEST(l.lost());
        BOOST_TEST(!l.valid());
        BOOST_TEST(!hold.valid());
        // The lease's own extend: refused as lost, nothing brought back.
        auto [xec] = co_await l.async_extend(tuple_deferred);
        BOOST_TEST(xec == error::lease_lost);
        BOOST_TEST(!exists("lock:expired"));
        // An extend of the expired lease, as the watchdog would send it: refused, no key.
        {
            const std::string_view keys[] = {"lock:expired"};
            const std::string lease = "200";
            const std::string_view args[] = {"h", old_owner, lease};
            corolock::generic_response resp;
            co_await conn.async_eval(corolock::detail::renew_script(), keys, args, resp);
            std::vector<bool> renewed;
            BOOST_TEST(!corolock::detail::decode_renew(resp, renewed));
            BOOST_REQUIRE_EQUAL(renewed.size(), 1u);
            BOOST_TEST(!renewed[0]);
            BOOST_TEST(!exists("lock:expired"));
        }
        // Meanwhile (the same 300 ms), a live fixed lease extended before its end outlasts it.
        corolock::mutex other(conn, "lock:extended", lease_of(200ms, false));
        corolock::lease e = co_await other.async_acquire();
        const auto first_end = e.valid_until();
        co_await sleep_for(120ms);
        co_await e.async_extend();
        BOOST_TEST((e.valid_until() > first_end));
        BOOST_TEST(integer_of(srv.command({"PTTL", "lock:extended"})) > 150);
        co_await sleep_for(180ms);           // 300 ms in: past the first deadline
        BOOST_TEST(!exists("lock:expired")); // nothing of ours renews it either
        BOOST_TEST(e.valid());
        BOOST_TEST(exists("lock:extended"));
        co_await e.async_release();
        BOOST_TEST(!exists("lock:extended"));
        // Acquiring again is a new acquisition: new owner, new token; the old lease and its
        // hold stay lost.
        corolock::lease again = co_await fixed.async_acquire();
        BOOST_TEST(again.token() > old_token);
        BOOST_TEST(again.owner_id() != old_owner);
        BOOST_TEST(hget("lock:expired", "owner") == bulk(again.owner_id()));
        BOOST_TEST(l.lost());
        hold.reset(); // not the last share: nothing happens
        auto [old_rel] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(old_rel == error::lease_lost); // lost before: nothing sent
        co_await sleep_for(20ms);
        BOOST_TEST(hget("lock:expired", "owner") == bulk(again.owner_id()));
        co_await again.async_release();
        BOOST_TEST(!exists("lock:expired"));

        // Watchdog: the key disappears under the holder. The next renewal reports the loss
        // and no later renewal recreates the key.
        corolock::mutex dog(conn, "lock:dog", lease_of(300ms));
        corolock::lease d = co_await dog.async_acquire();
        co_await sleep_for(150ms); // at least one renewal
        BOOST_TEST(srv.command({"DEL", "lock:dog"}) == ":1\r\n");
        const auto t0 = clock_type::now();
        auto [lost] = co_await d.async_wait_lost(tuple_deferred);
        BOOST_TEST(lost == error::lease_lost);
        BOOST_TEST_MESSAGE("deleted key reported lost after " << ms_since(t0)
                                                              << " ms (renewal period 100 ms)");
        BOOST_TEST(ms_since(t0) < 300);
        const auto renewals = corolock::get_lock_stats(conn).renewals;
        for (int i = 0; i < 10; ++i) { // 5 renewal periods
            co_await sleep_for(50ms);
            BOOST_TEST(!exists("lock:dog"));
        }
        BOOST_TEST(corolock::get_lock_stats(conn).renewals == renewals);
        auto [rel] = co_await d.async_release(tuple_deferred);
        BOOST_TEST(rel == error::lease_lost);
        BOOST_TEST(!exists("lock:dog"));
    });
}

BOOST_FIXTURE_TEST_CASE(release_of_a_lost_lease_reports_the_loss_with_a_hold_alive, fixture) {
    // A nested hold outlives its lease's release (the last share releases). If the lease was
    // lost before that release, the release must still answer lease_lost, as it does without a
    // hold: the caller learns from it that its critical section may have overlapped.
    run([&]() -> awaitable<void> {
        corolock::mutex m(conn, "lock:lost-held", lease_of(100ms, false));
        corolock::lease l = co_await m.async_acquire();
        auto hold = l.hold();
        co_await sleep_for(150ms);
        BOOST_TEST(l.lost());
        BOOST_TEST(!hold.valid());
        BOOST_TEST(!exists("lock:lost-held"));
        auto [rel] = co_await l.async_release(tuple_deferred);
        BOOST_TEST(!l.owns());
        BOOST_TEST(rel == error::lease_lost, "release of a lease lost before, with a nested hold "
                                             "alive, answered '"
                                                 << rel.message() << "'");
        hold.reset();
        BOOST_TEST(!exists("lock:lost-held"));
    });
}

BOOST_FIXTURE_TEST_CASE(out_of_memory_is_an_error_not_busy, fixture) {
    run([&]() -> awaitable<void> {
        // A lock held before memory runs out.
        corolock::mutex holder(conn, "lock:oom:held", lease_of(600ms));
        corolock::lease held = co_await holder.async_acquire();

        BOOST_TEST(srv.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) == "+OK\r\n");
        const auto base = info_field(srv, "memory", "used_memory");
        BOOST_TEST(srv.command({"CONFIG", "SET", "maxmemory", std::to_string(base + (1 << 20))}) ==
                   "+OK\r\n");
        const std::string value(64 * 1024, 'x');
        int filled = 0;
        std::string refused;
        for (; filled < 1000; ++filled) {
            refused = srv.command({"SET", "fill:" + std::to_string(filled), value});
            if (refused != "+OK\r\n")
                break;
        }
        BOOST_TEST_MESSAGE("filled " << filled << " x 64 KiB, then: " << refused);
        BOOST_REQUIRE(refused.starts_with("-OOM"));
        // Right at the limit, used memory wobbles with buffers (a small write may pass again);
        // put the limit well below what is used so every write is refused from here on.
        const auto used = info_field(srv, "memory", "used_memory");
        BOOST_TEST(srv.command({"CONFIG", "SET", "maxmemory", std::to_string(used / 2)}) ==
                   "+OK\r\n");
        BOOST_REQUIRE(srv.command({"SET", "small", "1"}).starts_with("-OOM"));

        // A free lock: a typed error at once, not "busy", not a wait until the deadline.
        corolock::mutex m(conn, "lock:oom");
        auto [ec, l] = co_await m.async_try_acquire(tuple_deferred);
        BOOST_TEST_MESSAGE("try_acquire under OOM: " << ec.message() << " (" << ec << ")");
        BOOST_TEST(ec == error::server_error);
        BOOST_TEST(ec == corolock::condition::server_failure);
        BOOST_TEST(!l.owns());
        auto t0 = clock_type::now();
        auto [ec2, l2] = co_await m.async_acquire_for(3s, tuple_deferred);
        BOOST_TEST(ec2 == error::server_error);
        BOOST_TEST(ms_since(t0) < 500);
        BOOST_TEST(!l2.owns());
        BOOST_TEST(!exists("lock:oom"));
        BOOST_TEST(!exists("{lock:oom}:fence"));
        // The mutex API gives the code only; the server's text is kept at the connection level.
        {
            const std::string_view keys[] = {"lock:oom", "{lock:oom}:fence"};
            const std::string_view args[] = {"0123456789abcdef0123456789abcdef", "1000", "601000"};
            corolock::generic_response resp;
            co_await conn.async_eval(corolock::detail::acquire_script(), keys, args, resp);
            const auto* e = corolock::find_error(resp);
            BOOST_REQUIRE(e != nullptr);
            BOOST_TEST_MESSAGE("server text: " << e->value);
            BOOST_TEST(e->value.starts_with("OOM"));
        }
        // A held lock is truly busy, OOM or not (the acquire script writes nothing then).
        corolock::mutex contender(conn, "lock:oom:held");
        auto [ec3, l3] = co_await contender.async_try_acquire(tuple_deferred);
        BOOST_TEST(!ec3);
        BOOST_TEST(!l3.owns()); // contended: an empty lease, no error

        // The holder keeps its lease: PEXPIRE is allowed under OOM, so renewals go on.
        co_await sleep_for(1500ms);
        BOOST_TEST(held.valid());
        BOOST_TEST(!held.lost());
        const auto pttl = integer_of(srv.command({"PTTL", "lock:oom:held"}));
        BOOST_TEST(pttl > 0);
        BOOST_TEST(pttl <= 600);

        // Release under OOM. Whatever it answers, the state must be consistent: either the key
        // is gone, or the release failed with a typed error, the lease is consumed all the same
        // (no renewal any more) and the key runs out with its lease.
        const std::string owner(held.owner_id());
        auto [rel] = co_await held.async_release(tuple_deferred);
        BOOST_TEST_MESSAGE("release under OOM: " << (rel ? rel.message() : "released"));
        BOOST_TEST(!held.owns());
        if (rel) {
            BOOST_TEST(rel == error::server_error);
            const auto left = integer_of(srv.command({"PTTL", "lock:oom:held"}));
            BOOST_TEST(left <= 600);
            co_await sleep_for(std::chrono::milliseconds(left + 50));
        }
        BOOST_TEST(!exists("lock:oom:held"));
        BOOST_TEST(srv.command({"CONFIG", "SET", "maxmemory", "0"}) == "+OK\r\n");
        // Memory back: the same mutex acquires.
        corolock::lease back = co_await m.async_try_acquire();
        BOOST_TEST(back.owns());
        if (back)
            co_await back.async_release();
    });
}

BOOST_AUTO_TEST_CASE(server_requiring_auth_without_password_fails_typed_and_promptly) {
    redis_process srv({"--requirepass", "secret"});
    asio::io_context ioc;
    auto cfg = config_for(srv); // no password configured
    cfg.max_wait_for_connection = 300ms;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            corolock::request ping;
            ping.push("PING");
            auto t0 = clock_type::now();
            auto [ec, n] = co_await conn.async_exec(ping, corolock::ignore, tuple_deferred);
            BOOST_TEST_MESSAGE("exec: " << ec.message() << " after " << ms_since(t0) << " ms");
            BOOST_TEST(ec == error::auth_failed);
            BOOST_TEST(ms_since(t0) < 1000);

            corolock::mutex m(conn, "lock:auth");
            t0 = clock_type::now();
            auto [ec2, l2] = co_await m.async_acquire_for(10s, tuple_deferred);
            BOOST_TEST_MESSAGE("acquire: " << ec2.message() << " after " << ms_since(t0) << " ms");
            BOOST_TEST((ec2 == error::auth_failed || ec2 == error::not_connected));
            BOOST_TEST(ms_since(t0) < 1000);
            BOOST_TEST(!l2.owns());
            t0 = clock_type::now();
            auto [ec3, l3] = co_await m.async_try_acquire(tuple_deferred);
            BOOST_TEST((ec3 == error::auth_failed || ec3 == error::not_connected));
            BOOST_TEST(!l3.owns());
            BOOST_TEST(ms_since(t0) < 1000);
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(conn.stats().connects == 0u);
    BOOST_TEST(srv.command({"DBSIZE"}) == ":0\r\n"); // command() authenticates itself

    // Without reconnection async_run itself ends with the cause, promptly.
    asio::io_context ioc2;
    cfg.reconnect_wait = 0s;
    corolock::connection once(ioc2.get_executor(), cfg, quiet());
    error_code run_ec;
    const auto t0 = clock_type::now();
    once.async_run([&](error_code e) { run_ec = e; });
    ioc2.run_for(10s);
    BOOST_TEST(run_ec == error::auth_failed);
    BOOST_TEST(ms_since(t0) < 1000);
}

BOOST_AUTO_TEST_CASE(closed_port_acquire_fails_within_max_wait_for_connection) {
    const auto port = closed_port();

    // No reconnection: async_run reports the refusal at once.
    {
        asio::io_context ioc;
        auto cfg = config_for_port(port);
        cfg.reconnect_wait = 0s;
        corolock::connection conn(ioc.get_executor(), cfg, quiet());
        error_code run_ec;
        const auto t0 = clock_type::now();
        conn.async_run([&](error_code e) { run_ec = e; });
        ioc.run_for(10s);
        const auto took = ms_since(t0);
        BOOST_TEST_MESSAGE("async_run on a closed port: " << run_ec.message() << " after " << took
                                                          << " ms");
        BOOST_TEST(run_ec == asio::error::connection_refused);
        BOOST_TEST(took < 200);
        // The lock on a connection that has stopped: not_connected at once.
        corolock::mutex m(conn, "lock:closed");
        error_code acq_ec;
        bool leased = false;
        m.async_acquire([&](error_code ec, corolock::lease l) {
            acq_ec = ec;
            leased = l.owns();
        });
        const auto t1 = clock_type::now();
        ioc.restart();
        ioc.run_for(5s);
        BOOST_TEST(acq_ec == error::not_connected);
        BOOST_TEST(!leased);
        BOOST_TEST(ms_since(t1) < 200);
    }

    // Reconnecting: an acquire waits max_wait_for_connection for a connection, then fails with
    // a connection-failure condition (even though its own wait is much longer).
    asio::io_context ioc;
    auto cfg = config_for_port(port);
    cfg.max_wait_for_connection = 300ms;
    corolock::connection conn(ioc.get_executor(), cfg, quiet());
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            conn.async_run(asio::detached);
            corolock::mutex m(conn, "lock:closed");
            auto t0 = clock_type::now();
            auto [ec, l] = co_await m.async_acquire_for(30s, tuple_deferred);
            auto took = ms_since(t0);
            BOOST_TEST_MESSAGE("acquire on a closed port: " << ec.message() << " after " << took
                                                            << " ms (max_wait_for_connection 300)");
            BOOST_TEST(ec == error::not_connected);
            BOOST_TEST(ec == corolock::condition::connection_failure);
            BOOST_TEST(took >= 250);
            BOOST_TEST(took < 800);
            BOOST_TEST(!l.owns());
            t0 = clock_type::now();
            auto [ec2, l2] = co_await m.async_try_acquire(tuple_deferred);
            BOOST_TEST(ec2 == corolock::condition::connection_failure);
            BOOST_TEST(!l2.owns());
            BOOST_TEST(ms_since(t0) < 800);
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(conn.stats().connects == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s10_bad_input
