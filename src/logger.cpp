// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/logger.hpp>

#include <iostream>

namespace corolock {

void logger::log(level l, std::string_view msg) const {
    if (!enabled(l))
        return;
    if (fn) {
        fn(l, msg);
        return;
    }
    // The layers' lines start with "corolock: " for a user's sink; this sink says it once.
    constexpr std::string_view own = "corolock: ";
    if (msg.starts_with(own))
        msg.remove_prefix(own.size());
    std::clog << "corolock " << l << ": " << msg << '\n';
}

std::ostream& operator<<(std::ostream& os, logger::level l) {
    switch (l) {
    case logger::level::off:
        return os << "off";
    case logger::level::error:
        return os << "error";
    case logger::level::warning:
        return os << "warning";
    case logger::level::info:
        return os << "info";
    case logger::level::debug:
        return os << "debug";
    }
    return os << "level(" << static_cast<int>(l) << ')';
}

} // namespace corolock
