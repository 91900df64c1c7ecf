// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_OWNER_ID_HPP
#define COROLOCK_SRC_DETAIL_OWNER_ID_HPP

#include <algorithm>
#include <array>
#include <cstdint>
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

// What names an acquisition's record in Redis: its owner id after the prefix its kind needs (a
// semaphore's "<k>:"; none for a mutex). Fixed size, so making one allocates nothing.
class member_id {
public:
    static constexpr std::size_t max_prefix = 16;
    // `prefix` is at most max_prefix characters (lock_spec checks it).
    member_id(std::string_view prefix, const owner_id& owner) noexcept {
        const auto n = std::min(prefix.size(), max_prefix);
        std::copy_n(prefix.data(), n, buf_.data());
        std::copy_n(owner.data(), owner.size(), buf_.data() + n);
        size_ = static_cast<std::uint8_t>(n + owner.size());
    }
    std::string_view view() const noexcept { return {buf_.data(), size_}; }

private:
    std::array<char, max_prefix + 32> buf_{};
    std::uint8_t size_ = 0;
};

} // namespace corolock::detail

#endif
