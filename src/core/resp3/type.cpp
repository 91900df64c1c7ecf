// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/resp3/type.hpp>

#include <ostream>

namespace corolock::resp3 {
namespace {

const char* name(type t) noexcept {
    switch (t) {
    case type::simple_string:
        return "simple_string";
    case type::simple_error:
        return "simple_error";
    case type::number:
        return "number";
    case type::doublean:
        return "doublean";
    case type::boolean:
        return "boolean";
    case type::null:
        return "null";
    case type::big_number:
        return "big_number";
    case type::blob_string:
        return "blob_string";
    case type::blob_error:
        return "blob_error";
    case type::verbatim_string:
        return "verbatim_string";
    case type::array:
        return "array";
    case type::map:
        return "map";
    case type::set:
        return "set";
    case type::attribute:
        return "attribute";
    case type::push:
        return "push";
    }
    return "unknown";
}

// Test failures print nodes; a 1 MiB binary value must not flood the log or the terminal.
constexpr std::size_t max_printed_bytes = 64;

void print_escaped(std::ostream& os, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    const std::size_t shown = s.size() < max_printed_bytes ? s.size() : max_printed_bytes;
    os << '"';
    for (std::size_t i = 0; i < shown; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        switch (c) {
        case '\r':
            os << "\\r";
            break;
        case '\n':
            os << "\\n";
            break;
        case '\t':
            os << "\\t";
            break;
        case '"':
            os << "\\\"";
            break;
        case '\\':
            os << "\\\\";
            break;
        default:
            if (c >= 0x20 && c < 0x7f)
                os << static_cast<char>(c);
            else
                os << "\\x" << hex[c >> 4] << hex[c & 0xf];
        }
    }
    os << '"';
    if (shown < s.size())
        os << "...(" << s.size() << " bytes)";
}

} // namespace

char to_code(type t) noexcept {
    switch (t) {
    case type::simple_string:
        return '+';
    case type::simple_error:
        return '-';
    case type::number:
        return ':';
    case type::doublean:
        return ',';
    case type::boolean:
        return '#';
    case type::null:
        return '_';
    case type::big_number:
        return '(';
    case type::blob_string:
        return '$';
    case type::blob_error:
        return '!';
    case type::verbatim_string:
        return '=';
    case type::array:
        return '*';
    case type::map:
        return '%';
    case type::set:
        return '~';
    case type::attribute:
        return '|';
    case type::push:
        return '>';
    }
    return '?';
}

std::ostream& operator<<(std::ostream& os, type t) {
    return os << name(t);
}

std::ostream& operator<<(std::ostream& os, const node& n) {
    os << '{' << n.data_type << " depth=" << n.depth << " size=" << n.aggregate_size << ' ';
    print_escaped(os, n.value);
    return os << '}';
}

} // namespace corolock::resp3
