// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The shared_mutex (read-write lock) against real redis-server processes (doc/shared_mutex.md):
// readers share, a writer excludes everyone, writer preference (a waiting writer's intent keeps
// new readers out, a writer behind a stream of readers gets in), a cancelled writer's intent
// goes at once and a dead one's expires, readers stamp what they read with the last write token,
// and a history of readers and writers from three processes checked afterwards.
#include "common/child_process.hpp"
#include "common/coro_test.hpp"
#include "common/redis_cluster.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include "core/slot_table.hpp"
#include <corolock/cluster.hpp>
#include <corolock/shared_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_shared_mutex {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::lease;
using corolock::test::config_for;
using corolock::test::eventually;
using corolock::test::lease_of;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::sleep_for;
using corolock::test::start_gate;
using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;
// The suite is named `shared_mutex`, like the file: the class goes by another name here.
using rw = corolock::shared_mutex;

namespace {

using fixture = corolock::test::server_fixture;

// Waiters retry on their own only every 5 s: a faster grant came from a release message.
corolock::mutex_options slow_retry(clock_type::duration lease) {
    auto o = lease_of(lease);
    o.retry_base = 5s;
    o.retry_max = 5s;
    return o;
}

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               clock_type::now().time_since_epoch())
        .count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(shared_mutex)

BOOST_FIXTURE_TEST_CASE(readers_share_and_a_writer_excludes_everyone, fixture) {
    run([&]() -> awaitable<void> {
        rw a(conn, "rw:basic", lease_of(5s)), b(peer, "rw:basic", lease_of(5s));
        auto r1 = co_await a.async_try_acquire_shared();
        auto r2 = co_await b.async_try_acquire_shared();
        auto r3 = co_await a.async_try_acquire_shared();
        BOOST_TEST(r1.valid());
        BOOST_TEST(r2.valid());
        BOOST_TEST(r3.valid());
        BOOST_TEST(r1.token().value() == 0u); // no write yet
        BOOST_TEST(srv.command({"ZCARD", "{rw:basic}:r"}) == ":3\r\n");
        auto [wec, w] = co_await b.async_try_acquire(tuple_deferred);
        BOOST_TEST(!wec, wec.message());
        BOOST_TEST(!w.owns());                                           // readers hold
        BOOST_TEST(srv.command({"EXISTS", "{rw:basic}:w"}) == ":0\r\n"); // a try leaves no intent
        co_await r1.async_release();
        co_await r2.async_release();
        co_await r3.async_release();
        BOOST_TEST(srv.command({"EXISTS", "{rw:basic}:r"}) == ":0\r\n");
        auto w2 = co_await b.async_try_acquire();
        BOOST_TEST(w2.valid());
        BOOST_TEST(w2.token().value() > 0u);
        auto [rec, r4] = co_await a.async_try_acquire_shared(tuple_deferred);
        BOOST_TEST(!rec, rec.message());
        BOOST_TEST(!r4.owns()); // the writer holds
        auto [w3ec, w3] = co_await a.async_try_acquire(tuple_deferred);
        BOOST_TEST(!w3.owns()); // one writer
        const auto token = w2.token();
        co_await w2.async_release();
        auto r5 = co_await a.async_acquire_shared();
        BOOST_TEST(r5.token() == token); // the last write's token, to stamp what is read
        co_await r5.async_release();
    });
}

// A writer that waits for readers records its intent: new readers wait behind it, and it gets
// in as soon as the readers present leave (a release message, not its 5 s timer).
BOOST_FIXTURE_TEST_CASE(a_waiting_writer_keeps_new_readers_out, fixture) {
    run([&]() -> awaitable<void> {
        rw readers(peer, "rw:pref", lease_of(30s)), writer(conn, "rw:pref", slow_retry(30s));
        auto r1 = co_await readers.async_acquire_shared();
        lease w;
        bool granted = false;
        asio::co_spawn(
            co_await asio::this_coro::executor,
            [&]() -> awaitable<void> {
                auto [ec, l] = co_await writer.async_acquire_for(20s, tuple_deferred);
                BOOST_TEST(!ec, ec.message());
                granted = l.valid();
                w = std::move(l);
            },
            asio::detached);
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"ZCARD", "{rw:pref}:w"}) == ":1\r\n";
            },
            2s));
        auto [ec, r2] = co_await readers.async_try_acquire_shared(tuple_deferred);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(!r2.owns()); // the writer's intent keeps it out
        const auto released = clock_type::now();
        co_await r1.async_release();
        BOOST_TEST(co_await eventually([&] { return granted; }, 10s));
        BOOST_TEST((clock_type::now() - released < 2s));
        BOOST_TEST(srv.command({"EXISTS", "{rw:pref}:w"}) == ":0\r\n"); // granted: intent gone
        co_await w.async_release();
        auto r3 = co_await readers.async_try_acquire_shared();
        BOOST_TEST(r3.valid());
        co_await r3.async_release();
    });
}

