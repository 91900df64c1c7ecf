// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ELECTION_HPP
#define COROLOCK_ELECTION_HPP

#include <corolock/connection.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/leadership_base.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace corolock {

namespace detail {
struct election_core;
} // namespace detail

class cluster;

/// Policy of one election (doc/election.md). Checked by the first campaign (`invalid_lease`,
/// `invalid_argument`, with the field named in the log).
struct election_options {
    /// The leader's lock: its lease (a leader that dies is replaced within it), watchdog,
    /// `max_hold` (a term's longest length), back-off and `fence_retention`, which is also how
    /// long the record of the last term (`{N}:leader`) outlives its last proclamation.
    mutex_options lock;
    /// After a leader is lost (its lease expired or was forced, not resigned), no new term begins
    /// before this much time has passed since the next campaigner found it lost, so that writes
    /// the lost leader still had in flight drain first (Chubby's and Consul's lock-delay). 0 to
    /// 1 h; 0: off.
    std::chrono::steady_clock::duration lock_delay = std::chrono::steady_clock::duration::zero();
};

/// A won campaign over Redis: the term, held as a `lease` (lost signal, `valid_until()`,
/// watchdog, fenced writes with `lease().async_fenced_eval`, whose token is the term).
/// Move-only. Destroying it ends the term (observers are told at once, owner-checked) and
/// releases the lock.
/// Thread safety: as `leadership_base`.
class COROLOCK_DECL leadership
    : public leadership_base<leadership, corolock::lease, detail::election_core> {
public:
    /// An empty leadership (holds no term).
    leadership() noexcept = default;

private:
    friend struct detail::access;
    friend class leadership_base<leadership, corolock::lease, detail::election_core>;
    leadership(corolock::lease l, std::shared_ptr<detail::election_core> core, std::string value)
        : leadership_base(std::move(l), std::move(core), std::move(value)) {}
    void proclaim_impl(std::string value, boost::asio::any_completion_handler<void(error_code)> h);
    void resign_impl(boost::asio::any_completion_handler<void(error_code)> h);
    // Tells the observers that a held term ends (owner-checked), then releases `l`.
    static void end_term(corolock::lease& l, const std::shared_ptr<detail::election_core>& core,
                         std::uint64_t version) noexcept;
};

/// Leader election on one name (doc/election.md): campaigners wait for the term (woken by the
/// release, not polling), the winner proclaims a value, observers follow every change. A
/// handle meant to be shared, as `mutex`; the term is the `leadership` a campaign returns.
/// Keys: the lock's (doc/keys.md, `mutex`), the record `{N}:leader` and the channel
/// `{N}:leader`.
///
/// Thread safety: every member function may be called from any thread.
/// Lifetime: the connection (or cluster) must outlive the election and its observers.
class COROLOCK_DECL election : public election_base<election, leadership> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// The guarantees of the term, the same as `mutex`'s (doc/backends.md).
    static constexpr lock_capabilities capabilities = mutex::capabilities;

    /// No I/O. Invalid arguments are reported by the first call.
    election(connection& conn, std::string name, election_options opts = {});
    /// Over a Redis Cluster: the lock, the record and the channel share the name's slot.
    election(cluster& c, std::string name, election_options opts = {});
    ~election();
    election(const election&) = delete;
    election& operator=(const election&) = delete;

    /// The executor given at construction.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const election_options& options() const noexcept;

    /// An observer of this election, subscribed from now on (its first event is the state it
    /// reads once subscribed).
    leader_observer observe();

private:
    friend class election_base<election, leadership>;
    using duration = std::chrono::steady_clock::duration;
    void campaign_impl(duration wait, std::string value,
                       boost::asio::any_completion_handler<void(error_code, leadership)> h);
    void leader_impl(boost::asio::any_completion_handler<void(error_code, leader_info)> h);

    std::shared_ptr<detail::election_core> core_;
};

} // namespace corolock

#endif
