// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/script_request.hpp"
#include "io/connection_impl.hpp"
#include "io/lock_service.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <deque>
#include <mutex>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sstream>

namespace corolock {

namespace detail {

namespace asio = boost::asio;
using asio::awaitable;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

bool cancels_written(asio::cancellation_type t) {
    return (t & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) !=
           asio::cancellation_type::none;
}

// A request sent on behalf of a caller: completes its handler.
class exec_op final : public exec_entry {
public:
    using handler_type = asio::any_completion_handler<void(error_code, std::size_t)>;

    exec_op(const request& req, response_adapter adapter, handler_type h,
            const asio::any_io_executor& fallback)
        : exec_entry(req, adapter, clock::now()), handler_(std::move(h)), fallback_(fallback),
          work_(tracked_work(handler_executor(handler_, fallback))) {}

private:
    void on_complete(error_code ec, std::size_t n) override {
        // The post holds work on the handler's executor from here on.
        deliver_on(work_, std::move(handler_), fallback_, ec, n);
        work_ = {};
    }

    handler_type handler_;
    asio::any_io_executor fallback_;     // the connection's: never-blocking posts go there
    asio::any_completion_executor work_; // keeps the caller's executor from running out of work
};

// A SUBSCRIBE or UNSUBSCRIBE the connection sends for its listeners. Nobody waits for it, but a
// refusal is reported to the connection (on the strand, from the multiplexer).
struct owned_request {
    request req;
};
class subscribe_op final : owned_request, public exec_entry {
public:
    subscribe_op(request r, std::string command, std::vector<std::string> channels,
                 std::weak_ptr<connection_impl> conn)
        : owned_request{std::move(r)}, exec_entry(req, {}, clock::now()),
          command_(std::move(command)), channels_(std::move(channels)), conn_(std::move(conn)) {}

private:
    void on_subscribe_refused(std::string_view text) override { refusal_ = text; }
    void on_complete(error_code, std::size_t) override {
        if (refusal_.empty())
            return;
        if (auto c = conn_.lock())
            c->on_subscribe_refused(command_, channels_, refusal_);
    }

    std::string command_;
    std::vector<std::string> channels_;
    std::weak_ptr<connection_impl> conn_;
    std::string refusal_;
};

bool is_auth_error(std::string_view text) {
    return text.starts_with("WRONGPASS") || text.starts_with("NOAUTH") ||
           text.starts_with("NOPERM") || text.find("invalid password") != std::string_view::npos;
}

} // namespace

// ---------------------------------------------------------------- stream

awaitable<stream::io_result> stream::read_some(asio::mutable_buffer b) {
    if (auto* s = std::get_if<tcp_socket>(&s_))
        co_return co_await s->async_read_some(b, nothrow);
    if (auto* s = std::get_if<tls_stream>(&s_))
        co_return co_await s->async_read_some(b, nothrow);
    if (auto* s = std::get_if<unix_socket>(&s_))
        co_return co_await s->async_read_some(b, nothrow);
    co_return io_result{asio::error::not_connected, 0};
}

awaitable<stream::io_result> stream::write(asio::const_buffer b) {
    if (auto* s = std::get_if<tcp_socket>(&s_))
        co_return co_await asio::async_write(*s, b, nothrow);
    if (auto* s = std::get_if<tls_stream>(&s_))
        co_return co_await asio::async_write(*s, b, nothrow);
    if (auto* s = std::get_if<unix_socket>(&s_))
        co_return co_await asio::async_write(*s, b, nothrow);
    co_return io_result{asio::error::not_connected, 0};
}

std::size_t stream::write_now(asio::const_buffer b, error_code& ec) {
    if (auto* s = std::get_if<tcp_socket>(&s_))
        return s->write_some(b, ec);
    if (auto* s = std::get_if<unix_socket>(&s_))
        return s->write_some(b, ec);
    ec = asio::error::operation_not_supported;
    return 0;
}

awaitable<error_code> stream::connect(const connection_config& cfg, asio::ssl::context* tls,
                                      const asio::any_io_executor& ex) {
    close();
    s_.emplace<std::monostate>();
    if (!cfg.unix_socket.empty()) {
        unix_socket sock(ex);
        auto [ec] = co_await sock.async_connect(
            asio::local::stream_protocol::endpoint(cfg.unix_socket), nothrow);
        if (!ec)
            sock.non_blocking(true, ec); // for write_now
        if (!ec)
            s_.emplace<unix_socket>(std::move(sock));
        co_return ec;
    }
    asio::ip::tcp::resolver resolver(ex);
    auto [rec, endpoints] = co_await resolver.async_resolve(cfg.host, cfg.port, nothrow);
    if (rec)
        co_return rec;
    tcp_socket sock(ex);
    auto [cec, ep] = co_await asio::async_connect(sock, endpoints, nothrow);
    if (cec)
        co_return cec;
    error_code ignored;
    sock.set_option(asio::ip::tcp::no_delay(true), ignored);
    if (!cfg.use_tls) {
        if (sock.non_blocking(true, cec); cec) // for write_now
            co_return cec;
        s_.emplace<tcp_socket>(std::move(sock));
        co_return error_code{};
    }
    if (!tls)
        co_return error_code(error::invalid_argument);
    auto& s = s_.emplace<tls_stream>(std::move(sock), *tls);
    // With verify_peer, the certificate must also be for the host we dialled; SNI is for names
    // only (RFC 6066).
    error_code not_ip;
    asio::ip::make_address(cfg.host, not_ip);
    if (not_ip) {
        if (SSL_set_tlsext_host_name(s.native_handle(), cfg.host.c_str()) != 1 ||
            SSL_set1_host(s.native_handle(), cfg.host.c_str()) != 1)
            co_return error_code(error::invalid_argument);
    } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s.native_handle()), cfg.host.c_str()) !=
               1) {
        co_return error_code(error::invalid_argument);
    }
    auto [hec] = co_await s.async_handshake(asio::ssl::stream_base::client, nothrow);
    co_return hec;
}