// Readers that keep coming (10 coroutines, each re-acquiring as soon as it releases) never
// starve a writer: it gets in once the readers that hold when it arrives finish.
BOOST_FIXTURE_TEST_CASE(a_writer_behind_a_stream_of_readers_gets_in, fixture) {
    run([&]() -> awaitable<void> {
        rw readers(peer, "rw:stream", lease_of(10s)), writer(conn, "rw:stream", lease_of(10s));
        bool stop = false;
        int reads = 0, running = 0;
        auto ex = co_await asio::this_coro::executor;
        for (int i = 0; i < 10; ++i) {
            ++running;
            asio::co_spawn(
                ex,
                [&]() -> awaitable<void> {
                    while (!stop) {
                        auto [ec, l] =
                            co_await readers.async_acquire_shared_for(10s, tuple_deferred);
                        if (ec)
                            break;
                        co_await sleep_for(50ms);
                        ++reads;
                        co_await l.async_release();
                    }
                    --running;
                },
                asio::detached);
        }
        co_await sleep_for(300ms);
        const int before = reads;
        const auto asked = clock_type::now();
        auto [ec, w] = co_await writer.async_acquire_for(5s, tuple_deferred);
        const auto waited = clock_type::now() - asked;
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(w.valid());
        BOOST_TEST(before > 0); // readers were streaming
        // Bound: the readers holding when it asked (50 ms each) and a round trip or two.
        BOOST_TEST((waited < 1s), std::chrono::duration<double>(waited).count() << " s");
        const int during = reads;
        co_await sleep_for(100ms);
        BOOST_TEST(reads == during); // no reader while the writer holds
        co_await w.async_release();
        BOOST_TEST(co_await eventually([&] { return reads > during; }, 2s)); // readers again
        stop = true;
        BOOST_TEST(co_await eventually([&] { return running == 0; }, 5s));
    });
}

BOOST_FIXTURE_TEST_CASE(a_writer_that_gives_up_takes_its_intent_with_it, fixture) {
    run([&]() -> awaitable<void> {
        rw readers(peer, "rw:cancel", lease_of(30s)), writer(conn, "rw:cancel", lease_of(30s));
        auto r1 = co_await readers.async_acquire_shared();
        asio::cancellation_signal cancel;
        bool done = false;
        error_code wec;
        asio::co_spawn(
            co_await asio::this_coro::executor,
            [&]() -> awaitable<void> {
                auto [ec, l] = co_await writer.async_acquire(asio::bind_cancellation_slot(
                    cancel.slot(), asio::as_tuple(asio::use_awaitable)));
                wec = ec;
                done = true;
            },
            asio::detached);
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"ZCARD", "{rw:cancel}:w"}) == ":1\r\n";
            },
            2s));
        cancel.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await eventually([&] { return done; }, 2s));
        BOOST_TEST(wec == asio::error::operation_aborted);
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"EXISTS", "{rw:cancel}:w"}) == ":0\r\n";
            },
            2s));
        auto r2 = co_await readers.async_try_acquire_shared(); // at once, not after the intent
        BOOST_TEST(r2.valid());
        // A timed-out writer the same.
        auto [tec, tl] = co_await writer.async_acquire_for(300ms, tuple_deferred);
        BOOST_TEST(tec == error::acquire_timeout);
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"EXISTS", "{rw:cancel}:w"}) == ":0\r\n";
            },
            2s));
        co_await r1.async_release();
        co_await r2.async_release();
    });
}

