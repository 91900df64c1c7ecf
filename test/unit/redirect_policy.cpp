// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/redirect_policy.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_redirect_policy {

namespace cl = corolock;
using cl::detail::cluster_node;
using cl::detail::parse_redirect;
using cl::detail::redirect_policy;
using action = redirect_policy::action;

namespace {
const cluster_node from{"id1", "127.0.0.1", "7001"};
}

BOOST_AUTO_TEST_SUITE(redirect_policy_suite)

BOOST_AUTO_TEST_CASE(parses_moved_and_ask) {
    auto m = parse_redirect("MOVED 3999 127.0.0.1:6381");
    BOOST_REQUIRE(m.has_value());
    BOOST_TEST(m->slot == 3999);
    BOOST_TEST(m->node.host == "127.0.0.1");
    BOOST_TEST(m->node.port == "6381");
    auto a = parse_redirect("ASK 16383 ::1:7000");
    BOOST_REQUIRE(a.has_value());
    BOOST_TEST(a->node.host == "::1");
    BOOST_TEST(a->node.port == "7000");
    auto empty_host = parse_redirect("MOVED 1 :7000");
    BOOST_REQUIRE(empty_host.has_value());
    BOOST_TEST(empty_host->node.host.empty());
    for (auto bad :
         {"MOVED", "MOVED 1", "MOVED 16384 h:1", "MOVED x h:1", "MOVED 1 h", "MOVED 1 h:0",
          "MOVED 1 h:99999", "MOVED 1 h:1x", "ASKING 1 h:1", "TRYAGAIN", "MOVED -1 h:1"})
        BOOST_TEST(!parse_redirect(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(success_and_plain_errors_complete) {
    redirect_policy p(16);
    BOOST_TEST(p.on_outcome({}, "", from).what == action::complete);
    BOOST_TEST(p.on_outcome({}, "ERR wrong number of arguments", from).what == action::complete);
    BOOST_TEST(p.on_outcome({}, "CROSSSLOT Keys in request don't hash", from).what ==
               action::complete);
    BOOST_TEST(p.on_outcome({}, "MOVED garbage", from).what == action::complete);
    BOOST_TEST(p.redirects() == 0u);
}

BOOST_AUTO_TEST_CASE(a_maybe_executed_request_is_never_resent) {
    redirect_policy p(16);
    // Written, then the connection dropped: even with a MOVED text lying around, complete.
    auto d = p.on_outcome(cl::error::connection_lost, "MOVED 1 127.0.0.1:7002", from);
    BOOST_TEST(d.what == action::complete);
    BOOST_TEST(p.on_outcome(boost::asio::error::operation_aborted, "", from).what ==
               action::complete);
    BOOST_TEST(p.redirects() == 0u);
}

BOOST_AUTO_TEST_CASE(a_never_written_request_is_rerouted) {
    redirect_policy p(16);
    auto d = p.on_outcome(cl::error::not_connected, "", from);
    BOOST_TEST(d.what == action::retry_later);
    BOOST_TEST(d.refresh);
    BOOST_TEST(p.redirects() == 1u);
}

BOOST_AUTO_TEST_CASE(redirects_map_to_actions) {
    redirect_policy p(16);
    auto moved = p.on_outcome({}, "MOVED 7 127.0.0.1:7002", from);
    BOOST_TEST(moved.what == action::moved);
    BOOST_TEST(moved.refresh);
    BOOST_TEST(moved.target.slot == 7);
    BOOST_TEST(moved.target.node.port == "7002");
    auto ask = p.on_outcome({}, "ASK 7 :7003", from);
    BOOST_TEST(ask.what == action::ask);
    BOOST_TEST(!ask.refresh);
    BOOST_TEST(ask.target.node.host == "127.0.0.1"); // the sender's host
    auto again = p.on_outcome({}, "TRYAGAIN Multiple keys request during rehashing of slot", from);
    BOOST_TEST(again.what == action::retry_later);
    BOOST_TEST(!again.refresh);
    auto down = p.on_outcome({}, "CLUSTERDOWN The cluster is down", from);
    BOOST_TEST(down.what == action::retry_later);
    BOOST_TEST(down.refresh);
    BOOST_TEST(p.on_outcome({}, "LOADING Redis is loading", from).what == action::retry_later);
    // With `ignore`, the exec fails with the code and the text still decides.
    BOOST_TEST(p.on_outcome(cl::error::try_again, "TRYAGAIN x", from).what == action::retry_later);
    BOOST_TEST(p.redirects() == 6u);
}

BOOST_AUTO_TEST_CASE(budget_ends_a_redirect_loop) {
    redirect_policy p(16);
    for (int i = 0; i < 16; ++i)
        BOOST_TEST(p.on_outcome({}, "MOVED 1 127.0.0.1:7001", from).what == action::moved);
    auto d = p.on_outcome({}, "MOVED 1 127.0.0.1:7001", from);
    BOOST_TEST(d.what == action::fail);
    BOOST_TEST(d.ec == cl::error::too_many_redirects);
    // A success after the budget is spent still completes.
    BOOST_TEST(p.on_outcome({}, "", from).what == action::complete);
    redirect_policy none(0);
    BOOST_TEST(none.on_outcome({}, "TRYAGAIN", from).what == action::fail);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_redirect_policy
