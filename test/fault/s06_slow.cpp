// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S6: a slow network and a slow server (issue 4). (a) The holder's connection is delayed through
// the fault proxy; (b) the server stops for DEBUG SLEEP 1.5; (c) CLIENT PAUSE 1500 WRITE. In
// every case: no false success (a renewal answered after the lease deadline counts as lost, and
// the holder never believes it holds while the server says otherwise or another client holds),
// nothing hangs, and every acquire with a deadline ends by it.
#include "common/coro_test.hpp"
#include "common/fault_proxy.hpp"
#include "common/redis_process.hpp"
#include "common/test_config.hpp"
#include <corolock/connection.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s06_slow {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::test::config_for;
using corolock::test::direction;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace {

using corolock::test::tuple_deferred;
constexpr auto lease = 1000ms;
constexpr auto slack = 150ms; // scheduler slack on a loaded 2-core machine

long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

corolock::mutex_options lease_opts() {
    corolock::mutex_options o;
    o.lease = lease;
    return o;
}

std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

// Everything the server executes, from MONITOR on a direct connection: printed when a check
// fails, to show the order in which the server saw the scripts.
struct monitor {
    explicit monitor(asio::any_io_executor ex) : sock(ex) {}
    asio::ip::tcp::socket sock;
    std::string seen;

    awaitable<void> start(std::uint16_t port) {
        co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port},
                                    asio::use_awaitable);
        co_await asio::async_write(sock, asio::buffer(std::string("MONITOR\r\n")),
                                   asio::use_awaitable);
        asio::co_spawn(sock.get_executor(), read(), asio::detached);
    }
    awaitable<void> read() {
        char buf[8192];
        for (;;) {
            auto [ec, n] = co_await sock.async_read_some(asio::buffer(buf),
                                                         asio::as_tuple(asio::use_awaitable));
            if (ec)
                co_return;
            seen.append(buf, n);
        }
    }
    void stop() {
        boost::system::error_code ec;
        sock.close(ec);
    }
    // The lines that mention `what` (the script bodies are long: keep the start of each).
    std::string lines_with(const std::string& what) const {
        std::string out;
        std::size_t pos = 0;
        while (pos < seen.size()) {
            auto end = seen.find('\n', pos);
            if (end == std::string::npos)
                end = seen.size();
            const auto line = seen.substr(pos, end - pos);
            if (line.find(what) != std::string::npos)
                out += line.substr(0, 220) + "\n";
            pos = end + 1;
        }
        return out;
    }
};

// Samples, from a direct side connection, whether the server agrees with the holder: whenever
// the holder's lease says "valid" both before a query is sent and after its answer arrives, the
// key must be the holder's with time left (the holder's deadline, counted from the send time of
// its last renewal, must never be later than the server's expiry).
struct agreement_sampler {
    corolock::connection& side;
    const corolock::lease& holder;
    bool stop = false;
    bool running = false;
    int samples = 0, held_samples = 0, false_success = 0, errors = 0;

    awaitable<void> run() {
        running = true;
        while (!stop) {
            const bool before = holder.valid();
            corolock::request req;
            req.push("HGET", holder.name(), "owner");
            req.push("PTTL", holder.name());
            corolock::generic_response resp;
            auto [ec, n] = co_await side.async_exec(req, resp, tuple_deferred);
            const bool after = holder.valid();
            ++samples;
            if (ec) {
                ++errors;
            } else if (before && after) {
                ++held_samples;
                const bool ours = resp.at(0).value == holder.owner_id();
                const bool alive = std::stoll(resp.at(1).value) > 0;
                if (!ours || !alive)
                    ++false_success;
            }
            co_await sleep_for(20ms);
        }
        running = false;
    }
};

// When the holder was told its lease was lost.
struct lost_probe {
    bool lost = false;
    error_code ec;
    clock_type::time_point at{};
    void arm(corolock::lease& l) {
        l.async_wait_lost([this](error_code e) {
            ec = e;
            at = clock_type::now();
            lost = true;
        });
    }
};

awaitable<void> wait_until(const bool& flag, clock_type::duration limit) {
    const auto until = clock_type::now() + limit;
    while (!flag && clock_type::now() < until)
        co_await sleep_for(5ms);
}

// Loads the acquire, renew and release scripts into the server's cache with one short cycle, so
// that a scenario measures the fault it injects, not the one-time NOSCRIPT round trip.
awaitable<void> warm_scripts(corolock::connection& conn) {
    corolock::mutex_options o;
    o.lease = 300ms;
    corolock::mutex m(conn, "s6:warm-up", o);
    corolock::lease l = co_await m.async_acquire();
    while (corolock::get_lock_stats(conn).renewals == 0)
        co_await sleep_for(20ms);
    co_await l.async_release();
}