void stream::close() noexcept {
    error_code ignored;
    if (auto* s = std::get_if<tcp_socket>(&s_))
        s->close(ignored);
    else if (auto* s = std::get_if<tls_stream>(&s_))
        s->lowest_layer().close(ignored);
    else if (auto* s = std::get_if<unix_socket>(&s_))
        s->close(ignored);
}

// ---------------------------------------------------------------- read_buffer

asio::mutable_buffer read_buffer::prepare(std::size_t min_free) {
    if (pos_ > 0) {
        std::copy(data_.begin() + static_cast<std::ptrdiff_t>(pos_),
                  data_.begin() + static_cast<std::ptrdiff_t>(end_), data_.begin());
        end_ -= pos_;
        pos_ = 0;
    }
    if (data_.size() - end_ < min_free)
        data_.resize(std::max(end_ + min_free, data_.size() * 2));
    return asio::buffer(data_.data() + end_, data_.size() - end_);
}

// ---------------------------------------------------------------- context shutdown

namespace {

// The connections and clusters of one execution context, abandoned when it shuts down (its
// destructor, after the last run() returned). Created by the first of them, after the reactor
// their timers use, so it shuts down before the reactor and the scheduler destroy their queues.
class shutdown_registry final : public asio::execution_context::service {
public:
    static inline asio::execution_context::id id;

    explicit shutdown_registry(asio::execution_context& ctx) : service(ctx) {}

    void add(std::weak_ptr<context_shutdown_hook> hook) {
        std::lock_guard<std::mutex> g(mutex_);
        // Drop the dead ones once the list has doubled since the last sweep: amortised O(1).
        if (hooks_.size() >= 2 * swept_size_ + 16) {
            std::erase_if(hooks_, [](const auto& h) { return h.expired(); });
            swept_size_ = hooks_.size();
        }
        hooks_.push_back(std::move(hook));
    }

private:
    void shutdown() override {
        std::vector<std::weak_ptr<context_shutdown_hook>> hooks;
        {
            std::lock_guard<std::mutex> g(mutex_);
            hooks.swap(hooks_);
        }
        for (auto& weak : hooks)
            if (auto h = weak.lock())
                h->abandon();
    }

    std::mutex mutex_;
    std::vector<std::weak_ptr<context_shutdown_hook>> hooks_;
    std::size_t swept_size_ = 0;
};

} // namespace

void abandon_at_shutdown(const asio::any_io_executor& ex,
                         std::weak_ptr<context_shutdown_hook> hook) {
    auto& ctx = asio::query(ex, asio::execution::context);
    asio::use_service<shutdown_registry>(ctx).add(std::move(hook));
}

// ---------------------------------------------------------------- connection_impl

namespace {

asio::any_io_executor make_connection_strand(const asio::any_io_executor& ex) {
    if (const auto* io = ex.target<io_executor>())
        return asio::make_strand(*io);
    return asio::make_strand(ex);
}

} // namespace

connection_impl::connection_impl(asio::any_io_executor ex, asio::ssl::context* tls,
                                 connection_config cfg, logger log)
    : user_ex_(std::move(ex)), strand_(make_connection_strand(user_ex_)), tls_(tls),
      cfg_(std::move(cfg)), log_(std::move(log)), mpx_(cfg_.max_reply_nodes), parser_(cfg_.limits),
      writer_timer_(strand_), reaper_timer_(strand_), sleep_timer_(strand_),
      rng_(std::random_device{}()) {
    if (!cfg_.sentinel.addresses.empty()) {
        sentinels_.emplace(cfg_.sentinel.addresses);
        failover_.emplace(cfg_.sentinel.master_name, cfg_.sentinel.failover_hold);
    }
}

void connection_impl::abandon() noexcept {
    // No thread runs the context any more: what is moved out is destroyed when this returns.
    // (The lock layer registers on its own: lock_service::abandon.)
    mpx_.abandon_all();
    auto listeners = std::move(listeners_);
    listeners_.clear();
    auto orphans = std::move(orphan_claims); // they hold this connection, and their adopters
    orphan_claims.clear();
}

