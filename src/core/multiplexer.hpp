// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_MULTIPLEXER_HPP
#define COROLOCK_SRC_DETAIL_MULTIPLEXER_HPP

#include <corolock/error.hpp>
#include <corolock/request.hpp>
#include <corolock/resp3/type.hpp>
#include <corolock/response.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::detail {

// One request on its way through the connection. The I/O layer derives from it to hold the
// completion handler; tests derive from it to record completions.
class exec_entry {
public:
    using clock = std::chrono::steady_clock;

    exec_entry(std::string_view payload, std::size_t commands, std::size_t expected,
               response_adapter adapter, clock::time_point enqueued) noexcept
        : payload_(payload), commands_(commands), expected_(expected), adapter_(adapter),
          enqueued_(enqueued) {}
    // With the request's subscription guards (see request): `req` must outlive the entry.
    exec_entry(const request& req, response_adapter adapter, clock::time_point enqueued) noexcept
        : exec_entry(req.payload(), req.size(), req.expected_responses(), adapter, enqueued) {
        guards_ = req.subscription_replies();
    }
    virtual ~exec_entry() = default;
    exec_entry(const exec_entry&) = delete;
    exec_entry& operator=(const exec_entry&) = delete;

    bool completed() const noexcept { return completed_; }
    bool written() const noexcept { return written_; }
    clock::time_point enqueued() const noexcept { return enqueued_; }

protected:
    // Called exactly once, after the multiplexer has let go of the entry's state.
    virtual void on_complete(error_code ec, std::size_t bytes_read) = 0;
    // A subscription command of this request was refused with this error text (before
    // on_complete; not after a cancellation).
    virtual void on_subscribe_refused(std::string_view /*text*/) {}

private:
    friend class multiplexer;
    void complete(error_code ec) {
        if (completed_)
            return;
        completed_ = true;
        on_complete(ec, bytes_read_);
    }

    bool at_guard() const noexcept {
        return !guards_.empty() && std::binary_search(guards_.begin(), guards_.end(), replies_);
    }

    std::string_view payload_;            // valid until the entry completes
    std::span<const std::size_t> guards_; // replies that answer a subscription command
    std::size_t commands_;
    std::size_t expected_;
    response_adapter adapter_;
    clock::time_point enqueued_;
    std::size_t replies_ = 0;
    std::size_t bytes_read_ = 0;
    std::size_t reply_nodes_ = 0; // of the reply being read
    error_code adapter_ec_;
    // At a guard slot: an error reply refused the subscription; the PONG behind it is dropped.
    enum class guard_state { none, refusal, skip_pong } guard_ = guard_state::none;
    bool overflow_ = false; // a reply passed max_reply_nodes: the rest of the entry is dropped
    bool written_ = false;
    bool completed_ = false; // a cancelled written entry completes before its reply arrives
};

// A FIFO over one vector that keeps its storage: std::deque frees and allocates a 512-byte block
// every 32 entries that pass through it, one allocation per 16 lock cycles on the in-flight
// queue. Popped slots are reused once the queue has drained, or compacted once they are the
// larger half.
template <class T>
class reusing_fifo {
public:
    bool empty() const noexcept { return head_ == items_.size(); }
    std::size_t size() const noexcept { return items_.size() - head_; }
    T& front() noexcept { return items_[head_]; }
    void push_back(T v) { items_.push_back(std::move(v)); }
    void pop_front() {
        items_[head_++] = T();
        if (head_ == items_.size()) {
            items_.clear();
            head_ = 0;
        } else if (head_ >= 64 && head_ * 2 >= items_.size()) {
            items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
            head_ = 0;
        }
    }
    void clear() noexcept {
        items_.clear();
        head_ = 0;
    }
    // Moves the entries out, in order, without allocating; the queue is empty afterwards.
    std::vector<T> take_all() noexcept {
        std::vector<T> out = std::move(items_);
        out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(head_));
        clear();
        return out;
    }

