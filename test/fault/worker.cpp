// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "worker.hpp"

#include <cstring>
#include <fcntl.h>
#include <map>
#include <poll.h>
#include <signal.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>

extern char** environ;

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
                               const std::vector<std::string>& env) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe2 failed");
    std::vector<std::string> argv_s{"/proc/self/exe", "--corolock-worker", name};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e)
        env_s.emplace_back(*e);
    env_s.insert(env_s.end(), env.begin(), env.end());
    std::vector<char*> argv_p, env_p;
    for (auto& a : argv_s)
        argv_p.push_back(a.data());
    argv_p.push_back(nullptr);
    for (auto& e : env_s)
        env_p.push_back(e.data());
    env_p.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::runtime_error("fork failed");
    if (pid == 0) {
        ::dup2(fds[1], STDOUT_FILENO);
        ::execve("/proc/self/exe", argv_p.data(), env_p.data());
        ::_exit(127);
    }
    ::close(fds[1]);
    pid_ = pid;
    out_fd_ = fds[0];
}

worker_process::~worker_process() {
    if (pid_ > 0)
        kill();
    if (out_fd_ >= 0)
        ::close(out_fd_);
}

void worker_process::pause() {
    if (pid_ > 0)
        ::kill(pid_, SIGSTOP);
}

void worker_process::resume() {
    if (pid_ > 0)
        ::kill(pid_, SIGCONT);
}

void worker_process::kill() {
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGKILL);
    ::kill(pid_, SIGCONT);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    pid_ = -1;
    drain(false);
}

void worker_process::drain(bool block) {
    if (out_fd_ < 0)
        return;
    char buf[4096];
    for (;;) {
        pollfd p{out_fd_, POLLIN, 0};
        if (::poll(&p, 1, block ? 50 : 0) <= 0)
            return;
        const auto n = ::read(out_fd_, buf, sizeof buf);
        if (n <= 0) {
            ::close(out_fd_);
            out_fd_ = -1;
            return;
        }
        out_.append(buf, static_cast<std::size_t>(n));
    }
}

int worker_process::wait(std::chrono::steady_clock::duration limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0) {
        drain(true); // keeps the pipe from filling up
        int st = 0;
        const pid_t r = ::waitpid(pid_, &st, WNOHANG);
        if (r == pid_) {
            status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            pid_ = -1;
            break;
        }
        if (std::chrono::steady_clock::now() > until) {
            kill();
            break;
        }
    }
    while (out_fd_ >= 0)
        drain(true);
    return status_;
}

} // namespace corolock::fault
