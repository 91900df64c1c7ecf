// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock concepts and capabilities of each backend, and fencing tokens that carry their
// backend.
#include <corolock/local_mutex.hpp>
#include <corolock/lock_concepts.hpp>
#include <corolock/mutex.hpp>
#include <corolock/redlock.hpp>
#include <corolock/semaphore.hpp>

#include <boost/test/unit_test.hpp>

#include <set>
#include <sstream>
#include <stdexcept>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_lock_concepts {

using corolock::fencing_kind;
using corolock::fencing_token;
using corolock::lock_backend;
using corolock::lock_capabilities;
using corolock::lock_owner;

// The Redis mutex models the fenced concept as it is.
static_assert(corolock::lock_lease<corolock::lease>);
static_assert(corolock::lock_hold<corolock::nested_hold>);
static_assert(corolock::lock_handle<corolock::mutex>);
// RedLock has no token and no nested holds: only the unfenced form.
static_assert(corolock::unfenced_lock_lease<corolock::redlock_lease>);
static_assert(!corolock::lock_lease<corolock::redlock_lease>);
static_assert(corolock::unfenced_lock_handle<corolock::redlock>);
static_assert(!corolock::lock_handle<corolock::redlock>);
// The in-process backend models the same concept as the Redis mutex.
static_assert(corolock::lock_lease<corolock::local_lease>);
static_assert(corolock::lock_hold<corolock::local_hold>);
static_assert(corolock::lock_handle<corolock::local_mutex>);
// A semaphore's lease is a `lease` but the semaphore has no lease_type: not a lock handle.
static_assert(!corolock::unfenced_lock_handle<corolock::semaphore>);
// A lease is not a handle, nor a handle a lease.
static_assert(!corolock::unfenced_lock_handle<corolock::lease>);
static_assert(!corolock::unfenced_lock_lease<corolock::mutex>);

static_assert(corolock::mutex::capabilities == lock_capabilities{lock_backend::redis,
                                                                 fencing_kind::time_based, false,
                                                                 true, lock_owner::acquisition});
static_assert(corolock::redlock::capabilities.fencing == fencing_kind::none);
static_assert(corolock::redlock::capabilities.loss_detected_in_bounded_time);
static_assert(!corolock::redlock::capabilities.grant_survives_failover);
static_assert(corolock::local_mutex::capabilities.fencing == fencing_kind::total_order);
static_assert(corolock::local_mutex::capabilities.backend == lock_backend::local);

// Generic code can require a capability.
template <class M>
constexpr bool fences_in_total_order = M::capabilities.fencing == fencing_kind::total_order;
static_assert(fences_in_total_order<corolock::local_mutex>);
static_assert(!fences_in_total_order<corolock::mutex>);

BOOST_AUTO_TEST_SUITE(lock_concepts)

BOOST_AUTO_TEST_CASE(tokens_of_one_backend_order_by_value) {
    const fencing_token a(lock_backend::redis, 5), b(lock_backend::redis, 7);
    BOOST_TEST((a < b));
    BOOST_TEST((b > a));
    BOOST_TEST((a != b));
    BOOST_TEST((a == fencing_token(lock_backend::redis, 5)));
    BOOST_TEST(b.value() == 7u);
    BOOST_TEST((b.backend() == lock_backend::redis));
    // A store keeps the largest token per backend: a std::set of one backend's tokens works.
    std::set<fencing_token> seen{b, a, fencing_token(lock_backend::redis, 6)};
    BOOST_TEST(seen.begin()->value() == 5u);
    BOOST_TEST(seen.rbegin()->value() == 7u);
}

BOOST_AUTO_TEST_CASE(tokens_of_different_backends_never_compare) {
    // The misuse: a Redis token (a server time in µs) against a local sequence number. As raw
    // numbers the Redis one would silently win; as tokens every comparison refuses.
    const fencing_token redis(lock_backend::redis, 1'732'000'000'000'000);
    const fencing_token local(lock_backend::local, 1);
    BOOST_CHECK_THROW((void)(redis > local), std::invalid_argument);
    BOOST_CHECK_THROW((void)(redis < local), std::invalid_argument);
    BOOST_CHECK_THROW((void)(redis <= local), std::invalid_argument);
    BOOST_CHECK_THROW((void)(redis >= local), std::invalid_argument);
    BOOST_CHECK_THROW((void)(redis == local), std::invalid_argument);
    BOOST_CHECK_THROW((void)(redis != local), std::invalid_argument);
    BOOST_CHECK_THROW((void)(redis <=> local), std::invalid_argument);
    // Equal values do not make them comparable either.
    BOOST_CHECK_THROW((void)(fencing_token(lock_backend::redis, 1) == local),
                      std::invalid_argument);
    // The default token is backend `none`: a "largest seen" must start from its backend's 0.
    BOOST_CHECK_THROW((void)(fencing_token() < local), std::invalid_argument);
    BOOST_TEST((fencing_token(lock_backend::local, 0) < local));
    try {
        (void)(redis < local);
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("redis and local") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_CASE(empty_leases_have_their_backend_s_zero_token) {
    BOOST_TEST((corolock::lease().token() == fencing_token(lock_backend::redis, 0)));
    BOOST_TEST((corolock::nested_hold().token() == fencing_token(lock_backend::redis, 0)));
    BOOST_TEST((corolock::local_lease().token() == fencing_token(lock_backend::local, 0)));
    BOOST_CHECK_THROW((void)(corolock::lease().token() == corolock::local_lease().token()),
                      std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(tokens_and_capabilities_print) {
    std::ostringstream os;
    os << fencing_token(lock_backend::local, 42) << ' ' << fencing_token() << ' '
       << corolock::mutex::capabilities.fencing << ' ' << corolock::local_mutex::capabilities.owner
       << ' ' << lock_backend::postgres;
    BOOST_TEST(os.str() == "local:42 none:0 time_based acquisition postgres");
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_lock_concepts
