// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_RESP3_TYPE_HPP
#define COROLOCK_RESP3_TYPE_HPP

#include <corolock/detail/export.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace corolock::resp3 {

/// The RESP3 data types (https://github.com/redis/redis-specification). RESP2 replies map onto
/// the same types: `$-1` and `*-1` become `null`.
enum class type : std::uint8_t {
    simple_string,   // +
    simple_error,    // -
    number,          // :
    doublean,        // ,
    boolean,         // #
    null,            // _
    big_number,      // (
    blob_string,     // $
    blob_error,      // !
    verbatim_string, // =
    array,           // *
    map,             // %
    set,             // ~
    attribute,       // |
    push,            // >
};

/// True for array, map, set, attribute and push.
constexpr bool is_aggregate(type t) noexcept {
    return t == type::array || t == type::map || t == type::set || t == type::attribute ||
           t == type::push;
}

/// Children per declared element: 2 for map and attribute (key and value), else 1.
constexpr std::size_t element_multiplicity(type t) noexcept {
    return (t == type::map || t == type::attribute) ? 2 : 1;
}

/// True for the two error types.
constexpr bool is_error(type t) noexcept {
    return t == type::simple_error || t == type::blob_error;
}

/// The wire byte of a type ('+', '-', ...).
COROLOCK_DECL char to_code(type t) noexcept;

/// Prints the value's name, for logs and test failures.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, type t);

/// One value of a reply, in pre-order. For aggregates `value` is empty and `aggregate_size` is the
/// declared count (pairs for map and attribute); for the rest `aggregate_size` is 1.
/// `depth` is 0 for the top-level value. Views point into the parser's input buffer.
/// A verbatim string's value keeps its three-byte format and colon (`txt:hello`): callers that
/// want the text skip four bytes, callers that forward the value lose nothing.
struct node_view {
    /// The RESP3 type.
    type data_type = type::null;
    /// An aggregate's declared element count (pairs for a map); 1 otherwise.
    std::size_t aggregate_size = 0;
    /// Nesting depth: 0 for the top-level value.
    std::size_t depth = 0;
    /// The value's bytes (empty for an aggregate).
    std::string_view value;
};

/// A node that owns its value.
struct node {
    /// The RESP3 type.
    type data_type = type::null;
    /// An aggregate's declared element count (pairs for a map); 1 otherwise.
    std::size_t aggregate_size = 0;
    /// Nesting depth: 0 for the top-level value.
    std::size_t depth = 0;
    /// The value's bytes (empty for an aggregate).
    std::string value;

    /// Compares every field.
    friend bool operator==(const node&, const node&) = default;
};

/// Prints the node's type, size, depth and value, for test failures.
COROLOCK_DECL std::ostream& operator<<(std::ostream& os, const node& n);

} // namespace corolock::resp3

#endif