connection_stats connection_impl::stats() const noexcept {
    constexpr auto r = std::memory_order_relaxed;
    return {commands_.load(r),       writes_.load(r),   bytes_written_.load(r),
            bytes_read_.load(r),     replies_.load(r),  pushes_.load(r),
            pushes_dropped_.load(r), connects_.load(r), resolves_.load(r),
            master_switches_.load(r)};
}

void connection_impl::submit(std::shared_ptr<exec_entry> e) {
    asio::post(strand_, [self = shared_from_this(), e = std::move(e)]() mutable {
        self->add_entry(std::move(e));
    });
}

void connection_impl::add_entry(std::shared_ptr<exec_entry> e) {
    if (stopped_) {
        mpx_.add(std::move(e));
        mpx_.fail_all(error::not_connected);
        return;
    }
    mpx_.add(std::move(e));
    if (connected_)
        notify_writer();
    else
        reaper_timer_.cancel();
}

void connection_impl::start_run(asio::any_completion_handler<void(error_code)> handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected())
        slot.assign([weak = weak_from_this()](asio::cancellation_type) {
            if (auto self = weak.lock())
                self->stop();
        });
    asio::post(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
        if (self->running_) {
            deliver(std::move(h), self->user_ex_, error_code(error::operation_in_progress));
            return;
        }
        self->running_ = true;
        self->stopping_ = false;
        self->stopped_ = false;
        auto body = [](std::shared_ptr<connection_impl> self) -> awaitable<error_code> {
            if (self->uses_sentinel() && self->cfg_.sentinel.follow_switch_master) {
                auto r = co_await (self->run() || self->reaper() || self->watch_sentinels());
                co_return r.index() == 0 ? std::get<0>(r)
                                         : error_code(asio::error::operation_aborted);
            }
            auto r = co_await (self->run() || self->reaper());
            co_return r.index() == 0 ? std::get<0>(r) : error_code(asio::error::operation_aborted);
        };
        asio::co_spawn(self->strand_, body(self),
                       asio::bind_cancellation_slot(
                           self->run_signal_.slot(),
                           [self, h = std::move(h)](std::exception_ptr ep, error_code ec) mutable {
                               if (ep || self->stopping_)
                                   ec = asio::error::operation_aborted;
                               self->on_disconnected(ec);
                               self->running_ = false;
                               self->stopped_ = true;
                               self->mpx_.fail_all(self->stopping_
                                                       ? error_code(asio::error::operation_aborted)
                                                       : error_code(error::not_connected));
                               for (auto& [channel, ls] : self->listeners_)
                                   for (auto& l : ls)
                                       l->on_stop();
                               self->run_stop_hook();
                               deliver(std::move(h), self->user_ex_, ec);
                           }));
    });
}

void connection_impl::stop() {
    asio::post(strand_, [self = shared_from_this()] {
        self->stopping_ = true;
        if (self->running_) {
            self->run_signal_.emit(asio::cancellation_type::terminal);
        } else {
            self->stopped_ = true;
            self->mpx_.fail_all(asio::error::operation_aborted);
        }
    });
}

awaitable<error_code> connection_impl::run() {
    backoff wait(cfg_.reconnect_wait, cfg_.reconnect_wait_max);
    error_code last;
    for (;;) {
        error_code ec = co_await connect_once();
        if (!ec) {
            wait.reset();
            last = {};
            on_connected();
            auto r = co_await (reader() || writer() || health_check());
            ec = std::visit([](error_code e) { return e; }, r);
            on_disconnected(ec);
        } else {
            stream_.close();
            if (ec != last && log_.enabled(logger::level::warning)) {
                std::ostringstream os;
                os << "connect to ";
                if (uses_sentinel())
                    os << "master '" << cfg_.sentinel.master_name << "' (Sentinel)";
                else
                    os << (cfg_.unix_socket.empty() ? cfg_.host + ":" + cfg_.port
                                                    : cfg_.unix_socket);
                os << " failed: " << ec.message();
                log_.log(logger::level::warning, os.str());
            }
            last_connect_error_ = ec;
            down_flag_.store(true, std::memory_order_relaxed);
            if (connect_failure_hook_)
                connect_failure_hook_();
        }
        last = ec;
        if (stopping_)
            co_return asio::error::operation_aborted;
        if (cfg_.reconnect_wait <= std::chrono::steady_clock::duration::zero())
            co_return ec;
        sleep_timer_.expires_after(wait.next(rng_));
        co_await sleep_timer_.async_wait(nothrow);
    }
}

