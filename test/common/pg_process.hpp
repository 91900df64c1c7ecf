// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_PG_PROCESS_HPP
#define COROLOCK_TEST_COMMON_PG_PROCESS_HPP

#include "common/child_process.hpp"

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace corolock::test {

// How a pg_process is set up.
struct pg_options {
    // fsync, synchronous_commit and full_page_writes follow this: off by default, since a test
    // cluster need not survive a power cut (a commit costs a WAL write, not a disk flush).
    bool fsync = false;
    // More `-c name=value` settings for the server, e.g. "max_connections=50" (they come after
    // the ones `fsync` sets, and win).
    std::vector<std::string> settings;
    // A streaming standby of this running server (pg_basebackup -R) instead of a new cluster.
    const class pg_process* standby_of = nullptr;
};

// A throw-away PostgreSQL 15 cluster for tests: `initdb` into a private temporary directory,
// then `postgres` in the foreground on 127.0.0.1 and a free port (never 5432), its unix socket in
// that directory too, trust authentication for the user `postgres`. When this process runs as
// root (tests do, here and in CI) both run as `nobody`: PostgreSQL refuses to run as root; the
// directory is given to that user. The server is a child_process and dies with the process that
// started it; stop(), kill(), pause() and resume() reach its backends too (found in /proc: each
// leads a session of its own). The directory is removed by the destructor (kept if
// COROLOCK_KEEP_PG_DIR is set). The binaries come from COROLOCK_PG_BIN, else
// /usr/lib/postgresql/15/bin.
//
// Not thread-safe: one thread drives a pg_process at a time.
class pg_process {
public:
    explicit pg_process(pg_options options = {});
    ~pg_process();
    pg_process(const pg_process&) = delete;
    pg_process& operator=(const pg_process&) = delete;

    // Whether initdb and postgres can be found.
    static bool available();

    std::uint16_t port() const noexcept { return port_; }
    pid_t pid() const noexcept { return child_.pid(); }
    bool running() const noexcept { return child_.running(); }
    const std::string& dir() const noexcept { return dir_; }
    // A libpq connection string for the database `postgres` as the user `postgres`.
    std::string conninfo() const;

    // Starts the server and waits (up to 10 s) until it accepts connections; throws
    // std::runtime_error with the tail of its log if it does not. The first start picks a free
    // port; later ones reuse it.
    void start();
    // A fast shutdown (SIGINT: active sessions are ended), then SIGKILL of the server and its
    // backends if it has not exited after 5 s; reaped.
    void stop();
    // SIGKILL of the server and its backends, reaped: a crash. The next start() recovers.
    void kill();
    // SIGSTOP / SIGCONT of the server and its backends: it keeps its sockets, answers nothing.
    void pause();
    void resume();

    // Promotes a standby (pg_promote, waiting until it is done).
    void promote() const;

    // Runs one SQL text with psql (`-At`: unaligned, tuples only) and returns its output with the
    // last newline removed; throws std::runtime_error with psql's output if it fails.
    std::string sql(const std::string& text) const;

private:
    bool try_start(std::uint16_t port);
    std::string log_tail() const;

    pg_options options_;
    std::string dir_;
    std::uint16_t port_ = 0;
    uid_t uid_ = static_cast<uid_t>(-1);
    gid_t gid_ = static_cast<gid_t>(-1);
    child_process child_;
};

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_PG_PROCESS_HPP