// A writer that dies while it waits leaves its intent; it expires within 2 x retry_max + 1 s and
// readers get in again.
BOOST_AUTO_TEST_CASE(a_dead_writers_intent_expires) {
    redis_process srv;
    auto o = lease_of(10s);
    o.retry_base = 50ms;
    o.retry_max = 200ms; // intent: 1.4 s
    start_gate g;
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        g.wait();
        asio::io_context cioc;
        corolock::connection cconn(cioc.get_executor(), config_for(srv), quiet());
        cconn.async_run(asio::detached);
        rw cm(cconn, "rw:dead", o);
        asio::co_spawn(cioc, cm.async_acquire(asio::use_awaitable), asio::detached);
        cioc.run_for(10s);
        ::_exit(0);
    }
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), config_for(srv), quiet());
    conn.async_run(asio::detached);
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            rw m(conn, "rw:dead", o);
            auto r1 = co_await m.async_acquire_shared();
            g.open(1);
            const bool intent = co_await eventually(
                [&] {
                    return srv.command({"ZCARD", "{rw:dead}:w"}) == ":1\r\n";
                },
                5s);
            ::kill(child, SIGKILL);
            int status = 0;
            ::waitpid(child, &status, 0);
            const auto killed = clock_type::now();
            BOOST_TEST(intent);
            auto [ec, r2] = co_await m.async_try_acquire_shared(tuple_deferred);
            BOOST_TEST(!r2.owns()); // the dead writer's intent still stands
            auto [ec3, r3] = co_await m.async_acquire_shared_for(5s, tuple_deferred);
            BOOST_TEST(!ec3, ec3.message());
            BOOST_TEST(r3.valid());
            const auto waited = clock_type::now() - killed;
            BOOST_TEST((waited < 3s), std::chrono::duration<double>(waited).count() << " s");
            co_await r3.async_release();
            co_await r1.async_release();
            conn.cancel();
        }(),
        30s);
}

// One connection, 20 coroutines of which 1 in 4 write, 1 ms holds, for 3 s: the lock never
// stalls (review: a writer that recorded its intent and queued locally behind a reader that
// its intent refused stalled everyone until the intent expired, 5 s).
BOOST_FIXTURE_TEST_CASE(readers_and_writers_of_one_process_never_stall, fixture) {
    run([&]() -> awaitable<void> {
        rw m(conn, "rw:stall", lease_of(10s));
        bool stop = false;
        int running = 0, grants = 0;
        auto last = clock_type::now();
        clock_type::duration longest{};
        auto ex = co_await asio::this_coro::executor;
        for (int i = 0; i < 20; ++i) {
            ++running;
            asio::co_spawn(
                ex,
                [&, i]() -> awaitable<void> {
                    while (!stop) {
                        error_code ec;
                        lease l;
                        if (i % 4 == 0)
                            std::tie(ec, l) = co_await m.async_acquire_for(10s, tuple_deferred);
                        else
                            std::tie(ec, l) =
                                co_await m.async_acquire_shared_for(10s, tuple_deferred);
                        if (ec)
                            break;
                        const auto now = clock_type::now();
                        longest = std::max(longest, now - last);
                        last = now;
                        ++grants;
                        co_await sleep_for(1ms);
                        co_await l.async_release();
                    }
                    --running;
                },
                asio::detached);
        }
        co_await sleep_for(3s);
        stop = true;
        BOOST_TEST(co_await eventually([&] { return running == 0; }, 15s));
        BOOST_TEST(grants > 200);
        BOOST_TEST((longest < 500ms), std::chrono::duration<double>(longest).count() << " s");
    });
}