awaitable<error_code> connection_impl::connect_once() {
    // With Sentinel, every attempt asks where the master is now (never a cached address).
    connection_config master_cfg;
    if (uses_sentinel()) {
        auto [ec, where] = co_await resolve_master();
        if (ec)
            co_return ec;
        master_ = where;
        master_cfg = cfg_;
        master_cfg.host = where.host;
        master_cfg.port = where.port;
        master_cfg.unix_socket.clear();
    }
    auto attempt = [](connection_impl* self,
                      const connection_config* target) -> awaitable<error_code> {
        if (auto ec = co_await self->stream_.connect(*target, self->tls_, self->strand_))
            co_return ec;
        co_return co_await self->handshake();
    };
    const connection_config* target = uses_sentinel() ? &master_cfg : &cfg_;
    if (cfg_.connect_timeout <= std::chrono::steady_clock::duration::zero())
        co_return co_await attempt(this, target);
    asio::steady_timer timer(strand_, cfg_.connect_timeout);
    auto r = co_await (attempt(this, target) || timer.async_wait(nothrow));
    if (r.index() == 1)
        co_return error::connect_timeout;
    co_return std::get<0>(r);
}

awaitable<error_code> connection_impl::handshake() {
    request req;
    const std::string user = cfg_.username.empty() ? "default" : cfg_.username;
    if (cfg_.password.empty() && cfg_.client_name.empty())
        req.push("HELLO", 3);
    else if (cfg_.password.empty())
        req.push("HELLO", 3, "SETNAME", cfg_.client_name);
    else if (cfg_.client_name.empty())
        req.push("HELLO", 3, "AUTH", user, cfg_.password);
    else
        req.push("HELLO", 3, "AUTH", user, cfg_.password, "SETNAME", cfg_.client_name);
    if (cfg_.database != 0)
        req.push("SELECT", cfg_.database);
    // Sentinel named this server: it must still be a master (a stale Sentinel, or a demoted
    // master that has not been told yet, would take writes that are then lost).
    const std::size_t role_reply = uses_sentinel() ? req.expected_responses() : 0;
    if (uses_sentinel())
        req.push("ROLE");
    generic_response role;

    rbuf_.clear();
    parser_.reset();
    auto [wec, wn] = co_await stream_.write(asio::buffer(req.payload()));
    if (wec)
        co_return wec;
    bytes_written_ += wn;

    // Read one reply per command; the first node of each tells success or failure.
    for (std::size_t i = 0; i < req.expected_responses();) {
        error_code ec;
        auto n = parser_.consume(rbuf_.unread(), ec);
        if (ec)
            co_return ec;
        if (!n) {
            if (rbuf_.unread().size() > cfg_.max_read_size)
                co_return error::message_too_large;
            auto [rec, rn] = co_await stream_.read_some(rbuf_.prepare(4096));
            if (rec)
                co_return rec;
            rbuf_.commit(rn);
            bytes_read_ += rn;
            continue;
        }
        if (uses_sentinel() && i == role_reply && i > 0)
            role.push_back({n->data_type, n->aggregate_size, n->depth, std::string(n->value)});
        if (n->depth == 0 && resp3::is_error(n->data_type) &&
            !(uses_sentinel() && i == role_reply)) {
            const bool auth = i == 0 && is_auth_error(n->value);
            log_.log(logger::level::error,
                     std::string("handshake refused: ") + std::string(n->value));
            co_return auth ? error_code(error::auth_failed) : classify_server_error(n->value);
        }
        if (parser_.done()) {
            rbuf_.consume(parser_.consumed());
            parser_.reset();
            ++i;
        }
    }
    if (uses_sentinel()) {
        if (auto ec = check_role(role)) {
            log_.log(logger::level::warning,
                     "sentinel: " + master_.host + ":" + master_.port + " is not a master");
            co_return ec;
        }
    }
    co_return error_code{};
}

awaitable<error_code> connection_impl::reader() {
    for (;;) {
        if (auto ec = process_input())
            co_return ec;
        auto [ec, n] = co_await stream_.read_some(rbuf_.prepare(64 * 1024));
        if (ec)
            co_return ec;
        rbuf_.commit(n);
        bytes_read_.fetch_add(n, std::memory_order_relaxed);
    }
}

