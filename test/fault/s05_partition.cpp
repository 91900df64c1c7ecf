// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// S5: the holder's connection is partitioned for three leases (issue 4). The holder must be told
// "lost" within its lease by its own steady clock, another client takes the lock, and after the
// heal the holder's queued bytes (TCP delivers them late) must not touch the new holder's key.
// Two ways to cut: the fault proxy's blackhole, and an iptables DROP on lo for the holder's port
// only (root and iptables needed; otherwise the binary exits 77, "skipped").
#include "common/coro_test.hpp"
#include "common/fault_proxy.hpp"
#include "common/redis_process.hpp"
#include "common/test_config.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/results_collector.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace fault_s05_partition {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::error;
using corolock::error_code;
using corolock::test::config_for;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;
using clock_type = std::chrono::steady_clock;

namespace {

using corolock::test::tuple_deferred;
constexpr auto tuple_use_awaitable = asio::as_tuple(asio::use_awaitable);
constexpr auto lease = 1000ms;
constexpr auto renewal_period = lease / 3;
// Scheduler slack on a loaded 2-core machine (research §4.4).
constexpr auto slack = 150ms;

long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

corolock::mutex_options lease_opts() {
    corolock::mutex_options o;
    o.lease = lease;
    return o;
}

// Everything the server executes, from MONITOR on a direct connection.
struct monitor {
    explicit monitor(asio::any_io_executor ex) : sock(ex) {}
    asio::ip::tcp::socket sock;
    std::string seen;

    awaitable<void> start(std::uint16_t port) {
        co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port},
                                    asio::use_awaitable);
        co_await asio::async_write(sock, asio::buffer(std::string("MONITOR\r\n")),
                                   asio::use_awaitable);
        asio::co_spawn(sock.get_executor(), read(), asio::detached);
    }
    awaitable<void> read() {
        char buf[8192];
        for (;;) {
            auto [ec, n] = co_await sock.async_read_some(asio::buffer(buf), tuple_use_awaitable);
            if (ec)
                co_return;
            seen.append(buf, n);
        }
    }
    void stop() {
        boost::system::error_code ec;
        sock.close(ec);
    }
};

// How the partition is made and healed.
struct partition {
    std::string name;
    std::uint16_t holder_port; // the holder connects here; the other client goes direct
    bool health_check = true;
    std::function<void()> cut, heal;
    // How long after the heal the holder's queued bytes may take to arrive (TCP retransmission
    // backs off exponentially during an iptables partition; the proxy delivers at once).
    clock_type::duration late_limit = 1s;
};

std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

