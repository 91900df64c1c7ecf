// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_LOGGER_HPP
#define COROLOCK_LOGGER_HPP

#include <corolock/detail/export.hpp>

#include <functional>
#include <iosfwd>
#include <string_view>

namespace corolock {

/// A tiny logging hook: no logging library needed. Messages at `lvl` or more severe reach `fn`;
/// an empty `fn` writes them to std::clog. `level::off` silences everything.
struct COROLOCK_DECL logger {
    enum class level { off, error, warning, info, debug };

    level lvl = level::warning;
    std::function<void(level, std::string_view)> fn;

    bool enabled(level l) const noexcept { return l != level::off && l <= lvl; }
    void log(level l, std::string_view msg) const;
};

COROLOCK_DECL std::ostream& operator<<(std::ostream& os, logger::level l);

} // namespace corolock

#endif
