// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock service's own decisions (hand-offs and their messages, renewal batches, the batch's
// WAIT, the TRYAGAIN split), event by event, with no server.
#include "core/lock_policy.hpp"

#include <corolock/mutex.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_lock_policy {

using corolock::error;
using corolock::error_code;
using corolock::detail::batch_wait;
using corolock::detail::max_renew_batch;
using corolock::detail::name_queue;
using corolock::detail::renew_batches;
using corolock::detail::replica_ask;
using corolock::detail::strictest_wait;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(lock_policy)

// A process whose coroutines keep handing the lock to each other must let other processes in:
// after 4 hand-offs in a row one release goes out plain (its waiters race on the message).
BOOST_AUTO_TEST_CASE(hand_offs_are_bounded_in_a_row) {
    name_queue n;
    std::vector<bool> over;
    for (int i = 0; i < 11; ++i)
        over.push_back(n.release_hands_over());
    const std::vector<bool> expected{true, true, true, true,  false, true,
                                     true, true, true, false, true};
    BOOST_TEST(over == expected, boost::test_tools::per_element());
}

// The hand-off wakes the head at once; its release's message, which arrives before either reply,
// must not wake anyone again. A later foreign release's message wakes the new head.
BOOST_AUTO_TEST_CASE(the_message_of_an_own_hand_off_wakes_nobody) {
    name_queue n;
    n.q.push(1);
    n.q.push(2);
    BOOST_TEST(n.hand_off() == 1u);
    BOOST_TEST(n.own_releases() == 1u);
    BOOST_TEST(n.on_message() == 0u); // our own release's message
    n.q.erase(1);                     // the head got the lock
    BOOST_TEST(n.on_message() == 2u); // someone else's release
}

// A hand-off's release that sent no message (it released nothing, or nobody else waited, or the
// PUBLISH was refused): the count of own messages to come must drop, or the next foreign
// release would be swallowed.
BOOST_AUTO_TEST_CASE(a_release_that_sent_no_message_expects_none) {
    name_queue n;
    n.q.push(7);
    BOOST_TEST(n.hand_off() == 7u);
    BOOST_TEST(n.on_release_reply(true, false, false) == 0u);
    BOOST_TEST(n.own_releases() == 0u);
    BOOST_TEST(n.on_release_reply(true, true, false) == 0u); // never below zero
    BOOST_TEST(n.own_releases() == 0u);
    BOOST_TEST(n.on_message() == 7u); // a foreign release's message wakes the head
    // A hand-off whose message came: nothing more to do at its reply.
    n.q.clear_wakes();
    BOOST_TEST(n.hand_off() == 7u);
    BOOST_TEST(n.on_message() == 0u);
    BOOST_TEST(n.on_release_reply(true, true, true) == 0u);
    BOOST_TEST(n.own_releases() == 0u);
}

// A plain release (no hand-off) of a mutex whose waiters are all on this connection sends no
// message: none of them was refused by this holder. Its reply is the news: it wakes the head.
// One that published, or released nothing, leaves the waking to the message, or to nobody.
BOOST_AUTO_TEST_CASE(a_plain_release_without_a_message_wakes_the_head_at_its_reply) {
    name_queue n;
    n.q.push(3);
    n.q.push(4);
    BOOST_TEST(n.on_release_reply(false, true, false) == 3u);
    BOOST_TEST(n.q.woken(3));
    n.q.clear_wakes();
    BOOST_TEST(n.on_release_reply(false, true, true) == 0u);
    BOOST_TEST(n.on_release_reply(false, false, false) == 0u);
    BOOST_TEST(!n.q.woken(3));
    BOOST_TEST(n.own_releases() == 0u);
}

BOOST_AUTO_TEST_CASE(a_hand_off_with_nobody_queued_counts_nothing) {
    name_queue n;
    BOOST_TEST(n.hand_off() == 0u);
    BOOST_TEST(n.own_releases() == 0u);
}

BOOST_AUTO_TEST_CASE(renewals_go_out_100_a_call) {
    const std::vector<std::uint16_t> slots(250, 0);
    const auto b = renew_batches(slots, false);
    BOOST_REQUIRE_EQUAL(b.size(), 3u);
    BOOST_TEST(b[0].size() == max_renew_batch);
    BOOST_TEST(b[1].size() == max_renew_batch);
    BOOST_TEST(b[2].size() == 50u);
    BOOST_TEST(b[0].front() == 0u);
    BOOST_TEST(b[2].back() == 249u);
    BOOST_TEST(renew_batches({}, false).empty());
}

