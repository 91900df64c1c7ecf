// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What the mutex suites (test/integration/mutex/*.cpp) share: the lock layer against real
// redis-server processes. Besides the behaviour kept from the old API (mutual exclusion,
// handoffs, watchdog, cancellation, fencing, destruction, connection stop), each failure class of
// the safety review (reviews-2026-11-23/review-safety.md) has one regression test, named by the
// behaviour it checks (the section comments give the review IDs): its scenario, replayed on the
// lease API, must not happen any more.
// Included by those suites only: it brings the names they use into scope, as one file did.
#ifndef COROLOCK_TEST_INTEGRATION_MUTEX_FIXTURE_HPP
#define COROLOCK_TEST_INTEGRATION_MUTEX_FIXTURE_HPP

#include "common/coro_test.hpp"
#include "common/fault_proxy.hpp"
#include "common/redis_process.hpp"
#include "common/server_fixture.hpp"
#include "common/test_config.hpp"
#include "core/lock_scripts.hpp"
#include <corolock/mutex.hpp>
#include <corolock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::lease;
using corolock::mutex_options;
using corolock::test::bulk;
using corolock::test::config_for;
using corolock::test::direction;
using corolock::test::eventually;
using corolock::test::fault_proxy;
using corolock::test::lease_of;
using corolock::test::log_capture;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace mutex_test {

using corolock::test::tuple_deferred;
inline constexpr auto tuple_use_awaitable = asio::as_tuple(asio::use_awaitable);
using namespace asio::experimental::awaitable_operators;

inline constexpr auto one_year = std::chrono::hours(24 * 365);

inline long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

inline void spin_for(clock_type::duration d) {
    const auto until = clock_type::now() + d;
    while (clock_type::now() < until) {
    }
}

// The shared fixture (`conn` and `peer`: "another process"), and on demand a third connection
// through a fault proxy.
struct fixture : corolock::test::server_fixture {
    std::unique_ptr<fault_proxy> proxy;

    // Call from the body: a connection through a new fault proxy. Health checks are off (a
    // delayed PONG would drop the connection; the tests decide when it drops).
    corolock::connection& proxied(corolock::logger log = quiet()) {
        proxy = std::make_unique<fault_proxy>(srv.port());
        auto cfg = config_for(srv);
        cfg.port = std::to_string(proxy->port());
        cfg.health_check_interval = clock_type::duration::zero();
        cfg.connect_timeout = 5s;
        return add_connection(cfg, std::move(log));
    }
    corolock::lock_stats stats() { return corolock::get_lock_stats(conn); }
};

inline const corolock::fenced_script fenced_incr("return redis.call('INCR', KEYS[1])");

// Runs fenced_incr on `key` with `l`; the error, and the reply's value when there is one.
inline awaitable<std::pair<error_code, std::string>> fenced_incr_with(lease& l, std::string key) {
    const std::string_view keys[] = {key};
    corolock::generic_response resp;
    auto [ec] = co_await l.async_fenced_eval(fenced_incr, keys, {}, resp, tuple_deferred);
    co_return std::pair{ec, ec || resp.empty() ? std::string() : resp.at(0).value};
}

} // namespace mutex_test

#endif
