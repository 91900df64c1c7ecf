// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/request.hpp>

#include <algorithm>
#include <array>
#include <cctype>

namespace corolock::detail {

bool is_subscription_command(std::string_view cmd) noexcept {
    static constexpr std::array<std::string_view, 6> names{
        "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "SSUBSCRIBE", "SUNSUBSCRIBE"};
    return std::any_of(names.begin(), names.end(), [cmd](std::string_view name) {
        return cmd.size() == name.size() &&
               std::equal(cmd.begin(), cmd.end(), name.begin(), [](char a, char b) {
                   return std::toupper(static_cast<unsigned char>(a)) == b;
               });
    });
}

} // namespace corolock::detail