error_code connection_impl::process_input() {
    for (;;) {
        error_code ec;
        auto n = parser_.consume(rbuf_.unread(), ec);
        if (ec)
            return ec;
        if (!n)
            return rbuf_.unread().size() > cfg_.max_read_size ? error::message_too_large
                                                              : error_code{};
        if (n->depth == 0) {
            // An attribute annotates the value that follows it; corolock has no use for it.
            in_attribute_ = n->data_type == resp3::type::attribute;
            if (!in_attribute_)
                route_ = n->data_type == resp3::type::push ? route::push : route::reply;
            if (route_ == route::reply && resp3::is_error(n->data_type) && uses_sentinel() &&
                demoted_reply(n->value))
                demoted_ = true;
        }
        if (!in_attribute_) {
            // A message has 4 nodes; keeping one more tells a longer push apart, and bounds the
            // memory a hostile push can take.
            if (route_ == route::push && push_nodes_.size() < 5)
                push_nodes_.push_back(
                    {n->data_type, n->aggregate_size, n->depth, std::string(n->value)});
            else if (auto e = mpx_.on_node(*n))
                return e;
        }
        if (parser_.done()) {
            const auto bytes = parser_.consumed();
            rbuf_.consume(bytes);
            parser_.reset();
            if (route_ == route::push) {
                on_push_complete();
            } else {
                replies_.fetch_add(1, std::memory_order_relaxed);
                in_reply_end_ = true;
                const auto completed = mpx_.on_reply_end(bytes); // alive till c->run() ends
                in_reply_end_ = false;
                if (auto* c = std::exchange(continuation_, nullptr))
                    c->run();
            }
            route_ = route::none;
            if (demoted_) {
                // Not a writable master any more: that request failed (not executed); the ones
                // written behind it may have run, so the connection is dropped, not kept.
                demoted_ = false;
                log_.log(logger::level::warning,
                         "sentinel: the master refused a write (READONLY/MASTERDOWN); resolving "
                         "again");
                return error::readonly;
            }
        }
    }
}

void connection_impl::on_push_complete() {
    pushes_.fetch_add(1, std::memory_order_relaxed);
    auto nodes = std::move(push_nodes_);
    push_nodes_.clear();
    // message/smessage: [push 3] kind channel payload
    if (nodes.size() != 4 || nodes[0].aggregate_size != 3)
        return;
    const std::string& kind = nodes[1].value;
    const bool moved = sharded_pubsub_ && kind == "sunsubscribe";
    if (kind != "message" && kind != "smessage" && !moved)
        return;
    auto it = listeners_.find(nodes[2].value);
    if (it == listeners_.end())
        return;
    if (moved) {
        // Ours are sent only when no listener is left: this one is the server's (slot moved).
        log_.log(logger::level::info,
                 "sharded channel unsubscribed by the server (slot moved): " + nodes[2].value);
        for (auto& l : std::vector(it->second))
            l->on_slot_moved();
        return;
    }
    auto targets = it->second; // a listener may unsubscribe while being told
    for (auto& l : targets)
        l->on_message(nodes[2].value, nodes[3].value);
}

void connection_impl::notify_writer() {
    // Nothing in flight and no write under way: a lone request (one coroutine's next script)
    // goes out now, in the call that queued it. Waking the writer instead cost a timer
    // completion, the coroutine's resumption, an async_write and its posted completion: about a
    // third of the handlers and system calls (a reactor poll per handler chain) of an awaited
    // acquire + release at one coroutine. With replies pending, the writer is woken instead and
    // writes everything queued until it runs in one go (pipelining at many coroutines).
    if (!writing_ && unwritten_.empty() && mpx_.in_flight() == 0 && stream_.is_plain() &&
        write_batches_.load(std::memory_order_relaxed) == 0)
        return write_now();
    writer_timer_.cancel();
}

void connection_impl::write_now() {
    std::size_t commands = 0;
    const auto buf = mpx_.prepare_write(commands);
    error_code ec;
    const auto n = stream_.write_now(asio::buffer(buf), ec);
    if (n == buf.size())
        return wrote(commands, n);
    // Partly written, would block, or failed: the writer goes on from there (and meets the
    // error, if any, on its own write).
    unwritten_ = buf.substr(n);
    unwritten_commands_ = commands;
    unwritten_done_ = n;
    writer_timer_.cancel();
}

void connection_impl::wrote(std::size_t commands, std::size_t bytes) {
    mpx_.commit_write();
    commands_.fetch_add(commands, std::memory_order_relaxed);
    writes_.fetch_add(1, std::memory_order_relaxed);
    bytes_written_.fetch_add(bytes, std::memory_order_relaxed);
}

awaitable<error_code> connection_impl::writer() {
    for (;;) {
        while (!unwritten_.empty() || mpx_.has_waiting()) {
            std::size_t commands = unwritten_commands_;
            std::size_t done = unwritten_done_;
            auto buf = unwritten_;
            unwritten_ = {};
            unwritten_commands_ = unwritten_done_ = 0;
            if (buf.empty())
                buf = mpx_.prepare_write(commands);
            writing_ = true;
            auto [ec, n] = co_await stream_.write(asio::buffer(buf));
            writing_ = false;
            if (ec)
                co_return ec;
            wrote(commands, done + n);
        }
        writer_timer_.expires_at(clock::time_point::max());
        co_await writer_timer_.async_wait(nothrow);
        // Woken by notify_writer, or cancelled because the connection is going down.
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none)
            co_return asio::error::operation_aborted;
    }
}