awaitable<void> partition_scenario(redis_process& srv, const partition& p) {
    auto ex = co_await asio::this_coro::executor;
    auto hcfg = config_for(srv);
    hcfg.port = std::to_string(p.holder_port);
    if (!p.health_check)
        hcfg.health_check_interval = 0s; // the connection survives the partition
    corolock::connection holder_conn(ex, hcfg, quiet()), other_conn(ex, config_for(srv), quiet());
    holder_conn.async_run(asio::detached);
    other_conn.async_run(asio::detached);

    const std::string name = "s5:" + p.name, released = name + ":released";
    // The lease of `a` is watched until lost; the lease of `b` is released during the partition,
    // so its release script is among the queued bytes.
    corolock::mutex a(holder_conn, name, lease_opts()), b(holder_conn, released, lease_opts());
    corolock::lease la = co_await a.async_acquire();
    corolock::lease lb = co_await b.async_acquire();
    const std::string a_owner(la.owner_id()), b_owner(lb.owner_id());
    co_await sleep_for(lease / 2);
    BOOST_TEST(corolock::get_lock_stats(holder_conn).renewals >= 1u);

    monitor mon(ex);
    co_await mon.start(srv.port());
    bool lost = false, release_done = false;
    error_code lost_ec, release_ec;
    clock_type::time_point lost_at{}, release_at{};
    la.async_wait_lost([&](error_code ec) {
        lost_ec = ec;
        lost_at = clock_type::now();
        lost = true;
    });

    const auto t_fault = clock_type::now();
    p.cut();
    lb.async_release([&](error_code ec) {
        release_ec = ec;
        release_at = clock_type::now();
        release_done = true;
    });

    // The other client takes both locks as soon as they expire.
    corolock::mutex na(other_conn, name, lease_opts()), nb(other_conn, released, lease_opts());
    auto [ea, lna] = co_await na.async_acquire_for(3 * lease, tuple_deferred);
    const auto t_taken = clock_type::now();
    auto [eb, lnb] = co_await nb.async_acquire_for(3 * lease, tuple_deferred);
    BOOST_TEST(!ea);
    BOOST_TEST(!eb);
    BOOST_REQUIRE(lna.owns());
    BOOST_REQUIRE(lnb.owns());
    BOOST_REQUIRE(lost);
    BOOST_TEST(lost_ec == error::lease_lost);
    BOOST_TEST(la.lost());
    BOOST_TEST(!la.valid());
    BOOST_TEST(la.owns());  // lost, but still to be released by its owner
    BOOST_TEST(!lb.owns()); // consumed by its release
    const auto lost_latency = lost_at - t_fault;
    BOOST_TEST_MESSAGE(p.name << ": holder told lost " << ms(lost_latency)
                              << " ms after the cut (lease " << ms(lease) << " ms); other client"
                              << " acquired " << ms(t_taken - t_fault) << " ms after the cut, "
                              << ms(t_taken - lost_at) << " ms after the holder was told");
    BOOST_TEST(ms(lost_latency) <= ms(lease + renewal_period + slack));
    BOOST_TEST((lost_at <= t_taken));                 // never two believed holders
    BOOST_TEST((lost_at <= t_fault + lease + slack)); // within the lease, by its own clock

    // The partition lasts three leases.
    co_await sleep_for(t_fault + 3 * lease - clock_type::now());
    const auto mark = mon.seen.size();
    const auto t_heal = clock_type::now();
    p.heal();
    // The holder's queued release (and renewals) now reach the server.
    auto late_seen = [&](const std::string& owner) {
        return mon.seen.find(owner, mark) != std::string::npos;
    };
    while (!late_seen(b_owner) && clock_type::now() < t_heal + p.late_limit)
        co_await sleep_for(10ms);
    const bool release_arrived = late_seen(b_owner);
    const auto late_after = clock_type::now() - t_heal;
    co_await sleep_for(200ms); // let whatever came late run
    BOOST_TEST_MESSAGE(
        p.name << ": holder's queued release " << (release_arrived ? "reached" : "did NOT reach")
               << " the server " << ms(late_after) << " ms after the heal; its"
               << " renewals " << (late_seen(a_owner) ? "did" : "did not")
               << "; holder's release ended with '" << release_ec.message() << "' "
               << (release_done ? ms(release_at - t_fault) : -1) << " ms after the cut");
    BOOST_TEST(release_arrived); // the late bytes really were delivered...
    // ...and touched nothing: both keys are still the new holder's, with their leases.
    BOOST_TEST(srv.command({"HGET", name, "owner"}) == bulk(std::string(lna.owner_id())));
    BOOST_TEST(srv.command({"HGET", released, "owner"}) == bulk(std::string(lnb.owner_id())));
    BOOST_TEST(srv.command({"HGET", name, "token"}) == bulk(std::to_string(lna.token().value())));
    BOOST_TEST(srv.command({"PTTL", name}) != ":-2\r\n");
    BOOST_TEST(lna.token() > la.token());
    BOOST_TEST(lna.valid());
    BOOST_TEST(!lna.lost());
    BOOST_TEST(lnb.valid());
    BOOST_TEST(release_done);
    BOOST_TEST(release_ec != error_code{}); // its outcome was never confirmed as a success

    // The old holder's release sends nothing (lease_lost: it was lost before); the new
    // holder's works.
    auto [ra] = co_await la.async_release(tuple_deferred);
    BOOST_TEST(ra == error::lease_lost);
    auto [rna] = co_await lna.async_release(tuple_deferred);
    auto [rnb] = co_await lnb.async_release(tuple_deferred);
    BOOST_TEST(!rna);
    BOOST_TEST(!rnb);
    BOOST_TEST(srv.command({"EXISTS", name, released}) == ":0\r\n");

    mon.stop();
    holder_conn.cancel();
    other_conn.cancel();
}

// Ids of the cases run so far, so that a skip (exit 77) never hides one of their failures.
std::vector<boost::unit_test::test_unit_id>& cases_run() {
    static std::vector<boost::unit_test::test_unit_id> ids;
    return ids;
}
struct record_case {
    record_case() { cases_run().push_back(boost::unit_test::framework::current_test_case().p_id); }
};

// ---- iptables on lo, removed by RAII (and at exit, should a test end the process).
bool iptables_usable() {
    return ::geteuid() == 0 && std::system("iptables -w -L INPUT -n >/dev/null 2>&1") == 0;
}

