// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// parse_connection_url: every accepted form, and URLs of every broken shape, each refused with
// a reason and without touching the config.
#include "common/doc_text.hpp"
#include <corolock/config.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_connection_url {

using corolock::connection_config;
using corolock::error;

namespace {

connection_config parsed(std::string_view url) {
    connection_config cfg;
    std::string why;
    const auto ec = corolock::parse_connection_url(url, cfg, &why);
    BOOST_TEST(!ec, url << ": " << why);
    return cfg;
}

} // namespace

BOOST_AUTO_TEST_SUITE(connection_url)

BOOST_AUTO_TEST_CASE(tcp_forms) {
    auto c = parsed("redis://cache.example.com");
    BOOST_TEST(c.host == "cache.example.com");
    BOOST_TEST(c.port == "6379"); // the default port
    BOOST_TEST(c.database == 0);
    BOOST_TEST(!c.use_tls);
    BOOST_TEST(c.username.empty());
    BOOST_TEST(c.password.empty());
    c = parsed("redis://10.0.0.7:7000/3");
    BOOST_TEST(c.host == "10.0.0.7");
    BOOST_TEST(c.port == "7000");
    BOOST_TEST(c.database == 3);
    c = parsed("redis://[::1]:6380/");
    BOOST_TEST(c.host == "::1"); // no brackets: what the resolver takes
    BOOST_TEST(c.port == "6380");
    c = parsed("REDIS://h:1/2147483647");
    BOOST_TEST(c.database == 2147483647);
    BOOST_TEST(c.port == "1");
    c = parsed("redis://h?db=5");
    BOOST_TEST(c.database == 5);
    c = parsed("redis://h:065535");
    BOOST_TEST(c.port == "65535");
}

BOOST_AUTO_TEST_CASE(tls_and_credentials) {
    auto c = parsed("rediss://app:s%3Acr%40t@redis.internal:6390/1");
    BOOST_TEST(c.use_tls);
    BOOST_TEST(c.username == "app");
    BOOST_TEST(c.password == "s:cr@t"); // percent-decoded
    BOOST_TEST(c.host == "redis.internal");
    BOOST_TEST(c.port == "6390");
    BOOST_TEST(c.database == 1);
    c = parsed("redis://:only-a-password@h");
    BOOST_TEST(c.username.empty()); // the default user
    BOOST_TEST(c.password == "only-a-password");
    c = parsed("rediss://h");
    BOOST_TEST(c.use_tls);
    BOOST_TEST(c.tls_verify_server); // verified unless the URL opts out
    c = parsed("rediss://h:6390/2?ssl_cert_reqs=none");
    BOOST_TEST(c.use_tls);
    BOOST_TEST(!c.tls_verify_server);
    BOOST_TEST(c.database == 2);
    c.tls_verify_server = false;
    BOOST_TEST(corolock::parse_connection_url("rediss://h?ssl_cert_reqs=required", c) ==
               corolock::error_code());
    BOOST_TEST(c.tls_verify_server);
}

BOOST_AUTO_TEST_CASE(unix_sockets) {
    auto c = parsed("unix:///run/redis/redis.sock");
    BOOST_TEST(c.unix_socket == "/run/redis/redis.sock");
    BOOST_TEST(c.database == 0);
    c = parsed("unix:/tmp/r.sock?db=2");
    BOOST_TEST(c.unix_socket == "/tmp/r.sock");
    BOOST_TEST(c.database == 2);
    c = parsed("unix://u:p@/tmp/r.sock");
    BOOST_TEST(c.username == "u");
    BOOST_TEST(c.password == "p");
    BOOST_TEST(c.unix_socket == "/tmp/r.sock");
}

BOOST_AUTO_TEST_CASE(only_the_server_fields_change) {
    connection_config cfg;
    cfg.client_name = "mine";
    cfg.connect_timeout = std::chrono::seconds(1);
    cfg.unix_socket = "/old.sock";
    cfg.password = "old";
    BOOST_TEST(!corolock::parse_connection_url("redis://h", cfg));
    BOOST_TEST(cfg.client_name == "mine");
    BOOST_TEST((cfg.connect_timeout == std::chrono::seconds(1)));
    BOOST_TEST(cfg.unix_socket.empty()); // a TCP URL replaces a socket
    BOOST_TEST(cfg.password.empty());    // and the credentials
    BOOST_TEST(!corolock::parse_connection_url("unix:///s", cfg));
    BOOST_TEST(cfg.unix_socket == "/s");
    BOOST_TEST(cfg.host == "h"); // unused while unix_socket is set
}

