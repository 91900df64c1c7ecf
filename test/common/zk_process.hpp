// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_ZK_PROCESS_HPP
#define COROLOCK_TEST_COMMON_ZK_PROCESS_HPP

#include "common/child_process.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace corolock::test {

// How a zk_ensemble's servers are configured.
struct zk_options {
    // ZooKeeper's tick: sessions are negotiated between 2 and 20 ticks unless the bounds below
    // say otherwise.
    std::chrono::milliseconds tick = std::chrono::milliseconds(100);
    std::chrono::milliseconds min_session_timeout = std::chrono::milliseconds(200);
    std::chrono::milliseconds max_session_timeout = std::chrono::seconds(30);
    // Java heap per server, in MiB: small, the machine is shared.
    int heap_mib = 64;
    // fsync every transaction (ZooKeeper's default); off by default here, as the tests run on a
    // shared machine and no test survives a power cut.
    bool force_sync = false;
    // How many ticks a follower waits for its leader before giving it up (and the leader for a
    // follower): a follower cut off from its leader keeps answering its clients that long.
    int sync_limit = 10;
    // The port server `viewer` is told to reach `port` (a peer or election port of server
    // `target`) on; none: the port itself. A test routes links through fault proxies with it
    // (called again with new ports if the first set could not be bound).
    std::function<std::uint16_t(int viewer, int target, std::uint16_t port)> peer_route;
};

// ZooKeeper 3.8 servers (Debian's `zookeeper` package, started with java and its classpath) on
// free loopback ports, for integration tests and benches: one node (standalone) or an ensemble
// of `nodes`. Config files and data live in a private temporary directory, removed by the
// destructor (kept if the environment sets COROLOCK_KEEP_ZK_DIR). Each server is a
// child_process: stopped and reaped by the destructor, and dead with the process that started
// it; start ensembles from a thread that outlives them (normally the test's main thread).
//
// Not thread-safe: one thread drives a zk_ensemble at a time.
class zk_ensemble {
public:
    // Starts `nodes` servers and waits (up to 30 s) until every one serves requests (`srvr`
    // reports a mode); throws std::runtime_error with the tail of a log otherwise.
    explicit zk_ensemble(int nodes = 1, zk_options options = {});
    ~zk_ensemble();
    zk_ensemble(const zk_ensemble&) = delete;
    zk_ensemble& operator=(const zk_ensemble&) = delete;

    // Whether java and the ZooKeeper jar can be found.
    static bool available();

    int size() const noexcept { return static_cast<int>(nodes_.size()); }
    // "127.0.0.1:p1,127.0.0.1:p2,...", every node's client port.
    std::string connect_string() const;
    // Node i's "127.0.0.1:port".
    std::string address(int i) const;
    std::uint16_t client_port(int i) const { return nodes_.at(i).client_port; }
    pid_t pid(int i) const noexcept { return nodes_.at(i).child.pid(); }
    bool running(int i) const noexcept { return nodes_.at(i).child.running(); }
    const std::string& dir() const noexcept { return dir_; }

    // Sends a four-letter word ("ruok", "srvr", "stat", "cons", "mntr") to node i and returns
    // the reply ("" if the node does not answer within `timeout`).
    std::string four_letter(int i, const std::string& word,
                            std::chrono::milliseconds timeout = std::chrono::seconds(2)) const;
    // Whether node i serves requests (its `srvr` reply names a mode).
    bool serving(int i) const;
    // The index of the node whose `srvr` says "Mode: leader" (or "standalone"); -1 if none.
    int leader() const;
    // Waits up to `limit` until node i serves; false if it does not.
    bool wait_serving(int i, std::chrono::milliseconds limit = std::chrono::seconds(30)) const;

    // SIGKILL node i and reap it: a crash.
    void kill(int i);
    // Starts node i again (after kill) on its ports, with its data, and waits until it serves.
    void restart(int i);
    // SIGSTOP node i: it keeps its sockets but answers nothing until resume(i).
    void pause(int i);
    // SIGCONT node i.
    void resume(int i);

private:
    struct node {
        std::uint16_t client_port = 0;
        std::uint16_t peer_port = 0;
        std::uint16_t election_port = 0;
        child_process child;
    };
    void write_config(int i) const;
    void start_node(int i);
    std::string log_tail(int i) const;

    zk_options options_;
    std::string dir_;
    std::string java_;
    std::vector<node> nodes_;
};

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_ZK_PROCESS_HPP
