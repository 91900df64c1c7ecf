// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_CONNECTION_IMPL_HPP
#define COROLOCK_SRC_DETAIL_CONNECTION_IMPL_HPP

#include "core/backoff.hpp"
#include "core/multiplexer.hpp"
#include "core/script_request.hpp"
#include "core/sentinel_resolve.hpp"
#include <corolock/connection.hpp>
#include <corolock/resp3/parser.hpp>

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

namespace corolock::detail {

using io_executor = boost::asio::io_context::executor_type;
using io_strand = boost::asio::strand<io_executor>;

// The common executors of a completion handler, seen through a type-erased one: a handler's
// executor reaches corolock as an any_completion_executor, and every copy of it that changes a
// property (a post, work tracking) allocates. When it is an io_context's executor or a strand of
// one, `f(concrete)` runs with the concrete executor and returns true; else nothing runs.
template <class Executor, class F>
bool with_concrete(const Executor& ex, F&& f) {
    namespace execution = boost::asio::execution;
    using tracked = decltype(boost::asio::prefer(std::declval<io_executor>(),
                                                 execution::outstanding_work.tracked));
    using tracked_strand = decltype(boost::asio::prefer(std::declval<io_strand>(),
                                                        execution::outstanding_work.tracked));
    if (auto* io = ex.template target<io_executor>())
        return f(*io), true;
    if (auto* io = ex.template target<tracked>())
        return f(*io), true;
    if (auto* st = ex.template target<io_strand>())
        return f(*st), true;
    if (auto* st = ex.template target<tracked_strand>())
        return f(*st), true;
    return false;
}

// The executor of `handler` (else `fallback`), as an any_completion_executor. Asking an erased
// handler converts the fallback too: a concrete one costs no allocation.
template <class Handler>
boost::asio::any_completion_executor
handler_executor(const Handler& handler, const boost::asio::any_io_executor& fallback) {
    boost::asio::any_completion_executor ex;
    if (!with_concrete(fallback, [&](const auto& c) {
            ex = boost::asio::get_associated_executor(handler, c);
        }))
        ex = boost::asio::get_associated_executor(handler, fallback);
    return ex;
}

// Outstanding work on `ex`, held while an operation is pending so that its io_context does not
// run out of work. Concrete where possible (see with_concrete): no allocation.
inline boost::asio::any_completion_executor
tracked_work(const boost::asio::any_completion_executor& ex) {
    namespace execution = boost::asio::execution;
    boost::asio::any_completion_executor out;
    if (!with_concrete(ex, [&](const auto& c) {
            out = boost::asio::prefer(c, execution::outstanding_work.tracked);
        }))
        out = boost::asio::prefer(ex, execution::outstanding_work.tracked);
    return out;
}

// Completes `handler` with `args` on `ex` (its associated executor, from handler_executor),
// clearing its cancellation slot first. Always a post, never a dispatch: callers run on the
// connection's strand, and a dispatch onto an executor whose thread is the strand's (an
// io_context run by this thread) would run user code inside the strand, where a busy handler
// stalls every reply. The executor of an erased handler (any_completion_executor) cannot be
// required never-blocking, so the post goes to `fallback` (or the system executor if that cannot
// either), whose work dispatcher then dispatches to the handler's executor, holding work on it
// meanwhile; an io_context's executor or a strand of one is posted to directly.
template <class Handler, class Executor, class... Args>
void deliver_on(const boost::asio::any_completion_executor& ex, Handler&& handler,
                const Executor& fallback, Args... args) {
    auto fn = [h = std::forward<Handler>(handler), ... args = std::move(args)]() mutable {
        boost::asio::get_associated_cancellation_slot(h).clear();
        std::move(h)(std::move(args)...);
    };
    if (with_concrete(ex, [&](const auto& c) { boost::asio::post(c, std::move(fn)); }))
        return;
    auto bound = boost::asio::bind_executor(ex, std::move(fn));
    if constexpr (boost::asio::can_require<Executor,
                                           boost::asio::execution::blocking_t::never_t>::value)
        boost::asio::post(fallback, std::move(bound));
    else
        boost::asio::post(boost::asio::system_executor(), std::move(bound));
}

// deliver_on the handler's own executor (else `fallback`'s).
template <class Handler, class Executor, class... Args>
void deliver(Handler&& handler, const Executor& fallback, Args... args) {
    if constexpr (std::is_convertible_v<Executor, boost::asio::any_io_executor>) {
        auto ex = handler_executor(handler, fallback);
        deliver_on(ex, std::forward<Handler>(handler), fallback, std::move(args)...);
    } else {
        auto ex = boost::asio::get_associated_executor(handler, fallback);
        deliver_on(ex, std::forward<Handler>(handler), fallback, std::move(args)...);
    }
}

// Runs `f` on `strand` (a connection's): at once, in the caller, when the strand is idle and this
// thread runs its io_context (asio::dispatch); queued behind the strand's work otherwise. Never
// inline from inside the strand itself (posted then): strand code is not re-entrant. A post from
// the io_context's own thread cost a queued invoker and the reactor poll of a new handler chain
// for every acquire and release. `f` never runs user code: completions are posted (deliver_on).
template <class F>
void enter_strand(const boost::asio::any_io_executor& strand, F&& f) {
    if (const auto* st = strand.target<io_strand>(); st && !st->running_in_this_thread())
        return boost::asio::dispatch(*st, std::forward<F>(f));
    boost::asio::post(strand, std::forward<F>(f));
}

// Receives pub/sub messages of one channel, on the connection's strand. Must not block.
class push_listener {
public:
    virtual ~push_listener() = default;
    virtual void on_message(std::string_view channel, std::string_view payload) = 0;
    // The connection was re-established and its subscriptions re-issued: messages published
    // while it was down are lost, so state that waits for one should re-check.
    virtual void on_reconnect() {}
    // The connection stopped for good (async_run ended).
    virtual void on_stop() {}
    // Sharded pub/sub: the server unsubscribed the channel by itself (its slot moved to another
    // node). Messages will not come here any more; state that waits for one should re-check.
    virtual void on_slot_moved() { on_reconnect(); }
    // The server refused to subscribe to the channel (error::subscribe_refused; the text is
    // logged). Final for this listener: the connection does not retry it, not even after a
    // reconnect, until every listener of the channel is gone. Messages will not come, so state
    // that waits for one must rely on its own timer.
    virtual void on_subscribe_failed(error_code /*ec*/) {}
    // Sharded pub/sub: the node answered the subscription with a redirect (`text`, e.g.
    // "MOVED 3999 127.0.0.1:7002"): it does not serve the channel's slot (any more). Not a
    // refusal: nothing is subscribed here and the connection does not send it again (as for a
    // refusal, until every listener of the channel is gone), so the listener's owner must
    // subscribe where the slot is now (the cluster's relay does). A listener that cannot go
    // elsewhere (a `subscription` on a node connection) takes it as a refusal: the default.
    virtual void on_subscribe_redirected(std::string_view /*text*/) {
        on_subscribe_failed(error::subscribe_refused);
    }
};

// The byte stream under a connection: TCP, TLS over TCP, or a unix socket.
class stream {
public:
    using tcp_socket = boost::asio::ip::tcp::socket;
    using tls_stream = boost::asio::ssl::stream<tcp_socket>;
    using unix_socket = boost::asio::local::stream_protocol::socket;
    using io_result = std::tuple<error_code, std::size_t>;

