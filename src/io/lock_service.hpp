// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock layer's driver: it feeds the connection's events to the pure lock core
// (core/lock_core: the acquisitions, their queues and hand-offs, the lease table, the renewals)
// on the connection's strand and performs the actions it returns: scripts, subscriptions, timers,
// completions, losses and renewals (`perform`, a switch each). Every decision is in the core.
#ifndef COROLOCK_SRC_DETAIL_LOCK_SERVICE_HPP
#define COROLOCK_SRC_DETAIL_LOCK_SERVICE_HPP

#include "core/access.hpp"
#include "core/handler_list.hpp"
#include "core/lock_core.hpp"
#include "core/lock_metrics.hpp"
#include "core/lock_scripts.hpp"
#include "io/connection_impl.hpp"
#include "io/lock_transport.hpp"
#include "io/owner_id.hpp"
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace corolock::detail {

using completion = boost::asio::any_completion_handler<void(error_code)>;

class lock_service;

// What every acquisition through one handle shares: the kind of record it holds, the names
// derived from the name and the options, checked once. The driver builds every script call of
// an acquisition or a lease from here, whatever the kind.
struct lock_spec {
    // What a handle acquires.
    enum class kind : std::uint8_t {
        mutex,     // a hash at the name, with a fencing token
        semaphore, // k permits of a limit: a member of the sorted set at the name
        shared,    // a shared_mutex's reader: a member of the sorted set {N}:r
        exclusive, // a shared_mutex's writer: the mutex's hash, behind the readers and an intent
        fair,      // a fair_mutex: the mutex's hash, granted in the order of a line of places
    };
    // A mutex's, or a shared_mutex's side (shared or exclusive).
    lock_spec(lock_transport t, std::string n, mutex_options o, kind k = kind::mutex);
    // A semaphore's acquisitions (of any number of permits each, checked by the handle) out of
    // `limit`.
    lock_spec(lock_transport t, std::string n, mutex_options o, std::size_t limit);
    lock_transport io;
    kind what = kind::mutex;
    std::string name, fence_key, channel;
    std::string key;              // where the record lives: the name, or {N}:r for a reader
    std::string readers, intents; // a shared_mutex's {N}:r and {N}:w; a fair_mutex's {N}:q, {N}:qd
    mutex_options opts;
    record_kind record = record_kind::hash;
    std::size_t units = 1;              // what a lease's release frees (a semaphore's: its permits)
    std::size_t capacity = 1;           // units the name has (a semaphore's limit)
    std::string lease_ms, fence_ms;     // script arguments
    std::string limit_arg;              // a semaphore's
    std::string intent_ms;              // a writer's: how long its intent outlives an attempt
    std::string wait_replicas, wait_ms; // WAIT's arguments (empty: no replica_sync)
    clock::duration drift;
    error_code invalid;         // the argument check, done once
    std::string invalid_reason; // which field or rule, for the log (empty when valid)

    // Grants carry a fencing token (else a reader's is the last write's, a permit's 0).
    bool tokens() const noexcept {
        return what == kind::mutex || what == kind::exclusive || what == kind::fair;
    }
    // A waiting acquisition leaves a record behind it (a writer's intent, a semaphore waiter's
    // reservation): ending without a grant, it sends its release to remove it.
    bool leaves_record() const noexcept {
        return what == kind::exclusive || what == kind::semaphore || what == kind::fair;
    }
    const script& acquire_script() const noexcept;
    const script& release_script() const noexcept;
    // The prefix of the record's member before the owner id: a semaphore's "<k>:" for k
    // permits, else none. At most member_id::max_prefix characters.
    std::string_view member_prefix(std::size_t units, std::array<char, 24>& buf) const noexcept;
    // The acquire script call of `member` (EVALSHA), without WAIT; `once`: a try (a try records
    // no intent); `units`: a semaphore's permits.
    request acquire_request(std::string_view member, bool once, std::size_t units) const;
    // The owner-checked release of `member`; `eval`: EVAL (never answered NOSCRIPT, so it cannot
    // be re-queued behind what follows it), else EVALSHA.
    request release_request(std::string_view member, std::string_view publish, bool eval,
                            bool keep_place = false) const;
};

class acquire_op;

// A script call's request and reply, kept together until it completes (one allocation).
struct script_call {
    explicit script_call(request r) noexcept : req(std::move(r)) {}
    request req;
    generic_response resp;
    bool handed_off = false; // a release whose hand-off woke a local head (lock_core::hand_off)
};

// The mutex handle's shared part: its pending acquires, to cancel them with the handle.
struct mutex_core {
    std::shared_ptr<const lock_spec> spec;
    std::shared_ptr<lock_service> svc;
    std::vector<std::shared_ptr<acquire_op>> pending; // strand only
};

// One acquisition that holds the lock. It is its own watch entry in the lease table.
struct lease_state : lease_watch, std::enable_shared_from_this<lease_state> {
    lease_state(std::shared_ptr<lock_service> s, std::shared_ptr<const lock_spec> sp,
                const owner_id& o, const member_id& m, std::size_t units, std::uint64_t t);

    std::shared_ptr<lock_service> svc;
    std::shared_ptr<const lock_spec> spec;
    const owner_id owner;
    const member_id member;    // the record's name in Redis (a prefix, then the owner id)
    const std::size_t units;   // what its release frees (a semaphore's: its permits)
    const std::uint64_t token; // 0 for a kind without tokens (a semaphore)

    // Any thread.
    std::atomic<unsigned> shares{1};
    std::atomic<bool> released_explicitly{false};
    std::atomic<clock::rep> valid_until_view{0};
    std::atomic<int> lost_view{0}; // an `error` value once lost
    std::atomic<std::uint64_t> next_waiter{0};

    const clock::time_point granted_at = clock::now(); // the hold-time histogram's start

    // Strand only (and the lease_watch base).
    bool released = false;
    bool hold_counted = false;     // its hold time went into the histograms (released or lost)
    bool converted = false;        // its record became another lease's (a downgrade, an upgrade)
    bool forced_listening = false; // a cluster: counted in lock_service's held channels
    error lost_reason{};
    handler_list<completion> lost_waiters;

    std::string_view owner_view() const noexcept { return {owner.data(), owner.size()}; }
    // Not reported lost and before its local deadline (any thread).
    bool valid_now() const noexcept {
        return lost_view.load(std::memory_order_relaxed) == 0 &&
               clock::now().time_since_epoch().count() <
                   valid_until_view.load(std::memory_order_relaxed);
    }
    void publish_deadline() noexcept {
        valid_until_view.store(valid_until.time_since_epoch().count(), std::memory_order_relaxed);
    }
};

// The lease given to the caller: the first share of `s`.
inline lease make_lease(std::shared_ptr<lease_state> s) noexcept {
    return access::construct<lease>(lease_share(std::move(s)));
}

// replica_sync asks only the replicas the master has (ROLE follows the WAIT).
inline bool count_connected(const lock_spec& spec) noexcept {
    return spec.opts.replica_sync.on_shortfall == replica_sync::shortfall::count_connected;
}

// "corolock: lock 'name': ", the start of every line the lock layer logs about one lock.
std::string describe(const lock_spec& spec);

class lock_service : public std::enable_shared_from_this<lock_service>,
                     public context_shutdown_hook {
public:
    explicit lock_service(lock_transport io);

    static std::shared_ptr<lock_service> of(connection_impl& c);
    static std::shared_ptr<lock_service> of(cluster_impl& c);

    // ---- acquisitions: events into the lock core, its actions performed (strand only)
    void start(acquire_op& op);
    void cancel(acquire_op& op);
    void on_reply(acquire_op& op, const attempt_reply& r, bool answered);
    void on_timer(acquire_op& op);
    // keep_place: the acquisition goes on (an undo before its next attempt): a fair lock's
    // waiter keeps its place in the line.
    void give_back(const lock_spec& spec, const member_id& member, bool keep_place = false);

    // ---- leases (strand only)
    void watch(const std::shared_ptr<lease_state>& s, clock::time_point sent);
    void lose(lease_state& s, error why, lease_loss reason);
    // Releases `s` (its last share is gone); `done` (may be empty) gets the outcome.
    void release(std::shared_ptr<lease_state> s, completion done);
    void extend(std::shared_ptr<lease_state> s, completion done);
    // Turns held lease `s` into a lease of `to` with the same owner (a shared_mutex's downgrade
    // or upgrade): `downgrade` picks the script. On a grant `s` ends without a release (its
    // record is the new lease's); refused, `s` is untouched and `h` gets an empty lease (a
    // downgrade refused means `s` was lost: lease_lost). An unknown outcome is undone.
    void convert(std::shared_ptr<lease_state> s, std::shared_ptr<const lock_spec> to,
                 bool downgrade, boost::asio::any_completion_handler<void(error_code, lease)> h);
    void wait_lost(std::shared_ptr<lease_state> s, std::uint64_t id, completion h);
    void cancel_wait_lost(lease_state& s, std::uint64_t id);

    void on_connection_stopped();
    // The connection came up again (strand): every watchdog lease is renewed now.
    void renew_all_now();
    // The execution context is shutting down (abandon_at_shutdown): destroys, never invokes, the
    // handlers of pending acquires and of waits for loss, which may hold what holds them (a
    // coroutine owning its mutex or its lease).
    void abandon() noexcept override;
    // Pending acquires, for abandon (strand only; untrack is a no-op for an op not tracked).
    void track(acquire_op& op);
    void untrack(acquire_op& op) noexcept;
    lock_stats stats() const { return stats_.snapshot(); }
    // set_lock_metrics: the per-name bound now, the hook from the strand on (any thread).
    void configure(lock_metrics_options opts);
    // An event for the hook (strand only; nothing when no hook is set).
    void notify(lock_event_kind kind, std::string_view name, clock::duration elapsed,
                std::uint64_t token = 0, acquire_outcome outcome = acquire_outcome::granted,
                error_code ec = {});
    // A held lease ends (released or lost, strand only): its hold time, counted once, and the
    // event.
    void end_hold(lease_state& s, lock_event_kind kind, error_code ec = {});

    lock_metrics stats_;
    // Acquisitions in progress (any thread reads it): with the leases held, what makes a
    // connection refuse blocking commands.
    std::atomic<std::size_t> acquiring_{0};

private:
    class listener;
    class forced_listener;
    // Runs `event(core_, now, actions)` and performs the actions, in `buffer_` (acquisitions) or
    // `lease_buffer_` (the leases' events: the watchdog, the renewals) by the actions' type.
    template <class F>
    void run(F event);
    template <class F>
    void run_leases(F event);
    template <class Actions, class F>
    void run_core(Actions& buffer, F event);
    void perform(const lock_actions& actions);
    void perform(const lease_actions& actions);
    void on_release_message(const std::string& name, std::size_t credits);
    void on_independent_message(const std::string& name, std::string_view member,
                                bool writers_only);
    // The first acquisition: listen for force-unlocks, look at the server's eviction policy.
    void on_first_use();
    void on_forced(std::string_view owner);
    // A cluster: while `s` is held, listen for force-unlocks on its name's release channel.
    void listen_forced(lease_state& s);
    void unlisten_forced(lease_state& s);
    void forget(lease_state& s);      // out of the watchdog's table
    void replan(clock::time_point t); // something needs attention at t
    void run_watchdog();
    void renew(const lease_action& x); // sends the renew script of x.batch
    // The RELEASE scripts' publish argument: "S" (SPUBLISH) on a cluster.
    std::string_view publish_flag() const noexcept { return io_.sharded() ? "S" : "P"; }
    const logger& log() const noexcept { return io_.log(); }

    lock_transport io_;
    lock_core core_;
    lock_actions buffer_;        // reused by run(); a nested run gets its own
    lease_actions lease_buffer_; // reused by run_leases(), the same way
    // The release-message subscription of each name with local waiters.
    std::map<std::string, std::shared_ptr<listener>, std::less<>> subs_;
    boost::asio::steady_timer timer_;
    bool loop_running_ = false;
    clock::time_point planned_ = clock::time_point::max();
    acquire_op* live_ = nullptr; // started, not completed (intrusive list: no allocation)
    std::shared_ptr<forced_listener> forced_; // made with the first acquisition
    // A cluster: the release channels forced_ listens on, with the leases held of each.
    std::map<std::string, std::size_t, std::less<>> held_channels_;
    std::function<void(const lock_event&)> on_event_; // lock_metrics_options::on_event
};

// Whether the lock layer on this connection (or cluster) holds a lease or is acquiring one: its
// renewals or its attempt would wait behind a blocking command. Any thread.
bool carries_locks(connection_impl& c) noexcept;
bool carries_locks(cluster_impl& c) noexcept;

} // namespace corolock::detail

#endif
