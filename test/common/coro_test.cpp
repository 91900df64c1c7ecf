// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/coro_test.hpp"

#include "common/test_config.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace corolock::test {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr auto drain_grace = std::chrono::seconds(5);

std::string describe(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        return ex.what();
    } catch (...) {
        return "an exception not derived from std::exception";
    }
}

long long to_ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// Shared with the completion handler, which may outlive this call if the body never finishes.
struct test_state {
    std::mutex mutex;
    std::condition_variable changed;
    bool body_done = false;
    clock_type::time_point done_at;
    std::exception_ptr body_error;
    unsigned runners_left = 0;
    bool timed_out = false;
    std::vector<std::string> run_errors;
};

} // namespace

void run_coroutine_test(boost::asio::io_context& ioc, boost::asio::awaitable<void> body,
                        clock_type::duration timeout, unsigned threads, drain_check drain) {
    threads = std::max(threads, 1u);
    auto state = std::make_shared<test_state>();
    state->runners_left = threads;
    auto started = clock_type::now();

    ioc.restart();
    boost::asio::co_spawn(ioc, std::move(body), [state, &ioc, drain](std::exception_ptr e) {
        {
            std::lock_guard lock(state->mutex);
            state->body_done = true;
            state->done_at = clock_type::now();
            state->body_error = e;
        }
        state->changed.notify_all();
        if (drain == drain_check::off) {
            ioc.stop();
        }
    });

    auto run = [state, &ioc] {
        for (;;) {
            try {
                ioc.run();
                break;
            } catch (...) {
                std::lock_guard lock(state->mutex);
                state->run_errors.push_back(describe(std::current_exception()));
            }
        }
        {
            std::lock_guard lock(state->mutex);
            --state->runners_left;
        }
        state->changed.notify_all();
    };

    // The watchdog stops the io_context at the deadline: the body's, or once the body is done,
    // the drain's.
    std::thread watchdog([state, &ioc, started, timeout] {
        std::unique_lock lock(state->mutex);
        for (;;) {
            if (state->runners_left == 0) {
                return;
            }
            auto deadline = started + timeout;
            if (state->body_done) {
                deadline = std::min(deadline, state->done_at + drain_grace);
            }
            if (state->changed.wait_until(lock, deadline) == std::cv_status::timeout &&
                state->runners_left != 0 && clock_type::now() >= deadline) {
                state->timed_out = true;
                ioc.stop();
                return;
            }
        }
    });

    std::vector<std::thread> helpers;
    for (unsigned i = 1; i < threads; ++i) {
        helpers.emplace_back(run);
    }
    run();
    for (auto& t : helpers) {
        t.join();
    }
    watchdog.join();

    // Every other thread has been joined: the state is ours alone from here on.
    for (const auto& what : state->run_errors) {
        BOOST_ERROR("exception escaped io_context::run: " << what);
    }
    auto elapsed = to_ms(clock_type::now() - started);
    if (!state->body_done || state->body_error || state->timed_out)
        dump_log_ring();
    if (!state->body_done) {
        if (state->timed_out) {
            BOOST_FAIL("coroutine test did not finish within " << to_ms(timeout) << " ms");
        }
        if (drain == drain_check::on) {
            BOOST_FAIL("io_context ran out of work after "
                       << elapsed << " ms while the test body was still suspended "
                       << "(a completion handler was dropped?)");
        }
        BOOST_FAIL("io_context stopped after " << elapsed
                                               << " ms while the test body was still suspended");
    }
    if (state->body_error) {
        BOOST_FAIL("coroutine test body threw: " << describe(state->body_error));
    }
    if (drain == drain_check::on && state->timed_out) {
        BOOST_ERROR("io_context did not drain after the test body finished (work still pending "
                    << elapsed << " ms after the start)");
    }
}

namespace {

// One thread for every off_loop call, alive until the process exits: a child process started
// with PR_SET_PDEATHSIG (child_process does) is killed when the *thread* that started it exits,
// so a thread per call would take the server it started down with it.
class blocking_worker {
public:
    static blocking_worker& instance() {
        static blocking_worker* w =
            new blocking_worker; // never destroyed: the thread outlives main
        return *w;
    }
    void submit(std::function<void()> job) {
        {
            std::lock_guard g(m_);
            jobs_.push_back(std::move(job));
        }
        cv_.notify_one();
    }

private:
    blocking_worker() {
        std::thread([this] {
            for (;;) {
                std::function<void()> job;
                {
                    std::unique_lock g(m_);
                    cv_.wait(g, [this] { return !jobs_.empty(); });
                    job = std::move(jobs_.front());
                    jobs_.pop_front();
                }
                job();
            }
        }).detach();
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
};

} // namespace

boost::asio::awaitable<void> off_loop(std::function<void()> f) {
    namespace asio = boost::asio;
    const auto ex = co_await asio::this_coro::executor;
    std::exception_ptr err;
    co_await asio::async_initiate<const asio::use_awaitable_t<>, void()>(
        [&f, &err, ex](auto handler) {
            // Tracked: the io_context does not run out of work while the call is away.
            auto work = asio::prefer(ex, asio::execution::outstanding_work.tracked);
            auto h = std::make_shared<decltype(handler)>(std::move(handler));
            blocking_worker::instance().submit([&f, &err, work, h]() mutable {
                try {
                    f();
                } catch (...) {
                    err = std::current_exception();
                }
                auto hex = asio::get_associated_executor(*h, work);
                asio::post(hex, [h] { std::move (*h)(); });
            });
        },
        asio::use_awaitable);
    if (err)
        std::rethrow_exception(err);
}

void orphaned_pair::run(boost::asio::io_context& ioc,
                        std::function<boost::asio::awaitable<void>(bool&)> hold,
                        std::function<boost::asio::awaitable<void>()> wait) {
    namespace asio = boost::asio;
    using namespace std::chrono_literals;
    auto holder_token = std::make_shared<int>(0), waiter_token = std::make_shared<int>(0);
    holder_alive_ = holder_token;
    waiter_alive_ = waiter_token;
    // The tokens and the functions live in the lambdas, which co_spawn keeps in the frames.
    asio::co_spawn(
        ioc,
        [this, holder_token, hold = std::move(hold)]() -> asio::awaitable<void> {
            co_await hold(held_);
        },
        asio::detached);
    asio::co_spawn(
        ioc,
        [this, waiter_token, wait = std::move(wait)]() -> asio::awaitable<void> {
            while (!held_)
                co_await sleep_for(5ms);
            co_await wait();
            waiter_done_ = true;
        },
        asio::detached);
    holder_token.reset();
    waiter_token.reset();
    ioc.run_for(500ms);
    ioc.stop();
}

void orphaned_pair::check() const {
    BOOST_TEST(held_);
    BOOST_TEST(!waiter_done_);
    BOOST_TEST(holder_alive_.expired());
    BOOST_TEST(waiter_alive_.expired());
}

} // namespace corolock::test
