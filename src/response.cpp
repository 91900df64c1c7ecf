// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/response.hpp>

namespace corolock {

const resp3::node* find_error(const generic_response& resp) noexcept {
    for (const auto& n : resp)
        if (resp3::is_error(n.data_type))
            return &n;
    return nullptr;
}

namespace detail {

response_adapter make_adapter(generic_response& resp) noexcept {
    return {&resp,
            [](void* target, std::size_t, const resp3::node_view& n, error_code&) {
                static_cast<generic_response*>(target)->push_back(
                    {n.data_type, n.aggregate_size, n.depth, std::string(n.value)});
            },
            true};
}

response_adapter make_adapter(ignore_t) noexcept {
    return {nullptr, [](void*, std::size_t, const resp3::node_view& n, error_code& ec) {
                if (resp3::is_error(n.data_type) && !ec)
                    ec = classify_server_error(n.value);
            }};
}

} // namespace detail
} // namespace corolock
