// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/fault_proxy.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <deque>
#include <exception>
#include <future>
#include <list>
#include <ostream>
#include <random>
#include <thread>
#include <type_traits>

namespace corolock::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

std::ostream& operator<<(std::ostream& os, direction d) {
    return os << (d == direction::client_to_server ? "client_to_server" : "server_to_client");
}

namespace {

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

constexpr std::size_t index_of(direction d) noexcept {
    return d == direction::client_to_server ? 0 : 1;
}

struct fault_state {
    clock_type::duration delay{};
    clock_type::duration jitter{};
    bool blackholed = false;
};

struct chunk {
    clock_type::time_point release;
    std::string data;
};

// Closes with RST: the peer's next read fails with "connection reset".
void hard_close(tcp::socket& s) {
    boost::system::error_code ec;
    if (!s.is_open())
        return;
    s.set_option(tcp::socket::linger(true, 0), ec);
    s.close(ec);
}

} // namespace

struct fault_proxy::impl {
    struct session;

    // One direction of one connection: what was read and not yet written.
    struct pipe {
        explicit pipe(asio::io_context& ioc) : wake(ioc) {}
        std::deque<chunk> queue;
        std::size_t held = 0;
        clock_type::time_point last_release{};
        bool eof = false;  // the source ended: pass the end on after the queue
        bool done = false; // the writer has finished
        asio::steady_timer wake;
    };

    struct session : std::enable_shared_from_this<session> {
        explicit session(impl& o, tcp::socket c)
            : owner(o), client(std::move(c)), server(o.ioc), pipes{pipe(o.ioc), pipe(o.ioc)} {}
        impl& owner;
        tcp::socket client;
        tcp::socket server;
        std::array<pipe, 2> pipes;
        bool closed = false;

        tcp::socket& source(std::size_t dir) { return dir == 0 ? client : server; }
        tcp::socket& sink(std::size_t dir) { return dir == 0 ? server : client; }
        void wake_all() {
            for (auto& p : pipes)
                p.wake.cancel();
        }
    };

    explicit impl(tcp::endpoint up) : upstream(up) {}

    asio::io_context ioc;
    asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
    tcp::acceptor acceptor{ioc};
    tcp::endpoint upstream;
    std::array<fault_state, 2> faults;
    bool refusing = false;
    bool stopping = false;
    std::list<std::shared_ptr<session>> sessions;
    std::minstd_rand rng{std::random_device{}()};
    counters totals;
    std::thread thread;
    std::promise<void> thread_done;

    // Runs f on the proxy's thread and waits for it.
    template <class F>
    auto run_sync(F f) -> decltype(f()) {
        using result = decltype(f());
        std::promise<result> p;
        auto fut = p.get_future();
        asio::post(ioc, [&] {
            try {
                if constexpr (std::is_void_v<result>) {
                    f();
                    p.set_value();
                } else {
                    p.set_value(f());
                }
            } catch (...) {
                p.set_exception(std::current_exception());
            }
        });
        return fut.get();
    }

    clock_type::time_point release_time(pipe& p, std::size_t dir) {
        const auto& f = faults[dir];
        auto hold = f.delay;
        if (f.jitter > clock_type::duration::zero()) {
            std::uniform_int_distribution<clock_type::rep> d(-f.jitter.count(), f.jitter.count());
            hold += clock_type::duration(d(rng));
        }
        hold = std::max(hold, clock_type::duration::zero());
        // Order is kept: a chunk never leaves before the one read before it.
        const auto t = std::max(clock_type::now() + hold, p.last_release);
        p.last_release = t;
        return t;
    }

    void forget(const std::shared_ptr<session>& s) { sessions.remove(s); }

    void close_session(const std::shared_ptr<session>& s, bool reset) {
        if (s->closed)
            return;
        s->closed = true;
        for (auto& p : s->pipes) {
            p.queue.clear();
            p.held = 0;
        }
        if (reset) {
            hard_close(s->client);
            hard_close(s->server);
        } else {
            boost::system::error_code ec;
            s->client.close(ec);
            s->server.close(ec);
        }
        s->wake_all();
        forget(s);
    }

    static asio::awaitable<void> read_side(std::shared_ptr<session> s, std::size_t dir) {
        auto& p = s->pipes[dir];
        std::array<char, 16384> buf;
        for (;;) {
            auto [ec, n] = co_await s->source(dir).async_read_some(asio::buffer(buf), nothrow);
            if (s->closed)
                co_return;
            if (ec)
                break; // an end or a reset: pass the end on after what is queued
            s->owner.totals.bytes_read[dir] += n;
            p.queue.push_back({s->owner.release_time(p, dir), std::string(buf.data(), n)});
            p.held += n;
            p.wake.cancel();
        }
        p.eof = true;
        p.wake.cancel();
    }

