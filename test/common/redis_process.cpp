// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/redis_process.hpp"

#include <arpa/inet.h>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <utility>

namespace corolock::test {
namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto ready_timeout = 5s;
constexpr auto stop_grace = 2s;
constexpr auto same_port_retry = 2s;
constexpr int fresh_port_attempts = 10;

// ---------------------------------------------------------------------------------------------
// Blocking-with-deadline socket helpers.

[[noreturn]] void throw_errno(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

[[noreturn]] void throw_timeout(const char* what) {
    throw std::system_error(std::make_error_code(std::errc::timed_out), what);
}

class socket_fd {
public:
    explicit socket_fd(int fd) : fd_(fd) {}
    ~socket_fd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    socket_fd(socket_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    socket_fd& operator=(socket_fd&&) = delete;
    int get() const noexcept { return fd_; }

private:
    int fd_;
};

sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
}

std::uint16_t pick_free_port() {
    socket_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (s.get() < 0) {
        throw_errno("socket");
    }
    auto addr = loopback(0);
    if (::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
        throw_errno("bind 127.0.0.1:0");
    }
    socklen_t len = sizeof addr;
    if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
        throw_errno("getsockname");
    }
    return ntohs(addr.sin_port);
}

// Waits for events on fd until deadline; throws on timeout.
void wait_for(int fd, short events, clock_type::time_point deadline, const char* what) {
    for (;;) {
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (left <= 0ms) {
            throw_timeout(what);
        }
        pollfd p{fd, events, 0};
        int n = ::poll(&p, 1, static_cast<int>(left.count()) + 1);
        if (n > 0) {
            return;
        }
        if (n < 0 && errno != EINTR) {
            throw_errno("poll");
        }
    }
}

socket_fd connect_loopback(std::uint16_t port, clock_type::time_point deadline) {
    socket_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (s.get() < 0) {
        throw_errno("socket");
    }
    auto addr = loopback(port);
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
        if (errno != EINPROGRESS) {
            throw_errno("connect");
        }
        wait_for(s.get(), POLLOUT, deadline, "connect timed out");
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            throw std::system_error(err, std::generic_category(), "connect");
        }
    }
    return s;
}

void send_all(int fd, std::string_view data, clock_type::time_point deadline) {
    while (!data.empty()) {
        ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(static_cast<std::size_t>(n));
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wait_for(fd, POLLOUT, deadline, "send timed out");
        } else if (n < 0 && errno != EINTR) {
            throw_errno("send");
        }
    }
}

// Where the RESP value starting at pos ends, or npos if buf does not hold all of it yet.
std::size_t reply_end(std::string_view buf, std::size_t pos) {
    constexpr auto npos = std::string_view::npos;
    if (pos >= buf.size()) {
        return npos;
    }
    auto eol = buf.find("\r\n", pos);
    if (eol == npos) {
        return npos;
    }
    auto after_line = eol + 2;
    char type = buf[pos];
    auto number = [&] {
        try {
            return std::stoll(std::string(buf.substr(pos + 1, eol - pos - 1)));
        } catch (const std::exception&) {
            throw std::runtime_error("malformed RESP length in reply: " + std::string(buf));
        }
    };
    switch (type) {
    case '$':
    case '!':
    case '=': {
        auto len = number();
        if (len < 0) {
            return after_line;
        }
        auto end = after_line + static_cast<std::size_t>(len) + 2;
        return end <= buf.size() ? end : npos;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
        auto count = number();
        if (type == '%' || type == '|') {
            count *= 2;
        }
        auto at = after_line;
        for (long long i = 0; i < count; ++i) {
            at = reply_end(buf, at);
            if (at == npos) {
                return npos;
            }
        }
        // An attribute is followed by the value it describes.
        return type == '|' ? reply_end(buf, at) : at;
    }
    default:
        return after_line; // simple string, error, integer, and the other one-line types
    }
}