// A writer's fenced write runs only while the lock records its token: not after its lease ran
// out and a reader came in, although no newer writer exists (review: a write delayed past the
// lease landed under a reader).
BOOST_FIXTURE_TEST_CASE(a_writers_late_fenced_write_is_refused_under_a_reader, fixture) {
    run([&]() -> awaitable<void> {
        static const corolock::fenced_script set("return redis.call('SET', KEYS[1], ARGV[1])");
        rw m(conn, "rw:late", lease_of(10s));
        auto w = co_await m.async_acquire();
        const auto token = std::to_string(w.token().value());
        const std::string_view keys[] = {"rw:late:data"};
        const std::string_view args[] = {"v1"};
        corolock::generic_response resp;
        co_await w.async_fenced_eval(set, keys, args, resp);
        BOOST_TEST(srv.command({"GET", "rw:late:data"}) == "$2\r\nv1\r\n");
        srv.command({"DEL", "rw:late"}); // the writer's lease runs out (as by a long stall)
        auto r = co_await m.async_acquire_shared();
        BOOST_TEST(r.valid());
        // The late write, as it reaches the server: the held script with the writer's token.
        BOOST_TEST(
            srv.command({"EVAL", set.held().source(), "2", "rw:late", "rw:late:data", token, "v2"})
                .starts_with("-STALE_TOKEN"));
        BOOST_TEST(srv.command({"GET", "rw:late:data"}) == "$2\r\nv1\r\n");
        co_await r.async_release();
    });
}

// A downgrade turns the writer's record into a reader's in one step: readers waiting behind the
// writer come in at once, writers stay out, the old lease ends without a release, and the new
// one renews and releases like any reader's.
BOOST_FIXTURE_TEST_CASE(a_writer_downgrades_to_a_reader_in_one_step, fixture) {
    run([&]() -> awaitable<void> {
        rw m(conn, "rw:down", lease_of(900ms)), other(peer, "rw:down", slow_retry(10s));
        auto w = co_await m.async_acquire();
        bool reader_in = false;
        asio::co_spawn(
            co_await asio::this_coro::executor,
            [&]() -> awaitable<void> {
                auto [ec, l] = co_await other.async_acquire_shared_for(10s, tuple_deferred);
                BOOST_TEST(!ec, ec.message());
                reader_in = l.valid();
                co_await sleep_for(100ms);
                co_await l.async_release();
            },
            asio::detached);
        co_await sleep_for(100ms);
        BOOST_TEST(!reader_in);
        auto [ec, r] = co_await m.async_downgrade(w, tuple_deferred);
        BOOST_TEST_REQUIRE(!ec, ec.message());
        BOOST_TEST(r.valid());
        BOOST_TEST(!w.valid()); // ended: its record is the reader's now
        BOOST_TEST(r.token() == w.token());
        BOOST_TEST(r.owner_id() == w.owner_id());
        BOOST_TEST(srv.command({"EXISTS", "rw:down"}) == ":0\r\n");
        BOOST_TEST(co_await eventually([&] { return reader_in; }, 2s)); // the message: at once
        auto [wec, w2] = co_await other.async_try_acquire(tuple_deferred);
        BOOST_TEST(!w2.owns());     // a reader holds
        co_await sleep_for(1500ms); // past the 900 ms lease: the watchdog renews the reader
        BOOST_TEST(r.valid());
        auto [dec, again] = co_await m.async_downgrade(w, tuple_deferred);
        BOOST_TEST(dec == error::not_owner); // converted already
        auto [rec] = co_await r.async_release(tuple_deferred);
        BOOST_TEST(!rec, rec.message());
        w = lease(); // its release sends nothing (the record is gone with the reader's)
        BOOST_TEST(co_await eventually(
            [&] {
                return srv.command({"EXISTS", "{rw:down}:r"}) == ":0\r\n";
            },
            2s));
        BOOST_TEST(corolock::get_lock_stats(conn).leases_lost == 0u); // no release refused
    });
}

