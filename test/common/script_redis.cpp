// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The process kit's redis-server for the shell scripts (tools/demo.sh, tools/test.sh, the HTTP
// example's load test, the consumer test), so that they start servers the way every test does:
// a free loopback port, our own pid checked, reaped on every path. It prints the port on the
// first line of its output, keeps the server until SIGTERM, SIGINT or SIGHUP, then stops it and
// exits 0. If the script that started it dies, it gets SIGTERM, and the server dies with it.
#include "common/redis_process.hpp"

#include <csignal>
#include <cstdio>
#include <exception>
#include <sys/prctl.h>
#include <unistd.h>

int main() {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    ::sigprocmask(SIG_BLOCK, &stop, nullptr); // taken by sigwait below, never by a handler
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
        return 1; // the script died before the line above
    try {
        corolock::test::redis_process server;
        std::printf("%u\n", static_cast<unsigned>(server.port()));
        std::fflush(stdout);
        std::fprintf(stderr, "redis-server %d listening on 127.0.0.1:%u (log: %s)\n",
                     static_cast<int>(server.pid()), static_cast<unsigned>(server.port()),
                     server.log_path().c_str());
        int sig = 0;
        ::sigwait(&stop, &sig);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "redis-server would not start: %s\n", e.what());
        return 1;
    }
    return 0;
}
