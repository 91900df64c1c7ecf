// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The awaiters of one latch object: what each event (an await, a state read's reply, a release
// message, the fallback timer, a cancellation, a reconnect, a stop) means for them. Pure: it
// owns no socket, timer or executor; the time comes with each event and the jitter from the
// engine it is seeded with. The driver (src/io/latch_impl.cpp) performs the actions it returns,
// in order.
#ifndef COROLOCK_SRC_CORE_LATCH_CORE_HPP
#define COROLOCK_SRC_CORE_LATCH_CORE_HPP

#include "core/backoff.hpp"
#include "core/latch_scripts.hpp"
#include <corolock/error.hpp>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <random>
#include <vector>

namespace corolock::detail {

struct latch_action {
    enum class kind {
        subscribe,   // add the listener to the release channel (before the read it comes with)
        unsubscribe, // remove it: nobody waits any more
        read,        // send the state read; feed its outcome to on_read(seq, ...)
        arm_timer,   // (re)arm the one timer at `at`; feed its expiry to on_timer
        cancel_timer,
        complete, // complete awaiter `id` with `ec`
    };
    kind what = kind::read;
    std::uint64_t id = 0; // complete: the awaiter; read: the read's sequence number
    error_code ec;        // complete
    std::chrono::steady_clock::time_point at{}; // arm_timer
    friend bool operator==(const latch_action&, const latch_action&) = default;
};
std::ostream& operator<<(std::ostream& os, latch_action::kind k);
std::ostream& operator<<(std::ostream& os, const latch_action& a);

using latch_actions = std::vector<latch_action>;

class latch_core {
public:
    using clock = std::chrono::steady_clock;
    using time_point = clock::time_point;
    using duration = clock::duration;

    // Fallback reads back off from retry_base to retry_max (half jitter), reset by every open
    // message and every change of round seen.
    latch_core(duration retry_base, duration retry_max, std::uint32_t seed)
        : backoff_(retry_base, retry_max, 0.5), rng_(seed) {}

    // A new awaiter; `deadline` max() for none (one already past still gets its read: a try).
    // It is answered by the first read sent after it (subscribed before that read goes out, so
    // no open after the read can be missed).
    void add(std::uint64_t id, time_point deadline, time_point now, latch_actions& out);
    // The reply of read `seq` (ec: its error; else `s`).
    void on_read(std::uint64_t seq, error_code ec, const latch_snapshot& s, time_point now,
                 latch_actions& out);
    // A release-channel message: "open <gen>" wakes that round's awaiters; another payload
    // (none: a cluster's relay) reads the latch again; a malformed "open ..." is ignored.
    void on_message(std::string_view payload, time_point now, latch_actions& out);
    // The timer armed last expired (a stale expiry is harmless: it only re-reads or re-arms).
    void on_timer(time_point now, latch_actions& out);
    // Messages may have been lost (reconnect, slot moved): read again.
    void on_reconnect(time_point now, latch_actions& out);
    // Awaiter `id` is cancelled: completes it with operation_aborted (nothing if it is gone).
    void cancel(std::uint64_t id, time_point now, latch_actions& out);
    // Every awaiter ends with `ec` (the latch object is cancelled or its connection stopped).
    void cancel_all(error_code ec, latch_actions& out);

    std::size_t waiters() const noexcept { return waiters_.size(); }
    bool subscribed() const noexcept { return subscribed_; }
    bool reading() const noexcept { return in_flight_ != 0; }

private:
    struct waiter {
        std::uint64_t read_no = 0;    // the read that first answers it
        std::uint64_t generation = 0; // 0 until a read showed its round
        time_point deadline;
    };

    // A deadline ends an await once its first read has answered, or while no read is on the
    // wire (its read failed): the reply of the read on the wire decides the others.
    bool timeable(const waiter& w) const noexcept { return w.generation != 0 || in_flight_ == 0; }
    void send_read(latch_actions& out);
    void complete(std::map<std::uint64_t, waiter>::iterator it, error_code ec, latch_actions& out);
    void settle(latch_actions& out); // unsubscribe, or (re)arm the timer

    std::map<std::uint64_t, waiter> waiters_;
    bool subscribed_ = false;
    std::uint64_t sent_ = 0;      // reads sent so far (the last one's sequence number)
    std::uint64_t in_flight_ = 0; // the read awaiting its reply (0: none)
    bool read_again_ = false;     // someone joined while a read was in flight
    time_point next_read_ = time_point::max();
    time_point armed_ = time_point::max();
    std::uint64_t seen_generation_ = 0; // of the last read: a change resets the back-off
    std::uint64_t seen_remaining_ = 0;
    backoff backoff_;
    std::minstd_rand rng_;
};

} // namespace corolock::detail

#endif
