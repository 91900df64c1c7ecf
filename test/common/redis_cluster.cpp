// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/redis_cluster.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace corolock::test {

namespace {

std::string cli_binary() {
    const char* env = std::getenv("COROLOCK_REDIS_CLI");
    return env && *env ? env : "redis-cli";
}

std::string addr(const redis_process& p) {
    return p.host() + ":" + std::to_string(p.port());
}

// The body of a RESP2 bulk reply ("$n\r\n...\r\n"), or the raw text.
std::string bulk(const std::string& raw) {
    if (raw.empty() || raw[0] != '$')
        return raw;
    auto start = raw.find("\r\n");
    if (start == std::string::npos)
        return raw;
    auto body = raw.substr(start + 2);
    if (body.size() >= 2 && body.ends_with("\r\n"))
        body.resize(body.size() - 2);
    return body;
}

std::unique_ptr<redis_process> make_node() {
    return std::make_unique<redis_process>(std::vector<std::string>{
        "--cluster-enabled", "yes", "--cluster-node-timeout", "1000", "--cluster-config-file",
        "nodes.conf",
        // A replica may always take over, however long ago it last heard its master (the
        // default refuses after 10 node timeouts, which a loaded test machine can reach).
        "--cluster-replica-validity-factor", "0"});
}

} // namespace

bool redis_cluster::available() {
    if (!redis_process::available())
        return false;
    std::string out;
    try {
        return cli({"--version"}, &out) == 0;
    } catch (...) {
        return false;
    }
}

int redis_cluster::cli(const std::vector<std::string>& args, std::string* out,
                       std::chrono::seconds timeout) {
    std::vector<std::string> argv{cli_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_program(argv, timeout);
    if (out)
        *out = std::move(r.output);
    return r.exit_code;
}

redis_cluster::redis_cluster(std::size_t masters, std::size_t replicas) {
    for (std::size_t i = 0; i < masters * (1 + replicas); ++i)
        nodes_.push_back(make_node());
    std::vector<std::string> args{"--cluster", "create"};
    for (auto& n : nodes_)
        args.push_back(addr(*n));
    args.insert(args.end(), {"--cluster-replicas", std::to_string(replicas), "--cluster-yes"});
    std::string out;
    if (cli(args, &out) != 0)
        throw std::runtime_error("redis-cli --cluster create failed:\n" + out);
    wait_ok();
}

std::string redis_cluster::id(const redis_process& node) const {
    return bulk(node.command({"CLUSTER", "MYID"}));
}

redis_process& redis_cluster::master_of(std::uint16_t slot) {
    for (auto& asked : nodes_) {
        if (!asked->running() || asked->paused())
            continue;
        // CLUSTER NODES: <id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <state>
        // <slots...>
        std::istringstream lines(bulk(asked->command({"CLUSTER", "NODES"})));
        for (std::string line; std::getline(lines, line);) {
            std::istringstream f(line);
            std::string nid, address, flags, master, ping, pong, epoch, state;
            f >> nid >> address >> flags >> master >> ping >> pong >> epoch >> state;
            if (flags.find("master") == std::string::npos ||
                flags.find("fail") != std::string::npos)
                continue;
            for (std::string range; f >> range;) {
                if (range.starts_with("["))
                    continue; // a migration in progress
                const auto dash = range.find('-');
                const int first = std::stoi(range.substr(0, dash));
                const int last =
                    dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
                if (slot < first || slot > last)
                    continue;
                const auto port = address.substr(address.find(':') + 1,
                                                 address.find('@') - address.find(':') - 1);
                for (auto& n : nodes_)
                    if (n->running() && !n->paused() && std::to_string(n->port()) == port)
                        return *n;
            }
        }
        // This node's view names no live master for it (it has not yet heard of a failover):
        // the next node's view.
    }
    throw std::runtime_error("no running master owns slot " + std::to_string(slot));
}

void redis_cluster::wait_ok(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        bool ok = true;
        for (auto& n : nodes_) {
            if (!n->running() || n->paused())
                continue;
            try {
                if (bulk(n->command({"CLUSTER", "INFO"}, std::chrono::seconds(2)))
                        .find("cluster_state:ok") == std::string::npos)
                    ok = false;
                // A replica is ready once its first sync is done (else it cannot fail over).
                const auto repl =
                    bulk(n->command({"INFO", "replication"}, std::chrono::seconds(2)));
                if (repl.find("role:slave") != std::string::npos &&
                    repl.find("master_link_status:up") == std::string::npos)
                    ok = false;
            } catch (const std::exception&) {
                ok = false;
            }
        }
        if (ok)
            return;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the cluster did not reach cluster_state:ok in time");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

redis_process& redis_cluster::start_node() {
    nodes_.push_back(make_node());
    return *nodes_.back();
}

void redis_cluster::add_master(redis_process& fresh) {
    redis_process* seed = nullptr;
    for (auto& n : nodes_)
        if (n.get() != &fresh && n->running() && !n->paused())
            seed = n.get();
    if (!seed)
        throw std::runtime_error("add_master: no running node to join");
    std::string out;
    if (cli({"--cluster", "add-node", addr(fresh), addr(*seed)}, &out) != 0)
        throw std::runtime_error("redis-cli --cluster add-node failed:\n" + out);
    const auto fresh_id = id(fresh);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    for (;;) {
        bool known = true;
        for (auto& n : nodes_)
            if (n->running() && !n->paused() &&
                bulk(n->command({"CLUSTER", "NODES"})).find(fresh_id) == std::string::npos)
                known = false;
        if (known)
            break;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("add_master: the new node did not become known in time");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    wait_ok();
}

void redis_cluster::remove_node(redis_process& node) {
    const redis_process* other = nullptr;
    for (auto& n : nodes_)
        if (n.get() != &node && n->running() && !n->paused())
            other = n.get();
    if (!other)
        throw std::runtime_error("remove_node: no other running node");
    std::string out;
    if (cli({"--cluster", "del-node", addr(*other), id(node)}, &out) != 0)
        throw std::runtime_error("redis-cli --cluster del-node failed:\n" + out);
    node.stop(); // del-node shut it down: this reaps it
}

void redis_cluster::reshard(const redis_process& from, const redis_process& to, int count) {
    // Right after a reshard the nodes may not yet agree on the new epoch; redis-cli then refuses
    // before moving anything ("Nodes don't agree about configuration"), so asking again is safe.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        std::string out;
        if (cli({"--cluster", "reshard", addr(from), "--cluster-from", id(from), "--cluster-to",
                 id(to), "--cluster-slots", std::to_string(count), "--cluster-yes"},
                &out) == 0)
            return;
        if (out.find("don't agree about configuration") == std::string::npos ||
            std::chrono::steady_clock::now() > give_up)
            throw std::runtime_error("redis-cli --cluster reshard failed:\n" + out);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

} // namespace corolock::test
