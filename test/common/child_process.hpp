// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_CHILD_PROCESS_HPP
#define COROLOCK_TEST_COMMON_CHILD_PROCESS_HPP

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace corolock::test {

// How a child_process is started.
struct child_options {
    std::vector<std::string> env; // "NAME=value" entries added to the inherited environment
    std::string output_file;      // stdout and stderr to this file (created or truncated)
    bool pipe_stdout = false;     // stdout to a pipe (output_fd()); stderr stays shared
    bool pipe_stdin = false;      // stdin from a pipe (input_fd()); else from /dev/null
    // Run the child as this user and group (-1: as ours), with no supplementary groups: for a
    // server that refuses to run as root (PostgreSQL). The parent-death signal is set after the
    // switch, which would clear it.
    uid_t uid = static_cast<uid_t>(-1);
    gid_t gid = static_cast<gid_t>(-1);
};

// One child process of the kit: servers, programs run to completion, the fault suite's and the
// examples' workers. Whatever happens, it leaves nothing behind:
// - the destructor SIGKILLs and reaps a child still running;
// - every live child is listed process-wide and SIGKILLed from an atexit handler and from
//   SIGINT, SIGTERM and SIGABRT handlers;
// - the child gets PR_SET_PDEATHSIG, so that even a SIGKILLed parent (a CTest timeout) takes it
//   along. The kernel ties that signal to the *thread* that forked: start children from a thread
//   that outlives them (normally the main thread).
// Not thread-safe: one thread drives a child_process at a time.
class child_process {
public:
    using duration = std::chrono::steady_clock::duration;

    child_process() = default; // no child
    // Starts argv; argv[0] is a path (see find_program). Throws std::system_error if the
    // program cannot be run (the exec's own error, reported back from the child).
    explicit child_process(const std::vector<std::string>& argv, const child_options& options = {});
    ~child_process();
    child_process(child_process&& other) noexcept;
    child_process& operator=(child_process&& other) noexcept;

    pid_t pid() const noexcept { return pid_; } // -1 once reaped
    bool running() const noexcept { return pid_ > 0; }
    bool paused() const noexcept { return paused_; }
    // The exit status once reaped: the exit code, or 128 + the signal that killed it; else -1.
    int status() const noexcept { return status_; }

    // Reaps the child if it has exited; its status then, else nullopt.
    std::optional<int> try_wait();
    // Waits up to `limit` for the exit, then SIGKILLs it; returns the status.
    int wait(duration limit);
    // SIGTERM, then SIGKILL if it has not exited after `grace`; reaped.
    void terminate(duration grace);
    // SIGKILL (a stopped child too) and reap.
    void kill();
    // SIGSTOP, and waits until the child has stopped; false if it died instead (then reaped).
    bool pause();
    // SIGCONT, and waits until the child runs again.
    void resume();
    // Sends `sig` while running.
    void signal(int sig);

    // The parent's ends of the pipes (-1 when not asked for, or closed); the child_process owns
    // them.
    int input_fd() const noexcept { return in_fd_; }
    int output_fd() const noexcept { return out_fd_; }
    void close_input();
    void close_output();

private:
    void reaped(int raw_status);
    void release() noexcept;

    pid_t pid_ = -1;
    int status_ = -1;
    bool paused_ = false;
    int in_fd_ = -1;
    int out_fd_ = -1;
};

// A start line for forked children: the parent forks every child before it starts any thread
// (ThreadSanitizer cannot start threads in the child of a multi-threaded process), and each child
// waits here until the parent opens the gate.
// Reads fixed-size records from `fd` (a pipe the forked children write whole records to) until
// every writer closed it, closes it, and reaps `children`: the records, and how many children did
// not exit with status 0.
std::size_t reap_children(const std::vector<pid_t>& children);
template <class Record>
std::pair<std::vector<Record>, std::size_t> collect_children(int fd,
                                                             const std::vector<pid_t>& children) {
    std::vector<Record> out;
    Record r;
    while (::read(fd, &r, sizeof r) == static_cast<ssize_t>(sizeof r))
        out.push_back(r);
    ::close(fd);
    return {std::move(out), reap_children(children)};
}

class start_gate {
public:
    start_gate(); // throws std::system_error
    ~start_gate();
    start_gate(const start_gate&) = delete;
    start_gate& operator=(const start_gate&) = delete;

    // Parent: lets `children` waiting children go. Throws std::system_error.
    void open(int children);
    // Child: returns once the parent opened the gate; exits with status 2 if the parent is gone.
    void wait() noexcept;

private:
    int fd_[2] = {-1, -1};
};

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_CHILD_PROCESS_HPP
