// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_LOCK_CONCEPTS_HPP
#define COROLOCK_LOCK_CONCEPTS_HPP

#include <corolock/capabilities.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/leadership_base.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

// The lock concepts: what generic code (`with_lock`, a test's exclusion checker, a user's
// request handler) may rely on across backends. Completion signatures are checked through
// `use_awaitable`: `void(error_code)` gives `awaitable<void>`, `void(error_code, L)` gives
// `awaitable<L>`. doc/backends.md says which backend models which concept.
namespace corolock {

/// A lease without a fencing token and without nested holds: `redlock_lease`. Move-only owner
/// of one acquisition; `valid_until()` is on the lease's own `clock` (`steady_clock` for the
/// Redis backends, `local_clock` for `local_mutex`); `async_wait_lost` completes with the loss
/// (`void(error_code)`), `async_release` gives the grant back (`void(error_code)`; a condition
/// `lock_lost` error means the section may have overlapped another owner).
template <class L>
concept unfenced_lock_lease = std::movable<L> && std::default_initializable<L> &&
    requires(L& l, const L& c) {
    typename L::clock;
    { c.owns() } -> std::same_as<bool>;
    { static_cast<bool>(c) } -> std::same_as<bool>;
    { c.valid() } -> std::same_as<bool>;
    { c.lost() } -> std::same_as<bool>;
    { c.valid_until() } -> std::same_as<typename L::clock::time_point>;
    { l.async_wait_lost(boost::asio::use_awaitable) } -> std::same_as<boost::asio::awaitable<void>>;
    { l.async_release(boost::asio::use_awaitable) } -> std::same_as<boost::asio::awaitable<void>>;
};

/// A nested hold taken from a lease (`lease::hold`): a share of the same grant, released when
/// the lease and every hold are gone.
template <class H>
concept lock_hold = std::movable<H> && requires(H& h, const H& c) {
    { c.owns() } -> std::same_as<bool>;
    { c.valid() } -> std::same_as<bool>;
    { c.token() } -> std::same_as<fencing_token>;
    { h.async_release(boost::asio::use_awaitable) } -> std::same_as<boost::asio::awaitable<void>>;
};

/// A fenced lease with nested holds: `lease`, `local_lease`. `token()` carries its backend (see
/// `fencing_token`); `hold()` gives a `lock_hold`.
template <class L>
concept lock_lease = unfenced_lock_lease<L> && requires(const L& c) {
    { c.token() } -> std::same_as<fencing_token>;
    { c.hold() } -> lock_hold;
};

/// A lock handle whose leases model `unfenced_lock_lease`: `redlock`, and every `lock_handle`.
/// It names one lock, is shared by the coroutines that take it, and gives each acquisition its
/// own `lease_type`. An empty lease from `async_try_acquire` means "held by another owner".
template <class M>
concept unfenced_lock_handle = unfenced_lock_lease<typename M::lease_type> &&
    std::same_as<typename M::clock, typename M::lease_type::clock> &&
    requires(M& m, const M& c, typename M::clock::duration d, typename M::clock::time_point t) {
    { M::capabilities } -> std::convertible_to<lock_capabilities>;
    { c.name() } -> std::convertible_to<std::string_view>;
    {
        m.async_acquire(boost::asio::use_awaitable)
        } -> std::same_as<boost::asio::awaitable<typename M::lease_type>>;
    {
        m.async_acquire_for(d, boost::asio::use_awaitable)
        } -> std::same_as<boost::asio::awaitable<typename M::lease_type>>;
    {
        m.async_acquire_until(t, boost::asio::use_awaitable)
        } -> std::same_as<boost::asio::awaitable<typename M::lease_type>>;
    {
        m.async_try_acquire(boost::asio::use_awaitable)
        } -> std::same_as<boost::asio::awaitable<typename M::lease_type>>;
    m.cancel();
};

/// A fenced lock handle: `mutex`, `local_mutex`. Its leases model `lock_lease` and its
/// capabilities promise tokens (time-based or total order).
template <class M>
concept lock_handle = unfenced_lock_handle<M> && lock_lease<typename M::lease_type> &&
    (M::capabilities.fencing != fencing_kind::none);

/// A leadership (`leadership`, `zk_leadership`): a fenced lease on the term, whose token is the
/// term, with the value it proclaimed.
template <class L>
concept leader_term = std::movable<L> && std::default_initializable<L> &&
    lock_lease<typename L::lease_type> && requires(L& l, const L& c, std::string v) {
    { c.owns() } -> std::same_as<bool>;
    { c.valid() } -> std::same_as<bool>;
    { c.term() } -> std::same_as<fencing_token>;
    { c.value() } -> std::convertible_to<std::string_view>;
    { c.version() } -> std::same_as<std::uint64_t>;
    { l.lease() } -> std::same_as<typename L::lease_type&>;
    {
        l.async_proclaim(v, boost::asio::use_awaitable)
        } -> std::same_as<boost::asio::awaitable<void>>;
    { l.async_resign(boost::asio::use_awaitable) } -> std::same_as<boost::asio::awaitable<void>>;
    { l.async_wait_lost(boost::asio::use_awaitable) } -> std::same_as<boost::asio::awaitable<void>>;
};

/// A leader election (`election`, `zk_election`; doc/election.md): campaigns that wait for the
/// term, a leader read, and observers (`leader_observer`, the same type for every backend).
template <class E>
concept leader_election = leader_term<typename E::leadership_type> &&
    requires(E& e, const E& c, std::string v, std::chrono::steady_clock::duration d) {
    { E::capabilities } -> std::convertible_to<lock_capabilities>;
    { c.name() } -> std::convertible_to<std::string_view>;
    {
        e.async_campaign(v, boost::asio::use_awaitable)
        } -> std::same_as<boost::asio::awaitable<typename E::leadership_type>>;
    {
        e.async_campaign_for(d, v, boost::asio::use_awaitable)
        } -> std::same_as<boost::asio::awaitable<typename E::leadership_type>>;
    {
        e.async_leader(boost::asio::use_awaitable)
        } -> std::same_as<boost::asio::awaitable<leader_info>>;
    { e.observe() } -> std::same_as<leader_observer>;
};

} // namespace corolock

#endif
