// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock recipe's decisions: paths, node names, who holds, whom to watch, which node is ours.
#include "zookeeper/core/zk_lock_recipe.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_zookeeper_zk_lock_recipe {

using namespace corolock::detail;
using verdict = zk_lock_decision::verdict;

namespace {
const std::string a(32, 'a'), b(32, 'b'), c(32, 'c');
std::string n(const std::string& owner, const char* kind, const char* seq) {
    return owner + "-" + kind + "-" + seq;
}
} // namespace

BOOST_AUTO_TEST_SUITE(zk_lock_recipe)

BOOST_AUTO_TEST_CASE(paths) {
    for (const char* ok : {"/a", "/locks/orders", "/a.b/c-d_e", "/app/zookeeperish"})
        BOOST_TEST(valid_lock_path(ok), ok);
    for (const char* bad : {"", "/", "a", "a/b", "/a/", "//a", "/a//b", "/./a", "/a/..",
                            "/zookeeper", "/zookeeper/x", "/a\nb", "/caf\xc3\xa9"})
        BOOST_TEST(!valid_lock_path(bad), bad);
    BOOST_TEST(!valid_lock_path("/" + std::string(1000, 'x')));
}

// What the log says is wrong with a path; the limit is the code's.
BOOST_AUTO_TEST_CASE(path_problems) {
    BOOST_TEST(zk_path_problem("/locks/orders").empty());
    BOOST_TEST(zk_path_problem("relative") == "is not absolute (it must start with '/')");
    BOOST_TEST(zk_path_problem("/a//b") == "has an empty component ('//')");
    BOOST_TEST(zk_path_problem("/a/..") == "has a '.' or '..' component");
    BOOST_TEST(zk_path_problem("/a/") == "ends with '/'");
    BOOST_TEST(zk_path_problem("/caf\xc3\xa9").find("non-ASCII") != std::string_view::npos);
    BOOST_TEST(zk_path_problem("/zookeeper/x").find("reserves") != std::string_view::npos);
    BOOST_TEST(zk_path_problem("/" + std::string(max_lock_path - 1, 'x')).empty());
    BOOST_TEST(zk_path_problem("/" + std::string(max_lock_path, 'x')).find("too long") !=
               std::string_view::npos);
}

// A cancel wins over the deadline; a bounded wait times out, one attempt reports the server
// unreachable; before the deadline, nothing stops the wait.
BOOST_AUTO_TEST_CASE(stop_waiting) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const auto later = t0 + std::chrono::seconds(1);
    BOOST_TEST(!zk_stop_waiting(false, false, later, t0));
    BOOST_TEST(!zk_stop_waiting(false, true, later, t0));
    BOOST_TEST(zk_stop_waiting(true, false, later, t0) == boost::asio::error::operation_aborted);
    BOOST_TEST(zk_stop_waiting(true, true, t0, later) == boost::asio::error::operation_aborted);
    BOOST_TEST(zk_stop_waiting(false, false, t0, later) == corolock::error::acquire_timeout);
    BOOST_TEST(zk_stop_waiting(false, true, t0, later) == corolock::error::connection_lost);
    BOOST_TEST(!zk_stop_waiting(false, false, clock::time_point::max(), later));
}

// The late reply of an abandoned create: what it made is deleted, a lost one is looked for,
// a refused one leaves nothing.
BOOST_AUTO_TEST_CASE(orphan_steps) {
    BOOST_TEST(orphan_step(true, false) == zk_orphan_step::remove_node);
    BOOST_TEST(orphan_step(false, true) == zk_orphan_step::find_by_owner);
    BOOST_TEST(orphan_step(false, false) == zk_orphan_step::none);
}

BOOST_AUTO_TEST_CASE(names_round_trip) {
    BOOST_TEST(node_prefix(a, zk_node_kind::lock) == a + "-lock-");
    const auto name = n(a, "write", "0000000042");
    const auto p = parse_node_name(name);
    BOOST_REQUIRE(p);
    BOOST_TEST(p->owner == a);
    BOOST_TEST((p->kind == zk_node_kind::write));
    BOOST_TEST(p->sequence == 42u);
    for (const char* bad : {"lock-0000000001", "x-lock-00000001", "x-other-0000000001",
                            "-lock-0000000001", "x-lock-000000000a", "garbage"})
        BOOST_TEST(!parse_node_name(bad), bad);
}

BOOST_AUTO_TEST_CASE(lowest_holds_others_watch_their_predecessor_only) {
    const std::vector<std::string> kids{n(c, "lock", "0000000007"), n(a, "lock", "0000000003"),
                                        "stranger", n(b, "lock", "0000000005")};
    auto d = decide(kids, n(a, "lock", "0000000003"));
    BOOST_TEST(d.what == verdict::holds);
    d = decide(kids, n(b, "lock", "0000000005"));
    BOOST_TEST(d.what == verdict::wait);
    BOOST_TEST(d.predecessor == n(a, "lock", "0000000003"));
    // No herd: the last one watches the one just before it, not the holder.
    d = decide(kids, n(c, "lock", "0000000007"));
    BOOST_TEST(d.what == verdict::wait);
    BOOST_TEST(d.predecessor == n(b, "lock", "0000000005"));
}

BOOST_AUTO_TEST_CASE(own_node_missing_is_gone) {
    const std::vector<std::string> kids{n(b, "lock", "0000000005")};
    BOOST_TEST(decide(kids, n(a, "lock", "0000000003")).what == verdict::gone);
    BOOST_TEST(decide(kids, "not-a-node").what == verdict::gone);
}

BOOST_AUTO_TEST_CASE(readers_wait_only_for_earlier_writers) {
    const std::vector<std::string> kids{n(a, "read", "0000000001"), n(b, "write", "0000000002"),
                                        n(c, "read", "0000000003"), n(a, "read", "0000000004")};
    BOOST_TEST(decide(kids, n(a, "read", "0000000001")).what == verdict::holds);
    auto d = decide(kids, n(b, "write", "0000000002"));
    BOOST_TEST(d.what == verdict::wait);
    BOOST_TEST(d.predecessor == n(a, "read", "0000000001"));
    d = decide(kids, n(c, "read", "0000000003"));
    BOOST_TEST(d.predecessor == n(b, "write", "0000000002"));
    d = decide(kids, n(a, "read", "0000000004"));
    BOOST_TEST(d.predecessor == n(b, "write", "0000000002"));
    // Readers together once the writer is gone.
    const std::vector<std::string> readers{n(c, "read", "0000000003"), n(a, "read", "0000000004")};
    BOOST_TEST(decide(readers, n(a, "read", "0000000004")).what == verdict::holds);
}

BOOST_AUTO_TEST_CASE(a_lost_create_reply_finds_its_node_by_owner) {
    const std::vector<std::string> kids{n(b, "lock", "0000000005"), n(a, "lock", "0000000009")};
    const auto own = find_own(kids, a);
    BOOST_REQUIRE(own);
    BOOST_TEST(*own == n(a, "lock", "0000000009"));
    BOOST_TEST(!find_own(kids, c));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_zookeeper_zk_lock_recipe
