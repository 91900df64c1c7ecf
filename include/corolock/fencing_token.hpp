// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_FENCING_TOKEN_HPP
#define COROLOCK_FENCING_TOKEN_HPP

#include <corolock/detail/export.hpp>

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace corolock {

/// The store that granted a lock, and so the sequence its fencing tokens belong to.
enum class lock_backend : std::uint8_t {
    none = 0,      ///< no backend: a default-constructed `fencing_token`
    redis = 1,     ///< `mutex`, its siblings and `redlock` (single master, Sentinel or cluster)
    local = 2,     ///< the in-process `local_mutex`
    postgres = 3,  ///< `pg_mutex` (a value of the lock table's sequence `corolock_lock_tokens`)
    zookeeper = 4, ///< `zk_mutex`, `zk_shared_mutex` (the lock node's `czxid`)
};

/// "redis", "local", ...
COROLOCK_DECL std::string_view to_string(lock_backend b) noexcept;
/// Prints the value's name, for logs and test failures.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, lock_backend b);

/// A fencing token with the backend that issued it. Tokens of one lock and one backend only
/// grow (each backend states under which assumptions: its `lock_capabilities::fencing`), so a
/// store that must refuse stale writers keeps the largest token it accepted and refuses smaller
/// ones. `value()` is the raw number to store or send; keep the backend next to it (a store fed
/// by two backends keeps one largest token per backend).
///
/// Comparing two tokens of different backends is a contract violation, because their numbers
/// come from unrelated sequences (a Redis token is a server time in µs, a sequence starts at
/// 1): `==`, `<=>` and every relational operator then throw `std::invalid_argument`, in every
/// build type, rather than answer. The default token (`lock_backend::none`, 0) is such a
/// backend too: start a "largest seen" variable from `fencing_token(backend, 0)`.
class COROLOCK_DECL fencing_token {
public:
    /// No token: backend `none`, value 0.
    constexpr fencing_token() noexcept = default;
    /// `value` as issued by `backend`; 0 means "no token" (an empty lease, a semaphore's).
    constexpr fencing_token(lock_backend backend, std::uint64_t value) noexcept
        : value_(value), backend_(backend) {}

    /// The backend that issued the token.
    constexpr lock_backend backend() const noexcept { return backend_; }
    /// The raw number, to store or send with a write (the backend is not in it).
    constexpr std::uint64_t value() const noexcept { return value_; }

    /// Equal values of one backend. Throws `std::invalid_argument` across backends.
    friend constexpr bool operator==(const fencing_token& a, const fencing_token& b) {
        check_same_backend(a, b);
        return a.value_ == b.value_;
    }
    /// Orders tokens of one backend by value. Throws `std::invalid_argument` across backends.
    friend constexpr std::strong_ordering operator<=>(const fencing_token& a,
                                                      const fencing_token& b) {
        check_same_backend(a, b);
        return a.value_ <=> b.value_;
    }

private:
    static constexpr void check_same_backend(const fencing_token& a, const fencing_token& b) {
        if (a.backend_ != b.backend_)
            throw_backend_mismatch(a, b);
    }
    [[noreturn]] static void throw_backend_mismatch(const fencing_token& a, const fencing_token& b);

    std::uint64_t value_ = 0;
    lock_backend backend_ = lock_backend::none;
};

/// Prints `redis:1732000000000123`: the backend, a colon and the value.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, const fencing_token& t);

} // namespace corolock

#endif
