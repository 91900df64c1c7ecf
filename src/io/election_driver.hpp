// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The election's driver (io/election_driver.cpp): what an election shares between its public
// body (election.cpp), the campaign coroutine and the observers. Decisions are in
// core/election_core.hpp (pure).
#ifndef COROLOCK_SRC_IO_ELECTION_DRIVER_HPP
#define COROLOCK_SRC_IO_ELECTION_DRIVER_HPP

#include "io/lock_transport.hpp"
#include "io/observer_state.hpp"
#include <corolock/election.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace corolock::detail {

struct election_core {
    election_core(lock_transport t, std::string n, election_options o,
                  std::unique_ptr<corolock::mutex> m);

    lock_transport io; // keeps the connection or cluster alive
    std::string name;
    std::string record;  // {N}:leader, the last term's record
    std::string fence;   // {N}:fence
    std::string channel; // {N}:leader, the channel of proclamations and ends
    election_options opts;
    std::unique_ptr<corolock::mutex> lock;
    std::string invalid; // which field or rule is wrong (empty: valid)

    std::string record_ms() const;
    std::string_view publish_flag() const noexcept { return io.sharded() ? "S" : "P"; }
    // Any thread: runs `s` (EVALSHA, then EVAL on NOSCRIPT) routed by the name; `done(ec)` on
    // the strand, with the reply in `resp`.
    void eval(const script& s, std::span<const std::string_view> keys,
              std::span<const std::string_view> args, std::shared_ptr<generic_response> resp,
              boost::asio::any_completion_handler<void(error_code)> done) const;
};

// Strand or any thread: runs one campaign (waiting at most `wait` for the lock), its result to
// `h` on its executor.
void spawn_campaign(std::shared_ptr<election_core> core, std::chrono::steady_clock::duration wait,
                    std::string value,
                    boost::asio::any_completion_handler<void(error_code, leadership)> h);

// Makes an observer of `core` and starts it (subscribe, then the first read).
std::shared_ptr<observer_state> start_observer(std::shared_ptr<election_core> core);
} // namespace corolock::detail

#endif
