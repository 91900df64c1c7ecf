// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/rate_scripts.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_rate_scripts {

using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::rate_limit;
using corolock::resp3::node;
using corolock::resp3::type;
namespace d = corolock::detail;
using namespace std::chrono_literals;
using fsm = d::rate_call_fsm;

namespace {

node num(std::int64_t v) {
    return node{type::number, 0, 1, std::to_string(v)};
}
node blob(std::string v) {
    return node{type::blob_string, 0, 1, std::move(v)};
}
generic_response reply(std::int64_t status, std::int64_t delay, std::int64_t now, std::string tat) {
    return {node{type::array, 4, 0, ""}, num(status), num(delay), num(now), blob(std::move(tat))};
}

d::rate_params params(rate_limit l) {
    d::rate_params p;
    BOOST_TEST_REQUIRE(!d::validate_rate_limit("rl", l, p));
    return p;
}

constexpr std::int64_t t0 = 1'790'000'000'000'000; // a server time in µs (2026)

} // namespace

BOOST_AUTO_TEST_SUITE(rate_scripts)

BOOST_AUTO_TEST_CASE(limits_are_checked) {
    d::rate_params p;
    BOOST_TEST(d::validate_rate_limit("rl", {10, 1s, 5}, p) == error_code{});
    BOOST_TEST(d::validate_rate_limit("", {10, 1s, 5}, p) == error::invalid_name);
    BOOST_TEST(d::validate_rate_limit("a}b", {10, 1s, 5}, p) == error::invalid_name);
    BOOST_TEST(d::validate_rate_limit("rl", {0, 1s, 5}, p) == error::invalid_argument);
    BOOST_TEST(d::validate_rate_limit("rl", {10, 1s, 0}, p) == error::invalid_argument);
    BOOST_TEST(d::validate_rate_limit("rl", {10, 999us, 1}, p) == error::invalid_argument);
    BOOST_TEST(d::validate_rate_limit("rl", {10, 1ms, 1}, p) == error_code{});
    BOOST_TEST(d::validate_rate_limit("rl", {10, -1s, 1}, p) == error::invalid_argument);
    BOOST_TEST(d::validate_rate_limit("rl", {1, std::chrono::hours(24 * 365), 1}, p) ==
               error_code{});
    BOOST_TEST(d::validate_rate_limit("rl", {1, std::chrono::hours(24 * 365) + 1ns, 1}, p) ==
               error::invalid_argument);
    // burst x T over 365 days
    BOOST_TEST(d::validate_rate_limit("rl", {1, std::chrono::hours(24 * 365), 2}, p) ==
               error::invalid_argument);
    BOOST_TEST(d::validate_rate_limit("rl", {2, std::chrono::hours(24 * 365), 2}, p) ==
               error_code{});
    // burst x rate below 2^52
    BOOST_TEST(d::validate_rate_limit("rl", {1u << 26, 1s, 1u << 26}, p) ==
               error::invalid_argument);
    BOOST_TEST(d::validate_rate_limit("rl", {1u << 26, 1s, (1u << 26) - 1}, p) == error_code{});
    BOOST_TEST(d::validate_rate_limit("rl", {~0ull, 1s, 1}, p) == error::invalid_argument);
}

