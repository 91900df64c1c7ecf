// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL lock layer of one connection: the held leases and their watchdog (the pure
// core/lease_table.hpp decides; this sends the batched renewals), the release channel's
// listener that wakes waiters, and the acquire loop. Everything here runs on the connection's
// strand.
#ifndef COROLOCK_SRC_IO_PG_LOCK_SERVICE_HPP
#define COROLOCK_SRC_IO_PG_LOCK_SERVICE_HPP

#include "core/handler_list.hpp"
#include "core/lease_table.hpp"
#include "core/lock_core.hpp"
#include "io/owner_id.hpp"
#include "postgres/io/pg_connection_impl.hpp"
#include <corolock/postgres/mutex.hpp>
#include <corolock/postgres/xact_mutex.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>

namespace corolock::detail {

class pg_lock_service;
struct pg_acquire_op;
struct pg_xact_op;

struct pg_lease_state {
    using clock = std::chrono::steady_clock;
    using handler_type = boost::asio::any_completion_handler<void(error_code)>;

    std::shared_ptr<pg_lock_service> service;
    std::string name;
    owner_id owner{};
    std::uint64_t token = 0;
    // The lease and its nested holds: the lock is released when the last one ends.
    std::atomic<int> shares{1};
    // Read from any thread.
    std::atomic<bool> lost{false};
    std::atomic<clock::rep> valid_until{0};
    // On the strand.
    lease_watch watch;
    error_code lost_ec;
    bool released = false;
    handler_list<handler_type> lost_waiters;
    std::uint64_t next_key = 0;
};

// What pg_mutex shares with its acquire operations.
struct pg_mutex_core {
    std::shared_ptr<pg_lock_service> service;
    std::string name;
    pg_mutex_options opts;
    error_code invalid; // the name's or the options' fault, found at construction
    std::list<std::weak_ptr<pg_acquire_op>> pending; // on the strand
};

// One acquisition or locked transaction in progress (`Core`: its handle's shared part). Its
// decisions are a lock core's (it is the core's `acquisition`); it holds what performing them
// needs: its handle's core, the caller's handler (empty once completed), the timer the core
// arms, and its place in the handle's pending list. While it is not completed its timer always
// waits (at max when the core wants no wake-up): that wait keeps it alive, and the execution
// context's shutdown destroys it with its handler.
template <class Self, class Core, class Signature>
struct pg_op : acquisition, std::enable_shared_from_this<Self> {
    using clock = std::chrono::steady_clock;
    using handler_type = boost::asio::any_completion_handler<Signature>;

    pg_op(std::shared_ptr<Core> c, const acquire_params& p, handler_type h,
          const pg_connection_impl::strand_type& s)
        : acquisition(p, c->name), core(std::move(c)), handler(std::move(h)), timer(s) {}
    ~pg_op();
    pg_op(const pg_op&) = delete;
    pg_op& operator=(const pg_op&) = delete;

    std::shared_ptr<Core> core;
    std::optional<handler_type> handler;
    boost::asio::steady_timer timer;
    std::uint64_t armed = 0; // which arming the timer's wait is for
    typename std::list<std::weak_ptr<Self>>::iterator pending_at; // valid while `listed`
    bool listed = false;
};

// One acquire in progress.
struct pg_acquire_op : pg_op<pg_acquire_op, pg_mutex_core, void(error_code, pg_lease)> {
    using pg_op::pg_op;
    owner_id owner{}; // of the current attempt; a new one after each give-back
};

// What pg_xact_mutex shares with its transactions.
struct pg_xact_core {
    std::shared_ptr<pg_lock_service> service;
    std::string name;
    std::int64_t key = 0;
    pg_xact_options opts;
    error_code invalid; // the name's or the options' fault, found at construction
    std::list<std::weak_ptr<pg_xact_op>> pending; // on the strand
};

// One locked transaction in progress: a binding acquisition (its attempt is the transaction).
struct pg_xact_op : pg_op<pg_xact_op, pg_xact_core, void(error_code)> {
    using pg_op::pg_op;
    clock::time_point deadline = clock::time_point::max(); // cuts each attempt's server wait
    std::vector<pg_query> queries;                         // the caller's
    std::vector<pg_result>* results = nullptr; // the caller's: written when it completes
    std::vector<pg_result> answer;             // the concluded attempt's results of `queries`
};

class pg_lock_service : public std::enable_shared_from_this<pg_lock_service> {
public:
    using clock = std::chrono::steady_clock;

    // The service of `conn` (made on first use; kept alive by mutexes and leases).
    static std::shared_ptr<pg_lock_service> of(const std::shared_ptr<pg_connection_impl>& conn);

    explicit pg_lock_service(std::shared_ptr<pg_connection_impl> conn);
    ~pg_lock_service();

    pg_connection_impl& conn() noexcept { return *conn_; }