// ---- (b) and (c): the server stalls while a holder holds and waiters wait.
struct waiter_result {
    clock_type::duration offset{}; // start, relative to the stall
    clock_type::time_point started{}, finished{};
    error_code ec;
    bool done = false;
    corolock::lease l; // what the acquire gave
    lost_probe lost;   // armed when the acquire succeeds
};

// `cold`: the scripts are not cached yet, so the stall also meets NOSCRIPT retries (which once
// reordered an undo behind the next acquire).
awaitable<void> stalled_server(redis_process& srv, std::string tag, corolock::request stall,
                               bool cold) {
    auto ex = co_await asio::this_coro::executor;
    auto side_cfg = config_for(srv);
    side_cfg.health_check_interval = 0s; // the side connection issues the stall and waits it out
    corolock::connection holder_conn(ex, config_for(srv), quiet()),
        waiter_conn(ex, config_for(srv), quiet()), side(ex, side_cfg, quiet());
    holder_conn.async_run(asio::detached);
    waiter_conn.async_run(asio::detached);
    side.async_run(asio::detached);

    if (!cold)
        co_await warm_scripts(holder_conn);
    const std::string name = "s6:" + tag;
    monitor mon(ex);
    co_await mon.start(srv.port());
    corolock::mutex holder(holder_conn, name, lease_opts());
    corolock::lease held = co_await holder.async_acquire();
    const auto acquired_token = held.token();
    lost_probe probe;
    probe.arm(held);

    // Waiters with a 2 s deadline, started before, at and after the stall's start: their
    // attempts meet the stall at different points of their wait.
    constexpr auto wait = 2000ms;
    const std::vector<clock_type::duration> offsets = {-1000ms, -500ms, -100ms, 0ms, 300ms, 700ms};
    const auto first_start = clock_type::now() + 100ms;
    const auto t_stall = first_start - offsets.front();
    // The waiting client's one handle on the lock, shared by all its acquires.
    corolock::mutex waiters(waiter_conn, name, lease_opts());
    std::vector<std::unique_ptr<waiter_result>> results;
    for (std::size_t i = 0; i < offsets.size(); ++i) {
        results.push_back(std::make_unique<waiter_result>());
        results.back()->offset = offsets[i];
    }
    auto start_waiter = [&](std::size_t i) {
        auto& r = *results[i];
        r.started = clock_type::now();
        waiters.async_acquire_for(wait, [&r](error_code ec, corolock::lease l) {
            r.ec = ec;
            r.l = std::move(l);
            r.finished = clock_type::now();
            r.done = true;
            if (!ec)
                r.lost.arm(r.l);
        });
    };
    bool stall_done = false;
    error_code stall_ec;
    clock_type::time_point stall_started{}, stall_ended{};
    std::size_t next = 0;
    bool stalled = false;
    while (next < offsets.size() || !stalled) {
        const auto t_next =
            next < offsets.size() ? t_stall + offsets[next] : clock_type::time_point::max();
        if (!stalled && t_stall <= t_next) {
            co_await sleep_for(t_stall - clock_type::now());
            stall_started = clock_type::now();
            side.async_exec(stall, corolock::ignore, [&](error_code ec, std::size_t) {
                stall_ec = ec;
                stall_ended = clock_type::now();
                stall_done = true;
            });
            stalled = true;
            continue;
        }
        co_await sleep_for(t_next - clock_type::now());
        start_waiter(next++);
    }
    for (auto& r : results)
        co_await wait_until(r->done, wait + 3s);
    co_await wait_until(stall_done, 3s);
    BOOST_TEST(!stall_ec);
    BOOST_TEST_MESSAGE(tag << ": stall answered " << ms(stall_ended - stall_started)
                           << " ms after it was sent");

    // Every acquire ends by its deadline; at most one succeeds at a time, and never while the
    // holder has not been told of its loss.
    BOOST_REQUIRE(probe.lost);
    BOOST_TEST(probe.ec == error::lease_lost);
    BOOST_TEST_MESSAGE(tag << ": holder told lost " << ms(probe.at - stall_started)
                           << " ms after the stall began (lease " << ms(lease) << " ms)");
    BOOST_TEST((probe.at <= stall_started + lease + slack));
    long long worst_overshoot = -1000000;
    int successes = 0, late_ends = 0;
    corolock::lease* winner = nullptr;
    for (std::size_t i = 0; i < results.size(); ++i) {
        auto& r = *results[i];
        BOOST_TEST_CONTEXT(tag << " waiter started " << ms(r.offset) << " ms from the stall") {
            BOOST_REQUIRE(r.done);
            const auto overshoot = ms(r.finished - (r.started + wait));
            worst_overshoot = std::max(worst_overshoot, overshoot);
            BOOST_TEST_MESSAGE(tag << ": waiter at " << ms(r.offset) << " ms: '" << r.ec.message()
                                   << "' after " << ms(r.finished - r.started) << " ms (overshoot "
                                   << overshoot << " ms)" << (r.lost.lost ? ", then lost" : ""));
            if (overshoot > ms(slack))
                ++late_ends;
            // lease_lost: granted after its lease deadline, so given back; server_timeout: the
            // deadline passed with the server answering nothing since the attempt was sent;
            // connect_timeout: the same while the connection was down, its last reconnect timed
            // out by the stall (the cause an acquire on a down connection reports).
            BOOST_TEST((!r.ec || r.ec == error::acquire_timeout || r.ec == error::server_timeout ||
                        r.ec == error::connect_timeout || r.ec == error::lease_lost),
                       r.ec.message());
            BOOST_TEST(r.l.owns() == !r.ec); // a lease exactly when it succeeded
            if (!r.ec) {
                ++successes;
                if (!r.lost.lost)
                    winner = &r.l;
                BOOST_TEST((probe.at <= r.finished)); // the stalled holder was told first
                BOOST_TEST(r.l.token() > acquired_token);
            }
        }
    }
    // No two waiters ever believed they held the lock at once: each success begins after the
    // previous holder was told of its loss (a success not lost since still holds).
    std::vector<waiter_result*> wins;
    for (auto& r : results)
        if (!r->ec)
            wins.push_back(r.get());
    std::sort(wins.begin(), wins.end(), [](auto* a, auto* b) { return a->finished < b->finished; });
    int overlaps = 0;
    for (std::size_t i = 0; i + 1 < wins.size(); ++i)
        if (!wins[i]->lost.lost || wins[i]->lost.at > wins[i + 1]->finished) {
            ++overlaps;
            BOOST_TEST_MESSAGE(tag << ": OVERLAP: waiter at " << ms(wins[i]->offset)
                                   << " ms still believed it held when the waiter at "
                                   << ms(wins[i + 1]->offset) << " ms acquired");
        }
    BOOST_TEST_MESSAGE(tag << ": worst overshoot " << worst_overshoot << " ms; " << successes
                           << " of " << results.size() << " waiters acquired; " << overlaps
                           << " overlaps");
    BOOST_TEST(overlaps == 0);
    // Issue 4: every acquire ends by its deadline, even with its script stuck in the stall.
    BOOST_TEST(late_ends == 0);
    if (overlaps > 0 || worst_overshoot > ms(slack))
        BOOST_TEST_MESSAGE(tag << ": the server saw, for " << name << ":\n"
                               << mon.lines_with("\"" + name + "\""));
    if (winner) {
        BOOST_TEST(srv.command({"HGET", name, "owner"}) == bulk(std::string(winner->owner_id())));
        co_await winner->async_release();
    }
    for (auto& r : results) // the other winners were told they lost: their releases say so
        if (r->l.owns()) {
            auto [wrel] = co_await r->l.async_release(tuple_deferred);
            BOOST_TEST(wrel == error::lease_lost);
        }
    auto [rel] = co_await held.async_release(tuple_deferred);
    BOOST_TEST(rel == error::lease_lost); // told lost: sends nothing
    // Nothing hangs: the lock is usable at once, through the same handle.
    const auto t0 = clock_type::now();
    auto [ea, again] = co_await holder.async_acquire_for(2 * lease, tuple_deferred);
    BOOST_TEST(!ea);
    BOOST_TEST_MESSAGE(tag << ": next acquire took " << ms(clock_type::now() - t0) << " ms");
    if (!ea)
        co_await again.async_release();
    mon.stop();
    holder_conn.cancel();
    waiter_conn.cancel();
    side.cancel();
}

} // namespace

