// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_DETAIL_ACCESS_HPP
#define COROLOCK_DETAIL_ACCESS_HPP

namespace corolock::detail {

// The one door from corolock's own layers (and its tests) to the private parts of the public
// classes: each befriends it, nothing else. Defined in src/core/access.hpp; no user code can
// name what it reaches.
struct access;

} // namespace corolock::detail

#endif
