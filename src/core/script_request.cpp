// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/script_request.hpp"

#include <corolock/resp3/serializer.hpp>

#include <charconv>

namespace corolock::detail {

namespace {

// One request: `verb <body> <numkeys> keys... args...`.
request make_script_call(std::string_view verb, std::string_view body,
                         std::span<const std::string_view> keys,
                         std::span<const std::string_view> args) {
    request r;
    // One allocation: every blob costs its bytes plus at most 16 of framing ($<len>\r\n...\r\n).
    std::size_t size = 16 + (16 + verb.size()) + (16 + body.size()) + 16 + 16;
    for (auto k : keys)
        size += k.size() + 16;
    for (auto a : args)
        size += a.size() + 16;
    r.reserve(size);
    auto& p = access::payload(r);
    resp3::add_header(p, resp3::type::array, 3 + keys.size() + args.size());
    resp3::add_blob(p, verb);
    resp3::add_blob(p, body);
    add_arg(p, keys.size());
    for (auto k : keys)
        resp3::add_blob(p, k);
    for (auto a : args)
        resp3::add_blob(p, a);
    access::set_counts(r, 1, 1);
    return r;
}

// Reads "<c><digits>\r\n" at `at`; the number, and `at` moved past the line. False if malformed.
bool read_line_number(std::string_view p, std::size_t& at, char c, std::size_t& n) {
    if (at >= p.size() || p[at] != c)
        return false;
    const auto end = p.find("\r\n", at);
    if (end == std::string_view::npos)
        return false;
    const auto [ptr, ec] = std::from_chars(p.data() + at + 1, p.data() + end, n);
    if (ec != std::errc() || ptr != p.data() + end)
        return false;
    at = end + 2;
    return true;
}

// Reads one blob "$<len>\r\n<bytes>\r\n" at `at`.
bool read_blob(std::string_view p, std::size_t& at, std::string_view& out) {
    std::size_t n = 0;
    if (!read_line_number(p, at, '$', n) || p.size() - at < n + 2 || p.substr(at + n, 2) != "\r\n")
        return false;
    out = p.substr(at, n);
    at += n + 2;
    return true;
}

} // namespace

request make_evalsha(const script& s, std::span<const std::string_view> keys,
                     std::span<const std::string_view> args) {
    return make_script_call("EVALSHA", s.sha1(), keys, args);
}

request make_eval(const script& s, std::span<const std::string_view> keys,
                  std::span<const std::string_view> args) {
    return make_script_call("EVAL", s.source(), keys, args);
}

bool starts_with_evalsha(const request& req) noexcept {
    const std::string_view p = req.payload();
    std::size_t at = 0, n = 0;
    std::string_view verb;
    return read_line_number(p, at, '*', n) && read_blob(p, at, verb) && verb == "EVALSHA";
}

request evalsha_to_eval(const request& req, const script& s) {
    const std::string_view p = req.payload();
    std::size_t at = 0, n = 0;
    std::string_view verb, sha;
    if (!read_line_number(p, at, '*', n) || n < 3 || !read_blob(p, at, verb) || verb != "EVALSHA" ||
        !read_blob(p, at, sha))
        return {};
    request r;
    auto& out = access::payload(r);
    out.reserve(p.size() + s.source().size());
    resp3::add_header(out, resp3::type::array, n);
    resp3::add_blob(out, "EVAL");
    resp3::add_blob(out, s.source());
    out.append(p.substr(at)); // numkeys, keys, args, and any command after the script (WAIT)
    access::set_counts(r, req.size(), req.expected_responses());
    return r;
}

bool is_noscript(const generic_response& resp) {
    return !resp.empty() && resp.front().data_type == resp3::type::simple_error &&
           resp.front().value.starts_with("NOSCRIPT");
}

request with_asking(const request& req) {
    request r;
    r.reserve(req.payload().size() + 24);
    r.push("ASKING");
    access::payload(r).append(req.payload());
    for (auto g : req.subscription_replies())
        access::guards(r).push_back(g + 1);
    access::set_counts(r, 1 + req.size(), 1 + req.expected_responses());
    return r;
}

} // namespace corolock::detail