// An upgrade never waits: the only reader becomes the writer (a new token); with another reader
// it is refused at once and the reader's lease is kept.
BOOST_FIXTURE_TEST_CASE(try_upgrade_only_for_the_only_reader, fixture) {
    run([&]() -> awaitable<void> {
        rw m(conn, "rw:up", lease_of(5s)), other(peer, "rw:up", lease_of(5s));
        auto w0 = co_await m.async_acquire();
        const auto t0 = w0.token();
        co_await w0.async_release();
        auto r = co_await m.async_acquire_shared();
        auto r2 = co_await other.async_acquire_shared();
        auto [ec, w] = co_await m.async_try_upgrade(r, tuple_deferred);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(!w.owns()); // another reader holds: refused at once
        BOOST_TEST(r.valid()); // kept
        auto [wrong, none] = co_await m.async_try_upgrade(w0, tuple_deferred);
        BOOST_TEST(wrong == error::not_owner); // not a reader's lease
        co_await r2.async_release();
        auto [ec2, w2] = co_await m.async_try_upgrade(r, tuple_deferred);
        BOOST_TEST_REQUIRE(!ec2, ec2.message());
        BOOST_TEST(w2.valid());
        BOOST_TEST(w2.token() > t0);
        BOOST_TEST(!r.valid());
        auto [rec, r3] = co_await other.async_try_acquire_shared(tuple_deferred);
        BOOST_TEST(!r3.owns()); // the writer holds
        BOOST_TEST(srv.command({"EXISTS", "{rw:up}:r"}) == ":0\r\n");
        co_await w2.async_release();
        BOOST_TEST(srv.command({"EXISTS", "rw:up"}) == ":0\r\n");
    });
}

// 3 processes x 20 coroutines: writers write a record in two steps (a, then b) under the write
// lease; readers read both under a read lease. Afterwards: no reader ever saw a half-written
// record, no writer's hold overlaps any other hold, readers did overlap, and write tokens grow
// in the order of the holds.
BOOST_AUTO_TEST_CASE(readers_and_writers_from_three_processes) {
    redis_process srv;
    constexpr int processes = 3, coroutines = 20, rounds = 6;
    char path[] = "/tmp/corolock-rw-XXXXXX";
    const int fd = ::mkstemp(path);
    BOOST_REQUIRE(fd >= 0);
    ::close(fd);
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
        const pid_t child = ::fork();
        BOOST_REQUIRE(child >= 0);
        if (child > 0) {
            children.push_back(child);
            continue;
        }
        asio::thread_pool pool(2);
        corolock::connection conn(pool.get_executor(), config_for(srv), quiet());
        conn.async_run(asio::detached);
        rw m(conn, "rw:history", lease_of(5s));
        std::mutex mx;
        std::vector<std::string> lines;
        std::atomic<int> errors{0}, torn{0}, finished{0};
        auto worker = [&](int seed) -> awaitable<void> {
            std::minstd_rand rng(static_cast<unsigned>(seed));
            for (int i = 0; i < rounds; ++i) {
                const bool write = rng() % 4 == 0;
                error_code ec;
                lease l;
                // Not a conditional expression of two co_awaits: g++ 12 miscompiles it.
                if (write)
                    std::tie(ec, l) = co_await m.async_acquire_for(20s, tuple_deferred);
                else
                    std::tie(ec, l) = co_await m.async_acquire_shared_for(20s, tuple_deferred);
                if (ec || !l.valid()) {
                    ++errors;
                    continue;
                }
                const auto from = now_ns();
                if (write) {
                    const auto v = std::to_string(seed * 100 + i);
                    corolock::request a, b;
                    a.push("SET", "rec:a", v);
                    b.push("SET", "rec:b", v);
                    co_await conn.async_exec(a, corolock::ignore);
                    co_await sleep_for(std::chrono::microseconds(500 + rng() % 1500));
                    co_await conn.async_exec(b, corolock::ignore);
                } else {
                    corolock::request get;
                    get.push("MGET", "rec:a", "rec:b");
                    corolock::generic_response resp;
                    co_await conn.async_exec(get, resp);
                    if (resp.size() == 3 && resp[1].value != resp[2].value)
                        ++torn;
                    co_await sleep_for(std::chrono::microseconds(500 + rng() % 1500));
                }
                const auto until = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       l.valid_until().time_since_epoch())
                                       .count();
                const auto to = std::min(now_ns(), until);
                {
                    std::lock_guard<std::mutex> g(mx);
                    lines.push_back(std::to_string(from) + " " + std::to_string(to) + " " +
                                    (write ? "w " : "r ") + std::to_string(l.token().value()));
                }
                auto [rec] = co_await l.async_release(tuple_deferred);
                if (rec)
                    ++errors;
            }
        };
        for (int i = 0; i < coroutines; ++i)
            asio::co_spawn(pool, worker(p * 1000 + i + 1), [&](std::exception_ptr e) {
                if (e)
                    ++errors;
                ++finished;
            });
        while (finished < coroutines)
            std::this_thread::sleep_for(10ms);
        conn.cancel();
        pool.join();
        std::string all;
        for (const auto& l : lines)
            all += l + "\n";
        if (!corolock::test::append_whole(path, all))
            ++errors;
        ::_exit(errors == 0 && torn == 0 ? 0 : 1);
    }
    for (pid_t c : children) {
        int status = 0;
        BOOST_REQUIRE(::waitpid(c, &status, 0) == c);
        BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0)); // no torn read, no error
    }
    struct hold {
        long long from, to;
        char kind;
        unsigned long long token;
    };
    std::vector<hold> holds;
    FILE* f = std::fopen(path, "r");
    hold h{};
    while (std::fscanf(f, "%lld %lld %c %llu", &h.from, &h.to, &h.kind, &h.token) == 4)
        holds.push_back(h);
    std::fclose(f);
    std::remove(path);
    std::sort(holds.begin(), holds.end(), [](auto& a, auto& b) { return a.from < b.from; });
    int writer_overlaps = 0, reader_overlaps = 0, writes = 0;
    unsigned long long last_token = 0;
    bool tokens_grow = true;
    for (std::size_t i = 0; i < holds.size(); ++i) {
        if (holds[i].kind == 'w') {
            ++writes;
            tokens_grow = tokens_grow && holds[i].token > last_token;
            last_token = holds[i].token;
        }
        for (std::size_t j = i + 1; j < holds.size() && holds[j].from < holds[i].to; ++j) {
            if (holds[i].kind == 'w' || holds[j].kind == 'w')
                ++writer_overlaps;
            else
                ++reader_overlaps;
        }
    }
    std::cout << "shared_mutex: " << holds.size() << " holds (" << writes << " writes), "
              << reader_overlaps << " reader overlaps, " << writer_overlaps
              << " overlaps with a writer\n";
    BOOST_TEST(holds.size() == static_cast<std::size_t>(processes * coroutines * rounds));
    BOOST_TEST(writer_overlaps == 0);
    BOOST_TEST(reader_overlaps > 0); // readers did share
    BOOST_TEST(writes > 0);
    BOOST_TEST(tokens_grow);
    for (const char* k : {"rw:history", "{rw:history}:r", "{rw:history}:w"})
        BOOST_TEST(srv.command({"EXISTS", k}) == ":0\r\n", k);
}

