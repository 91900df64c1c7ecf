// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_POSTGRES_ELECTION_HPP
#define COROLOCK_POSTGRES_ELECTION_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/leadership_base.hpp>
#include <corolock/postgres/config.hpp>
#include <corolock/postgres/connection.hpp>
#include <corolock/postgres/mutex.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <memory>
#include <string>

// Leader election over PostgreSQL (doc/election.md, "PostgreSQL"): the term is a pg_mutex lease
// on the name, the record of the last term a row of corolock_leaders, changes announced with
// NOTIFY.
namespace corolock {

namespace detail {
struct pg_election_core;
} // namespace detail

/// Policy of one PostgreSQL election (doc/election.md). Checked by the first campaign
/// (`invalid_lease`, `invalid_argument`).
struct pg_election_options {
    /// The leader's lock: its lease, watchdog, `max_hold` and back-off; `retry_max` is also how
    /// often an observer reads the record (notifications sent while its connection was down
    /// are lost).
    pg_mutex_options lock;
    /// After a leader is lost (its lease expired, not resigned), no new term begins before
    /// this much time has passed since the next campaigner found it lost. 0 to 1 h; 0: off.
    std::chrono::steady_clock::duration lock_delay = std::chrono::steady_clock::duration::zero();
};

/// A won campaign over PostgreSQL: the term, held as a `pg_lease` (fenced statements with
/// `lease().async_fenced_query`, whose token, the term, is the table's sequence value).
/// Move-only. Destroying it ends the term (observers are told, fenced by the lease) and then
/// releases the lock.
/// Thread safety: as `leadership_base`.
class COROLOCK_DECL pg_leadership
    : public leadership_base<pg_leadership, pg_lease, detail::pg_election_core> {
public:
    /// An empty leadership (holds no term).
    pg_leadership() noexcept = default;

private:
    friend struct detail::access;
    friend class leadership_base<pg_leadership, pg_lease, detail::pg_election_core>;
    pg_leadership(pg_lease l, std::shared_ptr<detail::pg_election_core> core, std::string value)
        : leadership_base(std::move(l), std::move(core), std::move(value)) {}
    void proclaim_impl(std::string value, boost::asio::any_completion_handler<void(error_code)> h);
    void resign_impl(boost::asio::any_completion_handler<void(error_code)> h);
    static void end_term(pg_lease& l, const std::shared_ptr<detail::pg_election_core>& core,
                         std::uint64_t version) noexcept;
};

/// Leader election on one name over PostgreSQL (doc/election.md): campaigners wait on a
/// `pg_mutex` (woken by its release notification), the winner writes the row of
/// `corolock_leaders` and announces it on the channel `corolock_leader`, observers listen and
/// read. Call `async_install` once (idempotent) before the first campaign. The row stays after
/// the last term (one per election name).
///
/// Thread safety: every member function may be called from any thread.
/// Lifetime: the connection must outlive the election and its observers.
class COROLOCK_DECL pg_election : public election_base<pg_election, pg_leadership> {
public:
    /// The type of `get_executor()`.
    using executor_type = boost::asio::any_io_executor;
    /// The guarantees of the term, the same as `pg_mutex`'s (doc/backends.md).
    static constexpr lock_capabilities capabilities = pg_mutex::capabilities;

    /// No I/O. Invalid arguments are reported by the first call.
    pg_election(pg_connection& conn, std::string name, pg_election_options opts = {});
    ~pg_election();
    pg_election(const pg_election&) = delete;
    pg_election& operator=(const pg_election&) = delete;

    /// The executor given at construction.
    executor_type get_executor() const noexcept;
    /// The name given at construction.
    const std::string& name() const noexcept;
    /// The options given at construction.
    const pg_election_options& options() const noexcept;

    /// Creates the lock's table (`pg_mutex::async_install`) and `corolock_leaders`, if absent.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the election must stay valid until completion.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: as `pg_connection::async_query`.
    /// Errors: as `pg_connection::async_query` (`server_error` when refused, text in the log).
    /// Thread safety: any thread.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_install(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, pg_election* self) { self->install_impl(std::move(handler)); }, token,
            this);
    }

    /// An observer of this election, listening from now on (its first event is the state it
    /// reads first).
    leader_observer observe();

private:
    friend class election_base<pg_election, pg_leadership>;
    using duration = std::chrono::steady_clock::duration;
    void campaign_impl(duration wait, std::string value,
                       boost::asio::any_completion_handler<void(error_code, pg_leadership)> h);
    void leader_impl(boost::asio::any_completion_handler<void(error_code, leader_info)> h);
    void install_impl(boost::asio::any_completion_handler<void(error_code)> h);

    std::shared_ptr<detail::pg_election_core> core_;
};

} // namespace corolock

#endif
