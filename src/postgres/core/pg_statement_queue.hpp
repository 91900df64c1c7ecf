// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_CORE_PG_STATEMENT_QUEUE_HPP
#define COROLOCK_SRC_CORE_PG_STATEMENT_QUEUE_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace corolock::detail {

// The PostgreSQL connection's statements in order, and the matching of libpq's pipeline results
// to them. Sans-io: the driver pushes statements, sends them when told, feeds back what
// PQgetResult returned and what happened to the connection, and completes what this gives back.
//
// In pipeline mode every statement (one or more queries) is followed by its own sync point, so a
// failing statement never aborts its neighbours. PQgetResult then yields, per statement: each
// query's result(s) separated by null results, then PGRES_PIPELINE_SYNC. A statement ends at its
// sync; results go to the oldest statement not yet ended.
//
// States: queued (waiting for a connection), sent (in libpq's buffers or on the wire: its outcome
// becomes unknown if the connection drops; it is never sent again), abandoned (sent, then
// cancelled: its results are read and dropped). `Item` is what the driver completes (a pointer).
template <class Item>
class pg_statement_queue {
public:
    using clock = std::chrono::steady_clock;
    using id_type = std::uint64_t;

    enum class state { queued, sent, abandoned };

    // What a result or a sync meant.
    enum class match {
        deliver,   // belongs to `item` (returned with it)
        drop,      // belongs to an abandoned statement
        unexpected // nothing was sent: the stream is out of step; drop the connection
    };

    // Adds a statement at the end (`front`: before every queued one, as the driver's LISTENs
    // after a reconnect). Returns its id, for cancel().
    id_type push(Item item, clock::time_point now, bool front = false) {
        const id_type id = ++last_id_;
        entry e{id, std::move(item), state::queued, now};
        if (front) {
            // After the sent ones (still in flight), before the first queued one.
            auto it = entries_.begin() + static_cast<std::ptrdiff_t>(sent_);
            entries_.insert(it, std::move(e));
        } else {
            entries_.push_back(std::move(e));
        }
        return id;
    }

    // Marks every queued statement sent, in order, calling `send(item)` for each; stops at the
    // first `send` that returns false (the connection is broken: that one is marked sent too,
    // its outcome being unknown), or after `max`. Returns how many were sent.
    template <class Send>
    std::size_t send_queued(Send&& send, std::size_t max = SIZE_MAX) {
        std::size_t n = 0;
        while (sent_ < entries_.size() && n < max) {
            auto& e = entries_[sent_];
            e.st = state::sent;
            ++sent_;
            ++n;
            if (!send(e.item))
                break;
        }
        return n;
    }

    // A non-null result other than a sync arrived.
    std::pair<match, Item*> on_result() noexcept {
        if (sent_ == 0)
            return {match::unexpected, nullptr};
        auto& e = entries_.front();
        if (e.st == state::abandoned)
            return {match::drop, nullptr};
        return {match::deliver, &e.item};
    }

    // PGRES_PIPELINE_SYNC arrived: the oldest sent statement has ended.
    std::pair<match, std::optional<Item>> on_sync() {
        if (sent_ == 0)
            return {match::unexpected, std::nullopt};
        entry e = std::move(entries_.front());
        entries_.pop_front();
        --sent_;
        if (e.st == state::abandoned)
            return {match::drop, std::nullopt};
        return {match::deliver, std::move(e.item)};
    }

    // What cancel() did.
    enum class cancelled {
        removed,   // it was queued: removed, never sent (returned: complete it as cancelled)
        abandoned, // it was sent: its results will be dropped (returned: complete it now)
        not_found  // already completed (or already cancelled)
    };
    std::pair<cancelled, std::optional<Item>> cancel(id_type id) {
        for (std::size_t i = 0; i < entries_.size(); ++i) {
            auto& e = entries_[i];
            if (e.id != id)
                continue;
            if (e.st == state::abandoned)
                return {cancelled::not_found, std::nullopt};
            if (e.st == state::queued) {
                std::optional<Item> out(std::move(e.item));
                entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
                return {cancelled::removed, std::move(out)};
            }
            // Sent: the slot stays for its results; the item goes to the caller.
            std::optional<Item> out(std::move(e.item));
            e.item = Item{};
            e.st = state::abandoned;
            return {cancelled::abandoned, std::move(out)};
        }
        return {cancelled::not_found, std::nullopt};
    }

    // The connection dropped: every sent statement's outcome is unknown. Returns them (to fail
    // with connection_lost; abandoned ones are gone); queued ones stay for the next connection.
    std::vector<Item> on_disconnect() {
        std::vector<Item> out;
        for (std::size_t i = 0; i < sent_; ++i)
            if (entries_[i].st == state::sent)
                out.push_back(std::move(entries_[i].item));
        entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(sent_));
        sent_ = 0;
        return out;
    }

    // Queued statements that waited longer than `max_wait` for a connection at `now`: removed
    // and returned (to fail with not_connected).
    std::vector<Item> expire(clock::time_point now, clock::duration max_wait) {
        std::vector<Item> out;
        for (std::size_t i = sent_; i < entries_.size();) {
            if (now - entries_[i].queued_at >= max_wait) {
                out.push_back(std::move(entries_[i].item));
                entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
        return out;
    }

    // When the oldest queued statement will have waited `max_wait` (max(): none queued).
    clock::time_point next_expiry(clock::duration max_wait) const noexcept {
        auto t = clock::time_point::max();
        for (std::size_t i = sent_; i < entries_.size(); ++i)
            if (entries_[i].queued_at + max_wait < t)
                t = entries_[i].queued_at + max_wait;
        return t;
    }

    // Everything, sent or not, for a final stop (abandoned ones are gone).
    std::vector<Item> take_all() {
        std::vector<Item> out;
        for (auto& e : entries_)
            if (e.st != state::abandoned)
                out.push_back(std::move(e.item));
        entries_.clear();
        sent_ = 0;
        return out;
    }

    // The state of statement `id`; nullopt once it has ended, been removed or abandoned.
    std::optional<state> state_of(id_type id) const noexcept {
        for (const auto& e : entries_)
            if (e.id == id)
                return e.st == state::abandoned ? std::nullopt : std::optional<state>(e.st);
        return std::nullopt;
    }

    std::size_t queued() const noexcept { return entries_.size() - sent_; }
    std::size_t in_flight() const noexcept { return sent_; }
    bool empty() const noexcept { return entries_.empty(); }

private:
    struct entry {
        id_type id;
        Item item;
        state st;
        clock::time_point queued_at;
    };
    std::deque<entry> entries_; // sent ones first, then queued ones
    std::size_t sent_ = 0;
    id_type last_id_ = 0;
};

} // namespace corolock::detail

#endif
