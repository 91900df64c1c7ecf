// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_policy.hpp"

#include <algorithm>
#include <numeric>

namespace corolock::detail {

std::vector<std::vector<std::size_t>> renew_batches(std::span<const std::uint16_t> slots,
                                                    bool sharded) {
    std::vector<std::size_t> order(slots.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (sharded)
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return slots[a] < slots[b]; });
    std::vector<std::vector<std::size_t>> out;
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i + 1;
        while (j < order.size() && j - i < max_renew_batch &&
               (!sharded || slots[order[j]] == slots[order[i]]))
            ++j;
        out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i),
                         order.begin() + static_cast<std::ptrdiff_t>(j));
        i = j;
    }
    return out;
}

batch_wait strictest_wait(std::span<const replica_ask> asks) noexcept {
    batch_wait w;
    for (std::size_t i = 0; i < asks.size(); ++i) {
        const auto& a = asks[i];
        if (a.replicas <= 0)
            continue;
        w.count_connected = w.count_connected && a.count_connected;
        if (!w.strictest || a.replicas > asks[*w.strictest].replicas ||
            (a.replicas == asks[*w.strictest].replicas && a.timeout > asks[*w.strictest].timeout))
            w.strictest = i;
    }
    return w;
}

} // namespace corolock::detail