// A RESP2 array of bulk strings, written here so that the kit does not depend on the library.
std::string encode_command(std::initializer_list<std::string_view> args) {
    // Appended piece by piece: g++ 12 -O2 warns falsely (-Wrestrict) on "literal" + std::string.
    std::string out(1, '*');
    out += std::to_string(args.size());
    out += "\r\n";
    for (auto arg : args) {
        out += '$';
        out += std::to_string(arg.size());
        out += "\r\n";
        out += arg;
        out += "\r\n";
    }
    return out;
}

// Sends the requests and reads `replies` complete replies; returns them one by one.
std::vector<std::string> exchange(std::uint16_t port, std::string_view requests,
                                  std::size_t replies, std::chrono::milliseconds timeout) {
    auto deadline = clock_type::now() + timeout;
    auto s = connect_loopback(port, deadline);
    send_all(s.get(), requests, deadline);

    std::string buf;
    std::vector<std::string> out;
    std::size_t start = 0;
    char chunk[4096];
    while (out.size() < replies) {
        if (auto end = reply_end(buf, start); end != std::string_view::npos) {
            out.emplace_back(buf.substr(start, end - start));
            start = end;
            continue;
        }
        ssize_t n = ::recv(s.get(), chunk, sizeof chunk, 0);
        if (n > 0) {
            buf.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0) {
            throw std::system_error(std::make_error_code(std::errc::connection_reset),
                                    "redis closed the connection before replying");
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            wait_for(s.get(), POLLIN, deadline, "redis did not reply in time");
        } else if (errno != EINTR) {
            throw_errno("recv");
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Files and the binary.

std::string find_redis_server() {
    const char* env = std::getenv("COROLOCK_REDIS_SERVER");
    return find_program(env != nullptr && *env != '\0' ? env : "redis-server");
}

std::string make_temp_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/corolock-redis-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw_errno("mkdtemp");
    }
    return pattern;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::string tail(std::string text, std::size_t max) {
    return text.size() > max ? "..." + text.substr(text.size() - max) : text;
}

} // namespace

std::uint16_t free_loopback_port() {
    return pick_free_port();
}

std::string find_program(const std::string& program) {
    if (program.find('/') != std::string::npos)
        return ::access(program.c_str(), X_OK) == 0 ? program : std::string();
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        auto candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return {};
}

program_result run_program(const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout) {
    program_result out;
    auto path = args.empty() ? std::string() : find_program(args.front());
    if (path.empty())
        return {127, "cannot run " + (args.empty() ? std::string("an empty command") : args[0])};
    // The output goes to a temporary file, so a chatty child never blocks on a pipe.
    char file[] = "/tmp/corolock-run-XXXXXX";
    const int fd = ::mkstemp(file);
    if (fd < 0)
        throw_errno("mkstemp");
    ::close(fd);
    auto argv = args;
    argv.front() = path;
    try {
        child_options options;
        options.output_file = file;
        child_process child(argv, options);
        out.exit_code = child.wait(timeout);
    } catch (...) {
        ::unlink(file);
        throw;
    }
    out.output = read_file(file);
    ::unlink(file);
    return out;
}

redis_process::redis_process(std::vector<std::string> extra_args, start_mode mode)
    : extra_args_(std::move(extra_args)) {
    for (std::size_t i = 0; i + 1 < extra_args_.size(); ++i) {
        if (extra_args_[i] == "--requirepass") {
            auth_password_ = extra_args_[i + 1];
        }
    }
    if (mode == start_mode::now) {
        start();
    }
}

redis_process::~redis_process() {
    kill();
    if (!dir_.empty() && std::getenv("COROLOCK_KEEP_REDIS_DIR") == nullptr) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
}

bool redis_process::available() {
    return !find_redis_server().empty();
}

void redis_process::start() {
    if (running()) {
        return;
    }
    if (dir_.empty()) {
        dir_ = make_temp_dir();
    }
    if (port_ == 0) {
        // A port free a moment ago may be taken by the time the server binds it (another test
        // picked it too): the server then exits at once, and we try another.
        for (int attempt = 0; attempt < fresh_port_attempts; ++attempt) {
            auto port = pick_free_port();
            if (try_start(port)) {
                port_ = port;
                return;
            }
        }
        throw std::runtime_error("redis-server exited at startup " +
                                 std::to_string(fresh_port_attempts) + " times:\n" + log_tail());
    }
    auto give_up = clock_type::now() + same_port_retry;
    for (;;) {
        if (try_start(port_)) {
            return;
        }
        if (clock_type::now() >= give_up) {
            throw std::runtime_error("redis-server could not start again on port " +
                                     std::to_string(port_) + ":\n" + log_tail());
        }
        std::this_thread::sleep_for(50ms);
    }
}

bool redis_process::try_start(std::uint16_t port) {
    auto binary = find_redis_server();
    if (binary.empty()) {
        throw std::runtime_error("redis-server not found on PATH (or COROLOCK_REDIS_SERVER)");
    }
    auto pidfile = dir_ + "/redis.pid";
    auto output = dir_ + "/redis.out";
    ::unlink(pidfile.c_str());

    std::vector<std::string> args{binary,
                                  "--port",
                                  std::to_string(port),
                                  "--bind",
                                  host_,
                                  "--save",
                                  "",
                                  "--appendonly",
                                  "no",
                                  "--daemonize",
                                  "no",
                                  "--protected-mode",
                                  "no",
                                  "--enable-debug-command",
                                  "local",
                                  "--loglevel",
                                  "warning",
                                  "--logfile",
                                  log_path(),
                                  "--dir",
                                  dir_,
                                  "--pidfile",
                                  pidfile};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    if (!config_file_.empty())
        args.insert(args.begin() + 1, config_file_);
    child_options options;
    options.output_file = output;
    child_ = child_process(args, options);

    // Ready means: our child is alive, has written its pidfile (which redis 7 does only once it
    // listens, so a PONG cannot come from someone else's server on a port we collided on) and
    // answers PING. With a password or ACLs, -NOAUTH / -ERR are answers too.
    auto deadline = clock_type::now() + ready_timeout;
    auto ping = encode_command({"PING"});
    while (clock_type::now() < deadline) {
        if (child_.try_wait())
            return false;
        if (read_file(pidfile).find(std::to_string(child_.pid())) == 0) {
            try {
                auto reply = exchange(port, ping, 1, 250ms).front();
                if (reply.starts_with("+PONG") || reply.starts_with("-NOAUTH") ||
                    reply.starts_with("-ERR")) {
                    return true;
                }
            } catch (const std::system_error&) {
                // not listening yet
            }
        }
        std::this_thread::sleep_for(10ms);
    }
    auto log = log_tail();
    kill();
    throw std::runtime_error("redis-server on port " + std::to_string(port) +
                             " did not answer PING within 5 s:\n" + log);
}

void redis_process::stop() {
    child_.terminate(stop_grace);
}

void redis_process::kill() {
    child_.kill();
}

void redis_process::pause() {
    if (!running())
        throw std::logic_error("redis_process::pause: not running");
    if (!child_.pause())
        throw std::runtime_error("redis-server died instead of pausing:\n" + log_tail());
}

void redis_process::resume() {
    child_.resume();
}

void redis_process::restart() {
    kill();
    start();
}

std::string redis_process::command(std::initializer_list<std::string_view> args,
                                   std::chrono::milliseconds timeout) const {
    if (auth_password_.empty()) {
        return exchange(port_, encode_command(args), 1, timeout).front();
    }
    auto requests = auth_user_.empty() ? encode_command({"AUTH", auth_password_})
                                       : encode_command({"AUTH", auth_user_, auth_password_});
    requests += encode_command(args);
    auto replies = exchange(port_, requests, 2, timeout);
    if (!replies[0].starts_with("+OK")) {
        throw std::runtime_error("AUTH failed: " + replies[0]);
    }
    return replies[1];
}

void redis_process::set_command_auth(std::string user, std::string password) {
    auth_user_ = std::move(user);
    auth_password_ = std::move(password);
}

std::string redis_process::log_tail() const {
    return tail(read_file(log_path()), 2000) + tail(read_file(dir_ + "/redis.out"), 1000);
}

} // namespace corolock::test