private:
    std::vector<T> items_;
    std::size_t head_ = 0;
};

// The request queue and reply matching of one connection, with no I/O: requests wait, are
// coalesced into one write buffer, and are answered in FIFO order. Pure and single-threaded (the
// connection calls it on its strand).
class multiplexer {
public:
    using entry_ptr = std::shared_ptr<exec_entry>;

    // `max_reply_nodes`: most nodes one reply may put into a response that stores them (0: no
    // limit). Past it the request fails with error::message_too_large; the reply is still read
    // and dropped, so the stream stays in step.
    explicit multiplexer(std::size_t max_reply_nodes = 0) noexcept
        : max_reply_nodes_(max_reply_nodes) {}

    // Queues a request behind every other waiting one.
    void add(entry_ptr e);
    // Queues a request ahead of every waiting one (re-subscription after a reconnect).
    void add_front(entry_ptr e);

    bool has_waiting() const noexcept { return !waiting_.empty(); }
    std::size_t waiting() const noexcept { return waiting_.size(); }
    std::size_t in_flight() const noexcept { return in_flight_.size(); }
    std::optional<exec_entry::clock::time_point> oldest_waiting() const noexcept;

    // A batch worth writing before the writer's turn comes (see write_at_once).
    static constexpr std::size_t eager_write_requests = 16;
    // Whether what is waiting should go out now, from the call that queued the last request,
    // rather than when the writer next runs: the pipeline is idle (a lone request), or
    // `eager_write_requests` wait behind replies still pending. The writer runs only after
    // every continuation of the replies it read, so without the second rule a round of 50
    // coroutines left in one write at the end, while the server sat idle (0.82 of
    // redis-benchmark's limit at 50 coroutines; 1.12-1.14 with batches of 16: doc/benchmarks.md).
    bool write_at_once() const noexcept {
        return !waiting_.empty() && (in_flight_.empty() || waiting_.size() >= eager_write_requests);
    }

    // Moves every waiting request into one write buffer; `commands` gets their command count.
    // The view is valid until the next call.
    std::string_view prepare_write(std::size_t& commands);
    // The write succeeded: requests that expect no reply (subscriptions) complete now.
    void commit_write();

    // A node of a reply (pushes never come here). Fails when no request awaits a reply,
    // which means the stream is out of step with the queue and the connection must be dropped.
    // At a subscription's guard slot, an error reply is the subscription's refusal (recorded,
    // and the guard's PONG that follows it is dropped), anything else is the PONG.
    error_code on_node(const resp3::node_view& n);
    // The reply whose nodes were just fed is complete; `bytes` is its size on the wire. Returns
    // the request it completed, if any: it lives until the caller lets go (whatever its
    // on_complete left to do after the multiplexer returned can still use it).
    entry_ptr on_reply_end(std::size_t bytes);

    // Cancels one request. Waiting: removed, completes with operation_aborted. Written: completes
    // with operation_aborted now; its reply will still be read and dropped. Returns false when it
    // had already completed.
    bool cancel(const entry_ptr& e);

    // The connection dropped: every written request fails with `ec`; waiting ones stay.
    void on_connection_lost(error_code ec);
    // Fails waiting requests queued at or before `deadline`.
    void fail_waiting_before(exec_entry::clock::time_point deadline, error_code ec);
    // Fails everything.
    void fail_all(error_code ec);
    // Lets go of every entry without completing it (the execution context is being destroyed:
    // its handlers are destroyed, never invoked).
    void abandon_all() noexcept;

private:
    std::size_t max_reply_nodes_;
    std::deque<entry_ptr> waiting_;
    reusing_fifo<entry_ptr> in_flight_; // written, awaiting replies, in order
    std::vector<entry_ptr> no_reply_;   // written in the current buffer, expecting no reply
    std::string buffer_;
};

} // namespace corolock::detail

#endif
