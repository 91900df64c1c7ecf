// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Child processes for the benchmarks: a throw-away redis-server on a free loopback port, and a
// helper that runs a program and captures its output. Self-contained on purpose (POSIX only), so
// the benches do not depend on the test tree.
#ifndef COROLOCK_BENCH_REDIS_SERVER_HPP
#define COROLOCK_BENCH_REDIS_SERVER_HPP

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace corolock::bench {

namespace detail {

// argv for execvp, built before fork so that the child only calls async-signal-safe functions
// (apart from execvp's PATH search, which is safe in practice on glibc).
class argv_holder {
public:
    explicit argv_holder(const std::vector<std::string>& args) : args_(args) {
        for (auto& a : args_)
            ptrs_.push_back(a.data());
        ptrs_.push_back(nullptr);
    }
    char* const* get() { return ptrs_.data(); }

private:
    std::vector<std::string> args_;
    std::vector<char*> ptrs_;
};

// In a freshly forked child: die with the parent (even if the parent is SIGKILLed), then exec.
// The exit status 127 tells the parent that exec failed (as a shell does).
[[noreturn]] inline void exec_child(char* const* argv, pid_t parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
        ::_exit(127);
    ::execvp(argv[0], argv);
    ::_exit(127);
}

// The running server, for the signal handler: it must stop and reap the child and remove its
// directory when SIGINT or SIGTERM ends the benchmark, then die of the same signal.
inline volatile std::sig_atomic_t signal_child_pid = 0;
inline char signal_child_dir[64] = {};

extern "C" inline void on_fatal_signal(int sig) {
    const pid_t pid = signal_child_pid;
    if (pid > 0) {
        ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, 0);
        ::rmdir(signal_child_dir);
    }
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

inline int open_dev_null() {
    return ::open("/dev/null", O_RDWR);
}

// A port that was free a moment ago (the kernel picks it). Another process could take it before
// redis-server binds it; redis_server retries with another port in that case.
inline unsigned short free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(fd);
        throw std::runtime_error("cannot find a free port");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

// True when a server on 127.0.0.1:port answers PING with +PONG (blocking, short timeouts).
inline bool answers_ping(unsigned short port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    timeval tv{0, 200000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        constexpr char ping[] = "PING\r\n";
        if (::send(fd, ping, sizeof ping - 1, MSG_NOSIGNAL) ==
            static_cast<ssize_t>(sizeof ping - 1)) {
            char buf[16] = {};
            std::size_t got = 0;
            while (got < 7) {
                const auto n = ::recv(fd, buf + got, sizeof buf - 1 - got, 0);
                if (n <= 0)
                    break;
                got += static_cast<std::size_t>(n);
            }
            ok = std::strncmp(buf, "+PONG\r\n", 7) == 0;
        }
    }
    ::close(fd);
    return ok;
}

} // namespace detail

/// A redis-server child process on 127.0.0.1 and a free port, with no persistence. The
/// constructor returns once it answers PING (or throws); the destructor stops and reaps it.
/// The child also dies with this process if this process is killed (PR_SET_PDEATHSIG).
class redis_server {
public:
    explicit redis_server(std::string program = "redis-server") {
        char dir_template[] = "/tmp/corolock-bench.XXXXXX";
        static_assert(sizeof dir_template <= sizeof detail::signal_child_dir);
        if (::mkdtemp(dir_template) == nullptr)
            throw std::runtime_error("mkdtemp failed");
        dir_ = dir_template;
        std::memcpy(detail::signal_child_dir, dir_template, sizeof dir_template);
        std::signal(SIGINT, detail::on_fatal_signal);
        std::signal(SIGTERM, detail::on_fatal_signal);
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = detail::free_port();
            if (start(program))
                return;
        }
        remove_dir();
        throw std::runtime_error("could not start " + program + " (is it installed?)");
    }
    ~redis_server() {
        stop();
        remove_dir();
    }
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    unsigned short port() const noexcept { return port_; }
    pid_t pid() const noexcept { return pid_; }

    /// SIGTERM, then SIGKILL if it has not exited within two seconds; always reaps.
    void stop() noexcept {
        if (pid_ <= 0)
            return;
        detail::signal_child_pid = 0;
        ::kill(pid_, SIGTERM);
        if (!wait_exit(std::chrono::seconds(2))) {
            ::kill(pid_, SIGKILL);
            int status = 0;
            while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
            }
        }
        pid_ = -1;
    }

