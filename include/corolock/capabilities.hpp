// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_CAPABILITIES_HPP
#define COROLOCK_CAPABILITIES_HPP

#include <corolock/fencing_token.hpp>

#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace corolock {

/// What a backend's fencing tokens promise.
enum class fencing_kind : std::uint8_t {
    none,        ///< no token (RedLock): storage cannot refuse a stale holder
    time_based,  ///< tokens grow under a clock assumption (Redis: `max(last + 1, server µs)`)
    total_order, ///< tokens grow without one (a sequence, a consensus log position)
};

/// Who owns a grant.
enum class lock_owner : std::uint8_t {
    acquisition, ///< each acquisition is its own owner: two coroutines never share a grant
    session,     ///< the connection or session is the owner (reentrant per session)
};

/// "none", "time_based", "total_order".
COROLOCK_DECL std::string_view to_string(fencing_kind f) noexcept;
/// "acquisition", "session".
COROLOCK_DECL std::string_view to_string(lock_owner o) noexcept;
/// Prints the value's name, for logs and test failures.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, fencing_kind f);
/// Prints the value's name, for logs and test failures.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, lock_owner o);

/// The guarantees of a lock backend, as compile-time constants: each lock handle has
/// `static constexpr lock_capabilities capabilities`, so generic code can require what it needs
/// (`static_assert(M::capabilities.fencing != fencing_kind::none)`). doc/backends.md has the
/// table and the reasons.
struct lock_capabilities {
    /// The tag of its fencing tokens.
    lock_backend backend = lock_backend::none;
    /// What its tokens promise.
    fencing_kind fencing = fencing_kind::none;
    /// A grant acknowledged to the holder survives the failure of the server that granted it
    /// (a failover, a restart): no second owner can be let in while the first one's lease looks
    /// valid.
    bool grant_survives_failover = false;
    /// A holder learns that its grant is gone within a bounded time (its `valid_until()`), even
    /// when nothing reaches it from the server.
    bool loss_detected_in_bounded_time = false;
    /// Who owns a grant.
    lock_owner owner = lock_owner::acquisition;

    /// Field by field.
    friend constexpr bool operator==(const lock_capabilities&,
                                     const lock_capabilities&) noexcept = default;
};

} // namespace corolock

#endif
