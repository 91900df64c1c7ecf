// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_DETAIL_DEADLINE_HPP
#define COROLOCK_DETAIL_DEADLINE_HPP

#include <chrono>

namespace corolock::detail {

/// The end of a wait of `wait` from now, as every `*_for` call of the library computes it: a
/// negative wait is `time_point::min()` (which the call refuses with `invalid_wait` before
/// anything is sent), and a wait too long to add to now, such as `duration::max()`, is
/// `time_point::max()` (no deadline).
inline std::chrono::steady_clock::time_point
deadline_of(std::chrono::steady_clock::duration wait) noexcept {
    using clock = std::chrono::steady_clock;
    if (wait < clock::duration::zero())
        return clock::time_point::min();
    const auto now = clock::now();
    return wait >= clock::time_point::max() - now ? clock::time_point::max() : now + wait;
}

} // namespace corolock::detail

#endif
