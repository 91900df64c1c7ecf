// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "common/server_fixture.hpp"

#include "common/coro_test.hpp"
#include "common/test_config.hpp"

#include <boost/asio/detached.hpp>

namespace corolock::test {

mutex_options lease_of(std::chrono::steady_clock::duration lease, bool watchdog) {
    mutex_options o;
    o.lease = lease;
    o.watchdog = watchdog;
    return o;
}

server_fixture::server_fixture() : server_fixture([](connection_config&) {}) {}

server_fixture::server_fixture(const std::function<void(connection_config&)>& adjust)
    : conn(
          ioc.get_executor(),
          [&] {
              auto cfg = config_for(srv);
              adjust(cfg);
              return cfg;
          }(),
          quiet()),
      peer(ioc.get_executor(), config_for(srv), quiet()) {}

void server_fixture::run(std::function<boost::asio::awaitable<void>()> body,
                         std::chrono::seconds limit, unsigned threads) {
    run_coroutine_test(
        ioc,
        [&]() -> boost::asio::awaitable<void> {
            conn.async_run(boost::asio::detached);
            peer.async_run(boost::asio::detached);
            co_await body();
            conn.cancel();
            peer.cancel();
            for (auto& c : extra_)
                c->cancel();
        }(),
        limit, threads);
}

connection& server_fixture::add_connection(connection_config cfg, logger log) {
    extra_.push_back(
        std::make_unique<connection>(ioc.get_executor(), std::move(cfg), std::move(log)));
    extra_.back()->async_run(boost::asio::detached);
    return *extra_.back();
}

bool server_fixture::exists(std::string_view key) {
    return srv.command({"EXISTS", key}) == ":1\r\n";
}

std::string server_fixture::owner(std::string_view key) {
    return srv.command({"HGET", key, "owner"});
}

} // namespace corolock::test
