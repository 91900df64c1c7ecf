// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/resp3/serializer.hpp>

#include <charconv>
#include <stdexcept>

namespace corolock::resp3 {
namespace {

// Every request goes through here: format the length on the stack and append once, rather than
// building std::to_string temporaries.
void add_prefix(std::string& out, char code, std::size_t n) {
    // Type byte, up to 20 digits for a 64-bit size, CRLF.
    char buf[32];
    buf[0] = code;
    char* end = std::to_chars(buf + 1, buf + sizeof(buf) - 2, n).ptr;
    end[0] = '\r';
    end[1] = '\n';
    out.append(buf, static_cast<std::size_t>(end + 2 - buf));
}

void add_body(std::string& out, std::string_view value) {
    out.append(value);
    out.append("\r\n", 2);
}

} // namespace

void add_header(std::string& out, type t, std::size_t size) {
    add_prefix(out, to_code(t), size);
}

void add_blob(std::string& out, std::string_view value) {
    add_prefix(out, '$', value.size());
    add_body(out, value);
}

void add_value(std::string& out, type t, std::string_view value) {
    switch (t) {
    case type::blob_string:
    case type::blob_error:
    case type::verbatim_string:
        add_prefix(out, to_code(t), value.size());
        add_body(out, value);
        return;
    case type::null:
        out.append("_\r\n", 3);
        return;
    case type::array:
    case type::map:
    case type::set:
    case type::attribute:
    case type::push:
        // An aggregate has no value of its own; writing a bare header here would silently
        // desynchronise the stream the caller is building.
        throw std::invalid_argument("resp3::add_value: aggregate type, use add_header");
    default:
        out.push_back(to_code(t));
        add_body(out, value);
        return;
    }
}

} // namespace corolock::resp3
