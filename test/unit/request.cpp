// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/request.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_request {

BOOST_AUTO_TEST_SUITE(request)

// A blocking command holds every later reply on its connection, renewals included: the request
// says when it carries one, so that a connection with leases can refuse it.
BOOST_AUTO_TEST_CASE(blocking_commands_are_recognised) {
    auto blocking = [](auto push) {
        corolock::request r;
        r.push("GET", "k");
        push(r);
        return r.has_blocking_command();
    };
    BOOST_TEST(blocking([](auto& r) { r.push("BLPOP", "jobs", 5); }));
    BOOST_TEST(blocking([](auto& r) { r.push("brpop", "a", "b", 0); }));
    BOOST_TEST(blocking([](auto& r) { r.push("BLMOVE", "a", "b", "LEFT", "RIGHT", 1); }));
    BOOST_TEST(blocking([](auto& r) { r.push("BZPOPMIN", "z", 1); }));
    BOOST_TEST(blocking([](auto& r) { r.push("WAIT", 1, 100); }));
    BOOST_TEST(blocking([](auto& r) { r.push("WaitAof", 1, 0, 100); }));
    BOOST_TEST(blocking([](auto& r) { r.push("XREAD", "BLOCK", 100, "STREAMS", "s", "$"); }));
    BOOST_TEST(blocking(
        [](auto& r) { r.push("XREADGROUP", "GROUP", "g", "c", "block", 0, "STREAMS", "s", ">"); }));
    const std::vector<std::string> args{"BLOCK", "0", "STREAMS", "s", "$"};
    BOOST_TEST(blocking([&](auto& r) { r.push_range("XREAD", args); }));

    BOOST_TEST(!blocking([](auto& r) { r.push("LPOP", "jobs"); }));
    BOOST_TEST(!blocking([](auto& r) { r.push("XREAD", "COUNT", 5, "STREAMS", "s", "0"); }));
    BOOST_TEST(!blocking([](auto& r) { r.push("XREAD", "STREAMS", "BLOCKS", "0"); }));
    BOOST_TEST(!blocking([](auto& r) { r.push("SET", "BLOCK", "WAIT"); }));
    BOOST_TEST(!blocking([](auto& r) { r.push("BLPOPX", "k"); }));

    corolock::request r;
    r.push("BLPOP", "jobs", 1);
    r.clear();
    BOOST_TEST(!r.has_blocking_command());
}

// Inside MULTI ... EXEC the server never blocks (BLPOP answers at once, WAIT counts the acks it
// has): such a request is not a blocking one. After EXEC or DISCARD, commands count again; a
// MULTI left open by the request still queues what follows it.
BOOST_AUTO_TEST_CASE(commands_inside_a_transaction_do_not_block) {
    corolock::request tx;
    tx.push("MULTI");
    tx.push("BLPOP", "jobs", 5);
    tx.push("XREAD", "BLOCK", 100, "STREAMS", "s", "$");
    tx.push("WAIT", 1, 100);
    tx.push("EXEC");
    BOOST_TEST(!tx.has_blocking_command());
    tx.push("BLPOP", "jobs", 5);
    BOOST_TEST(tx.has_blocking_command());

    corolock::request discarded;
    discarded.push("multi");
    discarded.push("BLPOP", "jobs", 5);
    discarded.push("discard");
    BOOST_TEST(!discarded.has_blocking_command());
    discarded.push("BRPOP", "jobs", 5);
    BOOST_TEST(discarded.has_blocking_command());

    corolock::request open;
    open.push("MULTI");
    open.push("BLPOP", "jobs", 5);
    BOOST_TEST(!open.has_blocking_command());

    corolock::request cleared;
    cleared.push("MULTI");
    cleared.clear();
    cleared.push("BLPOP", "jobs", 5);
    BOOST_TEST(cleared.has_blocking_command());
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_request
