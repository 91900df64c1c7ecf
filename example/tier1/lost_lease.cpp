// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A holder that loses its lease must not write any more, and fencing tokens make sure it
// cannot. One process, one connection, one shared `corolock::mutex` per lock name (as a service
// would keep it), and two acquisitions of it: leases A and B, two owners with their own tokens.
//
// 1. A pause longer than the lease. A takes `lease:<run>:lock1` with a fixed 500 ms lease (no
//    watchdog) and writes the protected key with a fenced write; then it "pauses" for 800 ms (a
//    GC pause, a swapped-out VM). Before 500 ms its lease ends locally: `async_wait_lost`
//    completes with `lease_lost`, `lost()` turns true and `valid()` false. B, already waiting on
//    the same mutex, gets its own lease with a newer token and writes. When A wakes, its write is
//    refused without reaching Redis (`lease_lost`: A's lease knows it is gone), and its release
//    reports `lease_lost` (its critical section may have overlapped B's) without touching B's
//    lock.
//
// 2. The key disappears before the holder can notice. A holds `lease:<run>:lock2` with a 3 s
//    watchdog lease (renewed every second). The key is deleted behind its back (as a failover to
//    a replica that never got the key would do) and B takes the lock at once. A's lease is still
//    `valid()`, so its fenced write goes to Redis, where the fencing token check refuses it
//    (`stale_token`). A's next renewal finds the key gone and reports the loss.
//
// 3. The scoped form. `with_lock` runs a body that takes longer than its fixed 300 ms lease; when
//    the lease is lost the body is cancelled at once and `with_lock` throws `lease_lost`.
//
// In cases 1 and 2 the protected key ends with B's value.
//
//   corolock_lost_lease [--host H] [--port P]
//
// Exits 0 only if every refusal and signal happened as described.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace ex = corolock_example;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using corolock::error;
using corolock::error_code;

constexpr auto tuple = asio::as_tuple(asio::deferred);

// KEYS[1] = the protected key; ARGV[1] = the value.
const corolock::fenced_script& write_script() {
    static const corolock::fenced_script s("return redis.call('SET', KEYS[1], ARGV[1])");
    return s;
}

struct checker {
    std::vector<std::string> failed;
    void expect(bool ok, std::string what) {
        std::cout << (ok ? "  ok    " : "  FAIL  ") << what << "\n";
        if (!ok)
            failed.push_back(std::move(what));
    }
};

std::string token_text(const corolock::lease& l) {
    return "token " + std::to_string(l.token().value());
}

std::string ms_text(double ms) {
    return std::to_string(static_cast<long>(ms)) + " ms";
}

asio::awaitable<error_code> fenced_write(corolock::lease& l, const std::string& key,
                                         const std::string& value) {
    const std::string_view keys[] = {key};
    const std::string_view args[] = {value};
    corolock::generic_response resp;
    auto [ec] = co_await l.async_fenced_eval(write_script(), keys, args, resp, tuple);
    co_return ec;
}

asio::awaitable<std::string> get(corolock::connection& conn, const std::string& key) {
    corolock::request r;
    r.push("GET", key);
    corolock::generic_response resp;
    co_await conn.async_exec(r, resp);
    co_return resp.empty() ? std::string() : resp[0].value;
}

// Completes when `l` is lost; records when and with what. It needs the lease only to start:
// the wait keeps its own reference to the acquisition.
asio::awaitable<void> watch_lost(corolock::lease& l, clock_type::time_point t0, error_code& ec,
                                 double& at_ms) {
    auto [e] = co_await l.async_wait_lost(tuple);
    ec = e;
    at_ms = ex::to_ms(clock_type::now() - t0);
}

