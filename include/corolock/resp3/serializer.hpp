// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_RESP3_SERIALIZER_HPP
#define COROLOCK_RESP3_SERIALIZER_HPP

#include <corolock/detail/export.hpp>
#include <corolock/resp3/type.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace corolock::resp3 {

/// Appends an aggregate header such as `*3\r\n`.
COROLOCK_DECL void add_header(std::string& out, type t, std::size_t size);

/// Appends a blob string (`$len\r\n...\r\n`). Binary-safe: any byte, including `\0` and CRLF.
COROLOCK_DECL void add_blob(std::string& out, std::string_view value);

/// Appends a simple value of a non-aggregate type (`+OK\r\n`, `:12\r\n`, `$3\r\nabc\r\n`, ...):
/// mostly for tests and fake servers. `value` must not contain CR or LF for line types; it is
/// ignored for null and includes the `txt:` prefix for a verbatim string. Throws
/// std::invalid_argument for an aggregate type (use add_header).
COROLOCK_DECL void add_value(std::string& out, type t, std::string_view value);

} // namespace corolock::resp3

#endif
