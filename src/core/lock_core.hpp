// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock service's decisions for one connection (or cluster), pure: every acquisition's state
// machine, the per-name waiter queues with their wake-ups and hand-offs, the messages of this
// connection's own releases, the watchdog's lease table and the renewals' batches. Events come
// in with the time; the actions to perform come out, in order, and the driver (io/lock_service,
// io/acquire_op) performs them with a switch. The randomized model test (test/unit/model/:
// redis_model.cpp, pg_model.cpp) drives this same object against models of Redis and PostgreSQL.
#ifndef COROLOCK_SRC_CORE_LOCK_CORE_HPP
#define COROLOCK_SRC_CORE_LOCK_CORE_HPP

#include "core/acquire_fsm.hpp"
#include "core/lease_table.hpp"
#include "core/lock_metrics.hpp"
#include "core/lock_policy.hpp"
#include "core/slot_table.hpp"
#include "core/waiter_queue.hpp"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace corolock::detail {

// One acquisition as the lock core sees it. It lives inside the driver's operation (the driver's
// type derives from it: no allocation of its own) and is changed only through a lock_core.
struct acquisition {
    acquisition(const acquire_params& p, std::string_view lock_name) noexcept
        : fsm(p), name(lock_name) {}
    acquisition(const acquisition&) = delete;
    acquisition& operator=(const acquisition&) = delete;

    acquire_fsm fsm;
    std::string_view name;             // outlives the acquisition (the driver's spec owns it)
    name_queue* queue = nullptr;       // joined: the name's queue on this connection
    std::uint64_t replies_at_send = 0; // the core's reply count when the attempt went out
    std::size_t capacity = 1;          // holders the name has at most (a semaphore: its limit)
    // Attempts on its own, with no local queue order (a fair lock's waiter, whose place in line
    // is on the server; a shared_mutex's reader or writer, whose grant depends on its kind): a
    // release message wakes the waiters it concerns (`on_independent_message`).
    bool independent = false;
    bool writer = false;            // a shared_mutex's writer: a reader's release concerns it
    std::string_view record_member; // its record's member in Redis (a fair lock: the owner id)
    bool named = false; // independent: a message concerned it, not yet answered by an attempt
    std::uint64_t messages_at_send = 0; // its queue's message count when its attempt went out

    waiter_queue::id id() const noexcept {
        return static_cast<waiter_queue::id>(reinterpret_cast<std::uintptr_t>(this));
    }
    static acquisition& from_id(waiter_queue::id id) noexcept {
        return *reinterpret_cast<acquisition*>(static_cast<std::uintptr_t>(id));
    }
};

// One thing the driver must do. Every action names the acquisition it is for (for subscribe and
// unsubscribe: the one whose arrival or departure caused it, which knows the channel).
struct lock_action {
    enum class kind : std::uint8_t {
        subscribe,   // the name's first local waiter: listen for its release messages
        unsubscribe, // the name's last local waiter is gone
        give_back,   // send the owner-checked release of `acq`'s owner (an undo)
        attempt,     // send `acq`'s acquire script
        complete,    // complete `acq`'s caller with `ec` (and a lease if `granted`)
        arm,         // arm `acq`'s timer at `at` (max: disarm it)
    };
    kind what;
    acquisition* acq = nullptr;
    bool granted = false;
    bool keep_place = false; // give_back: `acq` goes on, its place in a line stays
    error_code ec;
    clock::time_point at{};
};

using lock_actions = std::vector<lock_action>;

std::ostream& operator<<(std::ostream& os, lock_action::kind k);

// One thing the driver must do about held leases: the watchdog's and the renewals' decisions.
// Every lease is its driver's lease_watch (the driver's lease state derives from it).
struct lease_action {
    enum class kind : std::uint8_t {
        lose,         // `lease` is lost for `why` (`reason` for the counters); out of the table
        renew,        // send one renew script for `batch`, with `wait`'s WAIT (none: nullptr)
        renewed,      // `lease`'s renewal succeeded: publish its new deadline
        renew_failed, // `lease`'s renewal failed with `ec`: it is retried until its deadline
        arm,          // the watchdog's timer: wake at `at` (max: nothing is watched, stop)
        replan,       // a lease needs the watchdog by `at` (max: maybe nothing is watched)
    };
    kind what;
    lease_watch* lease = nullptr;
    error why{};
    lease_loss reason{};
    std::int64_t acks = 0; // lose with replicas_not_synced: what WAIT counted
    error_code ec;
    std::vector<lease_watch*> batch;
    lease_watch* wait = nullptr;
    bool count_connected = true; // renew: WAIT counts only the replicas the master has
    clock::time_point at{};
};

using lease_actions = std::vector<lease_action>;

std::ostream& operator<<(std::ostream& os, lease_action::kind k);

// The answer to a renew script of a batch: `renewed` (one per lease, in the batch's order) and
// what the WAIT behind it counted (max when it carried none, -1 when WAIT failed), or `ec`.
struct renew_reply {
    error_code ec;
    std::vector<bool> renewed;
    std::int64_t acks = std::numeric_limits<std::int64_t>::max();
};

class lock_core {
public:
    // `sharded`: a cluster, where a renew script's keys must share one slot.
    explicit lock_core(std::uint32_t seed, bool sharded = false) noexcept
        : rng_(seed), sharded_(sharded) {}

