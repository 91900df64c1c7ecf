// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "worker.hpp"

#include <cstring>
#include <map>
#include <poll.h>
#include <signal.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

namespace corolock::fault {

namespace {

std::map<std::string, worker_fn>& registry() {
    static std::map<std::string, worker_fn> r;
    return r;
}

} // namespace

bool register_worker(const char* name, worker_fn fn) {
    registry()[name] = fn;
    return true;
}

int run_worker_if_requested(int argc, char** argv) {
    if (argc < 3 || std::strcmp(argv[1], "--corolock-worker") != 0)
        return -1;
    auto it = registry().find(argv[2]);
    if (it == registry().end()) {
        std::fprintf(stderr, "unknown worker %s\n", argv[2]);
        return 2;
    }
    // Die with the test: a worker must never outlive the harness.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    return it->second(std::vector<std::string>(argv + 3, argv + argc));
}

std::int64_t monotonic_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

worker_process::worker_process(const std::string& name, const std::vector<std::string>& args,
                               const std::vector<std::string>& env)
    : child_(
          [&] {
              std::vector<std::string> argv{"/proc/self/exe", "--corolock-worker", name};
              argv.insert(argv.end(), args.begin(), args.end());
              return argv;
          }(),
          [&] {
              test::child_options options;
              options.env = env;
              options.pipe_stdout = true;
              return options;
          }()) {}

worker_process::~worker_process() {
    kill();
}

void worker_process::kill() {
    child_.kill();
    drain(false);
}

void worker_process::drain(bool block) {
    if (child_.output_fd() < 0)
        return;
    char buf[4096];
    for (;;) {
        pollfd p{child_.output_fd(), POLLIN, 0};
        if (::poll(&p, 1, block ? 50 : 0) <= 0)
            return;
        const auto n = ::read(child_.output_fd(), buf, sizeof buf);
        if (n <= 0) {
            child_.close_output();
            return;
        }
        out_.append(buf, static_cast<std::size_t>(n));
    }
}

int worker_process::wait(std::chrono::steady_clock::duration limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (running()) {
        drain(true); // keeps the pipe from filling up
        if (child_.try_wait())
            break;
        if (std::chrono::steady_clock::now() > until) {
            kill();
            break;
        }
    }
    while (child_.output_fd() >= 0)
        drain(true);
    return child_.status();
}

} // namespace corolock::fault