std::mutex& rules_mutex() {
    static std::mutex m;
    return m;
}
std::vector<std::string>& live_rules() {
    static std::vector<std::string> rules;
    return rules;
}
void remove_rule(const std::string& spec) {
    const auto cmd = "iptables -w -D INPUT " + spec + " >/dev/null 2>&1";
    (void)!std::system(cmd.c_str());
}
void remove_live_rules() {
    std::lock_guard lock(rules_mutex());
    for (auto& r : live_rules())
        remove_rule(r);
    live_rules().clear();
}

// DROP of TCP on lo matching `match` (e.g. "--dport 1234"), for as long as the object lives.
class lo_drop_rule {
public:
    explicit lo_drop_rule(const std::string& match)
        : spec_("-i lo -p tcp " + match + " -m comment --comment corolock-fault-s05 -j DROP") {
        static const bool registered = (std::atexit(remove_live_rules), true);
        (void)registered;
        const auto cmd = "iptables -w -I INPUT " + spec_;
        if (std::system(cmd.c_str()) != 0)
            throw std::runtime_error("could not add the iptables rule: " + spec_);
        std::lock_guard lock(rules_mutex());
        live_rules().push_back(spec_);
    }
    ~lo_drop_rule() {
        remove_rule(spec_);
        std::lock_guard lock(rules_mutex());
        std::erase(live_rules(), spec_);
    }
    lo_drop_rule(const lo_drop_rule&) = delete;
    lo_drop_rule& operator=(const lo_drop_rule&) = delete;

private:
    std::string spec_;
};

void run_scenario(redis_process& srv, asio::io_context& ioc, const partition& p) {
    run_coroutine_test(ioc, partition_scenario(srv, p), 30s);
}

} // namespace

BOOST_AUTO_TEST_SUITE(s05_partition)

BOOST_FIXTURE_TEST_CASE(proxy_blackhole_health_check_on, record_case) {
    redis_process srv;
    corolock::test::fault_proxy proxy(srv.port());
    asio::io_context ioc;
    // The health check drops the connection; reconnections stall in the blackhole too.
    partition p{"proxy", proxy.port(), true, [&] { proxy.blackhole(); }, [&] { proxy.heal(); }};
    run_scenario(srv, ioc, p);
    const auto st = proxy.stats();
    BOOST_TEST_MESSAGE("proxy: " << st.accepted << " connections, " << st.bytes_written[0]
                                 << " bytes to the server");
    BOOST_TEST(st.accepted >= 2u);
}

BOOST_FIXTURE_TEST_CASE(proxy_blackhole_connection_kept, record_case) {
    redis_process srv;
    corolock::test::fault_proxy proxy(srv.port());
    asio::io_context ioc;
    // No health check: the same connection lives through the partition, and the late replies
    // (a renewal answered after the deadline, the release's "not owner") come back on it.
    partition p{"kept", proxy.port(), false, [&] { proxy.blackhole(); }, [&] { proxy.heal(); }};
    run_scenario(srv, ioc, p);
    BOOST_TEST(proxy.stats().accepted == 1u);
}

BOOST_FIXTURE_TEST_CASE(iptables_drop, record_case) {
    if (!iptables_usable()) {
        BOOST_TEST_MESSAGE("iptables needs root and the iptables binary: skipped");
        bool earlier_failed = false;
        for (auto id : cases_run())
            if (id != boost::unit_test::framework::current_test_case().p_id &&
                !boost::unit_test::results_collector.results(id).passed())
                earlier_failed = true;
        if (!earlier_failed)
            std::exit(77);
        return;
    }
    redis_process srv;
    // A fault-free proxy gives the holder a port of its own to cut: the other client talks to
    // redis directly and is not affected.
    corolock::test::fault_proxy proxy(srv.port());
    asio::io_context ioc;
    const auto port = std::to_string(proxy.port());
    std::optional<lo_drop_rule> to_proxy, from_proxy;
    partition p{"iptables", proxy.port(), true,
                [&] {
                    to_proxy.emplace("--dport " + port);
                    from_proxy.emplace("--sport " + port);
                },
                [&] {
                    to_proxy.reset();
                    from_proxy.reset();
                },
                // Retransmissions back off (200 ms, 400 ms, ... on lo) through the partition.
                5s};
    run_scenario(srv, ioc, p);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace fault_s05_partition