awaitable<error_code> connection_impl::health_check() {
    asio::steady_timer timer(strand_);
    if (cfg_.health_check_interval <= std::chrono::steady_clock::duration::zero()) {
        timer.expires_at(clock::time_point::max());
        auto [ec] = co_await timer.async_wait(nothrow);
        co_return ec ? ec : error_code(asio::error::operation_aborted);
    }
    request ping;
    ping.push("PING", "corolock-health");
    for (;;) {
        timer.expires_after(cfg_.health_check_interval);
        if (auto [ec] = co_await timer.async_wait(nothrow); ec)
            co_return ec;
        timer.expires_after(cfg_.health_check_interval);
        auto exec = [](connection_impl* self,
                       const request* req) -> awaitable<std::tuple<error_code, std::size_t>> {
            co_return co_await asio::async_initiate<decltype(nothrow),
                                                    void(error_code, std::size_t)>(
                [self, req](auto handler) {
                    start_exec(self->shared_from_this(), *req, make_adapter(ignore),
                               std::move(handler));
                },
                nothrow);
        };
        // A PING queued behind a deep pipeline is late while replies keep coming: the
        // server is busy, not dead. Only an interval with no byte read and no reply parsed
        // (this strand may have spent it on a large read) is a stall.
        const auto progress = [this] {
            return bytes_read_.load(std::memory_order_relaxed) +
                   replies_.load(std::memory_order_relaxed);
        };
        const auto before = progress();
        auto r = co_await (exec(this, &ping) || timer.async_wait(nothrow));
        if (r.index() == 1) {
            if (progress() != before)
                continue;
            log_.log(logger::level::warning, "health check: no PONG in time; reconnecting");
            co_return error::pong_timeout;
        }
        if (auto [ec, n] = std::get<0>(r); ec)
            co_return ec;
    }
}

awaitable<void> connection_impl::reaper() {
    for (;;) {
        auto oldest = connected_ ? std::nullopt : mpx_.oldest_waiting();
        const bool limited =
            cfg_.max_wait_for_connection > std::chrono::steady_clock::duration::zero();
        if (oldest && limited)
            reaper_timer_.expires_at(*oldest + cfg_.max_wait_for_connection);
        else
            reaper_timer_.expires_at(clock::time_point::max());
        co_await reaper_timer_.async_wait(nothrow);
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none)
            co_return;
        if (!connected_ && limited)
            mpx_.fail_waiting_before(clock::now() - cfg_.max_wait_for_connection,
                                     last_connect_error_ == error::auth_failed
                                         ? error_code(error::auth_failed)
                                         : error_code(error::not_connected));
    }
}

void connection_impl::fail_waiting(error_code ec) {
    asio::post(strand_, [self = shared_from_this(), ec] {
        if (!self->connected_)
            self->mpx_.fail_waiting_before(clock::time_point::max(), ec);
    });
}

void connection_impl::on_connected() {
    connected_ = true;
    connected_flag_.store(true, std::memory_order_relaxed);
    down_flag_.store(false, std::memory_order_relaxed);
    const bool reconnect = connects_.fetch_add(1, std::memory_order_relaxed) > 0;
    last_connect_error_ = {};
    log_.log(logger::level::info, reconnect ? "reconnected" : "connected");
    std::vector<std::string> channels;
    for (auto& [channel, ls] : listeners_)
        if (!refused_.contains(channel)) // refused: not retried (see push_listener)
            channels.push_back(channel);
    if (!channels.empty())
        queue_subscribe(subscribe_command(), channels, true);
    if (reconnect) {
        for (auto& [channel, ls] : listeners_)
            for (auto& l : std::vector(ls))
                l->on_reconnect();
        std::function<void()> hook;
        {
            std::lock_guard<std::mutex> g(lock_service_mutex_);
            hook = reconnect_hook_;
        }
        if (hook)
            hook();
    }
    notify_writer();
    reaper_timer_.cancel();
}

void connection_impl::on_disconnected(error_code ec) {
    const bool was_connected = connected_;
    connected_ = false;
    // Not "known down" yet: only a failed connect attempt says so. A reachable server whose
    // connection dropped (a health check under load) is back after one reconnect, and requests
    // queued meanwhile should wait for it, not be refused.
    connected_flag_.store(false, std::memory_order_relaxed);
    stream_.close();
    writing_ = false;
    unwritten_ = {};
    unwritten_commands_ = unwritten_done_ = 0;
    rbuf_.clear();
    parser_.reset();
    route_ = route::none;
    in_attribute_ = false;
    push_nodes_.clear();
    demoted_ = false;
    // In-flight requests learn why: a protocol error names the bad reply, anything else is a
    // lost connection (their outcome on the server is unknown).
    mpx_.on_connection_lost(
        ec == condition::protocol_violation ? ec : error_code(error::connection_lost));
    if (was_connected && !stopping_ && log_.enabled(logger::level::warning))
        log_.log(logger::level::warning, "connection lost: " + ec.message());
    reaper_timer_.cancel();
}

void connection_impl::queue_subscribe(std::string_view command,
                                      const std::vector<std::string>& channels, bool front) {
    request req;
    req.push_range(command, channels);
    auto e = std::make_shared<subscribe_op>(std::move(req), std::string(command), channels,
                                            weak_from_this());
    if (front)
        mpx_.add_front(std::move(e));
    else
        add_entry(std::move(e));
}