    // ---- acquisitions. Each event appends the actions to perform, in order, to `out`.
    void start(acquisition& a, clock::time_point now, lock_actions& out);
    void on_reply(acquisition& a, const attempt_reply& r, clock::time_point now, lock_actions& out);
    // `a`'s timer fired. Returns true when it made the head of a queue try again with no
    // message (a timer wake-up, for the metrics).
    bool on_timer(acquisition& a, clock::time_point now, lock_actions& out);
    void cancel(acquisition& a, clock::time_point now, lock_actions& out);
    // A release message for `name` that lets `n` local waiters retry (core/lock_scripts:
    // release_credits), or a reconnect, after which messages may have been missed. Returns true
    // when it woke a head.
    bool on_release_message(std::string_view name, std::size_t n, clock::time_point now,
                            lock_actions& out);
    // The connection stopped for good: every queued acquisition ends with not_connected.
    void stop(clock::time_point now, lock_actions& out);
    // `a` goes away without completing (its execution context shut down, destroying its
    // handlers): out of its queue, with no actions, since nothing runs any more.
    void forget(acquisition& a) noexcept;

    // ---- releases of this connection's leases
    // A lease of `name` is being released. True: hand the lock over (the driver sends the
    // release as EVAL, then calls hand_off, so the head's attempt follows in the same write).
    bool release_hands_over(std::string_view name);
    // A release message for a name whose waiters are independent: it wakes the local waiter
    // whose member it names (`member`: a fair lock's new head), else the writers only
    // (`writers_only`: a shared_mutex's reader left), else every one (a writer left, a
    // reconnect). Returns true when it woke a local acquisition.
    bool on_independent_message(std::string_view name, std::string_view member, bool writers_only,
                                clock::time_point now, lock_actions& out);
    // The release frees `n` units (1, or k permits). Returns true when a head was handed them.
    bool hand_off(std::string_view name, std::size_t n, clock::time_point now, lock_actions& out);
    // A release of this connection, freeing `n` units, was answered (`handed_off`: `hand_off`
    // woke a head for it; `published`: its release message went out, and has come before this
    // reply). Returns true when it woke a head (name_queue::on_release_reply).
    bool on_release_reply(std::string_view name, bool handed_off, bool released, bool published,
                          std::size_t n, clock::time_point now, lock_actions& out);

    // ---- facts
    // Any script reply of this connection: the server is alive (server_timeout's test). On a
    // cluster, of the node serving `slot` only: replies of the other masters say nothing of a
    // master that died (a try on it took acquire_timeout for its try_timeout, and a multi-lock
    // gave up after 1 s of its wait: scale-out K3).
    void on_script_reply(std::uint16_t slot = 0) { ++replies(slot); }
    // The slot whose replies speak for the server of `name` (0 off a cluster).
    std::uint16_t slot_of(std::string_view name) const noexcept {
        return sharded_ ? key_slot(name) : std::uint16_t{0};
    }
    bool has_waiters(std::string_view name) const { return queues_.find(name) != queues_.end(); }
    std::size_t waiters() const noexcept { return waiters_; }
    template <class F>
    void for_each_waiter(F f) const {
        for (const auto& [name, q] : queues_)
            q.q.for_each([&](waiter_queue::id id) { f(acquisition::from_id(id)); });
    }

    // ---- leases: the watchdog's decisions (core/lease_table) and the renewals' batches
    // (core/lock_policy). Each event appends its lease actions to `out`.
    // A grant (or a conversion) whose script was sent at `sent` is held: watched from now on.
    void watch(lease_watch& w, clock::time_point sent, lease_actions& out);
    // The watchdog's timer fired: the leases lost, the renewals due (one script call a batch:
    // at most max_renew_batch leases, one slot on a cluster) and, last, the next wake-up.
    void on_watchdog(clock::time_point now, lease_actions& out);
    // The renew script of `batch`, sent at `sent`, was answered (or failed). Each lease still
    // watched is renewed, lost or retried later; a batch refused with TRYAGAIN is sent again
    // lease by lease. Returns false when the reply was not the server's answer (a TRYAGAIN
    // split, a connection failure): no round trip to count.
    bool on_renew_reply(std::span<lease_watch* const> batch, clock::time_point sent,
                        const renew_reply& r, clock::time_point now, lease_actions& out);
    // A force-unlock names `w`: renew it now, ahead of its turn, to see whether it is gone.
    void renew_now(lease_watch& w, lease_actions& out);
    // The connection came up again (perhaps on another server): every watchdog lease is due now.
    void on_reconnect(clock::time_point now, lease_actions& out);
    lease_table& leases() noexcept { return table_; }

private:
    void act(acquisition& a, const acquire_action& x, clock::time_point now, lock_actions& out);
    void join(acquisition& a, lock_actions& out);
    void leave(acquisition& a, clock::time_point now, lock_actions& out);
    void wake(acquisition& a, clock::time_point now, lock_actions& out);
    bool head(const acquisition& a) const;
    static bool woken(const acquisition& a) noexcept {
        return a.independent ? a.named : a.queue && a.queue->q.woken(a.id());
    }

    void renew(std::span<lease_watch* const> batch, lease_actions& out) const;

    std::map<std::string, name_queue, std::less<>> queues_;
    lease_table table_;
    lease_table::plan plan_; // reused by on_watchdog
    std::minstd_rand rng_;
    bool sharded_ = false;
    std::uint64_t replies_ = 0;                                     // off a cluster
    std::unordered_map<std::uint16_t, std::uint64_t> slot_replies_; // on a cluster, per slot
    std::uint64_t& replies(std::uint16_t slot) { return sharded_ ? slot_replies_[slot] : replies_; }
    std::size_t waiters_ = 0;
};

} // namespace corolock::detail

#endif
