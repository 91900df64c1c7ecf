// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Worker processes for the fault suite: the test binary re-executes itself
// (`corolock_fault_tests --corolock-worker <name> args...`) so that faults can hit clients too
// (SIGSTOP, SIGKILL, a faked wall clock).
#ifndef COROLOCK_TEST_FAULT_WORKER_HPP
#define COROLOCK_TEST_FAULT_WORKER_HPP

#include "common/child_process.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace corolock::fault {

// A worker's entry point: returns its exit status.
using worker_fn = int (*)(const std::vector<std::string>& args);

// Registers a worker (at static initialisation; use COROLOCK_FAULT_WORKER).
bool register_worker(const char* name, worker_fn fn);

// Called first by main: runs the worker named on the command line and returns its status, or -1
// when this is not a worker invocation.
int run_worker_if_requested(int argc, char** argv);

// Nanoseconds on CLOCK_MONOTONIC, which every process on the host shares: worker histories can
// be merged and compared with the harness's fault schedule.
std::int64_t monotonic_ns();

// A worker child process (a test::child_process). Its stdout is captured (read it with
// `output()` after `wait()`); its stderr goes to the test's. The destructor kills and reaps it.
class worker_process {
public:
    // Starts `/proc/self/exe --corolock-worker name args...` with `env` added to the
    // environment (e.g. "LD_PRELOAD=..." for libfaketime).
    worker_process(const std::string& name, const std::vector<std::string>& args,
                   const std::vector<std::string>& env = {});
    ~worker_process();
    worker_process(const worker_process&) = delete;
    worker_process& operator=(const worker_process&) = delete;

    pid_t pid() const noexcept { return child_.pid(); }
    bool running() const noexcept { return child_.running(); }
    void pause() { child_.pause(); }   // SIGSTOP, returns once stopped
    void resume() { child_.resume(); } // SIGCONT
    void kill();                       // SIGKILL and reap
    // Waits for the exit (killing it after `limit`) and returns the exit status (128 + signal
    // when killed by one).
    int wait(std::chrono::steady_clock::duration limit = std::chrono::seconds(60));
    // Everything the worker wrote on stdout (complete after wait()).
    const std::string& output() const noexcept { return out_; }

private:
    void drain(bool block);

    test::child_process child_;
    std::string out_;
};

// A worker's wall-clock offset (S11, S17): 8 bytes in a file that wall_clock_shim maps in the
// worker, which shifts every reading of its wall clock (CLOCK_REALTIME, gettimeofday, time) by
// it and touches nothing else, as a real step would. One atomic store changes it, so a reading
// sees the old offset or the new one, never a mix.
class wall_clock_offset {
public:
    wall_clock_offset();
    ~wall_clock_offset();
    wall_clock_offset(const wall_clock_offset&) = delete;
    wall_clock_offset& operator=(const wall_clock_offset&) = delete;

    void set(std::chrono::nanoseconds offset);
    // The environment that makes a worker read its wall clock through this offset.
    std::vector<std::string> env() const;

private:
    std::string path_;
    std::int64_t* offset_ = nullptr;
};

} // namespace corolock::fault

#define COROLOCK_FAULT_WORKER(name)                                                                \
    static int name##_worker(const std::vector<std::string>& args);                                \
    [[maybe_unused]] static const bool name##_registered =                                         \
        ::corolock::fault::register_worker(#name, &name##_worker);                                 \
    static int name##_worker(const std::vector<std::string>& args)

#endif
