// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// A throw-away server of another backend for one program (the PostgreSQL and ZooKeeper
// examples' CTest entries): starts it on a free loopback port, runs `program args...` with its
// address in the environment, stops the server and exits with the program's status.
//
//   corolock_script_backend postgres PROGRAM [ARGS...]   (COROLOCK_PG_CONNINFO)
//   corolock_script_backend zookeeper PROGRAM [ARGS...]  (COROLOCK_ZK_HOSTS)
//
// The kit's servers run as `nobody` under root (PostgreSQL refuses root; pg_process and
// zk_ensemble see to it), while the program keeps our user. Exits 77 (skipped) when the
// server's binaries cannot be found, 1 when it would not start, 2 on a bad command line.
#include "common/child_process.hpp"
#include "common/pg_process.hpp"
#include "common/zk_process.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Well inside the CTest entries' 60 s: a hung program is reported here, with the server still
// stopped and reaped by us, rather than killed with it by CTest.
constexpr auto program_limit = std::chrono::seconds(50);

int run_program(const std::vector<std::string>& argv, std::string env) {
    corolock::test::child_options options;
    options.env = {std::move(env)};
    corolock::test::child_process program(argv, options);
    return program.wait(program_limit);
}

} // namespace

int main(int argc, char** argv) {
    const std::string_view backend = argc > 1 ? argv[1] : "";
    if (argc < 3 || (backend != "postgres" && backend != "zookeeper")) {
        std::fprintf(stderr,
                     "usage: corolock_script_backend postgres|zookeeper PROGRAM [ARGS...]\n");
        return 2;
    }
    const std::vector<std::string> program(argv + 2, argv + argc);
    try {
        if (backend == "postgres") {
            if (!corolock::test::pg_process::available()) {
                std::printf("initdb or postgres not found (COROLOCK_PG_BIN): skipped\n");
                return 77;
            }
            corolock::test::pg_process server;
            server.start();
            const int status = run_program(program, "COROLOCK_PG_CONNINFO=" + server.conninfo());
            server.stop(); // a clean shutdown; the destructor's SIGKILL is for the error paths
            return status;
        }
        if (!corolock::test::zk_ensemble::available()) {
            std::printf("java or the ZooKeeper jar not found: skipped\n");
            return 77;
        }
        corolock::test::zk_ensemble server(1); // SIGKILLed and reaped by its destructor
        return run_program(program, "COROLOCK_ZK_HOSTS=" + server.connect_string());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corolock_script_backend: %.*s: %s\n",
                     static_cast<int>(backend.size()), backend.data(), e.what());
        return 1;
    }
}
