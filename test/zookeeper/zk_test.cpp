// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "zk_test.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>

#include <cstdlib>
#include <sstream>

namespace corolock::test {

using namespace std::chrono_literals;

zk_ensemble& shared_zk() {
    static zk_ensemble zk(1);
    return zk;
}

zk_config zk_test_config(const std::string& hosts, std::chrono::milliseconds timeout) {
    zk_config c;
    c.hosts = hosts.empty() ? shared_zk().connect_string() : hosts;
    c.session_timeout = timeout;
    // COROLOCK_ZK_DEBUG=1 shows every decision.
    c.log.lvl =
        std::getenv("COROLOCK_ZK_DEBUG") != nullptr ? logger::level::debug : logger::level::error;
    return c;
}

running_zk::running_zk(const boost::asio::any_io_executor& ex, zk_config cfg)
    : conn_(std::make_unique<zk_connection>(ex, std::move(cfg))),
      result_(std::make_shared<error_code>()) {
    conn_->async_run([r = result_](error_code ec) { *r = ec; });
}

running_zk::~running_zk() {
    conn_->cancel();
}

int ephemerals(const zk_ensemble& zk, int i) {
    const auto text = zk.four_letter(i, "mntr");
    const std::string key = "zk_ephemerals_count";
    const auto at = text.find(key);
    if (at == std::string::npos)
        return -1;
    std::istringstream in(text.substr(at + key.size()));
    int n = -1;
    in >> n;
    return n;
}

boost::asio::awaitable<int> wait_ephemerals(const zk_ensemble& zk, int n, int i) {
    const auto give_up = std::chrono::steady_clock::now() + 3s;
    int seen = ephemerals(zk, i);
    while (seen != n && std::chrono::steady_clock::now() < give_up) {
        co_await sleep_for(10ms);
        seen = ephemerals(zk, i);
    }
    co_return seen;
}

} // namespace corolock::test
