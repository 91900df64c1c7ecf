// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Finding the master through Sentinel, with no server: replies, the list's order, ROLE and
// +switch-master.
#include "core/sentinel_resolve.hpp"

#include "common/wire.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace corolock {
std::ostream& operator<<(std::ostream& os, const address& a) {
    return os << a.host << ":" << a.port;
}
} // namespace corolock

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_sentinel_resolve {

using corolock::address;
using corolock::error;
using corolock::error_code;
using corolock::detail::check_role;
using corolock::detail::failover_watch;
using corolock::detail::parse_sentinel_answer;
using corolock::detail::parse_switch_master;
using corolock::detail::pick_watch_target;
using corolock::detail::sentinel_answer;
using corolock::detail::sentinel_list;
using corolock::test::wire;

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;
const clock_type::time_point t0 = clock_type::time_point(100h);
const address old_master{"127.0.0.1", "7001"}, new_master{"127.0.0.1", "7002"};

const std::string hello = "%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n";
const std::string master = "*2\r\n$9\r\n127.0.0.1\r\n$4\r\n7001\r\n";
// SENTINEL SENTINELS in RESP3: an array of maps.
const std::string two_sentinels =
    "*2\r\n"
    "%3\r\n$4\r\nname\r\n$2\r\nab\r\n$2\r\nip\r\n$9\r\n127.0.0.2\r\n"
    "$4\r\nport\r\n$4\r\n9002\r\n"
    "%2\r\n$2\r\nip\r\n$9\r\n127.0.0.3\r\n$4\r\nport\r\n$4\r\n9003\r\n";

sentinel_answer ok(std::vector<address> others = {}) {
    sentinel_answer a;
    a.master = {"127.0.0.1", "7001"};
    a.sentinels = std::move(others);
    return a;
}
sentinel_answer failed(error e) {
    sentinel_answer a;
    a.ec = e;
    return a;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sentinel_resolve)

BOOST_AUTO_TEST_CASE(request_carries_hello_auth_and_both_questions) {
    corolock::sentinel_config cfg;
    cfg.master_name = "m1";
    auto r = corolock::detail::make_sentinel_request(cfg);
    BOOST_TEST(r.size() == 3u);
    BOOST_TEST(r.expected_responses() == 3u);
    BOOST_TEST(r.payload().find("AUTH") == std::string_view::npos);
    BOOST_TEST(r.payload().find("GET-MASTER-ADDR-BY-NAME\r\n$2\r\nm1") != std::string_view::npos);
    cfg.password = "pw";
    r = corolock::detail::make_sentinel_request(cfg);
    BOOST_TEST(r.payload().find("AUTH\r\n$7\r\ndefault\r\n$2\r\npw") != std::string_view::npos);
}

BOOST_AUTO_TEST_CASE(answer_with_master_and_sentinels) {
    const auto a = parse_sentinel_answer(wire(hello + master + two_sentinels));
    BOOST_TEST(!a.ec);
    BOOST_TEST(a.master == (address{"127.0.0.1", "7001"}));
    BOOST_TEST_REQUIRE(a.sentinels.size() == 2u);
    BOOST_TEST(a.sentinels[0] == (address{"127.0.0.2", "9002"}));
    BOOST_TEST(a.sentinels[1] == (address{"127.0.0.3", "9003"}));
}

BOOST_AUTO_TEST_CASE(resp2_flat_sentinel_entries) {
    const auto a = parse_sentinel_answer(
        wire(hello + master + "*1\r\n*4\r\n$2\r\nip\r\n$3\r\n::1\r\n$4\r\nport\r\n$2\r\n99\r\n"));
    BOOST_TEST(!a.ec);
    BOOST_TEST_REQUIRE(a.sentinels.size() == 1u);
    BOOST_TEST(a.sentinels[0] == (address{"::1", "99"}));
}

BOOST_AUTO_TEST_CASE(unknown_master_is_null) {
    const auto a =
        parse_sentinel_answer(wire(hello + "_\r\n" + "-ERR No such master with that name\r\n"));
    BOOST_TEST(a.ec == error::sentinel_unknown_master);
}

BOOST_AUTO_TEST_CASE(refused_hello_is_auth_failure) {
    const auto a = parse_sentinel_answer(wire("-WRONGPASS invalid username-password pair\r\n"
                                              "-NOAUTH Authentication required.\r\n"
                                              "-NOAUTH Authentication required.\r\n"));
    BOOST_TEST(a.ec == error::auth_failed);
}

BOOST_AUTO_TEST_CASE(malformed_answers_are_refused) {
    // Too few replies, a master of the wrong shape, a port that is not a number.
    BOOST_TEST(parse_sentinel_answer(wire(hello + master)).ec == error::unexpected_reply);
    BOOST_TEST(parse_sentinel_answer(wire(hello + "*1\r\n$1\r\nx\r\n" + two_sentinels)).ec ==
               error::unexpected_reply);
    BOOST_TEST(
        parse_sentinel_answer(wire(hello + "*2\r\n$1\r\nx\r\n$2\r\nab\r\n" + two_sentinels)).ec ==
        error::unexpected_reply);
    BOOST_TEST(parse_sentinel_answer(wire(hello + ":5\r\n" + two_sentinels)).ec ==
               error::unexpected_reply);
    // A strange SENTINELS reply only skips the refresh.
    const auto a = parse_sentinel_answer(wire(hello + master + "*1\r\n:1\r\n"));
    BOOST_TEST(!a.ec);
    BOOST_TEST(a.sentinels.empty());
    BOOST_TEST(parse_sentinel_answer({}).ec == error::unexpected_reply);
}

BOOST_AUTO_TEST_CASE(role) {
    BOOST_TEST(!check_role(wire("*3\r\n$6\r\nmaster\r\n:100\r\n*0\r\n")));
    BOOST_TEST(
        check_role(wire("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:7001\r\n$9\r\nconnected\r\n"
                        ":10\r\n")) == error::role_check_failed);
    BOOST_TEST(check_role(wire("-NOPERM no\r\n")) == error::role_check_failed);
    BOOST_TEST(check_role({}) == error::role_check_failed);
}

BOOST_AUTO_TEST_CASE(switch_master) {
    const auto a = parse_switch_master("m1 127.0.0.1 7001 127.0.0.1 7002", "m1");
    BOOST_TEST_REQUIRE(a.has_value());
    BOOST_TEST(*a == (address{"127.0.0.1", "7002"}));
    BOOST_TEST(!parse_switch_master("m2 127.0.0.1 7001 127.0.0.1 7002", "m1"));
    BOOST_TEST(!parse_switch_master("m1 127.0.0.1 7001 127.0.0.1", "m1"));
    BOOST_TEST(!parse_switch_master("m1 127.0.0.1 7001 127.0.0.1 7002 x", "m1"));
    BOOST_TEST(!parse_switch_master("m1 127.0.0.1 7001 127.0.0.1 70x2", "m1"));
    BOOST_TEST(!parse_switch_master("", "m1"));
}

BOOST_AUTO_TEST_CASE(round_asks_in_order_and_reorders_on_success) {
    const address s1{"127.0.0.1", "1"}, s2{"127.0.0.1", "2"}, s3{"127.0.0.1", "3"},
        s4{"127.0.0.1", "4"};
    sentinel_list list({s1, s2});
    list.start_round();
    BOOST_TEST(*list.next() == s1);
    BOOST_TEST(!list.on_answer(failed(error::connect_timeout)));
    BOOST_TEST(*list.next() == s2);
    // s2 answers and reports s3 and s4: [answered, reported..., missing bootstrap].
    BOOST_TEST(list.on_answer(ok({s3, s4, s2})));
    BOOST_TEST(list.next() == nullptr);
    BOOST_TEST(list.current() == (std::vector<address>{s2, s3, s4, s1}));
    // The next round starts with the one that answered; s4 answers without reporting anyone:
    // the bootstrap entries come back, the others it forgot are dropped.
    list.start_round();
    BOOST_TEST(*list.next() == s2);
    BOOST_TEST(!list.on_answer(failed(error::sentinel_resolve_failed)));
    BOOST_TEST(*list.next() == s3);
    BOOST_TEST(!list.on_answer(failed(error::server_error)));
    BOOST_TEST(*list.next() == s4);
    BOOST_TEST(list.on_answer(ok()));
    BOOST_TEST(list.current() == (std::vector<address>{s4, s1, s2}));
}

BOOST_AUTO_TEST_CASE(round_failures) {
    const address s1{"127.0.0.1", "1"}, s2{"127.0.0.1", "2"};
    sentinel_list list({s1, s2});
    list.start_round();
    list.next();
    list.on_answer(failed(error::connect_timeout));
    list.next();
    list.on_answer(failed(error::connection_lost));
    BOOST_TEST(list.next() == nullptr);
    BOOST_TEST(list.failure() == error::sentinel_resolve_failed);
    // One Sentinel that does not know the name is enough to say so.
    list.start_round();
    list.next();
    list.on_answer(failed(error::sentinel_unknown_master));
    list.next();
    list.on_answer(failed(error::connect_timeout));
    BOOST_TEST(list.failure() == error::sentinel_unknown_master);
    // A new round forgets it.
    list.start_round();
    BOOST_TEST(list.failure() == error::sentinel_resolve_failed);
    sentinel_list empty({});
    empty.start_round();
    BOOST_TEST(empty.next() == nullptr);
}

// What the leader Sentinel published for a SENTINEL FAILOVER (redis 7.0.15, in this order; the
// others published only +switch-master, about 1 s after the promotion).
BOOST_AUTO_TEST_CASE(failover_announcements_hold_the_master_until_the_switch) {
    using act = failover_watch::action;
    failover_watch w("m1", 10s);
    const std::string leader = "127.0.0.1:26380", other = "127.0.0.1:26379";
    const std::string slave = "slave 127.0.0.1:7002 127.0.0.1 7002 @ m1 127.0.0.1 7001";
    BOOST_TEST(w.usable(old_master, t0));
    // Not our master, or not a failover event: nothing.
    BOOST_TEST(w.on_message(leader, "+try-failover", "master m2 127.0.0.1 7001", old_master, true,
                            t0) == act::none);
    BOOST_TEST(w.on_message(leader, "+sdown", "master m1 127.0.0.1 7001", old_master, true, t0) ==
               act::none);
    BOOST_TEST(w.on_message(leader, "+try-failover", "master m1 127.0.0.1", old_master, true, t0) ==
               act::none);
    BOOST_TEST(w.usable(old_master, t0));
    // The first announcement drops the connection and holds the old master.
    BOOST_TEST(w.on_message(leader, "+try-failover", "master m1 127.0.0.1 7001", old_master, true,
                            t0) == act::drop);
    BOOST_TEST(!w.usable(old_master, t0 + 1ms));
    BOOST_TEST(w.usable(new_master, t0 + 1ms));
    // While disconnected, the later ones hold it on (no second drop).
    for (auto [channel, payload] :
         {std::pair<std::string, std::string>{"+elected-leader", "master m1 127.0.0.1 7001"},
          {"+failover-state-select-slave", "master m1 127.0.0.1 7001"},
          {"+selected-slave", slave},
          {"+failover-state-send-slaveof-noone", slave},
          {"+failover-state-wait-promotion", slave},
          {"+promoted-slave", slave},
          {"+failover-state-reconf-slaves", "master m1 127.0.0.1 7001"},
          {"+failover-end", "master m1 127.0.0.1 7001"}})
        BOOST_TEST(w.on_message(leader, channel, payload, old_master, false, t0 + 500ms) ==
                       act::none,
                   channel);
    BOOST_TEST(!w.usable(old_master, t0 + 1s));
    // The switch: the new master is usable, the old one stays avoided (a Sentinel not yet told
    // names it) until the hold passes.
    BOOST_TEST(w.on_message(leader, "+switch-master", "m1 127.0.0.1 7001 127.0.0.1 7002",
                            old_master, false, t0 + 1s) == act::drop);
    BOOST_TEST((w.switched_to() == new_master));
    BOOST_TEST(!w.usable(old_master, t0 + 1s));
    BOOST_TEST(w.usable(new_master, t0 + 1s));
    // The others' +switch-master, once on the new master: nothing.
    BOOST_TEST(w.on_message(other, "+switch-master", "m1 127.0.0.1 7001 127.0.0.1 7002", new_master,
                            true, t0 + 1100ms) == act::none);
    BOOST_TEST(!w.usable(old_master, t0 + 11100ms - 1ms)); // each switch message renews it
    BOOST_TEST(w.usable(old_master, t0 + 11100ms));
    // A switch back makes the old master the one to use.
    BOOST_TEST(w.on_message(other, "+switch-master", "m1 127.0.0.1 7002 127.0.0.1 7001", new_master,
                            true, t0 + 12s) == act::drop);
    BOOST_TEST(w.usable(old_master, t0 + 12s));
    BOOST_TEST(!w.usable(new_master, t0 + 12s));
}

BOOST_AUTO_TEST_CASE(failover_hold_ends_on_abort_or_after_its_bound) {
    using act = failover_watch::action;
    failover_watch w("m1", 10s);
    const std::string a = "127.0.0.1:26379", b = "127.0.0.1:26380";
    const std::string m = "master m1 127.0.0.1 7001";
    // Two Sentinels try (a crash: each that sees the master down may); one loses the election.
    BOOST_TEST(w.on_message(a, "+try-failover", m, old_master, true, t0) == act::drop);
    BOOST_TEST(w.on_message(b, "+try-failover", m, old_master, false, t0) == act::none);
    BOOST_TEST(w.on_message(b, "-failover-abort-not-elected", m, old_master, false, t0 + 1s) ==
               act::none);
    BOOST_TEST(!w.usable(old_master, t0 + 1s)); // a still leads a failover
    // An abort of another master, or of another Sentinel's failover, changes nothing.
    BOOST_TEST(w.on_message(a, "-failover-abort-no-good-slave", "master m2 127.0.0.1 7001",
                            old_master, false, t0 + 2s) == act::none);
    BOOST_TEST(!w.usable(old_master, t0 + 2s));
    BOOST_TEST(w.on_message(a, "-failover-abort-no-good-slave", m, old_master, false, t0 + 2s) ==
               act::none);
    BOOST_TEST(w.usable(old_master, t0 + 2s));
    // A leader that announces nothing more: the hold ends after its bound.
    BOOST_TEST(w.on_message(a, "+elected-leader", m, old_master, true, t0 + 3s) == act::drop);
    BOOST_TEST(!w.usable(old_master, t0 + 13s - 1ms));
    BOOST_TEST(w.usable(old_master, t0 + 13s));
    // An announcement about a master we are not on: held, not dropped.
    BOOST_TEST(w.on_message(a, "+try-failover", m, new_master, true, t0 + 20s) == act::none);
    BOOST_TEST(!w.usable(old_master, t0 + 20s));
}

BOOST_AUTO_TEST_CASE(failover_hold_off_follows_only_switch_master) {
    using act = failover_watch::action;
    failover_watch w("m1", 0s);
    BOOST_TEST(w.on_message("s", "+try-failover", "master m1 127.0.0.1 7001", old_master, true,
                            t0) == act::none);
    BOOST_TEST(w.usable(old_master, t0));
    BOOST_TEST(w.on_message("s", "+switch-master", "m1 127.0.0.1 7001 127.0.0.1 7002", old_master,
                            true, t0) == act::drop);
    BOOST_TEST(w.usable(old_master, t0)); // nothing avoided: as before failover_hold
    BOOST_TEST(w.on_message("s", "+switch-master", "m1 127.0.0.1 7001 127.0.0.1 7002", new_master,
                            true, t0) == act::none);
    BOOST_TEST(w.on_message("s", "+switch-master", "m1 127.0.0.1 7001 127.0.0.1 7002 x", old_master,
                            true, t0) == act::none);
    BOOST_TEST(!failover_watch::channels().empty());
    BOOST_TEST(failover_watch::channels()[0] == "+switch-master");
}

// A Sentinel that names a master being failed over is passed over in the round.
BOOST_AUTO_TEST_CASE(round_skips_a_master_being_failed_over) {
    const address s1{"127.0.0.1", "1"}, s2{"127.0.0.1", "2"};
    sentinel_list list({s1, s2});
    list.start_round();
    list.next();
    BOOST_TEST(!list.on_answer(ok(), false));
    list.next();
    BOOST_TEST(!list.on_answer(failed(error::sentinel_unknown_master)));
    BOOST_TEST(list.next() == nullptr);
    BOOST_TEST(list.failure() == error::failover_in_progress);
    BOOST_TEST(list.current() == (std::vector<address>{s1, s2})); // not reordered
    list.start_round();
    list.next();
    BOOST_TEST(!list.on_answer(ok(), false));
    list.next();
    BOOST_TEST(list.on_answer(ok())); // the second names a usable one
    BOOST_TEST(list.current() == (std::vector<address>{s2, s1}));
    BOOST_TEST(error_code(error::failover_in_progress) == corolock::condition::connection_failure);
}

BOOST_AUTO_TEST_CASE(each_watch_takes_a_sentinel_no_other_watch_is_on) {
    const address s1{"127.0.0.1", "1"}, s2{"127.0.0.1", "2"}, s3{"127.0.0.1", "3"};
    const std::vector<address> list{s1, s2, s3};
    std::vector<std::optional<address>> on(3);
    on[0] = pick_watch_target(list, on, 0, 0);
    on[1] = pick_watch_target(list, on, 1, 1);
    on[2] = pick_watch_target(list, on, 2, 2);
    BOOST_TEST((on[0] == s1 && on[1] == s2 && on[2] == s3));
    // The list was reordered and watch 1 lost its Sentinel: it takes the one nobody is on.
    on[1].reset();
    BOOST_TEST((pick_watch_target({s3, s1, s2}, on, 1, 0) == s2));
    // Every other one is watched: its own turn in the list.
    on[1] = s2;
    BOOST_TEST((pick_watch_target(list, on, 1, 1) == s2));
    BOOST_TEST((pick_watch_target(list, on, 1, 4) == s2));
    BOOST_TEST(!pick_watch_target({}, on, 0, 0));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_sentinel_resolve