    // On the strand from here on. The acquisitions of pg_mutex and the locked transactions of
    // pg_xact_mutex, each kind on its own lock core (their names are different locks).
    void start_acquire(std::shared_ptr<pg_acquire_op> op);
    void cancel_acquire(const std::shared_ptr<pg_acquire_op>& op);
    void start_xact(std::shared_ptr<pg_xact_op> op);
    void cancel_xact(const std::shared_ptr<pg_xact_op>& op);
    // An operation destroyed before it completed (the execution context shut down).
    void forget(acquisition& a, bool xact) noexcept { (xact ? xacts_ : acquires_).forget(a); }

    // One share of the lease ended (the lease or a nested hold): with `h` (an explicit
    // release), completes it at once unless this was the last share, which releases the lock
    // (in the background without `h`).
    void end_share(std::shared_ptr<pg_lease_state> s,
                   std::optional<pg_lease_state::handler_type> h);
    void wait_lost(std::shared_ptr<pg_lease_state> s, pg_lease_state::handler_type h);
    void fenced(std::shared_ptr<pg_lease_state> s, std::vector<pg_query> qs, pg_result& out,
                pg_lease_state::handler_type h);
    // An owner-checked delete of an attempt that may have taken the lock (fire and forget).
    void undo(const std::string& name, const owner_id& owner);

private:
    // Runs `event(core, now, out)` on `core`, then performs the actions it asked for.
    template <class Op, class Event>
    void run(lock_core& core, Event event);
    template <class Op>
    void perform(const lock_actions& actions);
    template <class Op>
    void arm(Op& op, clock::time_point at);
    void on_timer(pg_acquire_op& op);
    void on_timer(pg_xact_op& op);
    void send_attempt(pg_acquire_op& op);
    void send_attempt(pg_xact_op& op);
    void on_attempt_reply(pg_acquire_op& op, error_code ec, std::vector<pg_result>& results);
    void on_attempt_reply(pg_xact_op& op, error_code ec, std::vector<pg_result>& results);
    void complete(pg_acquire_op& op, error_code ec, bool granted);
    void complete(pg_xact_op& op, error_code ec, bool granted);
    void wake(lock_core& core, const std::string& name);
    void wake_all(lock_core& core);
    void on_xact_notice(const std::string& name);
    std::shared_ptr<pg_listener_state> listen_to(std::string_view channel,
                                                 void (pg_lock_service::*on)(const std::string&));
    void release(std::shared_ptr<pg_lease_state> s, pg_lease_state::handler_type h);
    void abandon(std::shared_ptr<pg_lease_state> s);
    void ensure_listening();
    void on_release_notice(const std::string& name);
    void on_connected();
    void hold(std::shared_ptr<pg_lease_state> s, clock::time_point sent);
    void unhold(pg_lease_state& s);
    void reschedule();
    void report_lost(pg_lease_state& s, error_code why);
    void renew(std::vector<lease_watch*> due);

    std::shared_ptr<pg_connection_impl> conn_;
    lease_table table_;
    lease_table::plan plan_;
    boost::asio::steady_timer watchdog_;
    std::unordered_map<lease_watch*, std::shared_ptr<pg_lease_state>> held_;
    lock_core acquires_;
    lock_core xacts_;
    std::shared_ptr<pg_listener_state> listener_;
    std::shared_ptr<pg_listener_state> xact_listener_;
};

// What pg_mutex and pg_xact_mutex share around their operations (`Op`: pg_acquire_op or
// pg_xact_op, listed in their core's `pending`).

// Cancels, on the strand, every operation still pending on `core` with `cancel`.
template <class Op, class Core>
void cancel_pending(const std::shared_ptr<Core>& core,
                    void (pg_lock_service::*cancel)(const std::shared_ptr<Op>&)) {
    auto svc = core->service;
    boost::asio::post(svc->conn().strand(), [svc, core, cancel] {
        std::vector<std::shared_ptr<Op>> ops;
        for (auto& w : core->pending)
            if (auto op = w.lock())
                ops.push_back(std::move(op));
        for (auto& op : ops)
            ((*svc).*cancel)(op);
    });
}

// Ties a handler's cancellation slot to `cancel(op)` on the strand (nothing if `op` is gone).
template <class Op, class Slot>
void cancel_on_signal(Slot slot, const std::shared_ptr<pg_lock_service>& svc,
                      const std::shared_ptr<Op>& op,
                      void (pg_lock_service::*cancel)(const std::shared_ptr<Op>&)) {
    if (!slot.is_connected())
        return;
    slot.assign([svc, w = std::weak_ptr<Op>(op), cancel](boost::asio::cancellation_type_t) {
        boost::asio::post(svc->conn().strand(), [svc, w, cancel] {
            if (auto op = w.lock())
                ((*svc).*cancel)(op);
        });
    });
}

template <class Self, class Core, class Signature>
pg_op<Self, Core, Signature>::~pg_op() {
    core->service->forget(*this, std::is_same_v<Self, pg_xact_op>);
}

} // namespace corolock::detail

#endif
