// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// A wall-clock step for one process, and nothing else (fault scenario S11). Preloaded into a
// fault worker (LD_PRELOAD), this library adds an offset to every reading of the wall clock:
// clock_gettime on CLOCK_REALTIME, CLOCK_REALTIME_COARSE and CLOCK_TAI, gettimeofday, time and
// timespec_get. Every other clock, and every timer, sleep, poll and condition-variable wait, is
// the system's own, as after a real step (settimeofday, an NTP step).
//
// It replaces libfaketime, which also rewrites timer and wait calls and gets some wrong: it
// converts every absolute timerfd time as if it were on its own faked CLOCK_REALTIME, timerfds
// on CLOCK_MONOTONIC included ("only CLOCK_REALTIME is handled", 0.9.10 and upstream today).
// Asio arms its CLOCK_MONOTONIC timerfd with the absolute time 1 ns when a timer is already due;
// with the wall clock set back 1 h that became "at 3,600 s of uptime" (an hour-long stall on a
// host up for less than an hour), and set forward 1 h it became -3,600 s (EINVAL, ignored by
// Asio: the timer is not armed). Under load a timer is sometimes already due when Asio arms
// it, and the worker stopped (issue 17, section 4.7).
//
// The offset, in nanoseconds (std::int64_t), is the whole content of the file named by
// COROLOCK_WALL_CLOCK_OFFSET_FILE. The harness maps it shared and changes it with one atomic
// store; this library maps it read-only at load time and reads it with one atomic load per call:
// no lock, no file read and no allocation on the time path.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

namespace {

using clock_gettime_fn = int (*)(clockid_t, timespec*);

std::atomic<clock_gettime_fn> real_clock_gettime{nullptr};
std::atomic<const std::int64_t*> offset_ns{nullptr};

[[noreturn]] void fail(const char* what) {
    const char* prefix = "corolock wall_clock_shim: ";
    (void)!::write(2, prefix, std::strlen(prefix));
    (void)!::write(2, what, std::strlen(what));
    (void)!::write(2, "\n", 1);
    std::abort();
}

// At load, before main: a worker asked to run with a shifted clock must never run with a true
// one, so a missing or short file ends the process.
__attribute__((constructor)) void map_offset() {
    const char* path = std::getenv("COROLOCK_WALL_CLOCK_OFFSET_FILE");
    if (path == nullptr)
        return;
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail("cannot open COROLOCK_WALL_CLOCK_OFFSET_FILE");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(std::int64_t)))
        fail("COROLOCK_WALL_CLOCK_OFFSET_FILE is shorter than 8 bytes");
    void* p = ::mmap(nullptr, sizeof(std::int64_t), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED)
        fail("cannot map COROLOCK_WALL_CLOCK_OFFSET_FILE");
    offset_ns.store(static_cast<const std::int64_t*>(p), std::memory_order_release);
}

int call_real_clock_gettime(clockid_t id, timespec* ts) {
    auto f = real_clock_gettime.load(std::memory_order_acquire);
    if (f == nullptr) {
        f = reinterpret_cast<clock_gettime_fn>(::dlsym(RTLD_NEXT, "clock_gettime"));
        if (f == nullptr)
            fail("no clock_gettime after this library");
        real_clock_gettime.store(f, std::memory_order_release);
    }
    return f(id, ts);
}

std::int64_t current_offset() {
    const auto* p = offset_ns.load(std::memory_order_acquire);
    return p == nullptr ? 0 : __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

void shift(timespec& ts) {
    constexpr std::int64_t ns_per_s = 1'000'000'000;
    const auto off = current_offset();
    std::int64_t sec = static_cast<std::int64_t>(ts.tv_sec) + off / ns_per_s;
    std::int64_t nsec = static_cast<std::int64_t>(ts.tv_nsec) + off % ns_per_s;
    if (nsec < 0) {
        nsec += ns_per_s;
        --sec;
    } else if (nsec >= ns_per_s) {
        nsec -= ns_per_s;
        ++sec;
    }
    ts.tv_sec = static_cast<time_t>(sec);
    ts.tv_nsec = static_cast<long>(nsec);
}

bool is_wall_clock(clockid_t id) {
    return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}

int wall_now(timespec* ts) {
    const int r = call_real_clock_gettime(CLOCK_REALTIME, ts);
    if (r == 0)
        shift(*ts);
    return r;
}

} // namespace

// The interposed C library functions (declared by <time.h> and <sys/time.h>).
extern "C" {

int clock_gettime(clockid_t id, timespec* ts) noexcept {
    const int r = call_real_clock_gettime(id, ts);
    if (r == 0 && is_wall_clock(id))
        shift(*ts);
    return r;
}

int gettimeofday(timeval* __restrict tv, void* __restrict tz) noexcept {
    if (tz != nullptr)
        std::memset(tz, 0, sizeof(struct timezone)); // obsolete; UTC, as the kernel reports
    timespec ts{};
    if (wall_now(&ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t* out) noexcept {
    timespec ts{};
    if (wall_now(&ts) != 0)
        return static_cast<time_t>(-1);
    if (out != nullptr)
        *out = ts.tv_sec;
    return ts.tv_sec;
}

int timespec_get(timespec* ts, int base) noexcept {
    if (base != TIME_UTC)
        return 0;
    return wall_now(ts) == 0 ? base : 0;
}

} // extern "C"
