// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/resp3/parser.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>

namespace corolock::resp3 {
namespace {

// A length or count needs at most 20 digits; a number, double or big number line has no reason
// to be long either. The bound only keeps a peer that never sends CRLF from making the caller
// buffer without end.
constexpr std::size_t max_line_length = 64u * 1024u;

enum class scan { complete, need_more, missing_crlf, too_long };

bool is_digit(char c) noexcept {
    return c >= '0' && c <= '9';
}

// Skips a run of digits starting at i; false if there is none.
bool skip_digits(std::string_view s, std::size_t& i) noexcept {
    const std::size_t start = i;
    while (i < s.size() && is_digit(s[i]))
        ++i;
    return i != start;
}

bool skip_sign(std::string_view s, std::size_t& i) noexcept {
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        ++i;
        return true;
    }
    return false;
}

// [+-]digits, within a signed 64-bit integer.
bool valid_number(std::string_view s) noexcept {
    const std::size_t first_digit = !s.empty() && (s.front() == '+' || s.front() == '-') ? 1 : 0;
    if (first_digit >= s.size() || !is_digit(s[first_digit]))
        return false;
    // from_chars takes a '-' but not a '+'.
    if (s.front() == '+')
        s.remove_prefix(1);
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && ptr == s.data() + s.size();
}

// [+-]digits[.digits][(e|E)[+-]digits], or [+-]inf, [+-]nan: what Redis writes (%.17g, "inf",
// "-inf", "nan"). Stricter than strtod, which also takes hex floats, "infinity" and spaces.
bool valid_double(std::string_view s) noexcept {
    std::size_t i = 0;
    skip_sign(s, i);
    const std::string_view rest = s.substr(i);
    if (rest == "inf" || rest == "nan")
        return true;
    if (!skip_digits(s, i))
        return false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (!skip_digits(s, i))
            return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        skip_sign(s, i);
        if (!skip_digits(s, i))
            return false;
    }
    return i == s.size();
}

bool valid_big_number(std::string_view s) noexcept {
    std::size_t i = 0;
    skip_sign(s, i);
    return skip_digits(s, i) && i == s.size();
}

// Decimal digits only (RESP2 null `-1` is handled by the caller); no sign, no overflow.
bool parse_length(std::string_view s, std::uint64_t& out) noexcept {
    if (s.empty() || !is_digit(s.front()))
        return false;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
}

// Finds the CRLF ending the line whose content starts at `start`. `scanned` content bytes are
// already known to be plain and is updated so the next call resumes there. Content longer than
// `limit` fails even before its CRLF arrives: the outcome depends only on the bytes seen, so
// every split of the input ends the same way.
scan find_line_end(std::string_view buffer, std::size_t start, std::size_t limit,
                   std::size_t& scanned, std::size_t& length) noexcept {
    const std::size_t avail = buffer.size() - start;
    std::size_t i = scanned;
    for (; i < avail; ++i) {
        const char c = buffer[start + i];
        if (c == '\r') {
            if (i + 1 == avail)
                break;
            if (buffer[start + i + 1] != '\n')
                return scan::missing_crlf;
            scanned = i;
            length = i;
            return scan::complete;
        }
        if (c == '\n')
            return scan::missing_crlf;
        if (i >= limit)
            return scan::too_long;
    }
    scanned = i;
    return scan::need_more;
}

// Reads the line after the type byte at `pos`. Returns true with `line` set when the whole line
// is there; false with ec clear when more input is needed, or with ec set.
bool read_line(std::string_view buffer, std::size_t pos, std::size_t limit, error too_long,
               std::size_t& scanned, std::string_view& line, error_code& ec) noexcept {
    std::size_t length = 0;
    switch (find_line_end(buffer, pos + 1, limit, scanned, length)) {
    case scan::complete:
        line = buffer.substr(pos + 1, length);
        return true;
    case scan::need_more:
        return false;
    case scan::missing_crlf:
        ec = error::missing_crlf;
        return false;
    case scan::too_long:
        ec = too_long;
        return false;
    }
    return false;
}

} // namespace

