// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_BACKOFF_HPP
#define COROLOCK_SRC_DETAIL_BACKOFF_HPP

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace corolock::detail {

// Capped exponential back-off with jitter. The n-th wait (from 0) is drawn uniformly from
// [ceiling * (1 - jitter), ceiling] where ceiling = min(cap, base * 2^n); jitter = 1 is "full
// jitter" (AWS architecture blog), which spreads retries of many clients the most.
class backoff {
public:
    using duration = std::chrono::steady_clock::duration;

    backoff(duration base, duration cap, double jitter = 1.0) noexcept
        : base_(base), cap_(std::max(cap, base)), jitter_(std::clamp(jitter, 0.0, 1.0)) {}

    // The ceiling of the next wait (no randomness): for tests and logs.
    duration ceiling() const noexcept {
        if (base_.count() <= 0)
            return duration::zero();
        duration c = base_;
        for (unsigned i = 0; i < attempt_ && c < cap_; ++i)
            c *= 2;
        return std::min(c, cap_);
    }

    // Draws the next wait and advances.
    template <class Rng>
    duration next(Rng& rng) {
        const duration c = ceiling();
        ++attempt_;
        if (c.count() <= 0)
            return duration::zero();
        const auto hi = c.count();
        const auto lo = static_cast<duration::rep>(static_cast<double>(hi) * (1.0 - jitter_));
        std::uniform_int_distribution<duration::rep> dist(lo, hi);
        return duration(dist(rng));
    }

    void reset() noexcept { attempt_ = 0; }
    unsigned attempts() const noexcept { return attempt_; }

private:
    duration base_;
    duration cap_;
    double jitter_;
    unsigned attempt_ = 0;
};

} // namespace corolock::detail

#endif
