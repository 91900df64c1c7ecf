// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/child_process.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <utility>

extern char** environ;

namespace corolock::test {
namespace {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// Every live child, so that an exit or a fatal signal can kill them. Plain atomics rather than
// a locked container because the signal handler may only touch lock-free state.

std::array<std::atomic<pid_t>, 256> children{};

void register_child(pid_t pid) {
    for (auto& slot : children) {
        pid_t expected = 0;
        if (slot.compare_exchange_strong(expected, pid))
            return;
    }
    // More than 256 live children: still correct, only without the crash safety net.
}

void unregister_child(pid_t pid) {
    for (auto& slot : children) {
        pid_t expected = pid;
        if (slot.compare_exchange_strong(expected, 0))
            return;
    }
}

void kill_children_at_exit() {
    for (auto& slot : children) {
        if (pid_t pid = slot.exchange(0); pid > 0) {
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
    }
}

constexpr std::array<int, 3> fatal_signals{SIGINT, SIGTERM, SIGABRT};
std::array<struct sigaction, NSIG> previous_actions{};

extern "C" void kill_children_on_signal(int sig) {
    int saved_errno = errno;
    for (auto& slot : children) {
        if (pid_t pid = slot.load(); pid > 0)
            ::kill(pid, SIGKILL);
    }
    // Hand the signal on to whoever was there before us (by default: terminate). It is blocked
    // while we run, so it is delivered again as soon as we return.
    ::sigaction(sig, &previous_actions[sig], nullptr);
    ::raise(sig);
    errno = saved_errno;
}

// At load time rather than on the first start: Boost.Test saves and restores the SIGABRT action
// around each test case, which would drop a handler installed from inside a test.
bool install_safety_net() {
    std::atexit(kill_children_at_exit);
    for (int sig : fatal_signals) {
        struct sigaction action {};
        action.sa_handler = kill_children_on_signal;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESTART;
        ::sigaction(sig, &action, &previous_actions[sig]);
    }
    return true;
}

[[maybe_unused]] const bool safety_net_installed = install_safety_net();

[[noreturn]] void throw_errno(int err, const std::string& what) {
    throw std::system_error(err, std::generic_category(), what);
}

void close_fd(int& fd) {
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

int decode_status(int raw) {
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings)
        out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

} // namespace

child_process::child_process(const std::vector<std::string>& argv_in,
                             const child_options& options) {
    if (argv_in.empty())
        throw std::invalid_argument("child_process: empty argv");
    // Everything the child needs is prepared here: between fork and exec it may only make
    // async-signal-safe calls, since other threads of ours may hold the allocator's locks.
    std::vector<std::string> argv_s = argv_in;
    auto argv = pointers(argv_s);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e)
        env_s.emplace_back(*e);
    env_s.insert(env_s.end(), options.env.begin(), options.env.end());
    auto env = pointers(env_s);

    // Every descriptor here is close-on-exec; dup2 clears that flag on the copies the child
    // keeps as 0, 1 and 2.
    int exec_pipe[2] = {-1, -1}, in[2] = {-1, -1}, out[2] = {-1, -1};
    auto close_all = [&] {
        for (int* fd : {&exec_pipe[0], &exec_pipe[1], &in[0], &in[1], &out[0], &out[1]})
            close_fd(*fd);
    };
    auto pipe_or_throw = [&](int(&fds)[2]) {
        if (::pipe2(fds, O_CLOEXEC) < 0) {
            const int err = errno;
            close_all();
            throw_errno(err, "pipe2");
        }
    };
    pipe_or_throw(exec_pipe);
    if (options.pipe_stdin)
        pipe_or_throw(in);
    if (options.pipe_stdout)
        pipe_or_throw(out);
    const int null_in = options.pipe_stdin ? -1 : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int file_out =
        options.output_file.empty()
            ? -1
            : ::open(options.output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) {
        const int err = errno;
        close_all();
        ::close(null_in);
        ::close(file_out);
        throw_errno(err, "fork");
    }
    if (child == 0) {
        if (options.gid != static_cast<gid_t>(-1) &&
            (::setgroups(0, nullptr) != 0 || ::setgid(options.gid) != 0))
            ::_exit(126);
        if (options.uid != static_cast<uid_t>(-1) && ::setuid(options.uid) != 0)
            ::_exit(126);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            ::_exit(127); // the parent died before the line above
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (in[0] >= 0)
            ::dup2(in[0], STDIN_FILENO);
        else if (null_in >= 0)
            ::dup2(null_in, STDIN_FILENO);
        if (out[1] >= 0)
            ::dup2(out[1], STDOUT_FILENO);
        if (file_out >= 0) {
            ::dup2(file_out, STDOUT_FILENO);
            ::dup2(file_out, STDERR_FILENO);
        }
        ::execve(argv[0], argv.data(), env.data());
        const int err = errno;
        [[maybe_unused]] auto n = ::write(exec_pipe[1], &err, sizeof err);
        ::_exit(127);
    }
    ::close(null_in);
    ::close(file_out);
    close_fd(exec_pipe[1]);
    close_fd(in[0]);
    close_fd(out[1]);
    int exec_errno = 0;
    ssize_t got;
    while ((got = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
    }
    close_fd(exec_pipe[0]);
    if (got > 0) {
        close_all();
        while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
        }
        throw_errno(exec_errno, "exec " + argv_in[0]);
    }
    pid_ = child;
    in_fd_ = in[1];
    out_fd_ = out[0];
    register_child(child);
}

child_process::~child_process() {
    kill();
    close_input();
    close_output();
}

child_process::child_process(child_process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), status_(std::exchange(other.status_, -1)),
      paused_(std::exchange(other.paused_, false)), in_fd_(std::exchange(other.in_fd_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)) {}

child_process& child_process::operator=(child_process&& other) noexcept {
    if (this != &other) {
        release();
        pid_ = std::exchange(other.pid_, -1);
        status_ = std::exchange(other.status_, -1);
        paused_ = std::exchange(other.paused_, false);
        in_fd_ = std::exchange(other.in_fd_, -1);
        out_fd_ = std::exchange(other.out_fd_, -1);
    }
    return *this;
}

void child_process::release() noexcept {
    kill();
    close_input();
    close_output();
}

void child_process::reaped(int raw_status) {
    unregister_child(pid_);
    pid_ = -1;
    paused_ = false;
    status_ = decode_status(raw_status);
}

std::optional<int> child_process::try_wait() {
    if (!running())
        return status_;
    int raw = 0;
    const pid_t r = ::waitpid(pid_, &raw, WNOHANG);
    if (r == pid_) {
        reaped(raw);
        return status_;
    }
    return std::nullopt;
}

int child_process::wait(duration limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (running()) {
        if (try_wait())
            break;
        if (std::chrono::steady_clock::now() >= until) {
            kill();
            break;
        }
        std::this_thread::sleep_for(5ms);
    }
    return status_;
}

void child_process::terminate(duration grace) {
    if (!running())
        return;
    resume(); // a stopped process leaves SIGTERM pending
    ::kill(pid_, SIGTERM);
    wait(grace);
}

void child_process::kill() {
    if (!running())
        return;
    ::kill(pid_, SIGKILL); // works on a stopped process too
    int raw = 0;
    while (::waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
    }
    reaped(raw);
}

bool child_process::pause() {
    if (!running())
        return false;
    if (paused_)
        return true;
    ::kill(pid_, SIGSTOP);
    // Wait until it has really stopped, so that the caller's next step sees a frozen process.
    int raw = 0;
    while (::waitpid(pid_, &raw, WUNTRACED) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(raw) || WIFSIGNALED(raw)) {
        reaped(raw);
        return false;
    }
    paused_ = true;
    return true;
}

void child_process::resume() {
    if (!running() || !paused_)
        return;
    ::kill(pid_, SIGCONT);
    int raw = 0;
    while (::waitpid(pid_, &raw, WCONTINUED) < 0 && errno == EINTR) {
    }
    paused_ = false;
    if (WIFEXITED(raw) || WIFSIGNALED(raw))
        reaped(raw);
}

void child_process::signal(int sig) {
    if (running())
        ::kill(pid_, sig);
}

void child_process::close_input() {
    close_fd(in_fd_);
}

void child_process::close_output() {
    close_fd(out_fd_);
}

start_gate::start_gate() {
    if (::pipe(fd_) != 0)
        throw std::system_error(errno, std::generic_category(), "pipe");
}

start_gate::~start_gate() {
    ::close(fd_[0]);
    ::close(fd_[1]);
}

std::size_t reap_children(const std::vector<pid_t>& children) {
    std::size_t failed = 0;
    for (auto pid : children) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        failed += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    }
    return failed;
}

void start_gate::open(int children) {
    for (int i = 0; i < children; ++i)
        if (::write(fd_[1], "g", 1) != 1)
            throw std::system_error(errno, std::generic_category(), "write to a start gate");
}

void start_gate::wait() noexcept {
    char c = 0;
    if (::read(fd_[0], &c, 1) != 1)
        ::_exit(2);
}

} // namespace corolock::test