BOOST_AUTO_TEST_CASE(interval_is_exact) {
    // 3 per second: T = 333333 + 1/3 µs; burst 2: 666666 + 2/3 µs.
    auto p = params({3, 1s, 2});
    BOOST_TEST(p.t_us == 333333u);
    BOOST_TEST(p.t_rem == 1u);
    BOOST_TEST(p.rate == 3u);
    BOOST_TEST(p.tau_us == 666666u);
    BOOST_TEST(p.tau_rem == 2u);
    // Faster than one per µs: T is a fraction only.
    p = params({3'000'000'000ull, 1ms, 1});
    BOOST_TEST(p.t_us == 0u);
    BOOST_TEST(p.t_rem == 1000u);
    // A period in ns counts in whole µs, rounded up.
    p = params({1, 1500500ns, 1});
    BOOST_TEST(p.t_us == 1501u);
}

BOOST_AUTO_TEST_CASE(calls_are_checked) {
    auto p = params({10, 1s, 5});
    BOOST_TEST(d::validate_rate_call(p, 1, 0s) == error_code{});
    BOOST_TEST(d::validate_rate_call(p, 5, 10s) == error_code{});
    BOOST_TEST(d::validate_rate_call(p, 0, 0s) == error::invalid_argument);
    BOOST_TEST(d::validate_rate_call(p, 6, 0s) == error::invalid_argument);
    BOOST_TEST(d::validate_rate_call(p, 1, -1ns) == error::invalid_argument);
    BOOST_TEST(d::validate_rate_call(p, 1, std::chrono::hours(24 * 365)) == error_code{});
    BOOST_TEST(d::validate_rate_call(p, 1, std::chrono::hours(24 * 366)) ==
               error::invalid_argument);
    BOOST_TEST(d::validate_rate_call(p, 1, std::chrono::steady_clock::duration::max()) ==
               error::invalid_argument);
    BOOST_TEST(d::max_wait_us(1500ns) == 1);
    BOOST_TEST(d::max_wait_us(2ms) == 2000);
}

BOOST_AUTO_TEST_CASE(requests_carry_the_arguments_in_order) {
    auto p = params({3, 1s, 2});
    const auto r = d::make_rate_acquire(d::rate_acquire_script(), "api", p, 2, 1500);
    const std::string expect = "$3\r\napi\r\n$6\r\n333333\r\n$1\r\n1\r\n$1\r\n3\r\n$6\r\n666666\r\n"
                               "$1\r\n2\r\n$1\r\n2\r\n$4\r\n1500\r\n";
    BOOST_TEST(r.payload().starts_with("*11\r\n$7\r\nEVALSHA\r\n"));
    BOOST_TEST(r.payload().ends_with(expect));
    const auto f = d::make_rate_refund(d::rate_refund_script(), "api", p, "17:2:3", 2);
    BOOST_TEST(f.payload().starts_with("*8\r\n$7\r\nEVALSHA\r\n"));
    BOOST_TEST(f.payload().ends_with(
        "$3\r\napi\r\n$6\r\n17:2:3\r\n$6\r\n333333\r\n$1\r\n1\r\n$1\r\n2\r\n"));
}

BOOST_AUTO_TEST_CASE(acquire_replies) {
    d::rate_reply r;
    BOOST_TEST(d::decode_rate_acquire(reply(1, 0, t0, "1790000000100000:0:10"), 0, r) ==
               error_code{});
    BOOST_TEST(r.status == 1);
    BOOST_TEST(r.took_slot());
    BOOST_TEST(r.now_us == t0);
    BOOST_TEST(r.tat == "1790000000100000:0:10");
    auto dec = d::to_decision(r);
    BOOST_TEST(dec.admitted);
    BOOST_TEST(dec.wait.count() == 0);
    BOOST_TEST(dec.server_time_us == t0);

    BOOST_TEST(d::decode_rate_acquire(reply(2, 250, t0, "5:1:3"), 1000, r) == error_code{});
    BOOST_TEST(r.status == 2);
    dec = d::to_decision(r);
    BOOST_TEST(dec.admitted);
    BOOST_TEST((dec.wait == 250us));

    BOOST_TEST(d::decode_rate_acquire(reply(0, 7000, t0, ""), 1000, r) == error_code{});
    BOOST_TEST(!r.took_slot());
    dec = d::to_decision(r);
    BOOST_TEST(!dec.admitted);
    BOOST_TEST((dec.retry_after == 7ms));
    BOOST_TEST((dec.wait == 0us));
}

BOOST_AUTO_TEST_CASE(hostile_acquire_replies_are_refused) {
    d::rate_reply r;
    const auto bad = [&](const generic_response& g, std::int64_t maxw = 1000) {
        return d::decode_rate_acquire(g, maxw, r) == error::unexpected_reply;
    };
    BOOST_TEST(bad({}));
    BOOST_TEST(bad({num(1)}));
    BOOST_TEST(bad({node{type::null, 0, 0, ""}}));
    BOOST_TEST(bad(reply(3, 0, t0, "1:0:1")));                    // unknown status
    BOOST_TEST(bad(reply(-1, 0, t0, "")));                        //
    BOOST_TEST(bad(reply(1, 5, t0, "1:0:1")));                    // admitted now with a delay
    BOOST_TEST(bad(reply(1, 0, t0, "")));                         // admitted, nothing stored
    BOOST_TEST(bad(reply(2, 0, t0, "1:0:1")));                    // reserved with no wait
    BOOST_TEST(bad(reply(2, 1001, t0, "1:0:1")));                 // beyond max_wait
    BOOST_TEST(bad(reply(0, 0, t0, "")));                         // refused, retry at once
    BOOST_TEST(bad(reply(0, 5, t0, "1:0:1")));                    // refused with a TAT
    BOOST_TEST(bad(reply(1, 0, 0, "1:0:1")));                     // no server time
    BOOST_TEST(bad(reply(1, 0, -t0, "1:0:1")));                   //
    BOOST_TEST(bad(reply(1, 0, std::int64_t{1} << 60, "1:0:1"))); // past year 2255
    BOOST_TEST(bad(reply(0, -5, t0, "")));                        // negative delay
    BOOST_TEST(bad(reply(0, std::int64_t{1} << 62, t0, "")));     // absurd delay
    for (const char* tat : {"1:0", "1:0:1:2", "a:0:1", "1::1", ":0:1", "1:0:", "1 :0:1", "-1:0:1"})
        BOOST_TEST(bad(reply(1, 0, t0, tat)), tat);
    BOOST_TEST(bad(reply(1, 0, t0, std::string(100, '1'))));
    // Wrong types inside the right shape.
    auto g = reply(1, 0, t0, "1:0:1");
    g[1].data_type = type::blob_string;
    BOOST_TEST(bad(g));
    g = reply(1, 0, t0, "1:0:1");
    g[4].data_type = type::number;
    BOOST_TEST(bad(g));
    g = reply(1, 0, t0, "1:0:1");
    g[0].aggregate_size = 5;
    BOOST_TEST(bad(g));
    g = reply(1, 0, t0, "1:0:1");
    g.push_back(num(1)); // more nodes than the array says
    BOOST_TEST(bad(g));
    g = reply(1, 0, t0, "1:0:1");
    g[0].data_type = type::map;
    BOOST_TEST(bad(g));
    g = reply(1, 0, t0, "1:0:1");
    g[2].value = "12x";
    BOOST_TEST(bad(g));
    g = reply(1, 0, t0, "1:0:1");
    g[3].value = "99999999999999999999999";
    BOOST_TEST(bad(g));
}

BOOST_AUTO_TEST_CASE(server_errors) {
    d::rate_reply r;
    BOOST_TEST(d::decode_rate_acquire({node{type::simple_error, 0, 0,
                                            "WRONGTYPE the key at the limiter name is not a "
                                            "corolock rate limiter"}},
                                      0, r) == error::wrong_type);
    BOOST_TEST(d::decode_rate_acquire({node{type::simple_error, 0, 0, "OOM no"}}, 0, r) ==
               error::server_error);
    bool refunded = false;
    BOOST_TEST(d::decode_rate_refund({num(1)}, refunded) == error_code{});
    BOOST_TEST(refunded);
    BOOST_TEST(d::decode_rate_refund({num(0)}, refunded) == error_code{});
    BOOST_TEST(!refunded);
    BOOST_TEST(d::decode_rate_refund({num(2)}, refunded) == error::unexpected_reply);
    BOOST_TEST(d::decode_rate_refund({blob("1")}, refunded) == error::unexpected_reply);
    BOOST_TEST(d::decode_rate_refund({}, refunded) == error::unexpected_reply);
    BOOST_TEST(d::decode_rate_refund({node{type::simple_error, 0, 0, "WRONGTYPE x"}}, refunded) ==
               error::wrong_type);
}

// The call's state machine, fed its events in every order that can happen.
BOOST_AUTO_TEST_CASE(call_reply_then_timer) {
    d::rate_reply reserved;
    reserved.status = 2;
    reserved.delay_us = 300;
    reserved.tat = "1:0:1";
    fsm acquire(true);
    BOOST_TEST(acquire.on_reply({}, reserved) == fsm::action::sleep);
    BOOST_TEST(acquire.sleep_us() == 300);
    BOOST_TEST(acquire.current() == fsm::state::sleeping);
    BOOST_TEST(acquire.on_timer() == fsm::action::complete);
    BOOST_TEST(!acquire.result());
    BOOST_TEST(acquire.on_cancel() == fsm::action::none); // too late: nothing refunded
    BOOST_TEST(acquire.on_timer() == fsm::action::none);

    fsm reserve(false); // a reserve never sleeps
    BOOST_TEST(reserve.on_reply({}, reserved) == fsm::action::complete);
    BOOST_TEST(reserve.on_cancel() == fsm::action::none);

    d::rate_reply now;
    now.status = 1;
    now.tat = "1:0:1";
    fsm immediate(true);
    BOOST_TEST(immediate.on_reply({}, now) == fsm::action::complete);
    d::rate_reply refused;
    refused.delay_us = 5;
    fsm no(true);
    BOOST_TEST(no.on_reply({}, refused) == fsm::action::complete);
    fsm failed(true);
    BOOST_TEST(failed.on_reply(error::connection_lost, {}) == fsm::action::complete);
    BOOST_TEST(failed.result() == error::connection_lost);
}

BOOST_AUTO_TEST_CASE(call_cancelled_while_sleeping_refunds) {
    d::rate_reply reserved;
    reserved.status = 2;
    reserved.delay_us = 300;
    reserved.tat = "9:0:1";
    fsm f(true);
    BOOST_TEST(f.on_reply({}, reserved) == fsm::action::sleep);
    BOOST_TEST(f.on_cancel() == fsm::action::complete_and_refund);
    BOOST_TEST(f.result() == boost::asio::error::operation_aborted);
    BOOST_TEST(f.reply().tat == "9:0:1");
    BOOST_TEST(f.on_timer() == fsm::action::none); // the aborted wait
    BOOST_TEST(f.on_cancel() == fsm::action::none);
}

BOOST_AUTO_TEST_CASE(call_cancelled_before_its_reply) {
    d::rate_reply taken;
    taken.status = 1;
    taken.tat = "9:0:1";
    d::rate_reply refused;
    refused.delay_us = 5;
    for (bool sleep : {false, true}) {
        fsm f(sleep);
        BOOST_TEST(f.on_cancel() == fsm::action::complete);
        BOOST_TEST(f.result() == boost::asio::error::operation_aborted);
        BOOST_TEST(f.on_cancel() == fsm::action::none);
        BOOST_TEST(f.on_reply({}, taken) == fsm::action::refund); // took a slot nobody uses
        BOOST_TEST(f.reply().tat == "9:0:1");
        BOOST_TEST(f.on_reply({}, taken) == fsm::action::none);

        fsm g(sleep);
        BOOST_TEST(g.on_cancel() == fsm::action::complete);
        BOOST_TEST(g.on_reply({}, refused) == fsm::action::none); // took nothing
        fsm h(sleep);
        BOOST_TEST(h.on_cancel() == fsm::action::complete);
        BOOST_TEST(h.on_reply(error::connection_lost, taken) == fsm::action::none); // unknown
    }
}

// The model's arithmetic: exact rates, and the GCRA bound under random traffic.
BOOST_AUTO_TEST_CASE(model_admits_burst_then_the_rate) {
    auto p = params({3, 1s, 2});
    d::gcra_state st;
    auto r = d::gcra_step(p, st, t0, 1, 0);
    BOOST_TEST(r.status == 1);
    BOOST_TEST(d::gcra_ttl_ms(st, t0) == 334); // 333333.33 µs rounded up
    BOOST_TEST(d::gcra_step(p, st, t0, 1, 0).status == 1);
    r = d::gcra_step(p, st, t0, 1, 0);
    BOOST_TEST(r.status == 0);
    BOOST_TEST(r.delay_us == 333334); // one interval, rounded up
    r = d::gcra_step(p, st, t0, 1, 400000);
    BOOST_TEST(r.status == 2);
    BOOST_TEST(r.delay_us == 333334);
    BOOST_TEST(d::gcra_ttl_ms(st, t0) == 1000); // tat = now + 3T = now + 1 s exactly
    // The reservation's slot started at t0 + 1/3 s; at t0 + 1 s the burst is back, no more.
    std::int64_t now = t0 + 1'000'000;
    int admitted = 0;
    while (d::gcra_step(p, st, now, 1, 0).status == 1)
        ++admitted;
    BOOST_TEST(admitted == 2);
    // A million seconds probed every 100 ms: 3 per second exactly, plus the burst (a T rounded
    // to whole µs would drift by 9 or 3 units either way).
    std::int64_t total = 0;
    for (std::int64_t k = 1; k <= 10'000'000; ++k)
        while (d::gcra_step(p, st, now + k * 100'000, 1, 0).status == 1)
            ++total;
    BOOST_TEST(total >= 3'000'000 - 1);
    BOOST_TEST(total <= 3'000'000 + 2);
}

BOOST_AUTO_TEST_CASE(model_keeps_the_bound) {
    std::mt19937_64 rng(7);
    for (rate_limit l : {rate_limit{5, 100ms, 3}, rate_limit{7, 1s, 1}, rate_limit{1000, 3ms, 10},
                         rate_limit{3, 10ms, 4}}) {
        auto p = params(l);
        d::gcra_state st;
        std::vector<std::pair<std::int64_t, std::uint64_t>> admitted; // (time, cost)
        std::int64_t now = t0;
        const double t_us = static_cast<double>(p.t_us) +
                            static_cast<double>(p.t_rem) / static_cast<double>(p.rate);
        for (int i = 0; i < 3000; ++i) {
            now += static_cast<std::int64_t>(rng() % (3 * p.t_us + 3));
            const std::uint64_t cost = 1 + rng() % l.burst;
            const auto r = d::gcra_step(p, st, now, cost, 0);
            if (r.took_slot()) {
                admitted.emplace_back(now, cost);
                continue;
            }
            // Refused only when admitting it would break the bound over some window ending now.
            bool would_break = false;
            std::uint64_t sum = cost;
            for (auto it = admitted.rbegin(); it != admitted.rend() && !would_break; ++it) {
                sum += it->second;
                const double allowed =
                    static_cast<double>(l.burst) + static_cast<double>(now - it->first) / t_us;
                would_break = static_cast<double>(sum) > allowed - 1e-6;
            }
            BOOST_TEST(would_break, "refused at " << now - t0 << " cost " << cost);
        }
        // Admitted cost over every window [i, j] <= burst + L/T.
        for (std::size_t i = 0; i < admitted.size(); ++i) {
            std::uint64_t sum = 0;
            for (std::size_t j = i; j < admitted.size(); ++j) {
                sum += admitted[j].second;
                const double bound =
                    static_cast<double>(l.burst) +
                    static_cast<double>(admitted[j].first - admitted[i].first) / t_us;
                if (static_cast<double>(sum) > bound + 1e-6) {
                    BOOST_ERROR("window " << i << ".." << j << ": " << sum << " > " << bound);
                    return;
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(printable) {
    std::ostringstream os;
    os << fsm::state::orphan << ' ' << fsm::action::complete_and_refund;
    BOOST_TEST(os.str() == "orphan complete_and_refund");
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_rate_scripts
