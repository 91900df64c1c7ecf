// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_RESPONSE_HPP
#define COROLOCK_RESPONSE_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/resp3/type.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

namespace corolock {

/// Every node of every reply of a request, in order (pre-order within each reply; top-level
/// nodes have depth 0). Error replies are kept as nodes with their text: an `async_exec` that
/// gets a server error still succeeds, and the caller inspects the nodes.
using generic_response = std::vector<resp3::node>;

/// Discards the replies. An error reply fails the exec with `classify_server_error(text)`:
/// `server_error`, or a more precise code (`moved`, `loading`, ..., `wrong_type`).
struct ignore_t {};
/// Pass it as the response to read and drop the replies.
inline constexpr ignore_t ignore{};

/// The first error reply in a response, or nullptr.
COROLOCK_DECL const resp3::node* find_error(const generic_response& resp) noexcept;

namespace detail {

// Receives the nodes of a request's replies. `index` is the reply's position in the request.
struct response_adapter {
    void* target = nullptr;
    void (*on_node)(void* target, std::size_t index, const resp3::node_view& n,
                    error_code& ec) = nullptr;
    // The target keeps every node (generic_response): connection_config::max_reply_nodes applies.
    bool stores_nodes = false;
    // When not 0, a tighter bound than max_reply_nodes for this response (a reply whose shape is
    // known, as a lock script's): a hostile reply costs this many nodes before it is refused.
    std::size_t max_nodes = 0;

    void operator()(std::size_t index, const resp3::node_view& n, error_code& ec) const {
        if (on_node)
            on_node(target, index, n, ec);
    }
};

COROLOCK_DECL response_adapter make_adapter(generic_response& resp) noexcept;
// The same, keeping at most `max_nodes` nodes per reply (then error::message_too_large).
inline response_adapter make_adapter(generic_response& resp, std::size_t max_nodes) noexcept {
    auto a = make_adapter(resp);
    a.max_nodes = max_nodes;
    return a;
}
COROLOCK_DECL response_adapter make_adapter(ignore_t) noexcept;

} // namespace detail
} // namespace corolock

#endif
