// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_OWNER_ID_HPP
#define COROLOCK_SRC_DETAIL_OWNER_ID_HPP

#include <array>
#include <string_view>

namespace corolock::detail {

// Who holds a lease or a claim: 16 bytes from a CSPRNG (RAND_bytes, drawn 64 ids at a time per
// thread; a forked child draws afresh), as 32 hex digits. Unguessable,
// so no other owner can release or extend what it names.
using owner_id = std::array<char, 32>;

// Throws std::runtime_error if the CSPRNG fails.
owner_id random_owner_id();

inline std::string_view view(const owner_id& id) noexcept {
    return {id.data(), id.size()};
}

} // namespace corolock::detail

#endif