// On a cluster a script's keys must share a slot: one slot per call, each lease exactly once.
BOOST_AUTO_TEST_CASE(on_a_cluster_one_slot_a_call) {
    std::vector<std::uint16_t> slots;
    for (int i = 0; i < 230; ++i)
        slots.push_back(static_cast<std::uint16_t>(i % 3 == 0 ? 5 : i % 3 == 1 ? 16000 : 7));
    const auto b = renew_batches(slots, true);
    std::multiset<std::size_t> seen;
    for (const auto& batch : b) {
        BOOST_TEST(batch.size() <= max_renew_batch);
        for (auto i : batch) {
            BOOST_TEST(slots[i] == slots[batch.front()]);
            seen.insert(i);
        }
        for (std::size_t k = 1; k < batch.size(); ++k)
            BOOST_TEST(batch[k - 1] < batch[k]); // order kept within a slot
    }
    BOOST_TEST(seen.size() == slots.size());
    BOOST_TEST(std::set<std::size_t>(seen.begin(), seen.end()).size() == slots.size());
    BOOST_TEST(b.size() == 3u); // 77, 77 and 76 leases: one call per slot
    // A single server mixes slots freely.
    BOOST_TEST(renew_batches(slots, false).size() == 3u);
}

BOOST_AUTO_TEST_CASE(the_batch_waits_as_its_strictest_lease) {
    const replica_ask none{}, one_fast{1, 50ms, true}, two_fast{2, 50ms, true},
        two_slow{2, 200ms, false};
    BOOST_TEST(!strictest_wait(std::vector{none, none}).strictest.has_value());
    auto w = strictest_wait(std::vector{none, one_fast, two_fast, two_slow, one_fast});
    BOOST_REQUIRE(w.strictest.has_value());
    BOOST_TEST(*w.strictest == 3u); // most replicas, then the longest timeout
    BOOST_TEST(!w.count_connected); // one lease insists on the full count
    w = strictest_wait(std::vector{one_fast, none, two_fast});
    BOOST_TEST(*w.strictest == 2u);
    BOOST_TEST(w.count_connected);
}

BOOST_AUTO_TEST_CASE(try_again_splits_a_batch_of_several) {
    using corolock::detail::split_on_try_again;
    BOOST_TEST(split_on_try_again(error::try_again, 2));
    BOOST_TEST(!split_on_try_again(error::try_again, 1)); // alone already: waits it out
    BOOST_TEST(!split_on_try_again(error::moved, 5));
    BOOST_TEST(!split_on_try_again(error_code(), 5));
}

// The figures the docs state, read from the docs: changing one in the code without the docs
// (or the docs without the code) fails here.
namespace {
std::string doc(const char* file) {
    std::ifstream in(std::string(COROLOCK_DOC_DIR) + "/" + file);
    BOOST_TEST_REQUIRE(in.good(), "cannot read doc/" << file);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}
} // namespace

BOOST_AUTO_TEST_CASE(documented_defaults_and_limits_are_the_code_s) {
    using namespace std::chrono_literals;
    const auto design = doc("design.md"), usage = doc("usage.md");
    BOOST_TEST(corolock::detail::max_lock_reply_nodes == 1024u);
    BOOST_TEST(design.find("`max_lock_reply_nodes` (1,024) nodes") != std::string::npos);
    BOOST_TEST(corolock::detail::max_renew_batch == 100u);
    BOOST_TEST(design.find("renewal batches (100 a call") != std::string::npos);
    BOOST_TEST(corolock::detail::name_queue::max_handoff_streak == 4u);
    BOOST_TEST(design.find("At most 4 hand-offs in a row per name") != std::string::npos);
    const corolock::mutex_options o;
    BOOST_TEST((o.try_timeout == 1s));
    BOOST_TEST(usage.find("| `try_timeout` | 1 s |") != std::string::npos);
}

// The life of a waiter's record (intent, reservation, place), as the synchronizers' docs state
// it: 2 x retry_max + 1 s, 5 s at the default retry_max.
BOOST_AUTO_TEST_CASE(documented_waiting_record_ttl_is_the_code_s) {
    using namespace std::chrono_literals;
    BOOST_TEST((corolock::detail::waiting_record_ttl(corolock::mutex_options{}.retry_max) == 5s));
    BOOST_TEST((corolock::detail::waiting_record_ttl(200ms) == 1400ms));
    for (const char* file : {"shared_mutex.md", "fair_mutex.md", "semaphore.md"}) {
        const auto text = doc(file);
        BOOST_TEST(text.find("2 × retry_max + 1 s") != std::string::npos, file);
    }
    // The "(5 s by default)" of shared_mutex.md and fair_mutex.md carry a marker that doc_claims
    // checks against waiting_record_ttl (doc/doc_checks.md).
}

BOOST_AUTO_TEST_CASE(option_bounds_shared_by_every_lock) {
    using namespace std::chrono_literals;
    using corolock::detail::valid_lease;
    using corolock::detail::valid_retry;
    using corolock::detail::within;
    BOOST_TEST(!valid_lease(99ms));
    BOOST_TEST(valid_lease(100ms));
    BOOST_TEST(valid_lease(std::chrono::hours(24 * 365)));
    BOOST_TEST(!valid_lease(std::chrono::hours(24 * 365) + 1ns));
    BOOST_TEST(valid_retry(1ms, 1ms));
    BOOST_TEST(!valid_retry(0ms, 1ms));
    BOOST_TEST(!valid_retry(50ms, 49ms));
    BOOST_TEST(within(0ms, 0ms));
    BOOST_TEST(!within(-1ns, 0ms));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_lock_policy
