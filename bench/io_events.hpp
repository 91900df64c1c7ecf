// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// What the io_context's thread did over a window, counted in the bench itself so that every run
// prints it: Asio's posts, timer waits, socket operations and handlers run (handler_count.hpp,
// compiled in only with COROLOCK_BENCH_HANDLER_COUNTS: the `bench` preset), system calls (the
// kernel's raw_syscalls:sys_enter tracepoint through perf_event_open, this thread only; needs
// perf_event_paranoid <= -1 or CAP_PERFMON / root, else n/a and the reason), and voluntary
// context switches (getrusage RUSAGE_THREAD: each is the thread blocking, mostly in epoll_wait,
// and being woken by a reply).
#ifndef COROLOCK_BENCH_IO_EVENTS_HPP
#define COROLOCK_BENCH_IO_EVENTS_HPP

#include "common.hpp"

#include <string>

namespace corolock::bench {

struct io_events {
    double io_posts = missing;     // posts, defers and executes on the io_context executor
    double strand_posts = missing; // the same on a strand
    double dispatches = missing;   // dispatches (io_context or strand)
    double timer_waits = missing;  // steady_timer::async_wait
    double socket_ops = missing;   // async send / receive on a socket
    double handlers = missing;     // handlers run
    double io_attempts = missing;  // non-blocking send/recv calls made by the reactor's ops
    double syscalls = missing;     // every system call of the thread
    double wakeups = missing;      // voluntary context switches of the thread

    double posts() const { return io_posts + strand_posts; }
    io_events per(double cycles) const;
};
io_events operator-(const io_events& a, const io_events& b);

// Asio's counters and the thread's context switches (no system call figure): cheap enough to
// read around the timed window itself. Read on the io_context's one thread.
class io_event_counter {
public:
    io_event_counter();
    io_events read() const;
    // Empty when every figure is counted; else what is n/a and why.
    const std::string& note() const noexcept { return note_; }

private:
    std::string note_;
};

// The calling thread's system calls, from construction to destruction. While one is open the
// kernel takes its slow path on every system call of the process (the tracepoint's probe costs
// about 5% of a one-coroutine cycle's CPU under `perf`), so it is opened for a window of its own,
// after the timed one, never during it.
class syscall_counter {
public:
    syscall_counter();
    ~syscall_counter();
    syscall_counter(const syscall_counter&) = delete;
    syscall_counter& operator=(const syscall_counter&) = delete;

    double read() const; // NaN when it could not be opened
    // Why the count is n/a (empty when it is counted).
    const std::string& note() const noexcept { return note_; }

private:
    int fd_ = -1;
    std::string note_;
};

} // namespace corolock::bench

#endif