bool connection_impl::is_redirect(std::string_view refusal) const noexcept {
    // A cluster node that does not serve the channel's slot: the subscription belongs elsewhere.
    const auto kind = classify_server_error(refusal);
    return sharded_pubsub_ && (kind == error::moved || kind == error::ask);
}

void connection_impl::tell_refused(push_listener& l, std::string_view refusal) {
    if (is_redirect(refusal))
        l.on_subscribe_redirected(refusal);
    else
        l.on_subscribe_failed(error::subscribe_refused);
}

void connection_impl::on_subscribe_refused(std::string_view command,
                                           const std::vector<std::string>& channels,
                                           std::string_view text) {
    // A redirect is routine while slots move (the listener's owner follows it); a refusal is not.
    const auto level = is_redirect(text) ? logger::level::info : logger::level::error;
    if (log_.enabled(level)) {
        std::string line = (level == logger::level::info ? "subscription redirected: "
                                                         : "subscription refused: ") +
                           std::string(command);
        for (const auto& c : channels)
            line += " " + c;
        line += ": " + std::string(text);
        log_.log(level, line);
    }
    if (command != subscribe_command())
        return; // a refused UNSUBSCRIBE leaves nobody waiting
    for (const auto& channel : channels) {
        auto it = listeners_.find(channel);
        if (it == listeners_.end())
            continue; // every listener left meanwhile
        refused_.insert_or_assign(channel, std::string(text));
        for (auto& l : std::vector(it->second)) // a listener may leave while being told
            tell_refused(*l, text);
    }
}

void connection_impl::add_listener(const std::string& channel, std::shared_ptr<push_listener> l) {
    auto& ls = listeners_[channel];
    ls.push_back(l);
    if (ls.size() == 1)
        queue_subscribe(subscribe_command(), {channel}, false);
    else if (auto r = refused_.find(channel); r != refused_.end())
        tell_refused(*l, r->second);
}

void connection_impl::remove_listener(const std::string& channel, const push_listener* l) {
    auto it = listeners_.find(channel);
    if (it == listeners_.end())
        return;
    auto& ls = it->second;
    ls.erase(std::remove_if(ls.begin(), ls.end(), [l](const auto& p) { return p.get() == l; }),
             ls.end());
    if (ls.empty()) {
        listeners_.erase(it);
        // A refused channel was never subscribed; a later listener may try it again.
        if (refused_.erase(channel) == 0)
            queue_subscribe(unsubscribe_command(), {channel}, false);
    }
}

// ---------------------------------------------------------------- subscription

struct subscription_state final : push_listener, std::enable_shared_from_this<subscription_state> {
    subscription_state(std::shared_ptr<connection_impl> c, std::string ch)
        : conn(std::move(c)), channel(std::move(ch)), capacity(conn->push_buffer_size()) {}

    void on_message(std::string_view ch, std::string_view payload) override {
        if (pending) {
            out->channel = ch;
            out->payload = payload;
            finish({});
            return;
        }
        queue.push_back({std::string(ch), std::string(payload)});
        if (queue.size() > capacity) {
            queue.pop_front();
            dropped.fetch_add(1, std::memory_order_relaxed);
            conn->count_dropped_push();
        }
    }
    void on_stop() override {
        if (pending)
            finish(asio::error::operation_aborted);
    }
    void on_subscribe_failed(error_code ec) override {
        failed = ec;
        if (pending)
            finish(ec);
    }
    void finish(error_code ec) {
        out = nullptr;
        deliver(std::move(pending), conn->executor(), ec);
        pending = nullptr;
    }

    std::shared_ptr<connection_impl> conn;
    std::string channel;
    std::size_t capacity;
    std::deque<message> queue;
    std::atomic<std::size_t> dropped{0};
    error_code failed; // the server refused the subscription: receives fail with it
    asio::any_completion_handler<void(error_code)> pending;
    message* out = nullptr;
};

} // namespace detail

namespace asio = boost::asio;

subscription& subscription::operator=(subscription&& other) noexcept {
    if (this != &other) {
        reset();
        state_ = std::move(other.state_);
    }
    return *this;
}

subscription::~subscription() {
    reset();
}

void subscription::reset() noexcept {
    if (!state_)
        return;
    auto st = std::move(state_);
    auto conn = st->conn;
    asio::post(conn->strand(), [st = std::move(st), conn] {
        conn->remove_listener(st->channel, st.get());
        st->on_stop();
    });
}

std::size_t subscription::dropped() const noexcept {
    return state_ ? state_->dropped.load(std::memory_order_relaxed) : 0;
}

const std::string& subscription::channel() const noexcept {
    static const std::string none;
    return state_ ? state_->channel : none;
}

