// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/pg_process.hpp"

#include "common/redis_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <pwd.h>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace corolock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto ready_timeout = 10s;
constexpr auto stop_grace = 5s;
constexpr int fresh_port_attempts = 10;

std::string bin_dir() {
    const char* env = std::getenv("COROLOCK_PG_BIN");
    return env != nullptr && *env != '\0' ? env : "/usr/lib/postgresql/15/bin";
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The postmaster writes its state as the 8th line of postmaster.pid: "ready" once it accepts
// connections.
bool postmaster_ready(const std::string& data_dir) {
    std::ifstream in(data_dir + "/postmaster.pid");
    std::string line;
    for (int i = 0; i < 8 && std::getline(in, line); ++i) {
    }
    return line.rfind("ready", 0) == 0;
}

// The postmaster's children (its backends and helpers), from /proc. They cannot be reached as a
// process group: each calls setsid().
std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
        const auto name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const auto stat = slurp(e.path().string() + "/stat");
        const auto close = stat.rfind(')'); // the command may hold spaces and parentheses
        if (close == std::string::npos)
            continue;
        char state = 0;
        int ppid = 0;
        if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
            out.push_back(static_cast<pid_t>(std::stoi(name)));
    }
    return out;
}

} // namespace

namespace {

// A fresh private directory the server's user owns.
std::string owned_temp_dir(const char* prefix, uid_t uid, gid_t gid) {
    const char* base = std::getenv("TMPDIR");
    // The server's user must reach the directory: under root a private TMPDIR may not let it.
    std::string pattern = (::geteuid() == 0 || base == nullptr || *base == '\0')
                              ? std::string("/tmp")
                              : std::string(base);
    pattern += prefix;
    pattern += "XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
        throw std::system_error(errno, std::generic_category(), "mkdtemp");
    if (uid != static_cast<uid_t>(-1) && ::chown(pattern.c_str(), uid, gid) != 0)
        throw std::system_error(errno, std::generic_category(), "chown " + pattern);
    return pattern;
}

// initdb takes about a second: the process's first cluster is made by it, into a template
// that the process removes at exit; every cluster is a copy of it (cp -a keeps owner and modes).
std::string template_dir;

void remove_template() {
    if (!template_dir.empty() && std::getenv("COROLOCK_KEEP_PG_DIR") == nullptr) {
        std::error_code ec;
        std::filesystem::remove_all(template_dir, ec);
    }
}

void make_data_dir(const std::string& data, uid_t uid, gid_t gid) {
    if (template_dir.empty()) {
        const auto dir = owned_temp_dir("/corolock-pg-template-", uid, gid);
        child_options opts;
        opts.uid = uid;
        opts.gid = gid;
        opts.output_file = dir + "/initdb.log";
        child_process initdb({bin_dir() + "/initdb", "-D", dir + "/data", "-U", "postgres", "-A",
                              "trust", "-E", "UTF8", "--locale=C", "--no-sync",
                              "--no-instructions"},
                             opts);
        if (initdb.wait(60s) != 0)
            throw std::runtime_error("initdb failed:\n" + slurp(dir + "/initdb.log"));
        template_dir = dir;
        std::atexit(remove_template);
    }
    auto r = run_program({"cp", "-a", template_dir + "/data", data}, 60s);
    if (r.exit_code != 0)
        throw std::runtime_error("copying the template cluster failed:\n" + r.output);
}

} // namespace

pg_process::pg_process(pg_options options) : options_(std::move(options)) {
    if (::geteuid() == 0) {
        const passwd* pw = ::getpwnam("nobody");
        if (pw == nullptr)
            throw std::runtime_error("running as root and there is no user 'nobody' to run "
                                     "PostgreSQL as");
        uid_ = pw->pw_uid;
        gid_ = pw->pw_gid;
    }
    dir_ = owned_temp_dir("/corolock-pg-", uid_, gid_);
    if (options_.standby_of != nullptr) {
        child_options opts;
        opts.uid = uid_;
        opts.gid = gid_;
        opts.output_file = dir_ + "/basebackup.log";
        child_process backup({bin_dir() + "/pg_basebackup", "-D", dir_ + "/data", "-h", "127.0.0.1",
                              "-p", std::to_string(options_.standby_of->port()), "-U", "postgres",
                              "-R", "--no-sync", "-X", "stream"},
                             opts);
        if (backup.wait(60s) != 0)
            throw std::runtime_error("pg_basebackup failed:\n" + slurp(dir_ + "/basebackup.log"));
    } else {
        make_data_dir(dir_ + "/data", uid_, gid_);
    }
    start();
}

pg_process::~pg_process() {
    kill();
    if (!dir_.empty() && std::getenv("COROLOCK_KEEP_PG_DIR") == nullptr) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
}

