// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The ZooKeeper session driver: Debian's single-threaded C client (libzookeeper_st) pumped by
// one coroutine on a strand (zookeeper_interest gives the descriptor, its interest and the
// library's timeout; zookeeper_process does the work). The C callbacks never reach the user:
// each becomes a zk_reply posted to the strand for the internal callback that asked for it.
#ifndef COROLOCK_SRC_IO_ZK_SESSION_HPP
#define COROLOCK_SRC_IO_ZK_SESSION_HPP

#include "core/handler_list.hpp"
#include "zookeeper/core/zk_session_fsm.hpp"
#include <corolock/zookeeper/connection.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

typedef struct _zhandle zhandle_t;

namespace corolock::detail {

struct zk_grant;

// What a request's completion carried: the C client's return code and its results, copied.
struct zk_reply {
    int rc = 0;
    std::string path;                  // create: the created path
    std::int64_t czxid = 0;            // create2, exists: the node's creation zxid
    std::vector<std::string> children; // get_children
    std::string data;                  // get
    int failed_op = -1;                // multi: the index of the op that failed
    unsigned session = 0;              // the session the request went out on
};

// Whether a reply's code means the session (and its ephemeral nodes) is gone, or that the
// request's outcome is unknown (the connection dropped before the reply).
bool zk_session_gone(int rc) noexcept;
bool zk_outcome_unknown(int rc) noexcept;
// corolock's error for a ZooKeeper return code (ZOK: none).
error_code zk_error(int rc) noexcept;

// One operation of a `multi`.
struct zk_op {
    enum class kind { check, set, create } what = kind::check;
    std::string path;
    std::string data;
};

class zk_session : public std::enable_shared_from_this<zk_session> {
public:
    using callback = std::function<void(zk_reply)>;
    using clock = std::chrono::steady_clock;

    zk_session(boost::asio::any_io_executor ex, zk_config config);
    ~zk_session();

    // The strand everything below runs on.
    const boost::asio::any_io_executor& strand() const noexcept { return strand_; }
    const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
    const zk_config& config() const noexcept { return config_; }

    // Any thread.
    zk_session_state state() const noexcept { return state_.load(); }
    clock::time_point valid_until() const noexcept {
        return clock::time_point(clock::duration(valid_until_.load()));
    }
    unsigned sessions() const noexcept { return sessions_.load(); }
    std::chrono::milliseconds session_timeout() const noexcept {
        return std::chrono::milliseconds(timeout_ms_.load());
    }

    // On the strand.
    void run(boost::asio::any_completion_handler<void(error_code)> h);
    void stop();

    // Requests, on the strand. Each waits until the session is connected (failing with
    // ZSESSIONEXPIRED if the session it was asked in expires first, ZCLOSING once stopped); the
    // callback is posted to the strand. `ephemeral_sequential` creates a lock node.
    // `create` and `get_children` give an id for `withdraw` (0 when it went out at once);
    // `last_queued()` is that of the latest request of any kind.
    std::uint64_t create(std::string path, bool ephemeral_sequential, callback cb);
    void remove(std::string path, callback cb);
    std::uint64_t get_children(std::string path, callback cb);
    void get(std::string path, callback cb);
    // exists with a watch: `on_event(deleted)` once the node changes (deleted = it was deleted or
    // the session expired); the returned id cancels it (unwatch). The reply says whether it
    // exists now (ZOK, with czxid) or not (ZNONODE).
    std::uint64_t watch(std::string path, std::function<void(bool deleted)> on_event, callback cb);
    void unwatch(std::uint64_t id);
    void multi(std::vector<zk_op> ops, callback cb);
    std::uint64_t last_queued() const noexcept { return last_queued_; }
    // A request still queued (never sent: its outcome is known, nothing done) is dropped, its
    // callback never called; true if it was. A request already sent gets its reply.
    bool withdraw(std::uint64_t request);
    // Deletes `path` whatever happens to the connection: retried after each reconnect of
    // `session`, until it is gone or the session is. `cb(true)` if this call deleted it.
    void remove_eventually(std::string path, unsigned session, std::function<void(bool)> cb,
                           bool retried = false);
    // Calls `cb(true)` once connected (posted), `cb(false)` once stopped.
    void when_connected(std::function<void(bool)> cb);
    unsigned current_session() const noexcept { return fsm_.sessions(); }
    // The handle is being closed to open a new session after an expiry.
    bool renewing() const noexcept { return renewing_; }

    // Acquisitions in progress, by id, with the mutex they belong to: zk_mutex::cancel.
    void remember_op(std::uint64_t op, std::uint64_t mutex, std::function<void()> cancel) {
        ops_.emplace(op, std::make_pair(mutex, std::move(cancel)));
    }
    void forget_op(std::uint64_t op) { ops_.erase(op); }
    void cancel_ops(std::uint64_t mutex);
    std::uint64_t next_id() noexcept { return ++next_id_; }

    // Leases of this session, lost on expiry, on a suspension past their validity and on stop.
    void add_grant(const std::shared_ptr<zk_grant>& g);
    void lose_grants(error_code why);
    // The logger.
    void log(logger::level l, const std::string& msg) const;

    // The C client's callbacks (static functions given to it).
    void on_session_event(int state);
    void on_watch_event(std::uint64_t id, int type, int state);

private:
    struct pending {
        std::uint64_t id;
        unsigned session;
        std::function<void()> issue; // sends the request (on the strand, connected)
        callback cb;
    };
    boost::asio::awaitable<void> pump();
    boost::asio::awaitable<int> wait_events(int interest);
    void open_handle();
    void close_handle();
    void apply(zk_session_action a);
    void flush_queue();
    std::uint64_t submit(callback cb, std::function<int(zhandle_t*, void*)> send);
    void kick();
    // A sync through the leader: the session FSM's proof of the leader's view.
    void send_sync();
    void publish();
    void finish_run(error_code ec);

    boost::asio::any_io_executor ex_;
    boost::asio::any_io_executor strand_;
    zk_config config_;
    zk_session_fsm fsm_;
    zhandle_t* zh_ = nullptr;
    int fd_ = -1;
    boost::asio::posix::stream_descriptor sd_;
    boost::asio::steady_timer timer_;
    boost::asio::steady_timer kick_;
    boost::asio::steady_timer suspension_; // the leases' validity (fsm_.deadline())
    bool running_ = false;
    bool stopping_ = false;
    bool stopped_ = false;
    bool renewing_ = false;
    error_code run_result_;
    handler_list<boost::asio::any_completion_handler<void(error_code)>> run_handler_; // key 0
    std::list<pending> queue_;
    std::uint64_t next_request_ = 0;
    std::uint64_t last_queued_ = 0;
    std::list<std::function<void(bool)>> connect_waiters_;
    std::map<std::uint64_t, std::function<void(bool)>> watches_;
    std::uint64_t next_watch_ = 0;
    std::vector<std::weak_ptr<zk_grant>> grants_;
    std::map<std::uint64_t, std::pair<std::uint64_t, std::function<void()>>> ops_;
    std::atomic<std::uint64_t> next_id_{0};

    std::atomic<zk_session_state> state_{zk_session_state::connecting};
    std::atomic<clock::rep> valid_until_{clock::time_point::min().time_since_epoch().count()};
    std::atomic<unsigned> sessions_{0};
    std::atomic<long> timeout_ms_{0};
};

} // namespace corolock::detail

#endif
