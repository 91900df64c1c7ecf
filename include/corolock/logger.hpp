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
    /// Severity of a message, and of the most verbose messages a logger lets through.
    enum class level { off, error, warning, info, debug };

    /// The most verbose level that is logged.
    level lvl = level::warning;
    /// Receives each message that passes `lvl` (empty: std::clog).
    std::function<void(level, std::string_view)> fn;

    /// True if a message at `l` reaches `fn` (or std::clog).
    bool enabled(level l) const noexcept { return l != level::off && l <= lvl; }
    /// Sends `msg` at level `l` to `fn` (or std::clog) if `enabled(l)`.
    void log(level l, std::string_view msg) const;
};

/// Prints the value's name, for logs and test failures.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, logger::level l);

} // namespace corolock

#endif
