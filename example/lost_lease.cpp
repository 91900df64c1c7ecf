// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A holder that loses its lease must not write any more, and fencing tokens make sure it
// cannot. Two ways to lose a lease, one process, one connection, two holders A and B (two mutex
// objects: two owners):
//
// 1. A pause longer than the lease. A takes `lease:<run>:lock` with a fixed 500 ms lease (no
//    watchdog) and writes the protected key with a fenced write; then it "pauses" for 800 ms (a
//    GC pause, a swapped-out VM). At 500 ms its lease ends: `async_wait_lost` completes with
//    `lease_lost` and `lost()` turns true. B, already waiting, takes the lock with a newer token
//    and writes. When A wakes and tries to write, the write is refused (`not_owner`: A's mutex
//    knows the lease is gone, so nothing reaches Redis).
//
// 2. The key disappears before the holder can notice. A holds the lock with a 3 s watchdog lease
//    (renewed every second). The key is deleted behind its back (as a failover to a replica that
//    never got the key would do) and B takes the lock at once. A still believes it holds the
//    lock, so its fenced write goes to Redis, where the fencing token check refuses it
//    (`stale_token`). A's next renewal finds the key gone and reports the loss.
//
// In both cases the protected key ends with B's value.
//
//   corolock_lost_lease [--host H] [--port P]
//
// Exits 0 only if every refusal and signal happened as described.
#include "common.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

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

std::string token_text(const corolock::mutex& m) {
    return "token " + std::to_string(m.token());
}

asio::awaitable<error_code> fenced_write(corolock::mutex& m, const std::string& key,
                                         const std::string& value) {
    const std::string_view keys[] = {key};
    const std::string_view args[] = {value};
    corolock::generic_response resp;
    auto [ec] = co_await m.async_fenced_eval(write_script(), keys, args, resp, tuple);
    co_return ec;
}

asio::awaitable<std::string> get(corolock::connection& conn, const std::string& key) {
    corolock::request r;
    r.push("GET", key);
    corolock::generic_response resp;
    co_await conn.async_exec(r, resp);
    co_return resp.empty() ? std::string() : resp[0].value;
}

// Completes when `m`'s lease is lost; records when and with what.
asio::awaitable<void> watch_lost(corolock::mutex& m, clock_type::time_point t0, error_code& ec,
                                 double& at_ms) {
    auto [e] = co_await m.async_wait_lost(tuple);
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
    int on_lost_calls = 0;
    fixed.on_lost = [&](error_code) { ++on_lost_calls; };
    corolock::mutex a(conn, lock, fixed), b(conn, lock);

    const auto t0 = clock_type::now();
    co_await a.async_acquire();
    const auto a_token = a.token();
    c.expect(!(co_await fenced_write(a, data, "written by A")), "A writes with " + token_text(a));

    error_code lost_ec;
    double lost_at = -1;
    asio::co_spawn(co_await asio::this_coro::executor, watch_lost(a, t0, lost_ec, lost_at),
                   asio::detached);

    // B waits for the lock meanwhile, and writes as soon as it has it.
    error_code b_ec, b_write;
    double b_at = -1;
    auto b_side = [&]() -> asio::awaitable<void> {
        auto [e] = co_await b.async_acquire_for(3s, tuple);
        b_ec = e;
        b_at = ex::to_ms(clock_type::now() - t0);
        if (!e)
            b_write = co_await fenced_write(b, data, "written by B");
    };
    asio::co_spawn(co_await asio::this_coro::executor, b_side(), asio::detached);

    co_await ex::sleep_for(800ms); // A's pause
    const double woke_at = ex::to_ms(clock_type::now() - t0);
    c.expect(lost_ec == error::lease_lost, "A's async_wait_lost completed with " +
                                               lost_ec.message() + " at " +
                                               std::to_string(int(lost_at)) + " ms (lease 500 ms)");
    c.expect(a.lost() && !a.held(), "A: lost() is true, held() is false");
    c.expect(on_lost_calls == 1, "A's on_lost ran once");
    c.expect(!b_ec && b.token() > a_token, "B acquired at " + std::to_string(int(b_at)) +
                                               " ms with " + token_text(b) + " > " +
                                               std::to_string(a_token));
    c.expect(!b_write, "B writes with " + token_text(b));
    const auto a_late = co_await fenced_write(a, data, "written by A after its pause");
    c.expect(a_late == error::not_owner || a_late == error::stale_token,
             "A wakes at " + std::to_string(int(woke_at)) +
                 " ms; its write is refused: " + a_late.message());
    c.expect(co_await get(conn, data) == "written by B", "the data holds B's value");
    auto [rel] = co_await a.async_release(tuple);
    c.expect(rel == error::not_owner,
             "A's late release is refused (" + rel.message() + "), B's lock untouched");
    co_await b.async_release();
}

asio::awaitable<void> key_lost_unnoticed(corolock::connection& conn, const std::string& run,
                                         checker& c) {
    std::cout << "2. A's key disappears before A can notice (watchdog lease 3 s)\n";
    const std::string lock = "lease:" + run + ":lock2", data = "lease:" + run + ":report2";
    corolock::mutex_options opts;
    opts.lease = 3s;
    corolock::mutex a(conn, lock, opts), b(conn, lock, opts);

    const auto t0 = clock_type::now();
    co_await a.async_acquire();
    c.expect(!(co_await fenced_write(a, data, "written by A")), "A writes with " + token_text(a));
    error_code lost_ec;
    double lost_at = -1;
    asio::co_spawn(co_await asio::this_coro::executor, watch_lost(a, t0, lost_ec, lost_at),
                   asio::detached);

    corolock::request del;
    del.push("DEL", lock); // the key is gone: as after a failover that lost it
    co_await conn.async_exec(del, corolock::ignore);
    const bool b_ok = co_await b.async_try_acquire();
    c.expect(b_ok && b.token() > a.token(),
             "the key is deleted; B acquires at once with " + token_text(b));
    c.expect(!(co_await fenced_write(b, data, "written by B")), "B writes");
    c.expect(a.held() && !a.lost(), "A has not noticed yet: held() is true");
    const auto a_stale = co_await fenced_write(a, data, "written by A, unaware");
    c.expect(a_stale == error::stale_token,
             "A's write reaches Redis and is refused: " + a_stale.message());
    c.expect(co_await get(conn, data) == "written by B", "the data holds B's value");

    while (lost_at < 0 && clock_type::now() - t0 < 5s)
        co_await ex::sleep_for(10ms);
    c.expect(lost_ec == error::lease_lost,
             "A's next renewal finds the key gone: async_wait_lost completed with " +
                 lost_ec.message() + " at " + std::to_string(int(lost_at)) +
                 " ms (renewal every 1000 ms)");
    c.expect(a.lost() && !a.held(), "A: lost() is true");
    co_await b.async_release();
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
                corolock::request cleanup;
                for (const char* n : {"1", "2"}) {
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
