// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// What every example shares: where the Redis server is (the command line wins, then the
// environment, COROLOCK_REDIS_HOST / COROLOCK_REDIS_PORT, which tools/test.sh exports, then
// 127.0.0.1:6379), a way to run one coroutine against a fresh connection, and, for the examples
// that run several processes, a small parent/worker kit: the parent starts this same program
// again with `--worker N`, talks to each worker through its stdin and stdout, and reaps every
// worker on every path.
#ifndef COROLOCK_EXAMPLE_COMMON_HPP
#define COROLOCK_EXAMPLE_COMMON_HPP

#include <corolock/config.hpp>
#include <corolock/connection.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <fcntl.h>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <poll.h>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace corolock_example {

struct server_options {
    std::string host = "127.0.0.1";
    std::string port = "6379";
};

/// An option of one example beyond --host/--port, written `--name VALUE` and kept as text.
/// Hidden options are what a parent passes to its workers; usage does not list them.
struct extra_option {
    std::string_view name; // with its dashes: "--worker"
    std::string* value;
    std::string_view help = {};
    bool hidden = false;
};

inline void print_usage(std::string_view program, std::ostream& os,
                        std::initializer_list<extra_option> extra = {}) {
    os << "usage: " << program << " [--host H] [--port P]";
    for (const auto& e : extra)
        if (!e.hidden)
            os << " [" << e.name << " VALUE]";
    os << "\n  defaults: $COROLOCK_REDIS_HOST / $COROLOCK_REDIS_PORT, else 127.0.0.1 / 6379\n";
    for (const auto& e : extra)
        if (!e.hidden)
            os << "  " << e.name << "  " << e.help << "\n";
}

/// Reads --host/--port (and the environment), plus the example's own `extra` options. On a bad
/// or unknown argument prints usage and returns nullopt; `exit_code` is then what main should
/// return (0 after --help).
inline std::optional<server_options>
parse_server_options(int argc, char** argv, int& exit_code,
                     std::initializer_list<extra_option> extra = {}) {
    server_options o;
    if (const char* h = std::getenv("COROLOCK_REDIS_HOST"); h && *h)
        o.host = h;
    if (const char* p = std::getenv("COROLOCK_REDIS_PORT"); p && *p)
        o.port = p;
    const std::string_view program = argc > 0 ? argv[0] : "example";
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            print_usage(program, std::cout, extra);
            exit_code = 0;
            return std::nullopt;
        }
        if ((arg == "--host" || arg == "--port") && i + 1 < argc) {
            (arg == "--host" ? o.host : o.port) = argv[++i];
            continue;
        }
        const auto e = std::find_if(extra.begin(), extra.end(),
                                    [&](const extra_option& x) { return x.name == arg; });
        if (e != extra.end() && i + 1 < argc) {
            *e->value = argv[++i];
            continue;
        }
        std::cerr << program << ": bad argument " << arg << "\n";
        print_usage(program, std::cerr, extra);
        exit_code = 2;
        return std::nullopt;
    }
    return o;
}

/// A whole number from an option's text, or `fallback` when it is empty; nullopt when malformed.
inline std::optional<long long> parse_number(const std::string& text, long long fallback) {
    if (text.empty())
        return fallback;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0')
        return std::nullopt;
    return v;
}

/// A connection_config for the examples: the given server, a name that shows in CLIENT LIST.
inline corolock::connection_config make_config(const server_options& o, std::string name) {
    corolock::connection_config cfg;
    cfg.host = o.host;
    cfg.port = o.port;
    cfg.client_name = std::move(name);
    return cfg;
}

/// Tags this run's keys, so runs sharing a server (ctest -j) never see each other's data.
inline std::string make_run_tag() {
    std::random_device rd;
    return std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);
}

inline boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
    co_await t.async_wait(boost::asio::use_awaitable);
}

inline double to_ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

/// Runs `body(conn)` (a callable returning `awaitable<void>`) on a fresh io_context with one
/// running connection, then stops the connection. Rethrows what the body threw; throws
/// std::runtime_error if it did not finish within `limit`.
template <class Body>
void run_with_connection(const server_options& o, std::string client_name, Body body,
                         std::chrono::steady_clock::duration limit) {
    namespace asio = boost::asio;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), make_config(o, std::move(client_name)));
    conn.async_run(asio::detached);
    bool finished = false, timed_out = false;
    std::exception_ptr failure;
    asio::steady_timer deadline(ioc, limit);
    deadline.async_wait([&](corolock::error_code ec) {
        if (!ec) {
            timed_out = true;
            conn.cancel(); // fails whatever is outstanding, so the body ends
        }
    });
    asio::co_spawn(ioc, body(conn), [&](std::exception_ptr e) {
        finished = true;
        failure = e;
        deadline.cancel();
        conn.cancel();
    });
    ioc.run();
    if (timed_out || !finished)
        throw std::runtime_error("timed out");
    if (failure)
        std::rethrow_exception(failure);
}