void subscription::async_receive_impl(message& out,
                                      asio::any_completion_handler<void(error_code)> handler) {
    if (!state_) {
        detail::deliver(std::move(handler), asio::system_executor(),
                        error_code(asio::error::bad_descriptor));
        return;
    }
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto st = state_;
    if (slot.is_connected())
        slot.assign(
            [weak = std::weak_ptr<detail::subscription_state>(st)](asio::cancellation_type) {
                if (auto s = weak.lock())
                    asio::post(s->conn->strand(), [s] {
                        if (s->pending)
                            s->finish(asio::error::operation_aborted);
                    });
            });
    asio::post(st->conn->strand(), [st, &out, h = std::move(handler)]() mutable {
        if (!st->queue.empty()) {
            out = std::move(st->queue.front());
            st->queue.pop_front();
            detail::deliver(std::move(h), st->conn->executor(), error_code{});
            return;
        }
        if (st->pending) {
            detail::deliver(std::move(h), st->conn->executor(),
                            error_code(error::operation_in_progress));
            return;
        }
        if (st->failed) {
            detail::deliver(std::move(h), st->conn->executor(), st->failed);
            return;
        }
        // Not move-assignment: in Boost 1.81 it recurses forever (it copies from an lvalue).
        st->pending.swap(h);
        st->out = &out;
    });
}

// ---------------------------------------------------------------- connection

connection::connection(executor_type ex, connection_config cfg, logger log)
    : impl_(detail::make_abandonable<detail::connection_impl>(ex, ex, nullptr, std::move(cfg),
                                                              std::move(log))) {}

connection::connection(executor_type ex, asio::ssl::context& tls, connection_config cfg, logger log)
    : impl_(detail::make_abandonable<detail::connection_impl>(ex, ex, &tls, std::move(cfg),
                                                              std::move(log))) {}

connection::~connection() {
    impl_->stop();
}

connection::executor_type connection::get_executor() const noexcept {
    return impl_->executor();
}

const connection_config& connection::config() const noexcept {
    return impl_->config();
}

void connection::cancel() {
    impl_->stop();
}

bool connection::is_connected() const noexcept {
    return impl_->is_connected();
}

connection_stats connection::stats() const noexcept {
    return impl_->stats();
}

void connection::async_run_impl(asio::any_completion_handler<void(error_code)> handler) {
    impl_->start_run(std::move(handler));
}

void connection::async_exec_impl(
    const request& req, detail::response_adapter adapter,
    asio::any_completion_handler<void(error_code, std::size_t)> handler) {
    if (req.has_blocking_command() && !impl_->config().allow_blocking_commands &&
        detail::carries_locks(*impl_)) {
        detail::deliver(std::move(handler), impl_->executor(), error_code(error::blocking_command),
                        std::size_t(0));
        return;
    }
    detail::start_exec(impl_, req, adapter, std::move(handler));
}

namespace detail {

void start_eval(const std::shared_ptr<connection_impl>& impl, const script& s,
                std::shared_ptr<request> req, generic_response& resp,
                asio::any_completion_handler<void(error_code)> handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto ex = asio::get_associated_executor(handler, impl->executor());
    auto retry = [impl, s = &s, req, resp = &resp, slot, ex,
                  h = std::move(handler)](error_code ec, std::size_t) mutable {
        if (ec || !is_noscript(*resp)) {
            std::move(h)(ec);
            return;
        }
        resp->clear();
        auto eval = std::make_shared<request>(evalsha_to_eval(*req, *s));
        start_exec(impl, *eval, make_adapter(*resp),
                   asio::bind_cancellation_slot(
                       slot, asio::bind_executor(
                                 ex, [eval, h = std::move(h)](error_code ec, std::size_t) mutable {
                                     std::move(h)(ec);
                                 })));
    };
    start_exec(impl, *req, make_adapter(resp),
               asio::bind_cancellation_slot(slot, asio::bind_executor(ex, std::move(retry))));
}

void start_exec(const std::shared_ptr<connection_impl>& impl, const request& req,
                response_adapter adapter,
                asio::any_completion_handler<void(error_code, std::size_t)> handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto op = std::make_shared<exec_op>(req, adapter, std::move(handler), impl->executor());
    if (slot.is_connected()) {
        slot.assign([weak = std::weak_ptr<exec_entry>(op), impl](asio::cancellation_type t) {
            asio::post(impl->strand(), [weak, impl, t] {
                auto e = weak.lock();
                if (e && (!e->written() || cancels_written(t)))
                    impl->cancel_entry(e);
            });
        });
    }
    impl->submit(std::move(op));
}

} // namespace detail

void connection::async_eval_impl(const script& s, std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args, generic_response& resp,
                                 asio::any_completion_handler<void(error_code)> handler) {
    auto req = std::make_shared<request>(detail::make_evalsha(s, keys, args));
    detail::start_eval(impl_, s, std::move(req), resp, std::move(handler));
}

subscription connection::subscribe(std::string channel) {
    auto st = std::make_shared<detail::subscription_state>(impl_, std::move(channel));
    asio::post(impl_->strand(), [st] { st->conn->add_listener(st->channel, st); });
    return subscription(st);
}

} // namespace corolock