    static asio::awaitable<void> write_side(std::shared_ptr<session> s, std::size_t dir) {
        auto& p = s->pipes[dir];
        auto& f = s->owner.faults[dir];
        std::string out;
        while (!s->closed) {
            auto wait_until = clock_type::time_point::max();
            const auto now = clock_type::now();
            if (p.queue.empty()) {
                if (p.eof) {
                    boost::system::error_code ec;
                    s->sink(dir).shutdown(tcp::socket::shutdown_send, ec);
                    break;
                }
            } else if (!f.blackholed) {
                if (p.queue.front().release <= now) {
                    out.clear();
                    while (!p.queue.empty() && p.queue.front().release <= now) {
                        out += p.queue.front().data;
                        p.queue.pop_front();
                    }
                    p.held -= out.size();
                    auto [ec, n] =
                        co_await asio::async_write(s->sink(dir), asio::buffer(out), nothrow);
                    if (s->closed)
                        co_return;
                    if (ec) { // the other side is gone: nothing more can go this way
                        p.queue.clear();
                        p.held = 0;
                        break;
                    }
                    s->owner.totals.bytes_written[dir] += n;
                    continue;
                }
                wait_until = p.queue.front().release;
            }
            p.wake.expires_at(wait_until);
            co_await p.wake.async_wait(nothrow);
        }
        if (s->closed)
            co_return;
        p.done = true;
        if (s->pipes[0].done && s->pipes[1].done)
            s->owner.close_session(s, false);
    }

    static asio::awaitable<void> start_session(std::shared_ptr<session> s) {
        auto [ec] = co_await s->server.async_connect(s->owner.upstream, nothrow);
        if (s->closed)
            co_return;
        if (ec) {
            s->owner.close_session(s, true);
            co_return;
        }
        boost::system::error_code ignored;
        s->client.set_option(tcp::no_delay(true), ignored);
        s->server.set_option(tcp::no_delay(true), ignored);
        auto& ioc = s->owner.ioc;
        for (std::size_t dir = 0; dir < 2; ++dir) {
            asio::co_spawn(ioc, read_side(s, dir), asio::detached);
            asio::co_spawn(ioc, write_side(s, dir), asio::detached);
        }
    }

    static asio::awaitable<void> accept_loop(impl* self) {
        while (!self->stopping) {
            auto [ec, sock] = co_await self->acceptor.async_accept(nothrow);
            if (self->stopping)
                co_return;
            if (ec)
                continue;
            if (self->refusing) {
                ++self->totals.refused;
                hard_close(sock);
                continue;
            }
            ++self->totals.accepted;
            auto s = std::make_shared<session>(*self, std::move(sock));
            self->sessions.push_back(s);
            asio::co_spawn(self->ioc, start_session(s), asio::detached);
        }
    }
};

fault_proxy::fault_proxy(std::uint16_t upstream_port, std::string upstream_host)
    : impl_(std::make_unique<impl>(
          tcp::endpoint(asio::ip::make_address(upstream_host), upstream_port))) {
    auto& m = *impl_;
    const tcp::endpoint local(asio::ip::make_address("127.0.0.1"), 0);
    m.acceptor.open(local.protocol());
    m.acceptor.set_option(tcp::acceptor::reuse_address(true));
    m.acceptor.bind(local);
    m.acceptor.listen();
    port_ = m.acceptor.local_endpoint().port();
    asio::co_spawn(m.ioc, impl::accept_loop(&m), asio::detached);
    m.thread = std::thread([&m] {
        for (;;) {
            try {
                m.ioc.run();
                break;
            } catch (...) {
                // Nothing here throws on purpose; keep the proxy alive for the test to finish.
            }
        }
        m.thread_done.set_value();
    });
}

fault_proxy::~fault_proxy() {
    auto& m = *impl_;
    m.run_sync([&m] {
        m.stopping = true;
        boost::system::error_code ec;
        m.acceptor.close(ec);
        for (auto& s : std::vector(m.sessions.begin(), m.sessions.end()))
            m.close_session(s, false);
    });
    m.work.reset();
    // Every coroutine has been woken to end; if one did not, stop the loop anyway.
    if (m.thread_done.get_future().wait_for(std::chrono::seconds(5)) != std::future_status::ready)
        m.ioc.stop();
    m.thread.join();
}

void fault_proxy::delay(direction d, duration delay, duration jitter) {
    impl_->run_sync([&] {
        auto& f = impl_->faults[index_of(d)];
        f.delay = delay;
        f.jitter = jitter;
    });
}

void fault_proxy::blackhole(direction d) {
    impl_->run_sync([&] { impl_->faults[index_of(d)].blackholed = true; });
}

void fault_proxy::blackhole() {
    impl_->run_sync([&] {
        for (auto& f : impl_->faults)
            f.blackholed = true;
    });
}

void fault_proxy::half_open() {
    blackhole(direction::server_to_client);
}

void fault_proxy::reset_all() {
    impl_->run_sync([&] {
        auto& m = *impl_;
        for (auto& s : std::vector(m.sessions.begin(), m.sessions.end())) {
            ++m.totals.reset;
            m.close_session(s, true);
        }
    });
}

void fault_proxy::refuse_new(bool on) {
    impl_->run_sync([&] { impl_->refusing = on; });
}

void fault_proxy::heal() {
    impl_->run_sync([&] {
        auto& m = *impl_;
        m.faults = {};
        m.refusing = false;
        const auto now = clock_type::now();
        for (auto& s : m.sessions)
            for (auto& p : s->pipes) {
                for (auto& c : p.queue)
                    c.release = std::min(c.release, now);
                p.last_release = std::min(p.last_release, now);
                p.wake.cancel();
            }
    });
}

fault_proxy::counters fault_proxy::stats() const {
    return impl_->run_sync([this] {
        auto& m = *impl_;
        counters c = m.totals;
        c.open = m.sessions.size();
        for (auto& s : m.sessions)
            for (std::size_t dir = 0; dir < 2; ++dir)
                c.bytes_held[dir] += s->pipes[dir].held;
        return c;
    });
}

} // namespace corolock::test
