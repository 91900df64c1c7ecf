// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/zk_process.hpp"

#include "common/redis_process.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace corolock::test {
namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Debian's zookeeper package: the jar names its dependencies in its manifest.
constexpr const char* zookeeper_jar = "/usr/share/java/zookeeper.jar";
constexpr int port_attempts = 5;

std::string make_zk_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/corolock-zk-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
        throw std::system_error(errno, std::generic_category(), "mkdtemp");
    return pattern;
}

// One exchange with a deadline: connect, send `word`, read until the server closes.
std::string exchange(std::uint16_t port, const std::string& word, std::chrono::milliseconds limit) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return {};
    const auto deadline = clock_type::now() + limit;
    auto wait = [&](short events) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (left <= 0ms)
            return false;
        pollfd p{fd, events, 0};
        return ::poll(&p, 1, static_cast<int>(left.count()) + 1) > 0;
    };
    std::string out;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc < 0 && errno == EINPROGRESS && wait(POLLOUT)) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
    }
    if (rc == 0 &&
        ::send(fd, word.data(), word.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(word.size())) {
        char buf[4096];
        while (wait(POLLIN)) {
            const auto n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0)
                break;
            out.append(buf, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    return out;
}

} // namespace

zk_ensemble::zk_ensemble(int nodes, zk_options options)
    : options_(options), java_(find_program("java")), nodes_(static_cast<std::size_t>(nodes)) {
    if (!available())
        throw std::runtime_error("zk_ensemble: java or " + std::string(zookeeper_jar) +
                                 " not found (tools/setup.sh installs them)");
    dir_ = make_zk_dir();
    // A port taken between picking and binding makes a server exit or never serve: pick the
    // whole set again.
    for (int attempt = 1;; ++attempt) {
        for (auto& n : nodes_) {
            n.client_port = pick_free_port();
            n.peer_port = pick_free_port();
            n.election_port = pick_free_port();
        }
        for (int i = 0; i < size(); ++i) {
            std::filesystem::create_directories(dir_ + "/" + std::to_string(i) + "/data");
            write_config(i);
            start_node(i);
        }
        bool ok = true;
        for (int i = 0; i < size() && ok; ++i)
            ok = wait_serving(i);
        if (ok)
            return;
        const auto tail = log_tail(0);
        for (auto& n : nodes_)
            n.child.kill();
        if (attempt == port_attempts) {
            std::error_code ec;
            std::filesystem::remove_all(dir_, ec);
            throw std::runtime_error("zk_ensemble: servers did not serve:\n" + tail);
        }
    }
}

zk_ensemble::~zk_ensemble() {
    for (auto& n : nodes_)
        n.child.kill(); // resumes a paused one too; no state worth a clean stop
    if (!dir_.empty() && std::getenv("COROLOCK_KEEP_ZK_DIR") == nullptr) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
}

bool zk_ensemble::available() {
    return !find_program("java").empty() && std::filesystem::exists(zookeeper_jar);
}

std::string zk_ensemble::address(int i) const {
    return "127.0.0.1:" + std::to_string(client_port(i));
}

std::string zk_ensemble::connect_string() const {
    std::string out;
    for (int i = 0; i < size(); ++i) {
        if (i > 0)
            out += ','; // not `"," + address(i)`: g++ 12 -O3 warns falsely (-Wrestrict) there
        out += address(i);
    }
    return out;
}

void zk_ensemble::write_config(int i) const {
    const auto node_dir = dir_ + "/" + std::to_string(i);
    std::ofstream cfg(node_dir + "/zoo.cfg");
    cfg << "tickTime=" << options_.tick.count() << "\n"
        << "initLimit=50\nsyncLimit=" << options_.sync_limit << "\n"
        << "dataDir=" << node_dir << "/data\n"
        << "clientPort=" << client_port(i) << "\n"
        << "clientPortAddress=127.0.0.1\n"
        << "minSessionTimeout=" << options_.min_session_timeout.count() << "\n"
        << "maxSessionTimeout=" << options_.max_session_timeout.count() << "\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=ruok,srvr,stat,cons,mntr\n"
        << "forceSync=" << (options_.force_sync ? "yes" : "no") << "\n"
        << "maxClientCnxns=0\n";
    if (size() > 1) {
        cfg << "standaloneEnabled=false\n";
        for (int j = 0; j < size(); ++j) {
            const auto& n = nodes_[static_cast<std::size_t>(j)];
            auto route = [&](std::uint16_t port) {
                return j == i || !options_.peer_route ? port : options_.peer_route(i, j, port);
            };
            cfg << "server." << j + 1 << "=127.0.0.1:" << route(n.peer_port) << ":"
                << route(n.election_port) << "\n";
        }
        std::ofstream(node_dir + "/data/myid") << i + 1 << "\n";
    }
    std::ofstream(node_dir + "/log4j.properties")
        << "log4j.rootLogger=WARN, F\n"
        << "log4j.appender.F=org.apache.log4j.FileAppender\n"
        << "log4j.appender.F.File=" << node_dir << "/zookeeper.log\n"
        << "log4j.appender.F.layout=org.apache.log4j.PatternLayout\n"
        << "log4j.appender.F.layout.ConversionPattern=%d %p [%t] %m%n\n";
}

void zk_ensemble::start_node(int i) {
    const auto node_dir = dir_ + "/" + std::to_string(i);
    child_options opts;
    opts.output_file = node_dir + "/stdout.log";
    nodes_.at(static_cast<std::size_t>(i)).child =
        child_process({java_, "-Xmx" + std::to_string(options_.heap_mib) + "m", "-XX:+UseSerialGC",
                       "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
                       "-Dlog4j.configuration=file:" + node_dir + "/log4j.properties",
                       "-Dzookeeper.log.dir=" + node_dir, "-cp", node_dir + ":" + zookeeper_jar,
                       "org.apache.zookeeper.server.quorum.QuorumPeerMain", node_dir + "/zoo.cfg"},
                      opts);
}

std::string zk_ensemble::log_tail(int i) const {
    std::ifstream in(dir_ + "/" + std::to_string(i) + "/stdout.log");
    std::ostringstream out;
    out << in.rdbuf();
    auto text = out.str();
    return text.size() > 4000 ? "..." + text.substr(text.size() - 4000) : text;
}

std::string zk_ensemble::four_letter(int i, const std::string& word,
                                     std::chrono::milliseconds timeout) const {
    return exchange(client_port(i), word, timeout);
}

bool zk_ensemble::serving(int i) const {
    return running(i) && !nodes_.at(static_cast<std::size_t>(i)).child.paused() &&
           four_letter(i, "srvr", 1s).find("Mode: ") != std::string::npos;
}

int zk_ensemble::leader() const {
    for (int i = 0; i < size(); ++i) {
        if (!running(i) || nodes_.at(static_cast<std::size_t>(i)).child.paused())
            continue;
        const auto r = four_letter(i, "srvr", 1s);
        if (r.find("Mode: leader") != std::string::npos ||
            r.find("Mode: standalone") != std::string::npos)
            return i;
    }
    return -1;
}

bool zk_ensemble::wait_serving(int i, std::chrono::milliseconds limit) const {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
        if (!running(i))
            return false;
        if (serving(i))
            return true;
        std::this_thread::sleep_for(20ms);
    }
    return false;
}

void zk_ensemble::kill(int i) {
    nodes_.at(static_cast<std::size_t>(i)).child.kill();
}

void zk_ensemble::restart(int i) {
    kill(i);
    start_node(i);
    if (!wait_serving(i))
        throw std::runtime_error("zk_ensemble: node " + std::to_string(i) +
                                 " did not serve again:\n" + log_tail(i));
}

void zk_ensemble::pause(int i) {
    nodes_.at(static_cast<std::size_t>(i)).child.pause();
}

void zk_ensemble::resume(int i) {
    nodes_.at(static_cast<std::size_t>(i)).child.resume();
}

} // namespace corolock::test
