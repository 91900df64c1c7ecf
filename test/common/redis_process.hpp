// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_REDIS_PROCESS_HPP
#define COROLOCK_TEST_COMMON_REDIS_PROCESS_HPP

#include "common/child_process.hpp"

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace corolock::test {

// The process kit: child processes for tests, the fault suite and the benches. Every child is
// reaped; servers die with the process that started them (see redis_process).

// `program` as the shell finds it in PATH (itself when it contains a '/'), or "" if it cannot
// be run.
std::string find_program(const std::string& program);

// What run_program saw.
struct program_result {
    int exit_code = -1; // its exit status; 127: it could not be run; 128 + n: signal n
    std::string output; // stdout and stderr together
};

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and closed): another
// process may take it before the caller binds it, so a server started on it may have to retry.
std::uint16_t free_loopback_port();

// Runs argv (argv[0] looked up in PATH) with stdin from /dev/null and waits for it, SIGKILLing
// it after `timeout` (exit code 128 + 9 then); always reaped.
program_result run_program(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout = std::chrono::minutes(10));

// A redis-server child process on 127.0.0.1 and a port of its own, for integration tests.
//
// The server runs in the foreground with persistence off, in a private temporary directory
// that also holds its log (kept if the environment sets COROLOCK_KEEP_REDIS_DIR). It is a
// child_process: it dies with the process that started it, so start servers from a thread that
// outlives them (normally the test's main thread). The binary is `redis-server` from PATH unless
// COROLOCK_REDIS_SERVER names one.
//
// Not thread-safe: one thread drives a redis_process at a time.
class redis_process {
public:
    enum class start_mode { now, later };

    // extra_args are appended to the command line, e.g. {"--requirepass", "secret"}.
    // With --requirepass among them, command() authenticates with that password.
    explicit redis_process(std::vector<std::string> extra_args = {},
                           start_mode mode = start_mode::now);
    ~redis_process();

    redis_process(const redis_process&) = delete;
    redis_process& operator=(const redis_process&) = delete;

    // Whether a redis-server binary can be found.
    static bool available();

    const std::string& host() const noexcept { return host_; }
    // The server's port; 0 until the first start() picked one, then the same for good.
    std::uint16_t port() const noexcept { return port_; }
    // The child's pid while running(), else -1.
    pid_t pid() const noexcept { return child_.pid(); }
    bool running() const noexcept { return child_.running(); }
    bool paused() const noexcept { return child_.paused(); }
    const std::string& dir() const noexcept { return dir_; }
    std::string log_path() const { return dir_ + "/redis.log"; }

    // Starts the server and waits (up to about 5 s) until it answers PING; throws
    // std::runtime_error with the tail of its log if it does not. The first start picks a
    // free port; later starts reuse it, retrying for up to 2 s while it is still taken.
    void start();
    // SIGTERM, then SIGKILL if the server has not exited after 2 s; reaps it.
    void stop();
    // SIGKILL and reap: a crash, as far as clients can tell.
    void kill();
    // SIGSTOP: the server keeps its sockets but answers nothing until resume().
    void pause();
    // SIGCONT.
    void resume();
    // kill() then start() on the same port.
    void restart();

    // Sends one command as a RESP2 array of bulk strings on a new connection and returns the
    // raw reply (e.g. "+OK\r\n", "-ERR ...\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"). Throws
    // std::system_error with std::errc::timed_out if the reply takes longer than timeout, and
    // std::system_error on other socket errors.
    std::string command(std::initializer_list<std::string_view> args,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
    // Credentials command() sends with AUTH first (an empty user means "default" / the
    // requirepass form); an empty password turns that off.
    void set_command_auth(std::string user, std::string password);
    // A config file given as the server's first argument (before start()): a Sentinel's, which
    // the Sentinel rewrites, so it must stay writable.
    void set_config_file(std::string path) { config_file_ = std::move(path); }

private:
    // false if the server exited at startup (e.g. the port was taken); throws on a hang.
    bool try_start(std::uint16_t port);
    std::string log_tail() const;

    std::string host_ = "127.0.0.1";
    std::vector<std::string> extra_args_;
    std::string dir_;
    std::string auth_user_;
    std::string auth_password_;
    std::string config_file_;
    std::uint16_t port_ = 0;
    child_process child_;
};

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_REDIS_PROCESS_HPP
