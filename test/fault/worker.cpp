// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "worker.hpp"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <poll.h>
#include <signal.h>
#include <stdexcept>
#include <sys/mman.h>
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

wall_clock_offset::wall_clock_offset() {
    char tmpl[] = "/tmp/corolock-clock-XXXXXX";
    const int fd = ::mkstemp(tmpl);
    if (fd < 0)
        throw std::runtime_error("wall_clock_offset: mkstemp failed");
    path_ = tmpl;
    const bool sized = ::ftruncate(fd, sizeof(std::int64_t)) == 0;
    void* p = sized
                  ? ::mmap(nullptr, sizeof(std::int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    ::close(fd);
    if (p == MAP_FAILED)
        throw std::runtime_error("wall_clock_offset: mmap failed");
    offset_ = static_cast<std::int64_t*>(p);
    set(std::chrono::seconds(0));
}

wall_clock_offset::~wall_clock_offset() {
    if (offset_ != nullptr)
        ::munmap(offset_, sizeof(std::int64_t));
    std::error_code ec;
    std::filesystem::remove(path_, ec);
}

void wall_clock_offset::set(std::chrono::nanoseconds offset) {
    std::atomic_ref<std::int64_t>(*offset_).store(offset.count(), std::memory_order_release);
}

std::vector<std::string> wall_clock_offset::env() const {
    return {std::string("LD_PRELOAD=") + COROLOCK_WALL_CLOCK_SHIM,
            "COROLOCK_WALL_CLOCK_OFFSET_FILE=" + path_};
}

} // namespace corolock::fault