private:
    bool start(const std::string& program) {
        const std::string port = std::to_string(port_);
        detail::argv_holder argv({program, "--port", port, "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--daemonize", "no", "--protected-mode",
                                  "no", "--dir", dir_, "--logfile", ""});
        const int null_fd = detail::open_dev_null();
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) {
            if (null_fd >= 0)
                ::close(null_fd);
            throw std::runtime_error("fork failed");
        }
        if (pid == 0) {
            if (null_fd >= 0) {
                ::dup2(null_fd, STDIN_FILENO);
                ::dup2(null_fd, STDOUT_FILENO);
                ::dup2(null_fd, STDERR_FILENO);
            }
            detail::exec_child(argv.get(), parent);
        }
        if (null_fd >= 0)
            ::close(null_fd);
        pid_ = pid;
        detail::signal_child_pid = pid;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                detail::signal_child_pid = 0;
                pid_ = -1; // exited: port taken or no such program
                return false;
            }
            if (detail::answers_ping(port_))
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        stop();
        return false;
    }

    bool wait_exit(std::chrono::steady_clock::duration limit) noexcept {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (;;) {
            int status = 0;
            const pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_ || (r < 0 && errno != EINTR))
                return true;
            if (std::chrono::steady_clock::now() >= deadline)
                return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    void remove_dir() noexcept {
        if (dir_.empty())
            return;
        // --save "" and --appendonly no: the directory should be empty; remove what is left.
        const std::string dump = dir_ + "/dump.rdb";
        ::unlink(dump.c_str());
        ::rmdir(dir_.c_str());
        dir_.clear();
    }

    std::string dir_;
    unsigned short port_ = 0;
    pid_t pid_ = -1;
};

/// The outcome of `capture_output`.
struct captured {
    int exit_code = -1; ///< 127: the program could not be run; -1: killed by a signal
    std::string output; ///< stdout and stderr together
};

/// Runs `args` (args[0] is looked up in PATH), waits for it and returns what it printed.
inline captured capture_output(const std::vector<std::string>& args) {
    detail::argv_holder argv(args);
    int fds[2];
    if (::pipe(fds) != 0)
        throw std::runtime_error("pipe failed");
    const int null_fd = detail::open_dev_null();
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        if (null_fd >= 0)
            ::close(null_fd);
        throw std::runtime_error("fork failed");
    }
    if (pid == 0) {
        if (null_fd >= 0)
            ::dup2(null_fd, STDIN_FILENO);
        ::dup2(fds[1], STDOUT_FILENO);
        ::dup2(fds[1], STDERR_FILENO);
        ::close(fds[0]);
        ::close(fds[1]);
        detail::exec_child(argv.get(), parent);
    }
    ::close(fds[1]);
    if (null_fd >= 0)
        ::close(null_fd);
    captured out;
    char buf[4096];
    for (;;) {
        const auto n = ::read(fds[0], buf, sizeof buf);
        if (n > 0)
            out.output.append(buf, static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR)
            break;
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

/// True if `program` is found in PATH (as the shell would run it).
inline bool in_path(const std::string& program) {
    if (program.find('/') != std::string::npos)
        return ::access(program.c_str(), X_OK) == 0;
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= p.size()) {
        const auto end = std::min(p.find(':', start), p.size());
        std::string dir = p.substr(start, end - start);
        if (dir.empty())
            dir = ".";
        const std::string full = dir + "/" + program;
        if (::access(full.c_str(), X_OK) == 0)
            return true;
        start = end + 1;
    }
    return false;
}

} // namespace corolock::bench

#endif