parser::parser(parser_limits limits) noexcept : limits_(limits) {
    limits_.max_depth = std::min(limits_.max_depth, parser_limits::max_depth_cap);
}

void parser::reset() noexcept {
    consumed_ = 0;
    depth_ = 0;
    started_ = false;
    pending_attribute_ = false;
    scanned_ = 0;
    blob_pending_ = false;
}

std::optional<node_view> parser::consume(std::string_view buffer, error_code& ec) noexcept {
    ec = {};
    // Bytes after a complete message belong to the next one, which starts after reset().
    if (done())
        return std::nullopt;
    if (blob_pending_)
        return parse_blob_body(buffer, ec);
    if (consumed_ >= buffer.size())
        return std::nullopt;

    switch (buffer[consumed_]) {
    case '+':
        return parse_line(buffer, type::simple_string, ec);
    case '-':
        return parse_line(buffer, type::simple_error, ec);
    case ':':
        return parse_line(buffer, type::number, ec);
    case ',':
        return parse_line(buffer, type::doublean, ec);
    case '#':
        return parse_line(buffer, type::boolean, ec);
    case '_':
        return parse_line(buffer, type::null, ec);
    case '(':
        return parse_line(buffer, type::big_number, ec);
    case '$':
        return parse_blob_header(buffer, type::blob_string, ec);
    case '!':
        return parse_blob_header(buffer, type::blob_error, ec);
    case '=':
        return parse_blob_header(buffer, type::verbatim_string, ec);
    case '*':
        return parse_aggregate(buffer, type::array, ec);
    case '%':
        return parse_aggregate(buffer, type::map, ec);
    case '~':
        return parse_aggregate(buffer, type::set, ec);
    case '|':
        return parse_aggregate(buffer, type::attribute, ec);
    case '>':
        return parse_aggregate(buffer, type::push, ec);
    case ';': // streamed string chunk
    case '.': // end of a streamed aggregate
        ec = error::streamed_not_supported;
        return std::nullopt;
    default:
        ec = error::invalid_type_byte;
        return std::nullopt;
    }
}

std::optional<node_view> parser::parse_line(std::string_view buffer, type t,
                                            error_code& ec) noexcept {
    std::size_t limit = max_line_length;
    if (t == type::simple_string || t == type::simple_error)
        limit = limits_.max_bulk_length;
    else if (t == type::null)
        limit = 0; // `_` is followed by CRLF and nothing else
    std::string_view line;
    if (!read_line(buffer, consumed_, limit, error::missing_crlf, scanned_, line, ec))
        return std::nullopt;

    bool valid = true;
    switch (t) {
    case type::number:
        valid = valid_number(line);
        break;
    case type::doublean:
        valid = valid_double(line);
        break;
    case type::boolean:
        valid = line == "t" || line == "f";
        break;
    case type::big_number:
        valid = valid_big_number(line);
        break;
    default:
        break;
    }
    if (!valid) {
        ec = error::invalid_number;
        return std::nullopt;
    }
    const std::size_t end = consumed_ + 1 + line.size() + 2;
    const node_view n = emit(t, 1, line, end);
    complete(false);
    return n;
}

