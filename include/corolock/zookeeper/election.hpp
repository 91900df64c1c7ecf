// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ZOOKEEPER_ELECTION_HPP
#define COROLOCK_ZOOKEEPER_ELECTION_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/leadership_base.hpp>
#include <corolock/zookeeper/connection.hpp>
#include <corolock/zookeeper/mutex.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <chrono>
#include <memory>
#include <string>

// Leader election over ZooKeeper (doc/election.md, "ZooKeeper"): the term is a zk_mutex lease
// on the election's path, the record of the last term its child `leader`.
namespace corolock {

namespace detail {
struct zk_election_core;
} // namespace detail

/// Policy of one ZooKeeper election (doc/election.md). The lease is the session's: a leader
/// whose session expires, or that cannot prove the leader's view of it in time, is lost.
struct zk_election_options {
    /// After a leader is lost (its session expired or its node was deleted, not resigned), no
    /// new term begins before this much time has passed since the next campaigner found it
    /// lost. 0 to 1 h; 0: off.
    std::chrono::steady_clock::duration lock_delay = std::chrono::steady_clock::duration::zero();
};

/// A won campaign over ZooKeeper: the term, held as a `zk_lease` (fenced writes with
/// `lease().async_fenced_write`, whose token, the term, is the lock node's czxid). Move-only.
/// Destroying it ends the term (the record says so first, then the node goes, on the same
/// session) and releases the lock.
/// Thread safety: as `leadership_base`.
class COROLOCK_DECL zk_leadership
    : public leadership_base<zk_leadership, zk_lease, detail::zk_election_core> {
public:
    /// An empty leadership (holds no term).
    zk_leadership() noexcept = default;

private:
    friend struct detail::access;
    friend class leadership_base<zk_leadership, zk_lease, detail::zk_election_core>;
    zk_leadership(zk_lease l, std::shared_ptr<detail::zk_election_core> core, std::string value)
        : leadership_base(std::move(l), std::move(core), std::move(value)) {}
    void proclaim_impl(std::string value, boost::asio::any_completion_handler<void(error_code)> h);
    void resign_impl(boost::asio::any_completion_handler<void(error_code)> h);
    static void end_term(zk_lease& l, const std::shared_ptr<detail::zk_election_core>& core,
                         std::uint64_t version) noexcept;
};

/// Leader election on one ZooKeeper path (doc/election.md): campaigners are `zk_mutex`
/// contenders on `path` (each watches only its predecessor), the winner writes the record
/// `path/leader`, observers watch the record and the leader's node. A handle meant to be
/// shared; the term is the `zk_leadership` a campaign returns. The record stays after the last
/// term (one node per election, as the lock's path itself).
///
/// Thread safety: every member function may be called from any thread.
/// Lifetime: the connection must outlive the election and its observers.
class COROLOCK_DECL zk_election : public election_base<zk_election, zk_leadership> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// The guarantees of the term, the same as `zk_mutex`'s (doc/backends.md).
    static constexpr lock_capabilities capabilities = zk_mutex::capabilities;

    /// No I/O. Invalid arguments are reported by the first call.
    zk_election(zk_connection& conn, std::string path, zk_election_options opts = {});
    ~zk_election();
    zk_election(const zk_election&) = delete;
    zk_election& operator=(const zk_election&) = delete;

    /// The executor given at construction.
    executor_type get_executor() const noexcept;
    /// The path given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const zk_election_options& options() const noexcept;

    /// An observer of this election, watching from now on (its first event is the state it
    /// reads first).
    leader_observer observe();

private:
    friend class election_base<zk_election, zk_leadership>;
    using duration = std::chrono::steady_clock::duration;
    void campaign_impl(duration wait, std::string value,
                       boost::asio::any_completion_handler<void(error_code, zk_leadership)> h);
    void leader_impl(boost::asio::any_completion_handler<void(error_code, leader_info)> h);

    std::shared_ptr<detail::zk_election_core> core_;
};

} // namespace corolock

#endif