bool pg_process::available() {
    return ::access((bin_dir() + "/initdb").c_str(), X_OK) == 0 &&
           ::access((bin_dir() + "/postgres").c_str(), X_OK) == 0;
}

std::string pg_process::conninfo() const {
    return "host=127.0.0.1 port=" + std::to_string(port_) + " user=postgres dbname=postgres";
}

void pg_process::start() {
    if (running())
        return;
    if (port_ != 0) {
        // The same port again: a client's reconnect must find the server where it was.
        const auto give_up = clock_type::now() + 2s;
        while (!try_start(port_)) {
            if (clock_type::now() >= give_up)
                throw std::runtime_error("postgres could not start again on port " +
                                         std::to_string(port_) + ":\n" + log_tail());
            std::this_thread::sleep_for(50ms);
        }
        return;
    }
    for (int attempt = 0; attempt < fresh_port_attempts; ++attempt) {
        const auto port = pick_free_port();
        if (try_start(port)) {
            port_ = port;
            return;
        }
    }
    throw std::runtime_error("postgres exited at startup " + std::to_string(fresh_port_attempts) +
                             " times:\n" + log_tail());
}

bool pg_process::try_start(std::uint16_t port) {
    const bool durable = options_.fsync;
    std::vector<std::string> args{bin_dir() + "/postgres",
                                  "-D",
                                  dir_ + "/data",
                                  "-p",
                                  std::to_string(port),
                                  "-c",
                                  "listen_addresses=127.0.0.1",
                                  "-c",
                                  "unix_socket_directories=" + dir_,
                                  "-c",
                                  std::string("fsync=") + (durable ? "on" : "off"),
                                  "-c",
                                  std::string("synchronous_commit=") + (durable ? "on" : "off"),
                                  "-c",
                                  std::string("full_page_writes=") + (durable ? "on" : "off"),
                                  "-c",
                                  "logging_collector=off"};
    for (const auto& s : options_.settings) {
        args.emplace_back("-c");
        args.push_back(s);
    }
    // A crash leaves the old postmaster.pid behind, saying "ready": the new server writes its own.
    ::unlink((dir_ + "/data/postmaster.pid").c_str());
    child_options opts;
    opts.uid = uid_;
    opts.gid = gid_;
    opts.output_file = dir_ + "/postgres.log";
    child_ = child_process(args, opts);
    const auto deadline = clock_type::now() + ready_timeout;
    for (;;) {
        if (child_.try_wait())
            return false; // exited at startup: the port was taken, most likely
        if (postmaster_ready(dir_ + "/data"))
            return true;
        if (clock_type::now() >= deadline) {
            kill();
            throw std::runtime_error("postgres did not get ready within 10 s:\n" + log_tail());
        }
        std::this_thread::sleep_for(10ms);
    }
}

void pg_process::stop() {
    if (!running())
        return;
    resume();
    const pid_t pid = child_.pid();
    const auto children = children_of(pid);
    ::kill(pid, SIGINT);
    if (child_.wait(stop_grace) != 0)
        for (pid_t c : children)
            ::kill(c, SIGKILL); // what the postmaster did not end
}

void pg_process::kill() {
    if (!running())
        return;
    const auto children = children_of(child_.pid());
    child_.kill();
    for (pid_t c : children)
        ::kill(c, SIGKILL);
}

void pg_process::pause() {
    if (!running())
        return;
    ::kill(child_.pid(), SIGSTOP); // first, so that it starts no one meanwhile
    for (pid_t c : children_of(child_.pid()))
        ::kill(c, SIGSTOP);
}

void pg_process::resume() {
    if (!running())
        return;
    for (pid_t c : children_of(child_.pid()))
        ::kill(c, SIGCONT);
    ::kill(child_.pid(), SIGCONT);
}

void pg_process::promote() const {
    if (sql("SELECT pg_promote(true, 30)") != "t")
        throw std::runtime_error("pg_promote did not finish");
}

std::string pg_process::sql(const std::string& text) const {
    auto r = run_program({bin_dir() + "/psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h",
                          "127.0.0.1", "-p", std::to_string(port_), "-U", "postgres", "-d",
                          "postgres", "-c", text},
                         30s);
    if (r.exit_code != 0)
        throw std::runtime_error("psql failed (" + std::to_string(r.exit_code) + ") on: " + text +
                                 "\n" + r.output);
    while (!r.output.empty() && r.output.back() == '\n')
        r.output.pop_back();
    return r.output;
}

std::string pg_process::log_tail() const {
    auto text = slurp(dir_ + "/postgres.log");
    return text.size() > 2000 ? "..." + text.substr(text.size() - 2000) : text;
}

} // namespace corolock::test