asio::awaitable<void> pause_longer_than_lease(corolock::connection& conn, const std::string& run,
                                              checker& c) {
    std::cout << "1. A pauses longer than its fixed 500 ms lease\n";
    const std::string lock = "lease:" + run + ":lock1", data = "lease:" + run + ":report1";
    corolock::mutex_options fixed;
    fixed.lease = 500ms;
    fixed.watchdog = false;
    corolock::mutex m(conn, lock, fixed); // A's
    // B's handle on the same lock: a longer fixed lease, so that B still holds when the checks
    // below run, however late A's pause ends on a loaded machine.
    corolock::mutex_options b_fixed = fixed;
    b_fixed.lease = 5s;
    corolock::mutex mb(conn, lock, b_fixed);
    const auto exec = co_await asio::this_coro::executor;

    const auto t0 = clock_type::now();
    corolock::lease a = co_await m.async_acquire();
    const auto a_token = a.token();
    // The lease counts from before the acquire was sent, so it ends within 500 ms of now.
    const auto got = clock_type::now();
    c.expect(a.valid() && a.valid_until() > got && a.valid_until() < got + 500ms,
             "A acquires with " + token_text(a) + ", valid() until " +
                 ms_text(ex::to_ms(a.valid_until() - t0)));
    c.expect(!(co_await fenced_write(a, data, "written by A")), "A writes with " + token_text(a));

    error_code lost_ec;
    double lost_at = -1;
    asio::co_spawn(exec, watch_lost(a, t0, lost_ec, lost_at), asio::detached);

    // B waits on the same mutex meanwhile, and writes as soon as it has its lease.
    error_code b_ec, b_write;
    double b_at = -1;
    corolock::lease b;
    auto b_side = [&]() -> asio::awaitable<void> {
        auto [e, l] = co_await mb.async_acquire_for(3s, tuple);
        b_ec = e;
        b = std::move(l);
        b_at = ex::to_ms(clock_type::now() - t0);
        if (!e)
            b_write = co_await fenced_write(b, data, "written by B");
    };
    asio::co_spawn(exec, b_side(), asio::detached);

    co_await ex::sleep_for(800ms); // A's pause
    // If B gave up or is stuck, do not leave its coroutine behind.
    while (b_at < 0) {
        mb.cancel();
        co_await ex::sleep_for(10ms);
    }
    const double woke_at = ex::to_ms(clock_type::now() - t0);
    c.expect(lost_ec == error::lease_lost && lost_at >= 0 && lost_at < 800,
             "A's async_wait_lost completed with " + lost_ec.message() + " at " + ms_text(lost_at) +
                 " (lease 500 ms)");
    c.expect(a.owns() && a.lost() && !a.valid(),
             "A: lost() is true, valid() is false (still owns(): not released yet)");
    c.expect(!b_ec && b.valid() && b.token() > a_token, "B acquired at " + ms_text(b_at) +
                                                            " with " + token_text(b) + " > " +
                                                            std::to_string(a_token.value()));
    c.expect(!b_write, "B writes with " + token_text(b));
    const auto a_late = co_await fenced_write(a, data, "written by A after its pause");
    c.expect(a_late == error::lease_lost,
             "A wakes at " + ms_text(woke_at) +
                 "; its write is refused before reaching Redis: " + a_late.message());
    c.expect(co_await get(conn, data) == "written by B", "the data holds B's value");
    auto [rel] = co_await a.async_release(tuple);
    c.expect(rel == error::lease_lost && !a.owns(),
             "A's release reports " + rel.message() + " (its section may have overlapped B's)");
    while (lost_at < 0) // the release ended the wait if the loss was never reported
        co_await ex::sleep_for(10ms);
    const auto ttl = co_await mb.async_remaining_ttl();
    c.expect(b.valid() && ttl > 0, "B's lock is untouched (" + std::to_string(ttl) + " ms left)");
    auto [brel] = co_await b.async_release(tuple);
    c.expect(!brel, "B releases");
}

