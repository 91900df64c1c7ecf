// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The decisions of a multi-lock acquisition, pure (no I/O, no clock): the global order of the
// names, and what to do after the first round that tries every name at once.
#ifndef COROLOCK_SRC_DETAIL_MULTI_PLAN_HPP
#define COROLOCK_SRC_DETAIL_MULTI_PLAN_HPP

#include <corolock/error.hpp>

#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace corolock::detail {

// Sorts `names` byte-wise (the global order every multi-lock waits in, so that two overlapping
// sets never wait for each other in a cycle). `invalid_argument` for an empty set or a name
// given twice.
error_code order_names(std::vector<std::string>& names);

// After one try of every name (in name order): `ecs[i]` and `granted[i]` for name i.
struct try_all_outcome {
    enum class next {
        complete, // complete with `ec`, keeping the first `keep` grants (0 or all)
        wait      // keep the first `keep` grants, give back the rest, wait in order from `keep`
    } what = next::complete;
    error_code ec;
    std::size_t keep = 0;

    friend bool operator==(const try_all_outcome&, const try_all_outcome&) = default;
};
std::ostream& operator<<(std::ostream& os, const try_all_outcome& o);

// The rules: a cancellation ends it (`operation_aborted`); any other error ends it with the
// first error in name order, except `connection_lost` and `lease_lost` (a grant that came back
// too late) in a waiting acquire: the ordered wait rides them out, as a waiting `mutex` does;
// every name granted completes with all of them; a try with a name held completes empty; a
// waiting acquire whose deadline passed during the round (`past_deadline`) times out; otherwise
// it keeps the granted prefix (holding names below the first held one is what the ordered wait
// would do) and waits from there. Grants past the first held name are given back: keeping them
// while waiting for a lower name could close a cycle with another multi-lock.
try_all_outcome after_try_all(std::span<const error_code> ecs, const std::vector<bool>& granted,
                              bool once, bool past_deadline = false);

} // namespace corolock::detail

#endif
