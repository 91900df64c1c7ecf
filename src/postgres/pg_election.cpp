// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public PostgreSQL election and its leadership. An election holds one `pg_mutex` (the term
// is its lease) and the row of corolock_leaders; campaigns, reads, ends and observers are run by
// the driver (io/pg_election_driver.cpp).
#include "core/access.hpp"
#include "core/decimal.hpp"
#include "io/deliver.hpp"
#include "postgres/core/pg_election_sql.hpp"
#include "postgres/io/pg_election_driver.hpp"
#include <corolock/postgres/election.hpp>

#include <boost/asio/system_executor.hpp>

#include <utility>

namespace corolock {

namespace asio = boost::asio;
using detail::deliver;

// ---------------------------------------------------------------------------------------------
// pg_election

pg_election::pg_election(pg_connection& conn, std::string name, pg_election_options opts)
    : core_(std::make_shared<detail::pg_election_core>(conn, std::move(name), opts)) {}

pg_election::~pg_election() {
    core_->lock.cancel();
}

pg_election::executor_type pg_election::get_executor() const noexcept {
    return core_->conn.get_executor();
}
const std::string& pg_election::name() const noexcept {
    return core_->name;
}
const pg_election_options& pg_election::options() const noexcept {
    return core_->opts;
}

void pg_election::campaign_impl(duration wait, std::string value,
                                asio::any_completion_handler<void(error_code, pg_leadership)> h) {
    detail::spawn_pg_campaign(core_, wait, std::move(value), std::move(h));
}

void pg_election::leader_impl(asio::any_completion_handler<void(error_code, leader_info)> h) {
    detail::read_pg_leader(core_, std::move(h));
}

void pg_election::install_impl(asio::any_completion_handler<void(error_code)> h) {
    core_->lock.async_install([core = core_, h = std::move(h)](error_code ec) mutable {
        if (ec)
            return deliver(std::move(h), core->conn.get_executor(), ec);
        auto r = std::make_shared<pg_result>();
        core->conn.async_query(detail::pg_election_sql::install, *r,
                               [core, r, h = std::move(h)](error_code ec) mutable {
                                   deliver(std::move(h), core->conn.get_executor(), ec);
                               });
    });
}

leader_observer pg_election::observe() {
    return detail::access::construct<leader_observer>(detail::start_pg_observer(core_));
}

// ---------------------------------------------------------------------------------------------
// pg_leadership

void pg_leadership::end_term(pg_lease& l, const std::shared_ptr<detail::pg_election_core>& core,
                             std::uint64_t) noexcept {
    // Ended without a resign: the row says so (fenced), and the lock is released once that is
    // answered (the lease rides in the handler). Nothing to do if that cannot even be sent.
    try {
        auto kept = std::make_shared<pg_lease>(std::move(l));
        detail::end_pg_term(core, *kept, [kept](error_code) {});
    } catch (...) {
    }
}

void pg_leadership::proclaim_impl(std::string value,
                                  asio::any_completion_handler<void(error_code)> h) {
    if (!held())
        return deliver(std::move(h), asio::system_executor(), error_code(error::not_owner));
    const auto& ex = core_->conn.get_executor();
    if (!valid())
        return deliver(std::move(h), ex, error_code(error::lease_lost));
    auto r = std::make_shared<pg_result>();
    const auto term = std::to_string(this->term().value());
    // The parameters are views: `value` is kept where they point (a moved short string would
    // leave them on an emptied buffer).
    auto v_text = std::make_shared<std::string>(std::move(value));
    const pg_param ps[] = {core_->name, term, *v_text};
    lease_.async_fenced_query(
        detail::pg_election_sql::proclaim, ps, *r,
        [this, core = core_, r, v_text, h = std::move(h)](error_code ec) mutable {
            std::uint64_t v = 0;
            if (ec == error::stale_token)
                ec = error::lease_lost;
            if (!ec && r->rows() == 0)
                ec = error::lease_lost; // the record is not this term's
            if (!ec &&
                (r->rows() != 1 || r->columns() != 2 || !detail::parse_decimal(r->value(0, 0), v)))
                ec = error::unexpected_reply;
            if (!ec) {
                value_ = std::move(*v_text);
                version_ = v;
            }
            deliver(std::move(h), core->conn.get_executor(), ec);
        });
}

void pg_leadership::resign_impl(asio::any_completion_handler<void(error_code)> h) {
    if (!held())
        return deliver(std::move(h), asio::system_executor(), error_code(error::not_owner));
    auto core = std::move(core_);
    auto kept = std::make_shared<pg_lease>(std::move(lease_));
    value_.clear();
    version_ = 0;
    // The release follows the end's answer; its outcome is the call's.
    detail::end_pg_term(core, *kept, [core, kept, h = std::move(h)](error_code) mutable {
        kept->async_release([core, h = std::move(h)](error_code ec) mutable {
            deliver(std::move(h), core->conn.get_executor(), ec);
        });
    });
}

} // namespace corolock
