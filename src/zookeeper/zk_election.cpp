// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public ZooKeeper election and its leadership. An election holds one `zk_mutex` (the term
// is its lease) and the record `path/leader`; campaigns, reads and observers are run by the
// driver (io/zk_election_driver.cpp).
#include "core/access.hpp"
#include "io/deliver.hpp"
#include "zookeeper/io/zk_election_driver.hpp"
#include "zookeeper/io/zk_session.hpp"
#include <corolock/zookeeper/election.hpp>

#include <boost/asio/system_executor.hpp>

#include <utility>

namespace corolock {

namespace asio = boost::asio;
using detail::deliver;

// ---------------------------------------------------------------------------------------------
// zk_election

zk_election::zk_election(zk_connection& conn, std::string path, zk_election_options opts)
    : core_(std::make_shared<detail::zk_election_core>(conn, conn.impl_, std::move(path), opts)) {}

zk_election::~zk_election() {
    core_->lock.cancel();
}

zk_election::executor_type zk_election::get_executor() const noexcept {
    return core_->session->executor();
}
const std::string& zk_election::name() const noexcept {
    return core_->path;
}
const zk_election_options& zk_election::options() const noexcept {
    return core_->opts;
}

void zk_election::campaign_impl(duration wait, std::string value,
                                asio::any_completion_handler<void(error_code, zk_leadership)> h) {
    detail::spawn_zk_campaign(core_, wait, std::move(value), std::move(h));
}

void zk_election::leader_impl(asio::any_completion_handler<void(error_code, leader_info)> h) {
    detail::read_zk_leader(core_, std::move(h));
}

leader_observer zk_election::observe() {
    return detail::access::construct<leader_observer>(detail::start_zk_observer(core_));
}

// ---------------------------------------------------------------------------------------------
// zk_leadership

void zk_leadership::end_term(zk_lease& l, const std::shared_ptr<detail::zk_election_core>& core,
                             std::uint64_t version) noexcept {
    // Ended without a resign: the record says so (fenced), then the lease's own release follows
    // on the same session, in order. Nothing to do if that cannot even be sent (no memory).
    try {
        const auto rec = detail::format_record({false, l.token().value(), version, {}, {}});
        l.async_fenced_write(core->record, rec, [](error_code) {});
    } catch (...) {
    }
}

void zk_leadership::proclaim_impl(std::string value,
                                  asio::any_completion_handler<void(error_code)> h) {
    if (!held())
        return deliver(std::move(h), asio::system_executor(), error_code(error::not_owner));
    const auto& ex = core_->session->executor();
    if (!valid())
        return deliver(std::move(h), ex, error_code(error::lease_lost));
    const auto next = version_ + 1;
    auto rec = detail::format_record({true, term().value(), next, lease_.name(), value});
    lease_.async_fenced_write(core_->record, std::move(rec),
                              [this, core = core_, next, value = std::move(value),
                               h = std::move(h)](error_code ec) mutable {
                                  if (ec == error::stale_token)
                                      ec = error::lease_lost;
                                  // An unknown outcome may have written `next`: that version
                                  // is never written again.
                                  if (ec != error::lease_lost)
                                      version_ = next;
                                  if (!ec) {
                                      value_ = std::move(value);
                                      version_ = next;
                                  }
                                  deliver(std::move(h), core->session->executor(), ec);
                              });
}

void zk_leadership::resign_impl(asio::any_completion_handler<void(error_code)> h) {
    if (!held())
        return deliver(std::move(h), asio::system_executor(), error_code(error::not_owner));
    auto core = std::move(core_);
    auto l = std::move(lease_);
    const auto rec = detail::format_record({false, l.token().value(), version_, {}, {}});
    value_.clear();
    version_ = 0;
    // The record's end and the node's delete go out in this order on one session: the release
    // does not wait for the write's reply. Its outcome is the call's.
    l.async_fenced_write(core->record, rec, [](error_code) {});
    l.async_release([core, h = std::move(h)](error_code ec) mutable {
        deliver(std::move(h), core->session->executor(), ec);
    });
}

} // namespace corolock
