// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Connection URLs (config.hpp): pure parsing, no I/O. Boost.URL is compiled here, in this one
// translation unit (Debian ships no libboost_url; doc/packaging.md says what that means for a
// consumer that compiles it too).
#include <corolock/config.hpp>

#include <boost/system/system_error.hpp>
#include <boost/url/src.hpp> // all of Boost.URL; before any other Boost.URL header

#include <algorithm>
#include <cctype>
#include <charconv>

namespace corolock {

namespace {

// Longest unix socket path (sockaddr_un::sun_path holds 108 bytes with the terminator).
constexpr std::size_t max_socket_path = 107;

bool ascii_iequals(std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) ==
               std::tolower(static_cast<unsigned char>(y));
    });
}

// A database (or port) number: decimal digits only, 0 to INT_MAX.
bool parse_db(std::string_view text, int& out) {
    if (text.empty() ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
}

// `text` for an error message: bytes outside printable ASCII as \xNN (a URL may carry a
// percent-encoded NUL or newline).
std::string printable(std::string_view text) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (const char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if (b >= 0x20 && b < 0x7f) {
            out += c;
        } else {
            out += "\\x";
            out += hex[b >> 4];
            out += hex[b & 15];
        }
    }
    return out;
}

// A host name's characters, once decoded: letters, digits, '-', '.' and '_'. A decoded NUL,
// '/' or ':' would make the name that is checked differ from the one that is connected to.
bool valid_host_name(std::string_view host) {
    return std::all_of(host.begin(), host.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
    });
}

bool has_control_byte(std::string_view text) {
    return std::any_of(text.begin(), text.end(), [](char c) {
        const auto b = static_cast<unsigned char>(c);
        return b < 0x20 || b == 0x7f;
    });
}

// What the URL says, before it is applied to a config (so that a refused URL changes nothing).
struct parsed {
    std::string host, port, unix_socket, username, password;
    bool tls = false;
    bool verify = true;
    int database = 0;
};

// The reason a URL is refused, or empty.
std::string parse(std::string_view text, parsed& out) {
    if (text.empty())
        return "empty URL";
    auto r = boost::urls::parse_uri(text);
    if (!r)
        return "not a URL (" + r.error().message() + ")";
    const boost::urls::url_view u = *r;
    const std::string_view scheme = u.scheme();
    const bool unix_socket = ascii_iequals(scheme, "unix");
    out.tls = ascii_iequals(scheme, "rediss");
    if (!unix_socket && !out.tls && !ascii_iequals(scheme, "redis"))
        return "unknown scheme '" + printable(scheme) + "' (redis, rediss or unix)";
    if (u.has_fragment())
        return "a fragment ('#...') is not allowed";
    if (u.has_userinfo()) {
        out.username = u.user();
        out.password = u.has_password() ? u.password() : std::string();
        if (!out.username.empty() && out.password.empty())
            return "a user without a password (write redis://user:password@host, or "
                   "redis://:password@host for the default user)";
    }
    bool db_given = false;
    std::string path = u.path();
    if (unix_socket) {
        if (!u.host().empty() || u.has_port())
            return "a unix:// URL names no host or port: unix:///path/to/socket";
        if (path.empty() || path.front() != '/')
            return "a unix:// URL needs an absolute socket path: unix:///path/to/socket";
        if (has_control_byte(path))
            return "the socket path '" + printable(path) + "' holds a control byte";
        if (path.size() > max_socket_path)
            return "the socket path is longer than 107 bytes";
        out.unix_socket = std::move(path);
    } else {
        if (!u.has_authority() || u.host().empty())
            return "no host (redis://host:port/db)";
        if (u.host_type() == boost::urls::host_type::ipvfuture)
            return "an IPvFuture host is not supported";
        out.host = u.host_address();
        if (u.host_type() == boost::urls::host_type::name && !valid_host_name(out.host))
            return "host '" + printable(out.host) +
                   "' is not a host name (letters, digits, '-', '.' and '_')";
        out.port = "6379";
        if (u.has_port()) {
            const std::string_view port = u.port();
            int number = 0;
            if (!parse_db(port, number) || number < 1 || number > 65535)
                return "port '" + printable(port) + "' is not a number from 1 to 65535";
            out.port = std::to_string(number);
        }
        if (!path.empty() && path.front() != '/')
            return "'" + printable(path) + "' after the host is not a port or a /database";
        if (!path.empty() && path != "/") {
            if (!parse_db(std::string_view(path).substr(1), out.database))
                return "path '" + printable(path) + "' is not a database number (0 to 2147483647)";
            db_given = true;
        }
    }
    if (u.has_query()) {
        for (const auto& p : u.params()) {
            if (p.key == "ssl_cert_reqs") {
                if (!out.tls)
                    return "ssl_cert_reqs is for rediss:// URLs";
                if (!p.has_value || (p.value != "none" && p.value != "required"))
                    return "ssl_cert_reqs '" + printable(p.value) + "' is not none or required";
                out.verify = p.value == "required";
                continue;
            }
            if (p.key != "db")
                return "unknown query parameter '" + printable(p.key) +
                       "' (only db and, for "
                       "rediss://, ssl_cert_reqs)";
            if (db_given)
                return "the database is given twice";
            if (!p.has_value || !parse_db(p.value, out.database))
                return "db '" + printable(p.value) + "' is not a database number (0 to 2147483647)";
            db_given = true;
        }
    }
    return {};
}

} // namespace

error_code parse_connection_url(std::string_view url, connection_config& cfg, std::string* why) {
    parsed p;
    std::string reason = parse(url, p);
    if (!reason.empty()) {
        if (why)
            *why = std::move(reason);
        return error::invalid_url;
    }
    if (p.unix_socket.empty()) {
        cfg.host = std::move(p.host);
        cfg.port = std::move(p.port);
    }
    cfg.unix_socket = std::move(p.unix_socket);
    cfg.use_tls = p.tls;
    cfg.tls_verify_server = p.verify;
    cfg.username = std::move(p.username);
    cfg.password = std::move(p.password);
    cfg.database = p.database;
    return {};
}

connection_config connection_config::from_url(std::string_view url, connection_config base) {
    std::string why;
    if (auto ec = parse_connection_url(url, base, &why))
        throw boost::system::system_error(ec, why);
    return base;
}

connection_config connection_config::from_url(std::string_view url) {
    return from_url(url, connection_config{});
}

} // namespace corolock
