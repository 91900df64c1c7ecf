// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/request.hpp>

#include <algorithm>
#include <array>
#include <cctype>

namespace corolock::detail {

namespace {

// `upper` is in upper case.
bool equal_nocase(std::string_view s, std::string_view upper) noexcept {
    return s.size() == upper.size() &&
           std::equal(s.begin(), s.end(), upper.begin(), [](char a, char b) {
               return std::toupper(static_cast<unsigned char>(a)) == b;
           });
}

template <std::size_t N>
bool one_of(std::string_view cmd, const std::array<std::string_view, N>& names) noexcept {
    return std::any_of(names.begin(), names.end(),
                       [cmd](std::string_view name) { return equal_nocase(cmd, name); });
}

} // namespace

bool is_subscription_command(std::string_view cmd) noexcept {
    static constexpr std::array<std::string_view, 6> names{
        "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "SSUBSCRIBE", "SUNSUBSCRIBE"};
    return one_of(cmd, names);
}

bool is_blocking_command(std::string_view cmd, std::string_view serialized) noexcept {
    static constexpr std::array<std::string_view, 10> always{
        "BLPOP",    "BRPOP",    "BRPOPLPUSH", "BLMOVE", "BLMPOP",
        "BZPOPMIN", "BZPOPMAX", "BZMPOP",     "WAIT",   "WAITAOF"};
    if (one_of(cmd, always))
        return true;
    static constexpr std::array<std::string_view, 2> streams{"XREAD", "XREADGROUP"};
    if (!one_of(cmd, streams))
        return false;
    // An argument "BLOCK" (any case) as a blob of its own: "$5\r\nBLOCK\r\n".
    for (auto at = serialized.find("$5\r\n"); at != std::string_view::npos;
         at = serialized.find("$5\r\n", at + 1))
        if (equal_nocase(serialized.substr(at + 4, 5), "BLOCK"))
            return true;
    return false;
}

int transaction_step(std::string_view cmd) noexcept {
    if (equal_nocase(cmd, "MULTI"))
        return 1;
    return equal_nocase(cmd, "EXEC") || equal_nocase(cmd, "DISCARD") ? -1 : 0;
}

} // namespace corolock::detail