BOOST_AUTO_TEST_CASE(invalid_urls_of_every_shape) {
    const struct {
        const char* url;
        const char* reason_part;
    } cases[] = {
        {"", "empty"},
        {"not a url", "not a URL"},
        {"localhost:6379", "unknown scheme 'localhost'"},
        {"127.0.0.1:6379", "not a URL"},
        {"http://h", "unknown scheme 'http'"},
        {"redis+sentinel://h", "unknown scheme"},
        {"redis://", "no host"},
        {"redis:h", "no host"},
        {"redis://:6379", "no host"},
        {"redis://h:0", "port '0'"},
        {"redis://h:65536", "port '65536'"},
        {"redis://h:99999999999", "port"},
        {"redis://h:", "port ''"},
        {"redis://h/-1", "not a database number"},
        {"redis://h/1x", "not a database number"},
        {"redis://h/2147483648", "not a database number"},
        {"redis://h/0/1", "not a database number"},
        {"redis://h/ 1", "not a URL"},
        {"redis://h/1?db=2", "twice"},
        {"redis://h?db=1&db=2", "twice"},
        {"redis://h?db", "db ''"},
        {"redis://h?db=", "db ''"},
        {"redis://h?timeout=5", "unknown query parameter 'timeout'"},
        {"redis://h?ssl_cert_reqs=none", "ssl_cert_reqs is for rediss:// URLs"},
        {"rediss://h?ssl_cert_reqs=optional", "ssl_cert_reqs 'optional' is not none or required"},
        {"rediss://h?ssl_cert_reqs", "ssl_cert_reqs '' is not"},
        {"redis://h#frag", "fragment"},
        {"redis://user@h", "a user without a password"},
        {"redis://user:@h", "a user without a password"},
        {"redis://[::1", "not a URL"},
        {"redis://[v1.x]", "IPvFuture"},
        {"unix://", "absolute socket path"},
        {"unix://host/tmp/s", "no host or port"},
        {"unix://:1/tmp/s", "no host or port"},
        {"unix:relative.sock", "absolute socket path"},
        {"unix:///s?db=x", "not a database number"},
        {"unix:///s?password=p", "unknown query parameter"},
        // Garbage after the port (Boost.URL reads it as a path with no leading '/').
        {"redis://h:1:2", "after the host"},
        {"redis://h:6379x5", "after the host"},
        // A decoded NUL, '/' or ':' in a host name; a control byte in a socket path.
        {"redis://localhost%00.example.com:1/4", "host 'localhost\\x00.example.com'"},
        {"redis://h%2F1", "not a host name"},
        {"redis://h%3A99", "not a host name"},
        {"unix:///tmp/r.sock%00ignored", "'/tmp/r.sock\\x00ignored' holds a control byte"},
        {"unix:///tmp/a%0Ab", "control byte"},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.url) {
            connection_config cfg;
            cfg.host = "untouched";
            cfg.database = 9;
            std::string why;
            const auto ec = corolock::parse_connection_url(c.url, cfg, &why);
            BOOST_TEST(ec == error::invalid_url);
            BOOST_TEST(ec == corolock::condition::invalid_argument);
            BOOST_TEST(why.find(c.reason_part) != std::string::npos, "reason: " << why);
            BOOST_TEST(cfg.host == "untouched"); // a refused URL changes nothing
            BOOST_TEST(cfg.database == 9);
        }
    }
    // A socket path longer than sockaddr_un holds.
    std::string why;
    connection_config cfg;
    BOOST_TEST(corolock::parse_connection_url("unix:///" + std::string(107, 's'), cfg, &why) ==
               error::invalid_url);
    BOOST_TEST(why.find("107 bytes") != std::string::npos);
    BOOST_TEST(!corolock::parse_connection_url("unix:///" + std::string(106, 's'), cfg));
    // Without `why`: the code alone.
    BOOST_TEST(corolock::parse_connection_url("ftp://h", cfg) == error::invalid_url);
}

BOOST_AUTO_TEST_CASE(from_url_throws_the_reason) {
    auto c = connection_config::from_url("redis://h:7/2");
    BOOST_TEST(c.port == "7");
    BOOST_TEST(c.client_name == "corolock"); // the defaults around it
    connection_config base;
    base.client_name = "svc";
    c = connection_config::from_url("rediss://h", base);
    BOOST_TEST(c.client_name == "svc");
    BOOST_TEST(c.use_tls);
    try {
        (void)connection_config::from_url("redis://h:http");
        BOOST_ERROR("no throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST(e.code() == error::invalid_url);
        BOOST_TEST(std::string(e.what()).find("invalid connection URL") != std::string::npos);
    }
}

// doc/usage.md states the URL's defaults and limits: each against the parser.
BOOST_AUTO_TEST_CASE(doc_states_the_defaults_and_limits) {
    const std::string doc = corolock::test::doc_text("usage.md");
    auto refused = [](const std::string& url) {
        connection_config cfg;
        return corolock::parse_connection_url(url, cfg) == error::invalid_url;
    };
    BOOST_TEST(doc.find("`port` (1 to 65535, default 6379") != std::string::npos);
    BOOST_TEST(parsed("redis://h").port == "6379");
    BOOST_TEST(refused("redis://h:0"));
    BOOST_TEST(!refused("redis://h:1"));
    BOOST_TEST(!refused("redis://h:65535"));
    BOOST_TEST(refused("redis://h:65536"));
    BOOST_TEST(doc.find("`database` (0 to 2147483647, default 0") != std::string::npos);
    BOOST_TEST(parsed("redis://h").database == 0);
    BOOST_TEST(!refused("redis://h/2147483647"));
    BOOST_TEST(refused("redis://h/2147483648"));
    BOOST_TEST(doc.find("an absolute path of at most 107 bytes") != std::string::npos);
    BOOST_TEST(!refused("unix:///" + std::string(106, 'p')));
    BOOST_TEST(refused("unix:///" + std::string(107, 'p')));
    BOOST_TEST(doc.find("the only other query parameter") != std::string::npos);
    BOOST_TEST(refused("redis://h?ssl=true"));
    BOOST_TEST(doc.find("| `tls_verify_server` | `true` |") != std::string::npos);
    BOOST_TEST(connection_config{}.tls_verify_server);
    BOOST_TEST(parsed("rediss://h").tls_verify_server);
    BOOST_TEST(!parsed("rediss://h?ssl_cert_reqs=none").tls_verify_server);
    // with_lock_for bounds the wait, not the body (test/unit/with_lock.cpp checks the code).
    BOOST_TEST(doc.find("bound the **wait for the lock**") != std::string::npos);
    BOOST_TEST(doc.find("They do not bound the body") != std::string::npos);
    // The per-call lease's limits are mutex_options::lease's.
    BOOST_TEST(doc.find("the limits are `mutex_options::lease`'s (100 ms to 365 days") !=
               std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_connection_url
