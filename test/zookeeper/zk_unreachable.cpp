// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper lock while no server answers (one SIGSTOPped, or nothing listening on the
// port): a cancel, a deadline and a try end the acquisition without waiting for a server, and a
// release ends once the lease is lost, yet no node is left behind once the server is back. Also
// a zero wait (one attempt) and what an invalid path's error says.
#include "common/redis_process.hpp"
#include "zk_test.hpp"
#include <corolock/with_lock.hpp>
#include <corolock/zk_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <memory>
#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace zookeeper_zk_unreachable {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error_code;
using corolock::zk_lease;
using corolock::zk_mutex;
using corolock::test::eventually;
using corolock::test::running_zk;
using corolock::test::zk_test_config;
using steady = std::chrono::steady_clock;

namespace {

constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

// How an operation started with a callback ended.
struct outcome {
    bool done = false;
    error_code ec;
    bool owns = false;
    steady::duration took{};
};

// A completion handler that records into a new outcome.
struct recorder {
    std::shared_ptr<outcome> o = std::make_shared<outcome>();
    steady::time_point t0 = steady::now();

    void operator()(error_code ec, zk_lease l) const {
        o->done = true;
        o->ec = ec;
        o->owns = l.owns();
        o->took = steady::now() - t0;
    }
    void operator()(error_code ec) const {
        o->done = true;
        o->ec = ec;
        o->took = steady::now() - t0;
    }
};

double seconds(steady::duration d) {
    return std::chrono::duration<double>(d).count();
}

// A lock taken and released once the session is up: its node exists.
const std::string up_path = "/corolock/unreachable/up";

// Runs `body(server, connection)` against a server of its own (the test pauses it), through a
// connection with the session timeout `timeout` whose session is up (logging into `log`, if
// given); 60 s at most.
void with_own_server(
    std::chrono::milliseconds timeout,
    std::function<awaitable<void>(corolock::test::zk_ensemble&, corolock::zk_connection&)> body,
    corolock::test::log_capture* log = nullptr) {
    corolock::test::zk_ensemble zk(1);
    asio::io_context ioc;
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            auto cfg = zk_test_config(zk.connect_string(), timeout);
            if (log != nullptr)
                cfg.log = log->make(corolock::logger::level::info);
            running_zk conn(ex, cfg);
            zk_mutex m(*conn, up_path);
            auto l = co_await m.async_acquire(asio::use_awaitable);
            co_await l.async_release(asio::use_awaitable);
            co_await body(zk, *conn);
        }(),
        60s);
}

// Resumes the server; then `m` is granted (nodes left by abandoned acquisitions would be ahead
// of ours) and nothing is left after its release.
awaitable<void> resume_and_find_the_lock_free(corolock::test::zk_ensemble& zk, zk_mutex& m) {
    zk.resume(0);
    auto [ec, l] = co_await m.async_acquire_for(5s, tuple);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(l.valid());
    co_await l.async_release(tuple);
    BOOST_TEST(co_await corolock::test::wait_ephemerals(zk, 0) == 0);
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_unreachable)

// The server SIGSTOPped with a 10 s session: the client would declare it lost only after about
// 6.7 s. A terminal cancel and zk_mutex::cancel at 0.7 s, and a 500 ms deadline, end their
// acquisitions long before that; the nodes their creates made once the server resumes are
// deleted, and the lock is free again.
BOOST_AUTO_TEST_CASE(paused_server_cancel_and_deadline_end_the_acquire) {
    corolock::test::log_capture log;
    with_own_server(
        10s,
        [](corolock::test::zk_ensemble& zk, corolock::zk_connection& conn) -> awaitable<void> {
            // A lock node that exists: the creates make nodes once the server reads them.
            zk_mutex m(conn, up_path);
            zk_mutex m2(conn, up_path);
            zk.pause(0);
            asio::cancellation_signal sig;
            recorder a, b, c;
            m.async_acquire(asio::bind_cancellation_slot(sig.slot(), a));
            m2.async_acquire(b);
            m.async_acquire_for(500ms, c);
            co_await corolock::test::sleep_for(700ms);
            sig.emit(asio::cancellation_type::terminal);
            m2.cancel();
            const bool ended =
                co_await eventually([&] { return a.o->done && b.o->done && c.o->done; }, 3s, 20ms);
            BOOST_TEST(ended);
            BOOST_TEST_MESSAGE("zookeeper: cancel after "
                               << seconds(a.o->took) << " s, cancel() " << seconds(b.o->took)
                               << " s, 500 ms wait " << seconds(c.o->took) << " s");
            BOOST_TEST(a.o->ec == asio::error::operation_aborted, a.o->ec.message());
            BOOST_TEST(b.o->ec == asio::error::operation_aborted, b.o->ec.message());
            BOOST_TEST(c.o->ec == corolock::error::acquire_timeout, c.o->ec.message());
            BOOST_TEST(!a.o->owns);
            BOOST_TEST(!c.o->owns);
            BOOST_TEST((c.o->took >= 500ms));
            // Whatever the creates made once the server read them is deleted.
            co_await resume_and_find_the_lock_free(zk, m);
        },
        &log);
    // The nodes the abandoned creates made were deleted as their replies came.
    BOOST_TEST(log.contains("created for an acquisition that ended"));
}