/// Sends one line to the parent (a worker's stdout is a pipe the parent reads). One write per
/// line, so lines of concurrent coroutines never interleave.
inline void tell_parent(std::string line) {
    line += '\n';
    std::string_view rest = line;
    while (!rest.empty()) {
        const ssize_t n = ::write(STDOUT_FILENO, rest.data(), rest.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; // the parent is gone; it will not read anything anyway
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
}

/// Splits a line on spaces.
inline std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(std::move(w));
    return out;
}

/// The worker processes of a parent: each is this program started again (/proc/self/exe) with
/// its own arguments, its stdin a pipe the parent writes to (`send`), its stdout a pipe the
/// parent reads lines from (`next_line`); stderr is shared. Whatever happens, the destructor
/// leaves no worker behind: it kills (SIGKILL) and reaps every worker not yet reaped.
class worker_processes {
public:
    using clock = std::chrono::steady_clock;

    worker_processes() { std::signal(SIGPIPE, SIG_IGN); } // a dead worker's stdin: EPIPE
    worker_processes(const worker_processes&) = delete;
    worker_processes& operator=(const worker_processes&) = delete;
    ~worker_processes() {
        for (std::size_t i = 0; i < workers_.size(); ++i)
            if (!workers_[i].reaped) {
                ::kill(workers_[i].pid, SIGKILL);
                wait_one(i, 0);
            }
        for (auto& w : workers_) {
            close_fd(w.to);
            close_fd(w.from);
        }
    }

    /// Starts a worker with `args` (argv[1]...). Throws std::system_error if it cannot.
    std::size_t spawn(const std::vector<std::string>& args) {
        int in[2], out[2];
        if (::pipe2(in, O_CLOEXEC) != 0)
            throw std::system_error(errno, std::generic_category(), "pipe2");
        if (::pipe2(out, O_CLOEXEC) != 0) {
            const int e = errno;
            ::close(in[0]);
            ::close(in[1]);
            throw std::system_error(e, std::generic_category(), "pipe2");
        }
        std::vector<std::string> argv_text{"/proc/self/exe"};
        argv_text.insert(argv_text.end(), args.begin(), args.end());
        std::vector<char*> argv_ptrs;
        for (auto& a : argv_text)
            argv_ptrs.push_back(a.data());
        argv_ptrs.push_back(nullptr);
        std::cout.flush(); // nothing buffered may be written twice
        std::cerr.flush();
        const pid_t pid = ::fork();
        if (pid < 0) {
            const int e = errno;
            for (int fd : {in[0], in[1], out[0], out[1]})
                ::close(fd);
            throw std::system_error(e, std::generic_category(), "fork");
        }
        if (pid == 0) {
            // dup2 clears close-on-exec on the copies; every other descriptor closes on exec.
            if (::dup2(in[0], STDIN_FILENO) < 0 || ::dup2(out[1], STDOUT_FILENO) < 0)
                ::_exit(127);
            ::execv(argv_ptrs[0], argv_ptrs.data());
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        workers_.push_back({pid, in[1], out[0]});
        return workers_.size() - 1;
    }

    std::size_t size() const noexcept { return workers_.size(); }
    pid_t pid(std::size_t i) const { return workers_.at(i).pid; }

    /// Writes to worker i's stdin; false if it is gone.
    bool send(std::size_t i, std::string_view text) {
        auto& w = workers_.at(i);
        while (!text.empty() && w.to >= 0) {
            const ssize_t n = ::write(w.to, text.data(), text.size());
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return false;
            text.remove_prefix(static_cast<std::size_t>(n));
        }
        return w.to >= 0;
    }

    void kill(std::size_t i, int sig) {
        if (!workers_.at(i).reaped)
            ::kill(workers_[i].pid, sig);
    }

    /// What `next_line` hands out: a line a worker printed, or the end of its stdout (`closed`:
    /// it exited, or is about to).
    struct event {
        std::size_t worker = 0;
        std::string line;
        bool closed = false;
    };

    /// The next event of any worker. nullopt when every worker's stdout is closed (and each
    /// closing was reported), or when `deadline` passed (then `timed_out()` is true).
    std::optional<event> next_line(clock::time_point deadline) {
        timed_out_ = false;
        for (;;) {
            for (std::size_t i = 0; i < workers_.size(); ++i) {
                auto& w = workers_[i];
                if (const auto nl = w.buffer.find('\n'); nl != std::string::npos) {
                    event e{i, w.buffer.substr(0, nl)};
                    w.buffer.erase(0, nl + 1);
                    return e;
                }
                if (w.closed_unreported) {
                    w.closed_unreported = false;
                    return event{i, {}, true};
                }
            }
            std::vector<pollfd> fds;
            std::vector<std::size_t> index;
            for (std::size_t i = 0; i < workers_.size(); ++i)
                if (workers_[i].from >= 0) {
                    fds.push_back({workers_[i].from, POLLIN, 0});
                    index.push_back(i);
                }
            if (fds.empty())
                return std::nullopt;
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
            if (left.count() <= 0) {
                timed_out_ = true;
                return std::nullopt;
            }
            const int r = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
            if (r < 0 && errno != EINTR)
                throw std::system_error(errno, std::generic_category(), "poll");
            for (std::size_t k = 0; r > 0 && k < fds.size(); ++k) {
                if (fds[k].revents == 0)
                    continue;
                auto& w = workers_[index[k]];
                char chunk[4096];
                const ssize_t n = ::read(w.from, chunk, sizeof chunk);
                if (n > 0) {
                    w.buffer.append(chunk, static_cast<std::size_t>(n));
                } else if (n == 0 || errno != EINTR) {
                    close_fd(w.from); // end of file: the worker exited (or closed stdout)
                    w.closed_unreported = true;
                    if (!w.buffer.empty() && w.buffer.back() != '\n')
                        w.buffer += '\n'; // hand out an unterminated last line too
                }
            }
        }
    }
    bool timed_out() const noexcept { return timed_out_; }

    /// Waits until every worker has exited, up to `deadline`; then kills and reaps the rest.
    /// Returns true if all exited by themselves.
    bool reap_all(clock::time_point deadline) {
        bool all_by_themselves = true;
        for (std::size_t i = 0; i < workers_.size(); ++i) {
            close_fd(workers_[i].to); // a worker waiting on stdin sees end of file
            while (!workers_[i].reaped && !wait_one(i, WNOHANG)) {
                if (clock::now() >= deadline) {
                    all_by_themselves = false;
                    ::kill(workers_[i].pid, SIGKILL);
                    wait_one(i, 0);
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        }
        return all_by_themselves;
    }

    /// True when worker i was reaped and exited with status 0.
    bool exited_ok(std::size_t i) const {
        const auto& w = workers_.at(i);
        return w.reaped && WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0;
    }
    bool killed_by(std::size_t i, int sig) const {
        const auto& w = workers_.at(i);
        return w.reaped && WIFSIGNALED(w.status) && WTERMSIG(w.status) == sig;
    }
    /// "exit 0", "signal 9", "running".
    std::string describe(std::size_t i) const {
        const auto& w = workers_.at(i);
        if (!w.reaped)
            return "running";
        if (WIFEXITED(w.status))
            return "exit " + std::to_string(WEXITSTATUS(w.status));
        if (WIFSIGNALED(w.status))
            return "signal " + std::to_string(WTERMSIG(w.status));
        return "status " + std::to_string(w.status);
    }

private:
    struct worker {
        pid_t pid = -1;
        int to = -1;   // write end of the worker's stdin
        int from = -1; // read end of the worker's stdout
        std::string buffer = {};
        bool closed_unreported = false;
        bool reaped = false;
        int status = 0;
    };

    static void close_fd(int& fd) {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }

    bool wait_one(std::size_t i, int flags) {
        auto& w = workers_[i];
        for (;;) {
            const pid_t r = ::waitpid(w.pid, &w.status, flags);
            if (r < 0 && errno == EINTR)
                continue;
            if (r == w.pid || r < 0) // r < 0 (ECHILD): nothing left to wait for
                w.reaped = true;
            return w.reaped;
        }
    }

    std::vector<worker> workers_;
    bool timed_out_ = false;
};

} // namespace corolock_example

#endif
