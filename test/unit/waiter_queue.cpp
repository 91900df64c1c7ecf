// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/waiter_queue.hpp"

#include <boost/test/unit_test.hpp>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_waiter_queue {

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

BOOST_AUTO_TEST_CASE(a_mutex_release_is_one_wake_up_however_many_messages) {
    waiter_queue q;
    q.push(1);
    q.push(2);
    q.on_release(); // two releases while 1's attempt is out: the lock is one unit
    q.on_release();
    BOOST_TEST(q.wakes() == 1u);
    q.on_attempt(1);
    BOOST_TEST(q.erase(1) == 2u);
    BOOST_TEST(!q.woken(2)); // no second retry for a second message
}

BOOST_AUTO_TEST_CASE(k_permits_wake_k_heads_in_turn) {
    waiter_queue q;
    for (waiter_queue::id w = 1; w <= 4; ++w)
        q.push(w);
    BOOST_TEST(q.on_release(3, 5) == 1u); // "permits 3" of a semaphore of 5
    BOOST_TEST(q.wakes() == 3u);
    for (waiter_queue::id w = 1; w <= 3; ++w) {
        BOOST_TEST(q.woken(w));
        q.on_attempt(w);
        q.erase(w); // granted: the next head has what is left
    }
    BOOST_TEST(!q.woken(4)); // three permits, three retries
}

BOOST_AUTO_TEST_CASE(wake_ups_are_capped_by_capacity_and_waiters) {
    waiter_queue q;
    q.push(1);
    q.push(2);
    q.on_release(5, 10);
    BOOST_TEST(q.wakes() == 2u); // two waiters
    waiter_queue r;
    for (waiter_queue::id w = 1; w <= 6; ++w)
        r.push(w);
    r.on_release(4, 3);
    r.on_release(4, 3);
    BOOST_TEST(r.wakes() == 3u); // a semaphore of 3 never frees more than 3 at once
}

// "all" (every waiter may retry) twice, with wake-ups pending: no overflow, everyone stays
// woken (the review's 1 pending + "all" gave 0).
BOOST_AUTO_TEST_CASE(all_twice_saturates_instead_of_wrapping) {
    waiter_queue q;
    for (waiter_queue::id w = 1; w <= 4; ++w)
        q.push(w);
    constexpr auto all = static_cast<std::size_t>(-1);
    q.on_release(1, all);
    q.on_release(all, all);
    BOOST_TEST(q.wakes() == 4u);
    q.on_attempt(1);
    q.on_release(all, all);
    BOOST_TEST(q.wakes() == 4u);
    BOOST_TEST(q.messages() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_waiter_queue
