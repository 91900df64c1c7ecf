// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io_events.hpp"

#if defined(COROLOCK_BENCH_HANDLER_COUNTS)
#include "handler_count.hpp"
#endif

#include <cerrno>
#include <cstring>
#include <fstream>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace corolock::bench {

io_events io_events::per(double cycles) const {
    io_events e;
    if (!(cycles > 0))
        return e;
    e.io_posts = io_posts / cycles;
    e.strand_posts = strand_posts / cycles;
    e.dispatches = dispatches / cycles;
    e.timer_waits = timer_waits / cycles;
    e.socket_ops = socket_ops / cycles;
    e.handlers = handlers / cycles;
    e.io_attempts = io_attempts / cycles;
    e.syscalls = syscalls / cycles;
    e.wakeups = wakeups / cycles;
    return e;
}

io_events operator-(const io_events& a, const io_events& b) {
    io_events e;
    e.io_posts = a.io_posts - b.io_posts;
    e.strand_posts = a.strand_posts - b.strand_posts;
    e.dispatches = a.dispatches - b.dispatches;
    e.timer_waits = a.timer_waits - b.timer_waits;
    e.socket_ops = a.socket_ops - b.socket_ops;
    e.handlers = a.handlers - b.handlers;
    e.io_attempts = a.io_attempts - b.io_attempts;
    e.syscalls = a.syscalls - b.syscalls;
    e.wakeups = a.wakeups - b.wakeups;
    return e;
}

namespace {

long tracepoint_id(const char* event) {
    for (const char* root : {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"}) {
        std::ifstream f(std::string(root) + event + "/id");
        long id = -1;
        if (f >> id)
            return id;
    }
    return -1;
}

} // namespace

io_event_counter::io_event_counter() {
#if !defined(COROLOCK_BENCH_HANDLER_COUNTS)
    note_ = "posts and handlers: n/a (configure with -DCOROLOCK_BENCH_HANDLER_COUNTS=ON, as the "
            "bench preset does)";
#endif
}

io_events io_event_counter::read() const {
    io_events e;
#if defined(COROLOCK_BENCH_HANDLER_COUNTS)
    namespace h = corolock_bench_handlers;
    e.io_posts = double(h::read(h::io_post));
    e.strand_posts = double(h::read(h::strand_post));
    e.dispatches = double(h::read(h::io_dispatch) + h::read(h::strand_dispatch));
    e.timer_waits = double(h::read(h::timer_wait));
    e.socket_ops = double(h::read(h::socket_op));
    e.handlers = double(h::read(h::invoked));
    e.io_attempts = double(h::read(h::reactor_op));
#endif
    rusage ru{};
    if (::getrusage(RUSAGE_THREAD, &ru) == 0)
        e.wakeups = double(ru.ru_nvcsw);
    return e;
}

syscall_counter::syscall_counter() {
    const long id = tracepoint_id("raw_syscalls/sys_enter");
    if (id < 0) {
        note_ = "syscalls: n/a (tracefs not readable: raw_syscalls/sys_enter/id; bench/README.md "
                "says how to count them with strace)";
        return;
    }
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.config = static_cast<unsigned long long>(id);
    // This thread only (pid 0, any CPU), not its children: redis-benchmark runs apart.
    fd_ = static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
    if (fd_ < 0)
        note_ = std::string("syscalls: n/a (perf_event_open: ") + std::strerror(errno) +
                "; bench/README.md says how to count them with strace)";
}

syscall_counter::~syscall_counter() {
    if (fd_ >= 0)
        ::close(fd_);
}

double syscall_counter::read() const {
    std::uint64_t n = 0;
    if (fd_ < 0 || ::read(fd_, &n, sizeof n) != static_cast<ssize_t>(sizeof n))
        return missing;
    return double(n);
}

} // namespace corolock::bench