// A try while the server is SIGSTOPped ends with connection_lost within its bound (the session
// timeout), not when the server comes back; its node, if the server made one, is deleted.
BOOST_AUTO_TEST_CASE(paused_server_try_reports_connection_lost) {
    with_own_server(
        3s, [](corolock::test::zk_ensemble& zk, corolock::zk_connection& conn) -> awaitable<void> {
            zk_mutex m(conn, up_path); // its node exists: the create can make one
            zk.pause(0);
            recorder t;
            m.async_try_acquire(t);
            const bool ended = co_await eventually([&] { return t.o->done; }, 8s, 20ms);
            BOOST_TEST(ended);
            BOOST_TEST_MESSAGE("zookeeper: try ended after " << seconds(t.o->took) << " s");
            BOOST_TEST(t.o->ec == corolock::error::connection_lost, t.o->ec.message());
            BOOST_TEST(!t.o->owns);
            // The node the try's create may have made (found by owner id) is deleted.
            co_await resume_and_find_the_lock_free(zk, m);
        });
}

// Nothing listening on the port: the session never starts. Cancels, a 500 ms deadline and a try
// (bounded by the 2 s session timeout) all end on their own, and nothing is left queued.
BOOST_AUTO_TEST_CASE(nothing_listening_cancel_deadline_and_try_end) {
    asio::io_context ioc;
    corolock::test::run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            const auto port = corolock::test::pick_free_port();
            running_zk conn(ex, zk_test_config("127.0.0.1:" + std::to_string(port), 2s));
            zk_mutex m(*conn, "/corolock/unreachable/nobody");
            zk_mutex m2(*conn, "/corolock/unreachable/nobody");
            asio::cancellation_signal sig;
            recorder a, b, c, t;
            m.async_acquire(asio::bind_cancellation_slot(sig.slot(), a));
            m2.async_acquire(b);
            m.async_acquire_for(500ms, c);
            m.async_try_acquire(t);
            co_await corolock::test::sleep_for(300ms);
            sig.emit(asio::cancellation_type::terminal);
            m2.cancel();
            const bool ended = co_await eventually(
                [&] { return a.o->done && b.o->done && c.o->done && t.o->done; }, 8s, 20ms);
            BOOST_TEST(ended);
            BOOST_TEST_MESSAGE("zookeeper: cancel after "
                               << seconds(a.o->took) << " s, cancel() " << seconds(b.o->took)
                               << " s, 500 ms wait " << seconds(c.o->took) << " s, try "
                               << seconds(t.o->took) << " s");
            BOOST_TEST(a.o->ec == asio::error::operation_aborted, a.o->ec.message());
            BOOST_TEST(b.o->ec == asio::error::operation_aborted, b.o->ec.message());
            BOOST_TEST(c.o->ec == corolock::error::acquire_timeout, c.o->ec.message());
            BOOST_TEST(t.o->ec == corolock::error::connection_lost, t.o->ec.message());
            BOOST_TEST((c.o->took >= 500ms));
            BOOST_TEST((a.o->took < 3s)); // not bounded by anything but the cancel
        }(),
        60s);
}

