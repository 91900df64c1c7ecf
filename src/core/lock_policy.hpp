// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock service's own decisions, pure: what one connection knows of the releases of a name
// (hand-offs and their messages), and how due renewals are grouped into script calls. The lock
// core (core/lock_core) decides with these; the driver (io/lock_service) performs its actions.
#ifndef COROLOCK_SRC_CORE_LOCK_POLICY_HPP
#define COROLOCK_SRC_CORE_LOCK_POLICY_HPP

#include "core/waiter_queue.hpp"
#include <corolock/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace corolock::detail {

// The local waiters of one lock name on one connection, and its releases in flight: the releases
// of this connection whose message is still to come (their head was woken when the release was
// sent), and the hand-offs made in a row.
class name_queue {
public:
    // Hand-offs in a row before one release goes out plain: a process whose coroutines kept
    // handing the lock to each other starved the other processes, whose waiters need the
    // release message, one round trip behind.
    static constexpr std::size_t max_handoff_streak = 4;

    waiter_queue q;
    // How many holders the name has at most: 1 for a mutex, the limit for a semaphore's permits.
    std::size_t capacity = 1;
    // Its waiters attempt on their own (acquisition::independent): no hand-offs.
    bool independent = false;

    // A lease of this connection is being released while waiters queue here. True: hand the lock
    // over (send the release as EVAL, then `hand_off`: the head's attempt follows the release in
    // the same write). False once in `max_handoff_streak + 1`: this release goes out plain and
    // every process's head races for it on the message.
    bool release_hands_over() noexcept {
        const bool over = handoff_streak_ < max_handoff_streak;
        handoff_streak_ = over ? handoff_streak_ + 1 : 0;
        return over;
    }
    // The hand-off of a release that frees `n` units (a mutex 1, k permits k): the head to wake
    // now (0: none). The release's own message, which comes before either reply, then wakes
    // nobody.
    waiter_queue::id hand_off(std::size_t n = 1) noexcept {
        const auto head = q.on_release(n, capacity);
        if (head)
            ++own_releases_;
        return head;
    }
    // A release of this connection was answered. `handed_off`: its hand-off woke a head, and
    // if it sent no message (it released nothing, nobody else waited, or its PUBLISH was
    // refused) there is none to come. Otherwise a release that freed `n` units and sent no
    // message (a mutex whose waiters are all here: none of them was refused by this holder)
    // is the only news of the release: the head to wake, as a message would (0: none).
    waiter_queue::id on_release_reply(bool handed_off, bool released, bool published,
                                      std::size_t n = 1) noexcept {
        if (handed_off) {
            if (!published && own_releases_ > 0)
                --own_releases_;
            return 0;
        }
        return released && !published ? q.on_release(n, capacity) : 0;
    }
    // A release message that lets `n` waiters retry (core/lock_scripts: release_credits): the
    // head to wake (0: none, or the message of our own hand-off).
    waiter_queue::id on_message(std::size_t n = 1) noexcept {
        if (own_releases_ > 0) {
            --own_releases_;
            return 0;
        }
        return q.on_release(n, capacity);
    }
    std::size_t own_releases() const noexcept { return own_releases_; }

private:
    std::size_t own_releases_ = 0;
    std::size_t handoff_streak_ = 0;
};

// The bounds every lock's options share (mutex_options, redlock_options), checked before
// anything is sent. The shortest lease is one that can be held: renewed at a third of it, a
// 100 ms lease leaves its renewal 64 ms (two thirds, less the drift margin) to come back on a
// loaded host; at 10 ms the margin was under 5 ms and leases were lost at once (issue 28).
inline constexpr std::chrono::steady_clock::duration max_option_duration =
    std::chrono::hours(24 * 365);
inline constexpr std::chrono::steady_clock::duration min_lease = std::chrono::milliseconds(100);
inline bool within(std::chrono::steady_clock::duration d, std::chrono::steady_clock::duration lo,
                   std::chrono::steady_clock::duration hi = max_option_duration) noexcept {
    return d >= lo && d <= hi;
}
inline bool valid_lease(std::chrono::steady_clock::duration lease) noexcept {
    return within(lease, min_lease);
}
// The fallback back-off: from `base` (at least 1 ms) to `max` (at least `base`).
inline bool valid_retry(std::chrono::steady_clock::duration base,
                        std::chrono::steady_clock::duration max) noexcept {
    return within(base, std::chrono::milliseconds(1)) && within(max, base);
}

// How long a record a waiter leaves on the server lives past its last attempt (a writer's
// intent, a semaphore waiter's reservation, a fair lock waiter's place): a waiting acquisition
// attempts at least every `retry_max` (its fallback timer), so twice that and a second keeps the
// record of a live waiter, and lets a dead one's lapse soon.
inline std::chrono::steady_clock::duration
waiting_record_ttl(std::chrono::steady_clock::duration retry_max) noexcept {
    return 2 * retry_max + std::chrono::seconds(1);
}

// At most this many leases per renew script.
inline constexpr std::size_t max_renew_batch = 100;

// The most nodes a lock script's reply may store: the largest is a renewal batch's array (one
// integer per lease, at most max_renew_batch) with WAIT's integer. A hostile reply is refused
// after these instead of connection_config::max_reply_nodes (256 Ki nodes, about 25 MB).
inline constexpr std::size_t max_lock_reply_nodes = 1024;
static_assert(max_lock_reply_nodes > max_renew_batch + 2);

// The leases due for renewal, grouped into script calls: up to max_renew_batch a call, and on a
// cluster (`sharded`) one slot a call, since a script's keys must share a slot. `slots[i]` is
// lease i's slot. Each batch lists lease indices; within a slot the leases keep their order.
std::vector<std::vector<std::size_t>> renew_batches(std::span<const std::uint16_t> slots,
                                                    bool sharded);

// What one lease asks of replica acknowledgement (mutex_options::replica_sync).
struct replica_ask {
    int replicas = 0; // 0: nothing
    std::chrono::steady_clock::duration timeout{};
    bool count_connected = false; // replica_sync::on_shortfall counts the connected replicas
};

// The one WAIT a renew batch carries: the strictest lease's (most replicas, then the longest
// timeout), none when no lease asks; it counts only connected replicas when every lease that asks
// says so. Each lease then checks the count against its own ask.
struct batch_wait {
    std::optional<std::size_t> strictest; // index into the batch's asks
    bool count_connected = true;
};
batch_wait strictest_wait(std::span<const replica_ask> asks) noexcept;

// A batch answered TRYAGAIN (a cluster: its slot is migrating and its keys are split between two
// nodes) is renewed lease by lease, so that an ASK takes each moved one to the importing node.
inline bool split_on_try_again(const error_code& ec, std::size_t batch_size) noexcept {
    return ec == error::try_again && batch_size > 1;
}

} // namespace corolock::detail

#endif
