// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_CONNECTION_IMPL_HPP
#define COROLOCK_SRC_DETAIL_CONNECTION_IMPL_HPP

// The driver behind corolock::connection. Its member functions are defined by concept:
// io/connection_impl.cpp (construction, queueing), io/run_loop.cpp (async_run, reconnects,
// the reaper), io/connect.cpp (connect and handshake), io/read_loop.cpp, io/write_loop.cpp,
// io/health_check.cpp, io/pubsub.cpp (listeners, SUBSCRIBE, push dispatch) and io/sentinel.cpp.
#include "core/backoff.hpp"
#include "core/multiplexer.hpp"
#include "core/read_buffer.hpp"
#include "core/script_request.hpp"
#include "core/sentinel_resolve.hpp"
#include "io/context_shutdown.hpp"
#include "io/deliver.hpp"
#include "io/push_listener.hpp"
#include "io/stream.hpp"
#include <corolock/connection.hpp>
#include <corolock/resp3/parser.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::detail {

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
    // Strand only: while not connected, why: a TLS handshake unanswered for a second (a
    // plain-text port never answers one), else the last connect attempt's error.
    error_code down_cause() const noexcept {
        if (connected_)
            return {};
        const auto since = stream_.tls_handshake_since();
        if (since != std::chrono::steady_clock::time_point{} &&
            std::chrono::steady_clock::now() - since >= std::chrono::seconds(1))
            return error::tls_no_answer;
        return last_connect_error_;
    }

    // --- called on any thread
    void start_run(boost::asio::any_completion_handler<void(error_code)> handler);
    void stop();
    bool is_connected() const noexcept { return connected_flag_.load(std::memory_order_relaxed); }
    // Known to be down: a connect attempt failed and none has succeeded since. False while up,
    // while the first connect is under way, and while reconnecting after a drop until an attempt
    // fails: a request queued then is written as soon as the connection is back.
    bool known_down() const noexcept { return down_flag_.load(std::memory_order_relaxed); }
    // RedLock acquisitions and leases that use this connection as a node (any thread): with
    // the lock service's, what makes it refuse blocking commands.
    void redlock_users(int delta) noexcept {
        redlock_users_.fetch_add(static_cast<std::size_t>(delta), std::memory_order_relaxed);
    }
    bool has_redlock_users() const noexcept {
        return redlock_users_.load(std::memory_order_relaxed) != 0;
    }
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
    // No write under way, nothing left over from one, and a socket write_now can use.
    bool can_write_now() const noexcept {
        return !writing_ && unwritten_.empty() && stream_.is_plain();
    }
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
    std::atomic<std::size_t> redlock_users_{0};
    std::minstd_rand rng_;

    std::map<std::string, std::vector<std::shared_ptr<push_listener>>, std::less<>> listeners_;
    // Channels whose SUBSCRIBE the server refused or redirected (MOVED/ASK), with its answer.
    std::map<std::string, std::string, std::less<>> refused_;
    // Our SUNSUBSCRIBEs not yet confirmed, per channel: their confirmations are not the server
    // dropping the channel (a listener may have come back for it meanwhile). Cleared with the
    // connection.
    std::map<std::string, int, std::less<>> own_unsubscribes_;
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

} // namespace corolock::detail

#endif