// A release sent while the server is SIGSTOPped ends with lease_lost when the lease's validity
// ends (not when the server is back); a release after the loss ends at once. The deletes go
// out after the server resumes (or the nodes go with the session).
BOOST_AUTO_TEST_CASE(paused_server_release_ends_with_the_validity) {
    with_own_server(
        2s, [](corolock::test::zk_ensemble& zk, corolock::zk_connection& conn) -> awaitable<void> {
            zk_mutex m(conn, "/corolock/unreachable/release");
            zk_mutex other(conn, "/corolock/unreachable/release2");
            auto l = co_await m.async_acquire(asio::use_awaitable);
            auto l2 = co_await other.async_acquire(asio::use_awaitable);
            const auto valid_until = l.valid_until();
            zk.pause(0);
            recorder r;
            l.async_release(r);
            const bool ended = co_await eventually([&] { return r.o->done; }, 6s, 20ms);
            BOOST_TEST(ended);
            BOOST_TEST_MESSAGE("zookeeper: release ended after " << seconds(r.o->took) << " s");
            BOOST_TEST(r.o->ec == corolock::error::lease_lost, r.o->ec.message());
            BOOST_TEST((steady::now() >= valid_until)); // not before the lease could be lost
            // Already lost: ends at once, still paused.
            BOOST_TEST(l2.lost());
            recorder r2;
            l2.async_release(r2);
            BOOST_TEST(co_await eventually([&] { return r2.o->done; }, 1s, 5ms));
            BOOST_TEST(r2.o->ec == corolock::error::lease_lost, r2.o->ec.message());
            zk.resume(0);
            BOOST_TEST(co_await corolock::test::wait_ephemerals(zk, 0) == 0);
        });
}

// with_lock whose body ends while the server is SIGSTOPped: its release ends when the lease is
// lost (with_lock throws lease_lost), not when the server is back.
BOOST_AUTO_TEST_CASE(paused_server_with_lock_returns_with_the_validity) {
    with_own_server(
        2s, [](corolock::test::zk_ensemble& zk, corolock::zk_connection& conn) -> awaitable<void> {
            zk_mutex m(conn, "/corolock/unreachable/with-lock");
            corolock::error_code ec;
            const auto t0 = steady::now();
            try {
                co_await corolock::with_lock(m, [&](zk_lease&) -> awaitable<void> {
                    zk.pause(0);
                    co_await corolock::test::sleep_for(100ms);
                });
            } catch (const boost::system::system_error& e) {
                ec = e.code();
            }
            const auto took = steady::now() - t0;
            BOOST_TEST_MESSAGE("zookeeper: with_lock ended after " << seconds(took) << " s");
            BOOST_TEST(ec == corolock::error::lease_lost, ec.message());
            BOOST_TEST((took < 6s)); // the validity (under 2 s) with room; the server still paused
            zk.resume(0);
            BOOST_TEST(co_await corolock::test::wait_ephemerals(zk, 0) == 0);
        });
}

// A zero wait is one attempt: a free lock is granted, a held one times out at once (its node
// deleted).
BOOST_AUTO_TEST_CASE(zero_wait_is_one_attempt) {
    asio::io_context ioc;
    corolock::test::run_coroutine_test(ioc, [&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        running_zk conn(ex, zk_test_config());
        zk_mutex m(*conn, "/corolock/unreachable/zero");
        auto [ec, l] = co_await m.async_acquire_for(0ms, tuple);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(l.valid());
        auto [ec2, l2] = co_await m.async_acquire_for(0ms, tuple);
        BOOST_TEST(ec2 == corolock::error::acquire_timeout, ec2.message());
        BOOST_TEST(!l2.owns());
        auto [ec3, l3] = co_await m.async_acquire_until(steady::now() - 1s, tuple);
        BOOST_TEST(ec3 == corolock::error::acquire_timeout, ec3.message());
        co_await l.async_release(tuple);
        BOOST_TEST(co_await corolock::test::wait_ephemerals(corolock::test::shared_zk(), 0) == 0);
    }());
}

// invalid_name's text is short and names no backend; a warning says what is wrong with this path.
BOOST_AUTO_TEST_CASE(invalid_path_says_why) {
    asio::io_context ioc;
    corolock::test::log_capture log;
    corolock::test::run_coroutine_test(ioc, [&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto cfg = zk_test_config();
        cfg.log = log.make(corolock::logger::level::warning);
        corolock::zk_connection c(ex, cfg);
        zk_mutex m(c, "/a//b");
        auto [ec, l] = co_await m.async_acquire(tuple);
        BOOST_TEST(ec == corolock::error::invalid_name);
        BOOST_TEST(ec.message().find("Redis") == std::string::npos, ec.message());
        BOOST_TEST(ec.message().size() < 80u, ec.message());
        BOOST_TEST(log.contains("\"/a//b\""));
        BOOST_TEST(log.contains("this path has an empty component"));
    }());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace zookeeper_zk_unreachable
