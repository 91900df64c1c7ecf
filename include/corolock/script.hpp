// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SCRIPT_HPP
#define COROLOCK_SCRIPT_HPP

#include <corolock/detail/export.hpp>

#include <string>
#include <string_view>

namespace corolock {

/// A Lua script and its SHA1. `connection::async_eval` runs it with EVALSHA and, when the server
/// answers NOSCRIPT (after SCRIPT FLUSH or a restart), once more with EVAL, which also caches it.
class COROLOCK_DECL script {
public:
    /// Keeps `source` and its SHA1 (computed here, no I/O).
    explicit script(std::string source);

    /// The Lua source text.
    const std::string& source() const noexcept { return source_; }
    /// 40 lowercase hex digits.
    const std::string& sha1() const noexcept { return sha1_; }

private:
    std::string source_;
    std::string sha1_;
};

} // namespace corolock

#endif