asio::awaitable<void> key_lost_unnoticed(corolock::connection& conn, const std::string& run,
                                         checker& c) {
    std::cout << "2. A's key disappears before A can notice (watchdog lease 3 s)\n";
    const std::string lock = "lease:" + run + ":lock2", data = "lease:" + run + ":report2";
    corolock::mutex_options opts;
    opts.lease = 3s;
    corolock::mutex m(conn, lock, opts); // shared by A and B

    const auto t0 = clock_type::now();
    corolock::lease a = co_await m.async_acquire();
    c.expect(!(co_await fenced_write(a, data, "written by A")), "A writes with " + token_text(a));
    error_code lost_ec;
    double lost_at = -1;
    asio::co_spawn(co_await asio::this_coro::executor, watch_lost(a, t0, lost_ec, lost_at),
                   asio::detached);

    corolock::request del;
    del.push("DEL", lock); // the key is gone: as after a failover that lost it
    co_await conn.async_exec(del, corolock::ignore);
    corolock::lease b = co_await m.async_try_acquire();
    c.expect(b.owns() && b.token() > a.token(),
             "the key is deleted; B's try-acquire succeeds at once with " + token_text(b));
    c.expect(!(co_await fenced_write(b, data, "written by B")), "B writes");
    c.expect(a.valid() && !a.lost(), "A has not noticed yet: valid() is true");
    const auto a_stale = co_await fenced_write(a, data, "written by A, unaware");
    c.expect(a_stale == error::stale_token,
             "A's write reaches Redis and is refused: " + a_stale.message());
    c.expect(co_await get(conn, data) == "written by B", "the data holds B's value");

    while (lost_at < 0 && clock_type::now() - t0 < 5s)
        co_await ex::sleep_for(10ms);
    c.expect(lost_ec == error::lease_lost,
             "A's next renewal finds the key gone: async_wait_lost completed with " +
                 lost_ec.message() + " at " + ms_text(lost_at) + " (renewal every 1000 ms)");
    c.expect(a.lost() && !a.valid(), "A: lost() is true, valid() is false");
    a = {};             // destroying a lost lease sends nothing
    while (lost_at < 0) // the release ended the wait if the loss was never reported
        co_await ex::sleep_for(10ms);
    co_await ex::sleep_for(50ms);
    const auto ttl = co_await m.async_remaining_ttl();
    c.expect(b.valid() && ttl > 0,
             "A's lease dropped; B's lock is untouched (" + std::to_string(ttl) + " ms left)");
    co_await b.async_release();
}

asio::awaitable<void> scoped_body_cancelled(corolock::connection& conn, const std::string& run,
                                            checker& c) {
    std::cout << "3. with_lock: a body that outlives its fixed 300 ms lease is cancelled\n";
    corolock::mutex_options fixed;
    fixed.lease = 300ms;
    fixed.watchdog = false;
    corolock::mutex m(conn, "lease:" + run + ":lock3", fixed);

    const auto t0 = clock_type::now();
    error_code body_ec;
    double body_end = -1;
    error_code thrown;
    try {
        co_await corolock::with_lock(m, [&](corolock::lease& l) -> asio::awaitable<void> {
            (void)l;
            asio::steady_timer work(co_await asio::this_coro::executor, 2s); // the slow work
            auto [ec] = co_await work.async_wait(asio::as_tuple(asio::use_awaitable));
            body_ec = ec;
            body_end = ex::to_ms(clock_type::now() - t0);
        });
    } catch (const boost::system::system_error& e) {
        thrown = e.code();
    }
    const double end = ex::to_ms(clock_type::now() - t0);
    c.expect(body_ec == asio::error::operation_aborted && body_end >= 0 && body_end < 1000,
             "the body's work was cancelled at " + ms_text(body_end) + " (" + body_ec.message() +
                 ")");
    c.expect(thrown == error::lease_lost,
             "with_lock threw " + thrown.message() + " at " + ms_text(end));
    auto relock = co_await m.async_try_acquire();
    c.expect(relock.owns(), "the lock is free again afterwards");
    co_await relock.async_release();
}

} // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const auto server = ex::parse_server_options(argc, argv, exit_code);
    if (!server)
        return exit_code;
    const std::string run = ex::make_run_tag();
    checker c;
    std::cout << "server              " << server->host << ":" << server->port << "\n";
    try {
        ex::run_with_connection(
            *server, "corolock-lost-lease",
            [&](corolock::connection& conn) -> asio::awaitable<void> {
                co_await pause_longer_than_lease(conn, run, c);
                co_await key_lost_unnoticed(conn, run, c);
                co_await scoped_body_cancelled(conn, run, c);
                corolock::request cleanup;
                for (const char* n : {"1", "2", "3"}) {
                    const std::string lock = "lease:" + run + ":lock" + n;
                    cleanup.push("DEL", lock, "{" + lock + "}:fence",
                                 "lease:" + run + ":report" + n);
                }
                co_await conn.async_exec(cleanup, corolock::ignore);
            },
            30s);
    } catch (const std::exception& e) {
        c.expect(false, std::string("ran to the end: ") + e.what());
    }
    std::cout << (c.failed.empty() ? "OK" : "FAILED") << "\n";
    return c.failed.empty() ? 0 : 1;
}