    boost::asio::awaitable<io_result> read_some(boost::asio::mutable_buffer b);
    boost::asio::awaitable<io_result> write(boost::asio::const_buffer b);
    // A plain socket (TCP or unix, in non-blocking mode), not TLS: what write_now needs.
    bool is_plain() const noexcept {
        return std::holds_alternative<tcp_socket>(s_) || std::holds_alternative<unix_socket>(s_);
    }
    // Plain sockets only: a write now, without the reactor (would_block when the socket cannot
    // take the bytes).
    std::size_t write_now(boost::asio::const_buffer b, error_code& ec);
    boost::asio::awaitable<error_code> connect(const connection_config& cfg,
                                               boost::asio::ssl::context* tls,
                                               const boost::asio::any_io_executor& ex);
    void close() noexcept;

private:
    std::variant<std::monostate, tcp_socket, tls_stream, unix_socket> s_;
};

// A growable byte buffer: [0, pos_) consumed, [pos_, end_) unread, [end_, size) free.
class read_buffer {
public:
    std::string_view unread() const noexcept { return {data_.data() + pos_, end_ - pos_}; }
    void consume(std::size_t n) noexcept { pos_ += n; }
    // Free space for the next read, moving unread bytes to the front first.
    boost::asio::mutable_buffer prepare(std::size_t min_free);
    void commit(std::size_t n) noexcept { end_ += n; }
    void clear() noexcept { pos_ = end_ = 0; }

private:
    std::vector<char> data_;
    std::size_t pos_ = 0;
    std::size_t end_ = 0;
};

// What a connection or cluster does when its execution context is destroyed (or shut down) with
// operations still queued. The context destroys the handlers in its own queues; those queued
// inside corolock (a request waiting for its reply, a lock waiter) it never sees, and they may
// hold the very object that holds them (a coroutine owning its connection, a cluster's routing
// coroutine): `abandon` destroys them, never invoking them, so that such cycles are freed.
class context_shutdown_hook {
public:
    virtual void abandon() noexcept = 0;
    virtual ~context_shutdown_hook() = default;
};

// Registers `hook` with the execution context of `ex` (any thread): `abandon()` is called when
// that context shuts down, if the object is still alive then.
void abandon_at_shutdown(const boost::asio::any_io_executor& ex,
                         std::weak_ptr<context_shutdown_hook> hook);

// std::make_shared<T>(args...), registered with abandon_at_shutdown on `ex`'s context.
template <class T, class... Args>
std::shared_ptr<T> make_abandonable(const boost::asio::any_io_executor& ex, Args&&... args) {
    auto p = std::make_shared<T>(std::forward<Args>(args)...);
    abandon_at_shutdown(ex, p);
    return p;
}

class connection_impl : public std::enable_shared_from_this<connection_impl>,
                        public context_shutdown_hook {
public:
    using clock = std::chrono::steady_clock;

    connection_impl(boost::asio::any_io_executor ex, boost::asio::ssl::context* tls,
                    connection_config cfg, logger log);
    void abandon() noexcept override;

    const boost::asio::any_io_executor& executor() const noexcept { return user_ex_; }
    // A strand of the io_context's own executor when the user's executor is one (a strand of
    // the type-erased executor would allocate on every copy), else of the user's executor.
    const boost::asio::any_io_executor& strand() const noexcept { return strand_; }
    const connection_config& config() const noexcept { return cfg_; }
    const logger& log() const noexcept { return log_; }

    // --- called on any thread
    void start_run(boost::asio::any_completion_handler<void(error_code)> handler);
    void stop();
    bool is_connected() const noexcept { return connected_flag_.load(std::memory_order_relaxed); }
    // Known to be down: a connect attempt failed and none has succeeded since. False while up,
    // while the first connect is under way, and while reconnecting after a drop until an attempt
    // fails: a request queued then is written as soon as the connection is back.
    bool known_down() const noexcept { return down_flag_.load(std::memory_order_relaxed); }
    connection_stats stats() const noexcept;
    // Queues an entry (posts to the strand).
    void submit(std::shared_ptr<exec_entry> e);

    // While one lives, a request queued here waits for the writer instead of going out at once
    // (write_now), so that requests queued together leave in one write: a multi-lock's tries
    // and releases, a release and the hand-off attempt behind it. Any thread.
    class write_batch {
    public:
        explicit write_batch(connection_impl* c) noexcept : c_(c) {
            if (c_)
                c_->write_batches_.fetch_add(1, std::memory_order_relaxed);
        }
        ~write_batch() {
            if (c_)
                c_->write_batches_.fetch_sub(1, std::memory_order_relaxed);
        }
        write_batch(const write_batch&) = delete;
        write_batch& operator=(const write_batch&) = delete;

    private:
        connection_impl* c_;
    };

    // --- strand only
    void add_entry(std::shared_ptr<exec_entry> e);
    void cancel_entry(const std::shared_ptr<exec_entry>& e) { mpx_.cancel(e); }
    void add_listener(const std::string& channel, std::shared_ptr<push_listener> l);
    void remove_listener(const std::string& channel, const push_listener* l);
    std::size_t push_buffer_size() const noexcept { return cfg_.push_buffer_size; }
    void count_dropped_push() noexcept { pushes_dropped_.fetch_add(1, std::memory_order_relaxed); }

    // A continuation that can run on the strand right after the multiplexer let go of its entry.
    class inline_continuation {
    public:
        virtual void run() = 0;

    protected:
        ~inline_continuation() = default;
    };
    // Strand only, from an entry's on_complete: true when the reader is handing a reply to the
    // multiplexer; `c` then runs as soon as the multiplexer returns, still in the reader's turn
    // on the strand (false: post it). Saves a post to the strand, and the reactor poll of the
    // handler chain it starts, per reply.
    bool continue_inline(inline_continuation& c) noexcept {
        if (!in_reply_end_)
            return false;
        continuation_ = &c;
        return true;
    }

    // The lock layer's per-connection state, created on first use by `make(stop, reconnect)`
    // (any thread), which may also set the hooks: `stop` is called on the strand when async_run
    // ends for good, `reconnect` on the strand after each reconnection (before anything queued
    // is written: the server may be another one, or have restarted).
    template <class Make>
    std::shared_ptr<void> lock_service(Make make) {
        std::lock_guard<std::mutex> g(lock_service_mutex_);
        if (!lock_service_)
            lock_service_ = make(stop_hook_, reconnect_hook_);
        return lock_service_;
    }
    void run_stop_hook() {
        std::function<void()> hook;
        {
            std::lock_guard<std::mutex> g(lock_service_mutex_);
            hook = stop_hook_;
        }
        if (hook)
            hook();
    }
    // Subscriptions use SSUBSCRIBE/SUNSUBSCRIBE (a cluster node). Call before start_run.
    void use_sharded_pubsub() noexcept { sharded_pubsub_ = true; }
    // Called on the strand after each failed connect attempt (a cluster node: its owner asks
    // for a fresh map). Call before start_run.
    void on_connect_failure(std::function<void()> f) { connect_failure_hook_ = std::move(f); }
    // While not connected, fails every request not yet written with `ec` (any thread): they
    // never reached the server, so their owner may send them elsewhere.
    void fail_waiting(error_code ec);
    // True once async_run has ended (or cancel() came first): requests fail at once. Strand only.
    bool stopped() const noexcept { return stopped_; }
    std::shared_ptr<void> existing_lock_service() {
        std::lock_guard<std::mutex> g(lock_service_mutex_);
        return lock_service_;
    }

private:
    boost::asio::awaitable<error_code> run();
    boost::asio::awaitable<error_code> connect_once();
    boost::asio::awaitable<error_code> handshake();
    boost::asio::awaitable<error_code> reader();
    boost::asio::awaitable<error_code> writer();
    boost::asio::awaitable<error_code> health_check();
    boost::asio::awaitable<void> reaper();
    error_code process_input();
    void on_push_complete();
    void on_connected();
    void on_disconnected(error_code ec);
    // Something was queued: written at once when the pipeline is idle (see write_now), else
    // the writer is woken and coalesces everything queued meanwhile into its next write.
    void notify_writer();
    void write_now();
    void wrote(std::size_t commands, std::size_t bytes);
    void queue_subscribe(std::string_view command, const std::vector<std::string>& channels,
                         bool front);

    // Sentinel (src/sentinel.cpp). The master's address for this connect attempt, or why none.
    struct resolved {
        error_code ec;
        address master;
    };
    bool uses_sentinel() const noexcept { return sentinels_.has_value(); }
    boost::asio::awaitable<resolved> resolve_master();
    boost::asio::awaitable<sentinel_answer> ask_sentinel(const address& sentinel);
    // The side subscriptions to +switch-master and the failover announcements, one per
    // bootstrap Sentinel (watches [first, watching_.size())); return only when cancelled.
    boost::asio::awaitable<void> watch_sentinels(std::size_t first = 0);
    boost::asio::awaitable<void> watch_sentinel(std::size_t self);
    void on_sentinel_message(const address& from, std::string_view channel,
                             std::string_view payload);
    // A reply said the server is not a writable master (READONLY, MASTERDOWN).
    static bool demoted_reply(std::string_view error_text) noexcept;

public:
    // A SUBSCRIBE or UNSUBSCRIBE the connection sent for its listeners was refused. Strand only.
    void on_subscribe_refused(std::string_view command, const std::vector<std::string>& channels,
                              std::string_view text);

private:
    // Whether a subscription's refusal is a cluster redirect (MOVED, ASK on a sharded
    // connection), and telling a listener of the channel either way.
    bool is_redirect(std::string_view refusal) const noexcept;
    void tell_refused(push_listener& l, std::string_view refusal);

private:
    boost::asio::any_io_executor user_ex_;
    boost::asio::any_io_executor strand_;
    boost::asio::ssl::context* tls_;
    connection_config cfg_;
    logger log_;

    multiplexer mpx_;
    stream stream_;
    read_buffer rbuf_;
    resp3::parser parser_;
    enum class route { none, reply, push } route_ = route::none;
    bool in_reply_end_ = false;
    inline_continuation* continuation_ = nullptr;
    bool in_attribute_ = false;
    std::vector<resp3::node> push_nodes_;

    // The writer: its coroutine is inside a write; what a write_now left unwritten (a view of
    // the multiplexer's buffer), with its command count and what was written of it already.
    bool writing_ = false;
    std::atomic<int> write_batches_{0};
    std::string_view unwritten_;
    std::size_t unwritten_commands_ = 0;
    std::size_t unwritten_done_ = 0;
    boost::asio::steady_timer writer_timer_;
    boost::asio::steady_timer reaper_timer_;
    boost::asio::steady_timer sleep_timer_;
    boost::asio::cancellation_signal run_signal_;
    bool running_ = false;
    bool stopping_ = false;
    bool stopped_ = false; // async_run ended or cancel() before it started: requests fail at once
    error_code last_connect_error_;
    bool connected_ = false;
    std::atomic<bool> connected_flag_{false};
    std::atomic<bool> down_flag_{false}; // see known_down()
    std::minstd_rand rng_;

    std::map<std::string, std::vector<std::shared_ptr<push_listener>>, std::less<>> listeners_;
    // Channels whose SUBSCRIBE the server refused or redirected (MOVED/ASK), with its answer.
    std::map<std::string, std::string, std::less<>> refused_;
    bool sharded_pubsub_ = false;
    std::string_view subscribe_command() const noexcept {
        return sharded_pubsub_ ? "SSUBSCRIBE" : "SUBSCRIBE";
    }
    std::string_view unsubscribe_command() const noexcept {
        return sharded_pubsub_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE";
    }
    std::mutex lock_service_mutex_;
    std::shared_ptr<void> lock_service_;

public:
    // Strand only: claims cancelled by their callers whose SET may still run, by key (claim.cpp).
    // A new claim of the same key waits for that SET's outcome and takes it over, instead of
    // sending a SET that the first one would refuse and then give back.
    std::map<std::string, std::shared_ptr<void>, std::less<>> orphan_claims;

private:
    std::function<void()> stop_hook_;
    std::function<void()> reconnect_hook_;
    std::function<void()> connect_failure_hook_;

    std::optional<sentinel_list> sentinels_;       // with connection_config::sentinel on
    std::optional<failover_watch> failover_;       // what the Sentinels announce (with sentinels_)
    std::vector<std::optional<address>> watching_; // the Sentinel each watch is on
    address master_;                               // where the current (or last) connect went
    bool demoted_ = false; // a reply just said READONLY/MASTERDOWN: drop after it is read

    std::atomic<std::uint64_t> commands_{0}, writes_{0}, bytes_written_{0}, bytes_read_{0},
        replies_{0}, pushes_{0}, pushes_dropped_{0}, connects_{0}, resolves_{0},
        master_switches_{0};
};

// async_exec for corolock's own layers (wires the handler's cancellation slot, then queues the
// entry on the strand): `req` and the adapter's target must outlive it.
void start_exec(const std::shared_ptr<connection_impl>& impl, const request& req,
                response_adapter adapter,
                boost::asio::any_completion_handler<void(error_code, std::size_t)> handler);

// EVALSHA, and EVAL once more on NOSCRIPT. `req` comes from make_evalsha (core/script_request).
void start_eval(const std::shared_ptr<connection_impl>& impl, const script& s,
                std::shared_ptr<request> req, generic_response& resp,
                boost::asio::any_completion_handler<void(error_code)> handler);

// A request of corolock's own layers, queued on the strand: the entry carries `done`, which runs
// on the strand, never inside the multiplexer: right after it, when a reply completed the entry
// (connection_impl::continue_inline), else posted (a failure, a reconnect). One allocation, no
// type-erased handler and no executor copies (start_exec has all three). Never cancelled: the
// lock layer decides what a late reply means.
template <class Done>
class strand_call final : public exec_entry, connection_impl::inline_continuation {
public:
    strand_call(connection_impl& c, const request& req, response_adapter adapter, Done done)
        : exec_entry(req, adapter, clock::now()), conn_(c), done_(std::move(done)) {}

private:
    void on_complete(error_code ec, std::size_t) override {
        ec_ = ec;
        if (conn_.continue_inline(*this))
            return;
        boost::asio::post(conn_.strand(), [done = std::move(done_), ec]() mutable { done(ec); });
    }
    void run() override { done_(ec_); }

