// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_WAITER_QUEUE_HPP
#define COROLOCK_SRC_DETAIL_WAITER_QUEUE_HPP

#include <algorithm>
#include <cstdint>
#include <deque>

namespace corolock::detail {

// The acquisitions of one process (one connection) that wait for one lock name, in arrival
// order. Only the head makes remote attempts, so one release causes one attempt per process.
//
// A release message gives the queue *wake-ups* (one for a mutex's release, k for k permits),
// each kept until a head's attempt consumes it (`on_attempt`): a message that arrives while the
// head's attempt is on the wire makes the head try again as soon as that attempt comes back
// "held", instead of sleeping through its back-off; and a head that leaves (granted, or gone)
// passes what is left on to the next head. Wake-ups never exceed the name's capacity (1 for a
// mutex: two releases while an attempt is out are one retry) nor the waiters. Pure: no I/O.
class waiter_queue {
public:
    using id = std::uint64_t;

    bool empty() const noexcept { return fifo_.empty(); }
    std::size_t size() const noexcept { return fifo_.size(); }
    bool is_head(id w) const noexcept { return !fifo_.empty() && fifo_.front() == w; }
    id head() const noexcept { return fifo_.empty() ? 0 : fifo_.front(); }

    template <class F>
    void for_each(F f) const {
        for (auto w : fifo_)
            f(w);
    }

    // Joins at the back; true if `w` is now the head.
    bool push(id w) {
        fifo_.push_back(w);
        return fifo_.size() == 1;
    }

    // Leaves the queue. Returns the new head if `w` was the head and another waiter follows (it
    // must decide now: it may have a wake-up to consume), else 0.
    id erase(id w) {
        const bool was_head = is_head(w);
        fifo_.erase(std::remove(fifo_.begin(), fifo_.end(), w), fifo_.end());
        if (fifo_.empty())
            wakes_ = 0;
        return was_head && !fifo_.empty() ? fifo_.front() : 0;
    }

    // A release message (or a reconnect, after which messages may have been missed) that lets
    // `n` waiters retry, for a name that at most `capacity` holders share: returns the head to
    // wake, or 0 if nobody waits.
    id on_release(std::size_t n = 1, std::size_t capacity = 1) noexcept {
        if (fifo_.empty())
            return 0;
        ++messages_;
        const auto room = std::min(capacity, fifo_.size());
        wakes_ = n >= room || wakes_ >= room - n ? room : wakes_ + n; // saturating ("all")
        return fifo_.front();
    }
    // Release messages (and hand-offs) so far: an attempt refused with no message since it was
    // sent shows that the wake-ups still pending are stale (the server said no).
    std::uint64_t messages() const noexcept { return messages_; }
    void clear_wakes() noexcept { wakes_ = 0; }

    // Whether `w` is the head and a wake-up waits for it.
    bool woken(id w) const noexcept { return wakes_ > 0 && is_head(w); }
    std::size_t wakes() const noexcept { return wakes_; }
    // `w` sends an attempt: if it is the head, that attempt answers one pending wake-up.
    void on_attempt(id w) noexcept {
        if (is_head(w) && wakes_ > 0)
            --wakes_;
    }

private:
    std::deque<id> fifo_;
    std::size_t wakes_ = 0;
    std::uint64_t messages_ = 0;
};

} // namespace corolock::detail

#endif
