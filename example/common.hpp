// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// What every example shares: where the Redis server is. The command line wins, then the
// environment (COROLOCK_REDIS_HOST / COROLOCK_REDIS_PORT, which tools/test.sh exports), then
// 127.0.0.1:6379.
#ifndef COROLOCK_EXAMPLE_COMMON_HPP
#define COROLOCK_EXAMPLE_COMMON_HPP

#include <corolock/config.hpp>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace corolock_example {

struct server_options {
    std::string host = "127.0.0.1";
    std::string port = "6379";
};

inline void print_usage(std::string_view program, std::ostream& os) {
    os << "usage: " << program << " [--host H] [--port P]\n"
       << "  defaults: $COROLOCK_REDIS_HOST / $COROLOCK_REDIS_PORT, else 127.0.0.1 / 6379\n";
}

/// Reads --host/--port (and the environment). On a bad or unknown argument prints usage and
/// returns nullopt; `exit_code` is then what main should return (0 after --help).
inline std::optional<server_options> parse_server_options(int argc, char** argv, int& exit_code) {
    server_options o;
    if (const char* h = std::getenv("COROLOCK_REDIS_HOST"); h && *h)
        o.host = h;
    if (const char* p = std::getenv("COROLOCK_REDIS_PORT"); p && *p)
        o.port = p;
    const std::string_view program = argc > 0 ? argv[0] : "example";
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            print_usage(program, std::cout);
            exit_code = 0;
            return std::nullopt;
        }
        if ((arg == "--host" || arg == "--port") && i + 1 < argc) {
            (arg == "--host" ? o.host : o.port) = argv[++i];
            continue;
        }
        std::cerr << program << ": bad argument " << arg << "\n";
        print_usage(program, std::cerr);
        exit_code = 2;
        return std::nullopt;
    }
    return o;
}

/// A connection_config for the examples: the given server, a name that shows in CLIENT LIST.
inline corolock::connection_config make_config(const server_options& o, std::string name) {
    corolock::connection_config cfg;
    cfg.host = o.host;
    cfg.port = o.port;
    cfg.client_name = std::move(name);
    return cfg;
}

} // namespace corolock_example

#endif