BOOST_AUTO_TEST_SUITE(s06_slow)

// (a) The holder's connection is delayed: first a round trip of 0.4 lease (200 ms ± 25 ms each
// way), then 0.8 lease (400 ms ± 50 ms each way), 1.5 s each.
BOOST_AUTO_TEST_CASE(slow_network) {
    redis_process srv;
    corolock::test::fault_proxy proxy(srv.port());
    asio::io_context ioc;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            auto hcfg = config_for(srv);
            hcfg.port = std::to_string(proxy.port());
            // A round trip of 800 ms is slow, not dead: the test default (200 ms) would drop it.
            hcfg.health_check_interval = 2s;
            corolock::connection holder_conn(ex, hcfg, quiet()), side(ex, config_for(srv), quiet());
            holder_conn.async_run(asio::detached);
            side.async_run(asio::detached);
            co_await warm_scripts(side);

            struct phase {
                const char* what;
                clock_type::duration one_way, jitter;
            };
            const phase phases[] = {{"round trip 0.4 lease", 200ms, 25ms},
                                    {"round trip 0.8 lease", 400ms, 50ms}};
            int phase_no = 0;
            for (const auto& ph : phases) {
                const std::string name = "s6:slow:" + std::to_string(phase_no++);
                corolock::mutex holder(holder_conn, name, lease_opts());
                corolock::mutex other(side, name, lease_opts());
                corolock::lease held = co_await holder.async_acquire();
                lost_probe probe;
                probe.arm(held);
                const auto renewals0 = corolock::get_lock_stats(holder_conn).renewals;
                const auto t0 = clock_type::now();
                proxy.delay(direction::client_to_server, ph.one_way, ph.jitter);
                proxy.delay(direction::server_to_client, ph.one_way, ph.jitter);

                agreement_sampler sampler{side, held};
                asio::co_spawn(ex, sampler.run(), asio::detached);
                // Another client keeps trying: it may only get the lock once the holder has
                // been told it lost it.
                int other_got = 0, overlaps = 0;
                while (clock_type::now() < t0 + 1500ms) {
                    auto [ec, got] = co_await other.async_try_acquire(tuple_deferred);
                    BOOST_TEST(!ec);
                    if (got) {
                        ++other_got;
                        if (held.valid() || !probe.lost)
                            ++overlaps;
                        co_await got.async_release();
                    }
                    co_await sleep_for(50ms);
                }
                sampler.stop = true;
                proxy.heal();
                const auto renewed = corolock::get_lock_stats(holder_conn).renewals - renewals0;
                BOOST_TEST_MESSAGE("slow network, "
                                   << ph.what << ": " << renewed << " renewals; lease "
                                   << (probe.lost ? "lost " + std::to_string(ms(probe.at - t0)) +
                                                        " ms after the delay began"
                                                  : std::string("kept"))
                                   << "; " << sampler.held_samples << " of " << sampler.samples
                                   << " server samples while held, " << sampler.false_success
                                   << " false successes; other client acquired " << other_got
                                   << " times, " << overlaps << " overlaps");
                BOOST_TEST(sampler.false_success == 0);
                BOOST_TEST(sampler.errors == 0);
                BOOST_TEST(overlaps == 0);
                if (ph.one_way >= 400ms) {
                    // Two round trips exceed the lease: renewals cannot keep up, and a renewal
                    // answered after the deadline must count as lost.
                    BOOST_TEST(probe.lost);
                    BOOST_TEST(probe.ec == error::lease_lost);
                }
                while (sampler.running)
                    co_await sleep_for(5ms);
                // Nothing hangs: the release completes (lease_lost when lost) promptly.
                const auto tr = clock_type::now();
                auto [rec] = co_await held.async_release(tuple_deferred);
                BOOST_TEST((!rec || rec == error::lease_lost));
                BOOST_TEST(ms(clock_type::now() - tr) < 1000);
                if (!probe.lost)
                    BOOST_TEST(!rec);
                // The key is free within a lease (a late renewal may have extended it).
                auto [ea, next] = co_await other.async_acquire_for(2 * lease, tuple_deferred);
                BOOST_TEST(!ea);
                if (!ea)
                    co_await next.async_release();
            }
            holder_conn.cancel();
            side.cancel();
        }(),
        30s);
}

BOOST_AUTO_TEST_CASE(debug_sleep) {
    redis_process srv;
    asio::io_context ioc;
    corolock::request stall;
    stall.push("DEBUG", "SLEEP", "1.5");
    run_coroutine_test(ioc, stalled_server(srv, "debug_sleep", std::move(stall), false), 30s);
}

BOOST_AUTO_TEST_CASE(client_pause_write) {
    redis_process srv;
    asio::io_context ioc;
    corolock::request stall;
    stall.push("CLIENT", "PAUSE", "1500", "WRITE");
    run_coroutine_test(ioc, stalled_server(srv, "client_pause", std::move(stall), true), 30s);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s06_slow
