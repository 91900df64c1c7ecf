// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The rate limiter against real redis-server processes: try, reserve and acquire, the GCRA bound
// over server time under many clients on several io_contexts and threads, the key's TTL,
// refunds of cancelled sleeps, foreign keys, arguments refused before anything is sent, and a
// 3-master cluster.
#include "common/child_process.hpp"
#include "common/coro_test.hpp"
#include "common/redis_cluster.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include "core/rate_scripts.hpp"
#include "core/slot_table.hpp"
#include <corolock/cluster.hpp>
#include <corolock/rate_limiter.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_rate_limiter {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::rate_decision;
using corolock::rate_limit;
using limiter = corolock::rate_limiter;
using corolock::test::config_for;
using corolock::test::quiet;
using corolock::test::redis_cluster;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using corolock::test::tuple_deferred;
namespace d = corolock::detail;
using clock_type = std::chrono::steady_clock;

namespace {

// ":123\r\n" -> 123.
std::int64_t integer(const std::string& raw) {
    BOOST_TEST_REQUIRE(raw.size() > 3);
    BOOST_TEST_REQUIRE(raw[0] == ':', raw);
    return std::stoll(raw.substr(1));
}

// The calls of the script commands the server ran so far (EVALSHA + EVAL).
std::int64_t script_calls(redis_process& srv) {
    const auto info = srv.command({"INFO", "commandstats"});
    std::int64_t n = 0;
    for (const char* cmd : {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="})
        if (auto at = info.find(cmd); at != std::string::npos)
            n += std::stoll(info.substr(at + std::string_view(cmd).size()));
    return n;
}

d::rate_params params_of(const rate_limit& l) {
    d::rate_params p;
    BOOST_TEST_REQUIRE(!d::validate_rate_limit("x", l, p));
    return p;
}

double interval_us(const rate_limit& l) {
    return std::chrono::duration<double, std::micro>(l.period).count() /
           static_cast<double>(l.rate);
}

std::int64_t us(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

// One call as the server decided it.
struct event {
    std::int64_t server_us = 0; // TIME in the script
    std::int64_t slot_us = 0;   // when the units may be used: server_us + wait
    std::uint64_t cost = 0;
    bool admitted = false;
};

// Over every window [t_i, t_j] of the admitted calls' times (`slot` times for reservations),
// admitted cost <= burst + (t_j - t_i) / T + 1.
void check_bound(std::vector<event> ev, const rate_limit& l, bool by_slot) {
    std::erase_if(ev, [](const event& e) { return !e.admitted; });
    for (auto& e : ev)
        if (!by_slot)
            e.slot_us = e.server_us;
    std::sort(ev.begin(), ev.end(),
              [](const event& a, const event& b) { return a.slot_us < b.slot_us; });
    const double t = interval_us(l);
    double worst = -1e18;
    for (std::size_t i = 0; i < ev.size(); ++i) {
        std::uint64_t sum = 0;
        for (std::size_t j = i; j < ev.size(); ++j) {
            sum += ev[j].cost;
            const double excess = static_cast<double>(sum) - static_cast<double>(l.burst) -
                                  static_cast<double>(ev[j].slot_us - ev[i].slot_us) / t;
            worst = std::max(worst, excess);
            if (excess > 1.0) {
                BOOST_ERROR("window " << ev[i].slot_us << ".." << ev[j].slot_us << " admitted "
                                      << sum << ": over the bound by " << excess);
                return;
            }
        }
    }
    BOOST_TEST_MESSAGE("admitted " << ev.size()
                                   << " calls; worst window excess over burst + L/T: " << worst);
}

// Each refused call: admitting it would have broken the bound over some window that ends at
// its time (within one unit, for the µs rounding).
void check_refusals(const std::vector<event>& ev, const rate_limit& l) {
    std::vector<event> adm;
    for (const auto& e : ev)
        if (e.admitted)
            adm.push_back(e);
    std::sort(adm.begin(), adm.end(),
              [](const event& a, const event& b) { return a.server_us < b.server_us; });
    const double t = interval_us(l);
    std::size_t refused = 0, unexplained = 0;
    for (const auto& e : ev) {
        if (e.admitted)
            continue;
        ++refused;
        auto end = std::upper_bound(adm.begin(), adm.end(), e.server_us,
                                    [](std::int64_t v, const event& a) { return v < a.server_us; });
        std::uint64_t sum = e.cost;
        bool explained = false;
        for (auto it = std::make_reverse_iterator(end); it != adm.rend() && !explained; ++it) {
            sum += it->cost;
            explained = static_cast<double>(sum) >
                        static_cast<double>(l.burst) +
                            static_cast<double>(e.server_us - it->server_us) / t - 1.0;
        }
        if (!explained && ++unexplained <= 5)
            BOOST_ERROR("refused at " << e.server_us << " (cost " << e.cost
                                      << ") with room under the bound");
    }
    BOOST_TEST_MESSAGE(refused << " refusals checked");
}

// What one io_context of the hammer does: `conns` connections with `workers` coroutines each call
// the limiter `name` until `until`: try (reserve false) or acquire with a max_wait of 50 ms
// (true), costs 1..max_cost. A refused caller sleeps its retry_after (at most 20 ms). Returns
// every decision; counts errors in `failures`.
std::vector<event> hammer_context(const corolock::connection_config& cfg, const std::string& name,
                                  const rate_limit& l, bool reserve, std::uint64_t max_cost,
                                  clock_type::time_point until, unsigned seed, int& failures,
                                  int conns = 2, int workers = 3) {
    asio::io_context ioc;
    std::vector<std::unique_ptr<corolock::connection>> cs;
    std::vector<std::unique_ptr<limiter>> lims;
    for (int k = 0; k < conns; ++k) {
        cs.push_back(std::make_unique<corolock::connection>(ioc.get_executor(), cfg, quiet()));
        cs.back()->async_run(asio::detached);
        lims.push_back(std::make_unique<limiter>(*cs.back(), name, l));
    }
    std::vector<event> mine;
    int running = conns * workers;
    for (int k = 0; k < conns * workers; ++k)
        asio::co_spawn(
            ioc,
            [&, k]() -> awaitable<void> {
                std::mt19937_64 rng(seed * 100 + static_cast<unsigned>(k));
                auto& lim = *lims[static_cast<std::size_t>(k % conns)];
                while (clock_type::now() < until) {
                    const std::uint64_t cost = 1 + rng() % max_cost;
                    auto [ec, dec] = reserve
                                         ? co_await lim.async_acquire(cost, 50ms, tuple_deferred)
                                         : co_await lim.async_try_acquire(cost, tuple_deferred);
                    if (ec) {
                        ++failures;
                        co_await sleep_for(10ms);
                        continue;
                    }
                    mine.push_back({dec.server_time_us, dec.server_time_us + us(dec.wait), cost,
                                    dec.admitted});
                    if (!dec.admitted)
                        co_await sleep_for(std::min<clock_type::duration>(dec.retry_after, 20ms));
                }
                if (--running == 0)
                    for (auto& cn : cs)
                        cn->cancel();
            },
            asio::detached);
    asio::steady_timer guard(ioc, until - clock_type::now() + 30s);
    guard.async_wait([&](error_code ec) {
        if (!ec) {
            ++failures;
            ioc.stop();
        }
    });
    // The guard is the only work left once the workers are done: run until they are.
    while (running > 0 && !ioc.stopped())
        ioc.run_one();
    guard.cancel();
    ioc.run();
    return mine;
}

// The environment variable that makes `hammer_child` a hammer process:
// "port name rate period_us burst reserve max_cost length_ms seed".
constexpr const char* child_env = "COROLOCK_RATE_HAMMER_CHILD";

// `children` processes (this test binary again, running `hammer_child`) and `contexts` threads
// of this one, each an io_context as hammer_context, call one limiter for `length`. Returns
// every decision of all of them.
std::vector<event> hammer(redis_process& srv, const std::string& name, const rate_limit& l,
                          bool reserve, std::uint64_t max_cost, clock_type::duration length,
                          int children = 2, int contexts = 2) {
    namespace fs = std::filesystem;
    std::vector<corolock::test::child_process> kids;
    std::vector<fs::path> outputs;
    for (int k = 0; k < children; ++k) {
        corolock::test::child_options o;
        o.env.push_back(
            std::string(child_env) + "=" + std::to_string(srv.port()) + " " + name + " " +
            std::to_string(l.rate) + " " + std::to_string(us(l.period)) + " " +
            std::to_string(l.burst) + " " + (reserve ? "1" : "0") + " " + std::to_string(max_cost) +
            " " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(length).count()) +
            " " + std::to_string(1000 + k));
        outputs.push_back(
            fs::temp_directory_path() /
            ("corolock-rate-" + std::to_string(::getpid()) + "-" + std::to_string(k) + ".out"));
        o.output_file = outputs.back().string();
        kids.emplace_back(
            std::vector<std::string>{"/proc/self/exe", "--run_test=rate_limiter/hammer_child"}, o);
    }
    std::mutex m;
    std::vector<event> all;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    const auto until = clock_type::now() + length;
    for (int c = 0; c < contexts; ++c)
        threads.emplace_back([&, c] {
            int failed = 0;
            auto mine = hammer_context(config_for(srv), name, l, reserve, max_cost, until,
                                       static_cast<unsigned>(c), failed);
            failures += failed;
            std::lock_guard lk(m);
            all.insert(all.end(), mine.begin(), mine.end());
        });
    for (auto& t : threads)
        t.join();
    BOOST_TEST(failures == 0);
    std::size_t from_children = 0;
    for (std::size_t k = 0; k < kids.size(); ++k) {
        BOOST_TEST(kids[k].wait(length + 30s) == 0, "hammer child " << k);
        std::ifstream in(outputs[k]);
        for (std::string line; std::getline(in, line);) {
            std::istringstream words(line);
            std::string tag;
            event e;
            if (words >> tag >> e.server_us >> e.slot_us >> e.cost >> e.admitted && tag == "EV") {
                all.push_back(e);
                ++from_children;
            }
        }
        in.close();
        fs::remove(outputs[k]);
    }
    BOOST_TEST(from_children > 0u);
    BOOST_TEST_MESSAGE(all.size() << " calls, " << from_children << " of them from " << kids.size()
                                  << " child processes");
    return all;
}

struct fixture : corolock::test::server_fixture {
    std::int64_t pttl(const std::string& key) { return integer(srv.command({"PTTL", key})); }
    std::string get(const std::string& key) { return srv.command({"GET", key}); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(rate_limiter)

// A process of the hammer (started by `hammer` with child_env set; does nothing otherwise):
// prints "EV server_us slot_us cost admitted" for each call, and exits non-zero on errors.
BOOST_AUTO_TEST_CASE(hammer_child) {
    const char* spec = std::getenv(child_env);
    BOOST_TEST(true);
    if (!spec)
        return;
    std::istringstream in(spec);
    std::string port, name;
    std::int64_t period_us = 0, length_ms = 0;
    rate_limit l;
    bool reserve = false;
    std::uint64_t max_cost = 1;
    unsigned seed = 0;
    BOOST_TEST_REQUIRE(!!(in >> port >> name >> l.rate >> period_us >> l.burst >> reserve >>
                          max_cost >> length_ms >> seed));
    l.period = std::chrono::microseconds(period_us);
    corolock::connection_config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = port;
    int failures = 0;
    const auto ev =
        hammer_context(cfg, name, l, reserve, max_cost,
                       clock_type::now() + std::chrono::milliseconds(length_ms), seed, failures);
    std::ostringstream out;
    for (const auto& e : ev)
        out << "EV " << e.server_us << ' ' << e.slot_us << ' ' << e.cost << ' ' << e.admitted
            << '\n';
    std::cout << out.str() << std::flush;
    BOOST_TEST(failures == 0);
}

// Sequential calls, each checked against the model fed with the server's own time.
BOOST_FIXTURE_TEST_CASE(try_admits_the_burst_then_the_rate, fixture) {
    run([&]() -> awaitable<void> {
        const rate_limit l{10, 1s, 3}; // T = 100 ms, burst window 300 ms
        limiter lim(conn, "rl:try", l);
        const auto p = params_of(l);
        d::gcra_state model;
        int admitted = 0, refused = 0;
        for (int i = 0; i < 12; ++i) {
            const std::uint64_t cost = i % 4 == 3 ? 2 : 1;
            auto [ec, dec] = co_await lim.async_try_acquire(cost, tuple_deferred);
            BOOST_TEST_REQUIRE(!ec, ec.message());
            const auto want = d::gcra_step(p, model, dec.server_time_us, cost, 0);
            BOOST_TEST(dec.admitted == want.took_slot());
            BOOST_TEST((dec.wait == 0us));
            if (dec.admitted) {
                ++admitted;
                // The key's TTL never exceeds burst x T.
                const auto ttl = pttl("rl:try");
                BOOST_TEST(ttl > 0);
                BOOST_TEST(ttl <= 300);
            } else {
                ++refused;
                BOOST_TEST(us(dec.retry_after) == want.delay_us);
                BOOST_TEST((dec.retry_after > 0us));
                BOOST_TEST((dec.retry_after <= 200ms));
                // Waiting what the server said is enough (nobody else uses this limiter).
                co_await sleep_for(dec.retry_after + 2ms);
            }
        }
        BOOST_TEST(admitted >= 3);
        BOOST_TEST(refused >= 1);
        // The same units from another connection (another process would do the same): refused.
        limiter other(peer, "rl:try", l);
        auto [ec1, d1] = co_await lim.async_try_acquire(3, tuple_deferred);
        auto [ec2, d2] = co_await other.async_try_acquire(3, tuple_deferred);
        BOOST_TEST(!ec1);
        BOOST_TEST(!ec2);
        BOOST_TEST(!(d1.admitted && d2.admitted));
    });
}

BOOST_FIXTURE_TEST_CASE(reserve_takes_evenly_spaced_slots_in_one_round_trip, fixture) {
    run([&]() -> awaitable<void> {
        const rate_limit l{10, 1s, 1}; // T = 100 ms
        limiter lim(conn, "rl:res", l);
        // Loads the script (a fresh server answers the first EVALSHA with NOSCRIPT).
        auto [ec0, d0] = co_await limiter(conn, "rl:warm", l).async_try_acquire(1, tuple_deferred);
        BOOST_TEST_REQUIRE(!ec0, ec0.message());
        const auto calls = script_calls(srv);
        std::vector<std::int64_t> slots;
        for (int i = 0; i < 8; ++i) {
            auto [ec, dec] = co_await lim.async_reserve(1, 650ms, tuple_deferred);
            BOOST_TEST_REQUIRE(!ec, ec.message());
            if (!dec.admitted) {
                // Beyond max_wait: nothing taken, retry_after = how far beyond.
                BOOST_TEST(i >= 6);
                BOOST_TEST((dec.retry_after > 0us));
                BOOST_TEST((dec.retry_after <= 100ms));
                continue;
            }
            BOOST_TEST((dec.wait <= 650ms));
            slots.push_back(dec.server_time_us + us(dec.wait));
            // TTL <= burst x T + max_wait.
            BOOST_TEST(pttl("rl:res") <= 100 + 650);
        }
        BOOST_TEST_REQUIRE(slots.size() >= 7u);
        // One slot every T after the first, exactly (rounded up to the µs).
        for (std::size_t i = 1; i < slots.size(); ++i) {
            BOOST_TEST(slots[i] - slots[i - 1] >= 100000 - 1);
            BOOST_TEST(slots[i] - slots[i - 1] <= 100000 + 1);
        }
        // One script call each: no retries.
        BOOST_TEST(script_calls(srv) - calls == 8);
    });
}

BOOST_FIXTURE_TEST_CASE(acquire_sleeps_until_its_slot, fixture) {
    run([&]() -> awaitable<void> {
        limiter lim(conn, "rl:acq", {20, 1s, 1}); // T = 50 ms
        auto [ec0, d0] = co_await lim.async_acquire(1, 1s, tuple_deferred);
        BOOST_TEST_REQUIRE(!ec0, ec0.message());
        BOOST_TEST(d0.admitted);
        for (int i = 0; i < 3; ++i) {
            const auto start = clock_type::now();
            auto [ec, dec] = co_await lim.async_acquire(1, 1s, tuple_deferred);
            BOOST_TEST_REQUIRE(!ec, ec.message());
            BOOST_TEST(dec.admitted);
            BOOST_TEST((dec.wait > 0us));
            // Never before its slot (the reply comes after the server decided: at least the
            // wait after the call started, less a millisecond of clock granularity).
            BOOST_TEST((clock_type::now() - start >= dec.wait - 1ms));
        }
        // Beyond max_wait: at once, not admitted, nothing taken.
        const auto before = get("rl:acq");
        auto [ec, dec] = co_await lim.async_acquire(1, 0s, tuple_deferred);
        BOOST_TEST(!ec);
        BOOST_TEST(!dec.admitted);
        BOOST_TEST(get("rl:acq") == before);
    });
}

BOOST_FIXTURE_TEST_CASE(cancelled_sleep_refunds_its_slot_only, fixture) {
    run([&]() -> awaitable<void> {
        limiter lim(conn, "rl:cancel", {2, 1s, 1}); // T = 500 ms
        auto [ec0, d0] = co_await lim.async_try_acquire(1, tuple_deferred);
        BOOST_TEST_REQUIRE(d0.admitted);
        const auto after_first = get("rl:cancel");

        // A sleeping acquire cancelled by its slot: completes at once, its slot is given back.
        asio::cancellation_signal sig;
        bool done = false;
        error_code got;
        lim.async_acquire(
            1, 5s, asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, rate_decision) {
                got = ec;
                done = true;
            }));
        co_await sleep_for(20ms);
        BOOST_TEST(!done); // sleeping until ~500 ms
        BOOST_TEST(get("rl:cancel") != after_first);
        sig.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await corolock::test::eventually([&] { return done; }, 1s));
        BOOST_TEST(got == asio::error::operation_aborted);
        BOOST_TEST(co_await corolock::test::eventually(
            [&] { return get("rl:cancel") == after_first; }, 2s));

        // Another's reservation after ours: the refund leaves the key alone.
        asio::cancellation_signal sig2;
        done = false;
        lim.async_acquire(
            1, 5s, asio::bind_cancellation_slot(sig2.slot(), [&](error_code ec, rate_decision) {
                got = ec;
                done = true;
            }));
        co_await sleep_for(20ms);
        limiter other(peer, "rl:cancel", {2, 1s, 1});
        auto [ec1, d1] = co_await other.async_reserve(1, 5s, tuple_deferred);
        BOOST_TEST_REQUIRE(d1.admitted);
        const auto theirs = get("rl:cancel");
        sig2.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await corolock::test::eventually([&] { return done; }, 1s));
        BOOST_TEST(got == asio::error::operation_aborted);
        co_await sleep_for(50ms); // the refund's round trip
        BOOST_TEST(get("rl:cancel") == theirs);

        // Cancelled before its reply: the script still runs, and what it took is given back when
        // the reply comes (the key, fresh, is then deleted).
        {
            limiter fresh(conn, "rl:cancel2", {1, 10s, 1}); // a 10 s TTL if not refunded
            asio::cancellation_signal sig3;
            done = false;
            fresh.async_try_acquire(
                1, asio::bind_cancellation_slot(sig3.slot(), [&](error_code ec, rate_decision) {
                    got = ec;
                    done = true;
                }));
            sig3.emit(asio::cancellation_type::terminal);
            BOOST_TEST(co_await corolock::test::eventually([&] { return done; }, 1s));
            if (got == asio::error::operation_aborted) // the usual order: cancel, then reply
                BOOST_TEST(
                    co_await corolock::test::eventually([&] { return !exists("rl:cancel2"); }, 2s));
            else
                BOOST_TEST(!got, got.message());
        }

        // cancel() on the limiter ends a sleeping acquire the same way.
        done = false;
        limiter third(conn, "rl:cancel3", {2, 1s, 1});
        auto [ec2, d2] = co_await third.async_try_acquire(1, tuple_deferred);
        BOOST_TEST(d2.admitted);
        third.async_acquire(1, 5s, [&](error_code ec, rate_decision) {
            got = ec;
            done = true;
        });
        co_await sleep_for(20ms);
        third.cancel();
        BOOST_TEST(co_await corolock::test::eventually([&] { return done; }, 1s));
        BOOST_TEST(got == asio::error::operation_aborted);
    });
}

BOOST_FIXTURE_TEST_CASE(many_clients_keep_the_bound_over_server_time, fixture) {
    // 2 child processes and 2 threads of this one, each an io_context with 2 connections and 3
    // coroutines: T = 5 ms, burst 4, costs 1..3.
    const rate_limit l{200, 1s, 4};
    auto ev = hammer(srv, "rl:hammer", l, false, 3, 2s);
    BOOST_TEST(ev.size() > 100u);
    check_bound(ev, l, false);
    check_refusals(ev, l);
    BOOST_TEST(integer(srv.command({"PTTL", "rl:hammer"})) <= 20); // burst x T, or gone (-2)

    // Sleeping acquires (max_wait 50 ms): the slots keep the bound too.
    auto res = hammer(srv, "rl:hammer2", l, true, 3, 2s);
    BOOST_TEST(res.size() > 100u);
    check_bound(res, l, true);
    BOOST_TEST(integer(srv.command({"PTTL", "rl:hammer2"})) <= 20 + 50);
}

BOOST_FIXTURE_TEST_CASE(invalid_arguments_fail_before_sending, fixture) {
    run([&]() -> awaitable<void> {
        struct bad {
            std::string name;
            rate_limit limit;
            std::uint64_t cost;
            clock_type::duration max_wait;
            error want;
        };
        const bad cases[] = {
            {"", {10, 1s, 5}, 1, 0s, error::invalid_name},
            {"a}b", {10, 1s, 5}, 1, 0s, error::invalid_name},
            {"rl:bad", {0, 1s, 5}, 1, 0s, error::invalid_argument},
            {"rl:bad", {10, 500us, 5}, 1, 0s, error::invalid_argument},
            {"rl:bad", {10, std::chrono::hours(24 * 366), 5}, 1, 0s, error::invalid_argument},
            {"rl:bad", {10, 1s, 0}, 1, 0s, error::invalid_argument},
            {"rl:bad", {10, 1s, 5}, 0, 0s, error::invalid_argument},
            {"rl:bad", {10, 1s, 5}, 6, 0s, error::invalid_argument},
            {"rl:bad", {10, 1s, 5}, 1, -1ms, error::invalid_argument},
            {"rl:bad", {10, 1s, 5}, 1, std::chrono::hours(24 * 366), error::invalid_argument},
        };
        const auto calls = script_calls(srv);
        for (const auto& c : cases)
            for (int op = 0; op < 3; ++op) {
                if (op == 0 && c.want == error::invalid_argument && c.cost == 1 &&
                    c.limit.burst == 5 && c.limit.rate == 10 && c.limit.period == 1s)
                    continue; // a bad max_wait: a try has none
                limiter lim(conn, c.name, c.limit);
                bool returned = false, inline_call = false, done = false;
                error_code got;
                auto h = [&](error_code ec, rate_decision dec) {
                    inline_call = !returned;
                    got = ec;
                    done = true;
                    BOOST_TEST(!dec.admitted);
                };
                if (op == 0)
                    lim.async_try_acquire(c.cost, h);
                else if (op == 1)
                    lim.async_reserve(c.cost, c.max_wait, h);
                else
                    lim.async_acquire(c.cost, c.max_wait, h);
                returned = true;
                BOOST_TEST(co_await corolock::test::eventually([&] { return done; }, 1s));
                BOOST_TEST(!inline_call);
                BOOST_TEST(got == c.want, c.name << " op " << op << ": " << got.message());
            }
        BOOST_TEST(script_calls(srv) == calls);
        BOOST_TEST(integer(srv.command({"DBSIZE"})) == 0);
    });
}

BOOST_FIXTURE_TEST_CASE(foreign_keys_are_wrong_type, fixture) {
    srv.command({"HSET", "rl:hash", "owner", "x"});
    srv.command({"SET", "rl:string", "not-a-tat"});
    run([&]() -> awaitable<void> {
        for (const char* name : {"rl:hash", "rl:string"}) {
            limiter lim(conn, name, {10, 1s, 5});
            auto [ec, dec] = co_await lim.async_try_acquire(1, tuple_deferred);
            BOOST_TEST(ec == error::wrong_type, name << ": " << ec.message());
            auto [ec2, dec2] = co_await lim.async_acquire(1, 1s, tuple_deferred);
            BOOST_TEST(ec2 == error::wrong_type);
        }
        BOOST_TEST(get("rl:string") == corolock::test::bulk("not-a-tat"));
    });
}

BOOST_AUTO_TEST_CASE(works_through_a_cluster) {
    if (!redis_cluster::available())
        return;
    redis_cluster c(3, 0);
    asio::io_context ioc;
    corolock::cluster cl(ioc.get_executor(), corolock::test::cluster_config_for(*c.nodes()[0]),
                         quiet());
    cl.async_run(asio::detached);
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            // Names in three slots (most likely on three masters).
            std::vector<std::uint16_t> masters_hit;
            for (const char* name : {"rl:{a}", "rl:{b}", "rl:{c}", "{user:7}:api"}) {
                limiter lim(cl, name, {10, 1s, 2});
                auto [e1, d1] = co_await lim.async_try_acquire(2, tuple_deferred);
                BOOST_TEST_REQUIRE(!e1, name << ": " << e1.message());
                BOOST_TEST(d1.admitted);
                auto [e2, d2] = co_await lim.async_try_acquire(1, tuple_deferred);
                BOOST_TEST(!e2);
                BOOST_TEST(!d2.admitted);
                BOOST_TEST((d2.retry_after > 0us));
                auto [e3, d3] = co_await lim.async_acquire(1, 1s, tuple_deferred);
                BOOST_TEST(!e3, e3.message());
                BOOST_TEST(d3.admitted);
                BOOST_TEST((d3.wait > 0us));
                // The key is at its slot's master, with a TTL within burst x T + max_wait.
                auto& owner = c.master_of(d::key_slot(name));
                const auto ttl = integer(owner.command({"PTTL", name}));
                BOOST_TEST(ttl > 0);
                BOOST_TEST(ttl <= 200 + 1000);
            }
            cl.cancel();
        }(),
        60s);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_rate_limiter