std::optional<node_view> parser::parse_blob_header(std::string_view buffer, type t,
                                                   error_code& ec) noexcept {
    if (t == type::blob_string && consumed_ + 1 < buffer.size() && buffer[consumed_ + 1] == '?') {
        ec = error::streamed_not_supported;
        return std::nullopt;
    }
    std::string_view line;
    if (!read_line(buffer, consumed_, max_line_length, error::invalid_length, scanned_, line, ec))
        return std::nullopt;
    const std::size_t body = consumed_ + 1 + line.size() + 2;
    if (line == "-1" && t == type::blob_string) { // RESP2 null bulk string
        const node_view n = emit(type::null, 1, {}, body);
        complete(false);
        return n;
    }
    std::uint64_t length = 0;
    if (!parse_length(line, length)) {
        ec = error::invalid_length;
        return std::nullopt;
    }
    // Decided on the header alone: a hostile length never makes the caller wait for, or
    // buffer, a body it would refuse anyway.
    if (length > limits_.max_bulk_length) {
        ec = error::bulk_too_long;
        return std::nullopt;
    }
    blob_pending_ = true;
    blob_type_ = t;
    blob_body_ = body;
    blob_size_ = static_cast<std::size_t>(length);
    return parse_blob_body(buffer, ec);
}

std::optional<node_view> parser::parse_blob_body(std::string_view buffer, error_code& ec) noexcept {
    // Written so that no sum can overflow, whatever max_bulk_length the caller chose.
    if (buffer.size() < blob_body_)
        return std::nullopt;
    const std::size_t avail = buffer.size() - blob_body_;
    if (avail < 2 || avail - 2 < blob_size_)
        return std::nullopt;
    const std::size_t crlf = blob_body_ + blob_size_;
    if (buffer[crlf] != '\r' || buffer[crlf + 1] != '\n') {
        ec = error::missing_crlf;
        return std::nullopt;
    }
    blob_pending_ = false;
    const node_view n = emit(blob_type_, 1, buffer.substr(blob_body_, blob_size_), crlf + 2);
    complete(false);
    return n;
}

std::optional<node_view> parser::parse_aggregate(std::string_view buffer, type t,
                                                 error_code& ec) noexcept {
    if ((t == type::array || t == type::map || t == type::set) && consumed_ + 1 < buffer.size() &&
        buffer[consumed_ + 1] == '?') {
        ec = error::streamed_not_supported;
        return std::nullopt;
    }
    std::string_view line;
    if (!read_line(buffer, consumed_, max_line_length, error::invalid_length, scanned_, line, ec))
        return std::nullopt;
    const std::size_t end = consumed_ + 1 + line.size() + 2;
    if (line == "-1" && t == type::array) { // RESP2 null array
        const node_view n = emit(type::null, 1, {}, end);
        complete(false);
        return n;
    }
    std::uint64_t count = 0;
    if (!parse_length(line, count)) {
        ec = error::invalid_length;
        return std::nullopt;
    }
    const std::size_t multiplicity = element_multiplicity(t);
    if (count > limits_.max_aggregate_size ||
        count > std::numeric_limits<std::size_t>::max() / multiplicity) {
        ec = error::aggregate_too_large;
        return std::nullopt;
    }
    if (count != 0 && depth_ + 1 > limits_.max_depth) {
        ec = error::nesting_too_deep;
        return std::nullopt;
    }
    const bool attribute = t == type::attribute;
    const node_view n = emit(t, static_cast<std::size_t>(count), {}, end);
    if (count == 0) {
        complete(attribute);
    } else {
        remaining_[depth_] = static_cast<std::size_t>(count) * multiplicity;
        is_attribute_[depth_] = attribute;
        ++depth_;
    }
    return n;
}

node_view parser::emit(type t, std::size_t size, std::string_view value, std::size_t end) noexcept {
    const node_view n{t, size, depth_, value};
    consumed_ = end;
    scanned_ = 0;
    started_ = true;
    return n;
}

void parser::complete(bool attribute) noexcept {
    // A finished value may finish its parent, and so on up; an attribute finishes nothing but
    // itself, since it annotates the value that follows it.
    for (;;) {
        if (depth_ == 0) {
            pending_attribute_ = attribute;
            return;
        }
        std::size_t& remaining = remaining_[depth_ - 1];
        if (!attribute)
            --remaining;
        if (remaining != 0)
            return;
        attribute = is_attribute_[depth_ - 1];
        --depth_;
    }
}

} // namespace corolock::resp3
