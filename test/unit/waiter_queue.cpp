// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/waiter_queue.hpp"

#include <boost/test/unit_test.hpp>

using corolock::detail::waiter_queue;

BOOST_AUTO_TEST_SUITE(waiter_queue_tests)

BOOST_AUTO_TEST_CASE(fifo_and_head) {
    waiter_queue q;
    BOOST_TEST(q.empty());
    BOOST_TEST(q.push(1));
    BOOST_TEST(!q.push(2));
    BOOST_TEST(!q.push(3));
    BOOST_TEST(q.is_head(1));
    BOOST_TEST(q.erase(2) == 0u); // not the head: nobody to promote
    BOOST_TEST(q.erase(1) == 3u); // the head leaves: 3 is promoted
    BOOST_TEST(q.is_head(3));
    BOOST_TEST(q.erase(3) == 0u);
    BOOST_TEST(q.empty());
}

BOOST_AUTO_TEST_CASE(a_release_wakes_the_head_only) {
    waiter_queue q;
    BOOST_TEST(q.on_release() == 0u); // nobody waits
    q.push(1);
    q.push(2);
    BOOST_TEST(q.on_release() == 1u);
    BOOST_TEST(q.woken(1));
    BOOST_TEST(!q.woken(2));
    q.on_attempt(2); // a non-head's attempt does not answer the wake-up
    BOOST_TEST(q.woken(1));
    q.on_attempt(1);
    BOOST_TEST(!q.woken(1));
}

BOOST_AUTO_TEST_CASE(an_unconsumed_wake_up_passes_to_the_next_head) {
    waiter_queue q;
    q.push(1);
    q.push(2);
    q.on_release();               // arrives while 1's attempt is on the wire ...
    BOOST_TEST(q.erase(1) == 2u); // ... and 1 leaves (granted, cancelled, timed out)
    BOOST_TEST(q.woken(2));       // 2 must try at once
}

BOOST_AUTO_TEST_CASE(an_empty_queue_forgets_its_wake_up) {
    waiter_queue q;
    q.push(1);
    q.on_release();
    q.erase(1);
    q.push(5);
    BOOST_TEST(!q.woken(5)); // a stale message must not make a newcomer skip its back-off
}

BOOST_AUTO_TEST_SUITE_END()