    connection_impl& conn_; // owns the multiplexer that owns this entry
    Done done_;
    error_code ec_;
};

// The most nodes a lock script's reply may store: the largest is a renewal batch's array (one
// integer per lease, at most 100 a batch) with WAIT's integer. A hostile reply is refused after
// these instead of connection_config::max_reply_nodes (256 Ki nodes, about 25 MB).
inline constexpr std::size_t max_lock_reply_nodes = 1024;

// start_eval for corolock's own layers, on the strand: EVALSHA `req`, and EVAL once more on
// NOSCRIPT; then `done(ec)` runs on the strand. `c`, `s`, `req` and `resp` must live until then
// (`done` may own them).
template <class Done>
void eval_on_strand(connection_impl& c, const script& s, const request& req, generic_response& resp,
                    Done done) {
    auto retry = [&c, &s, &req, &resp, done = std::move(done)](error_code ec) mutable {
        if (ec || !is_noscript(resp))
            return done(ec);
        resp.clear();
        auto eval = std::make_shared<request>(evalsha_to_eval(req, s));
        auto last = [eval, done = std::move(done)](error_code ec) mutable { done(ec); };
        c.add_entry(std::make_shared<strand_call<decltype(last)>>(
            c, *eval, make_adapter(resp, max_lock_reply_nodes), std::move(last)));
    };
    c.add_entry(std::make_shared<strand_call<decltype(retry)>>(
        c, req, make_adapter(resp, max_lock_reply_nodes), std::move(retry)));
}

} // namespace corolock::detail

#endif
