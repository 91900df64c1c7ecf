// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The one container for stored completion handlers (waits for a lease's loss, and any other list
// of handlers kept until an event).
//
// Boost 1.81's any_completion_handler has a move-assignment that recurses without end (it wraps
// `other` as an lvalue into a new handler, whose assignment does the same): a
// `std::vector::erase` in the middle, `std::swap`, or `swap` + `pop_back` of two elements crash.
// This list only ever move-constructs a handler (into a node, out of a node) and never assigns
// one: nodes are linked and unlinked, never shifted.
#ifndef COROLOCK_DETAIL_HANDLER_LIST_HPP
#define COROLOCK_DETAIL_HANDLER_LIST_HPP

#include <cstdint>
#include <list>
#include <optional>
#include <utility>

namespace corolock::detail {

template <class Handler>
class handler_list {
public:
    using key_type = std::uint64_t;
    using items = std::list<std::pair<key_type, Handler>>;

    void add(key_type key, Handler h) { items_.emplace_back(key, std::move(h)); }

    // The handler added under `key`, out of the list; none if it was taken already.
    std::optional<Handler> take(key_type key) {
        for (auto it = items_.begin(); it != items_.end(); ++it) {
            if (it->first != key)
                continue;
            std::optional<Handler> h(std::in_place, std::move(it->second));
            items_.erase(it);
            return h;
        }
        return std::nullopt;
    }

    // Every handler in the order added; the list is empty afterwards. The caller completes or
    // destroys them after returning from any code that may run again through a completion.
    items take_all() noexcept {
        items out;
        out.swap(items_); // swaps the lists' nodes, never an element
        return out;
    }

    bool empty() const noexcept { return items_.empty(); }
    std::size_t size() const noexcept { return items_.size(); }

private:
    items items_;
};

} // namespace corolock::detail

#endif // COROLOCK_DETAIL_HANDLER_LIST_HPP