BOOST_AUTO_TEST_CASE(over_a_cluster) {
    using corolock::test::redis_cluster;
    if (!redis_cluster::available())
        return;
    redis_cluster c;
    asio::io_context ioc;
    corolock::cluster a_cl(ioc.get_executor(), corolock::test::cluster_config_for(*c.nodes()[0]),
                           quiet());
    corolock::cluster b_cl(ioc.get_executor(), corolock::test::cluster_config_for(*c.nodes()[1]),
                           quiet());
    a_cl.async_run(asio::detached);
    b_cl.async_run(asio::detached);
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            rw a(a_cl, "rw:cluster", slow_retry(3s)), b(b_cl, "rw:cluster", slow_retry(3s));
            auto w = co_await a.async_acquire();
            auto& owner = c.master_of(corolock::detail::key_slot("rw:cluster"));
            BOOST_TEST(owner.command({"EXISTS", "rw:cluster"}) == ":1\r\n");
            int granted = 0;
            for (int i = 0; i < 3; ++i)
                asio::co_spawn(
                    ioc,
                    [&]() -> awaitable<void> {
                        auto [ec, l] = co_await b.async_acquire_shared_for(10s, tuple_deferred);
                        BOOST_TEST(!ec, ec.message());
                        granted += l.valid() ? 1 : 0;
                        co_await sleep_for(200ms);
                        co_await l.async_release();
                    },
                    asio::detached);
            co_await sleep_for(200ms);
            BOOST_TEST(granted == 0);
            const auto released = clock_type::now();
            co_await w.async_release();
            // "all": every reader of the process retries, none after its 5 s timer.
            BOOST_TEST(co_await eventually([&] { return granted == 3; }, 10s));
            BOOST_TEST((clock_type::now() - released < 2s));
            a_cl.cancel();
            b_cl.cancel();
        }(),
        60s, 1, corolock::test::drain_check::off);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_shared_mutex
