// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_FAULT_PROXY_HPP
#define COROLOCK_TEST_COMMON_FAULT_PROXY_HPP

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

namespace corolock::test {

// One direction of the proxied TCP stream.
enum class direction {
    client_to_server, // requests
    server_to_client  // replies
};
std::ostream& operator<<(std::ostream& os, direction d);

// A TCP proxy for fault injection (tc netem and toxiproxy are not available here): it listens on
// 127.0.0.1 and a free port and forwards every accepted connection to host:port (normally a
// redis_process). Faults apply per direction to every connection, open or new:
// - delay: each chunk read is held `delay ± jitter` before it is written on; order is kept (a
//   chunk never overtakes an earlier one, so jitter only ever stretches a gap);
// - blackhole: the sockets stay open but nothing is written on; bytes keep being read and
//   buffered, and heal() delivers them in order, as TCP retransmission does after a partition
//   heals. An end of stream (the client closed) is passed on after the buffered bytes;
// - reset_all: every open connection is closed with RST (SO_LINGER {1, 0}) on both sides;
// - refuse_new: new connections are accepted and reset at once.
//
// The proxy runs its own io_context on its own thread. Every control is thread-safe and
// synchronous: it runs on the proxy's thread and has taken effect when it returns (so do not
// call it from that thread; nothing in a test does). The destructor closes everything and joins
// the thread.
class fault_proxy {
public:
    using duration = std::chrono::steady_clock::duration;

    struct counters {
        std::uint64_t accepted = 0; // connections accepted and forwarded
        std::uint64_t refused = 0;  // connections reset by refuse_new
        std::uint64_t reset = 0;    // connections reset by reset_all
        std::uint64_t open = 0;     // connections open now
        // Bytes read from one side and bytes written to the other, per direction.
        std::uint64_t bytes_read[2] = {0, 0};
        std::uint64_t bytes_written[2] = {0, 0};
        // Bytes read but not yet written (held by a delay or a blackhole), per direction.
        std::uint64_t bytes_held[2] = {0, 0};
    };

    // Starts listening at once; throws std::system_error if it cannot.
    explicit fault_proxy(std::uint16_t upstream_port, std::string upstream_host = "127.0.0.1");
    ~fault_proxy();
    fault_proxy(const fault_proxy&) = delete;
    fault_proxy& operator=(const fault_proxy&) = delete;

    // The listening port on 127.0.0.1.
    std::uint16_t port() const noexcept { return port_; }

    // Holds each chunk read from now on `delay` plus a uniform jitter in [-jitter, +jitter]
    // (never below zero). A zero delay and jitter turn it off.
    void delay(direction d, duration delay, duration jitter = duration::zero());
    // Stops writing in direction d; what is read is buffered until heal().
    void blackhole(direction d);
    // Both directions: a partition.
    void blackhole();
    // Requests still reach the server, replies never come back (until heal()).
    void half_open();
    // Closes every open connection with RST on both sides; buffered bytes are dropped.
    void reset_all();
    // While on, new connections are accepted and reset at once.
    void refuse_new(bool on);
    // Clears every fault (refuse_new included) and writes everything buffered, in order.
    void heal();

    counters stats() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
    std::uint16_t port_ = 0;
};

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_FAULT_PROXY_HPP
