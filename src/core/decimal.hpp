// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Decimal numbers in replies and records: the whole text, no sign for unsigned, no spaces.
#ifndef COROLOCK_SRC_CORE_DECIMAL_HPP
#define COROLOCK_SRC_CORE_DECIMAL_HPP

#include <charconv>
#include <chrono>
#include <string>
#include <string_view>
#include <system_error>

namespace corolock::detail {

// True, with `out` set, when `s` is exactly one decimal number of T's range.
template <class T>
bool parse_decimal(std::string_view s, T& out) noexcept {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// The next space-separated word of `s`, which loses it and the space.
inline std::string_view next_word(std::string_view& s) noexcept {
    const auto sp = s.find(' ');
    const auto w = s.substr(0, sp);
    s = sp == std::string_view::npos ? std::string_view() : s.substr(sp + 1);
    return w;
}

// A duration as whole milliseconds, in decimal (for scripts' arguments and the log).
inline std::string ms_text(std::chrono::steady_clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

} // namespace corolock::detail

#endif
