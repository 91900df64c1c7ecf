// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// The parent side of the examples that run several processes (flash_sale, job_leader): the
// parent starts this same program again with `--worker N` and talks to each worker through its
// stdin and stdout. The processes themselves are the project's process kit (test/common), which
// reaps every worker on every path.
#ifndef COROLOCK_EXAMPLE_WORKERS_HPP
#define COROLOCK_EXAMPLE_WORKERS_HPP

#include "common/child_process.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>
#include <poll.h>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace corolock_example {

/// The worker processes of a parent: each is this program started again (/proc/self/exe) with
/// its own arguments, its stdin a pipe the parent writes to (`send`), its stdout a pipe the
/// parent reads lines from (`next_line`); stderr is shared. Each is a child_process of the
/// project's process kit (test/common): whatever happens, none outlives the parent.
class worker_processes {
public:
    using clock = std::chrono::steady_clock;

    worker_processes() { std::signal(SIGPIPE, SIG_IGN); } // a dead worker's stdin: EPIPE

    /// Starts a worker with `args` (argv[1]...). Throws std::system_error if it cannot.
    std::size_t spawn(const std::vector<std::string>& args) {
        std::vector<std::string> argv{"/proc/self/exe"};
        argv.insert(argv.end(), args.begin(), args.end());
        std::cout.flush(); // nothing buffered may be written twice
        std::cerr.flush();
        corolock::test::child_options options;
        options.pipe_stdout = true;
        options.pipe_stdin = true;
        workers_.push_back({corolock::test::child_process(argv, options)});
        return workers_.size() - 1;
    }

    std::size_t size() const noexcept { return workers_.size(); }

    /// Writes to worker i's stdin; false if it is gone.
    bool send(std::size_t i, std::string_view text) {
        auto& p = workers_.at(i).process;
        while (!text.empty() && p.input_fd() >= 0) {
            const ssize_t n = ::write(p.input_fd(), text.data(), text.size());
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return false;
            text.remove_prefix(static_cast<std::size_t>(n));
        }
        return p.input_fd() >= 0;
    }

    /// Sends `sig` to worker i (reaped later, by reap_all).
    void kill(std::size_t i, int sig) { workers_.at(i).process.signal(sig); }

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
                if (workers_[i].process.output_fd() >= 0) {
                    fds.push_back({workers_[i].process.output_fd(), POLLIN, 0});
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
                const ssize_t n = ::read(w.process.output_fd(), chunk, sizeof chunk);
                if (n > 0) {
                    w.buffer.append(chunk, static_cast<std::size_t>(n));
                } else if (n == 0 || errno != EINTR) {
                    w.process.close_output(); // end of file: the worker exited (or closed stdout)
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
        for (auto& w : workers_) {
            w.process.close_input(); // a worker waiting on stdin sees end of file
            while (w.process.running() && !w.process.try_wait()) {
                if (clock::now() >= deadline) {
                    all_by_themselves = false;
                    w.process.kill();
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        }
        return all_by_themselves;
    }

    /// True when worker i was reaped and exited with status 0.
    bool exited_ok(std::size_t i) const { return status(i) == 0; }
    bool killed_by(std::size_t i, int sig) const { return status(i) == 128 + sig; }
    /// "exit 0", "signal 9", "running".
    std::string describe(std::size_t i) const {
        if (workers_.at(i).process.running())
            return "running";
        const int st = status(i);
        return st > 128 ? "signal " + std::to_string(st - 128) : "exit " + std::to_string(st);
    }

private:
    struct worker {
        corolock::test::child_process process;
        std::string buffer = {};
        bool closed_unreported = false;
    };

    int status(std::size_t i) const {
        const auto& p = workers_.at(i).process;
        return p.running() ? -1 : p.status();
    }

    std::vector<worker> workers_;
    bool timed_out_ = false;
};

} // namespace corolock_example

#endif
