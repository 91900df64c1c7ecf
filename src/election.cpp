// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public election, its leadership and its observers. An election holds one `mutex` (the
// term is its lease) and three scripts of its own (core/election_core.hpp); campaigns and
// observers are run by the driver (io/election_driver.cpp).
#include "core/access.hpp"
#include "core/election_core.hpp"
#include "core/lock_scripts.hpp"
#include "io/cluster_impl.hpp"
#include "io/deliver.hpp"
#include "io/election_driver.hpp"
#include <corolock/cluster.hpp>
#include <corolock/election.hpp>

#include <boost/asio/bind_executor.hpp>

#include <utility>

namespace corolock {

namespace asio = boost::asio;
using detail::deliver;

namespace {

template <class Handle>
std::shared_ptr<detail::election_core> make_core(Handle& h, std::string name,
                                                 election_options opts) {
    auto m = std::make_unique<mutex>(h, name, opts.lock);
    return std::make_shared<detail::election_core>(
        detail::lock_transport(detail::access::impl(h).shared_from_this()), std::move(name), opts,
        std::move(m));
}

} // namespace

// ---------------------------------------------------------------------------------------------
// election

election::election(connection& conn, std::string name, election_options opts)
    : core_(make_core(conn, std::move(name), opts)) {}

election::election(cluster& c, std::string name, election_options opts)
    : core_(make_core(c, std::move(name), opts)) {}

election::~election() {
    core_->lock->cancel();
}

election::executor_type election::get_executor() const noexcept {
    return core_->io.executor();
}
const std::string& election::name() const noexcept {
    return core_->name;
}
const election_options& election::options() const noexcept {
    return core_->opts;
}

void election::campaign_impl(duration wait, std::string value,
                             asio::any_completion_handler<void(error_code, leadership)> h) {
    detail::spawn_campaign(core_, wait, std::move(value), std::move(h));
}

void election::leader_impl(asio::any_completion_handler<void(error_code, leader_info)> h) {
    if (!detail::lockable_name(core_->name))
        return deliver(std::move(h), core_->io.executor(), error_code(error::invalid_name),
                       leader_info{});
    const std::string_view keys[] = {core_->name, core_->fence};
    auto resp = std::make_shared<generic_response>();
    core_->eval(detail::leader_read_script(), keys, {}, resp,
                [core = core_, resp, h = std::move(h)](error_code ec) mutable {
                    detail::leader_view v;
                    if (!ec)
                        ec = detail::decode_leader_read(*resp, v);
                    deliver(std::move(h), core->io.executor(), ec,
                            ec ? leader_info{} : detail::info_of(v, lock_backend::redis));
                });
}

leader_observer election::observe() {
    return detail::access::construct<leader_observer>(detail::start_observer(core_));
}

// ---------------------------------------------------------------------------------------------
// leadership

void leadership::end_term(corolock::lease& l, const std::shared_ptr<detail::election_core>& core,
                          std::uint64_t) noexcept {
    // Ended without a resign: tell the observers (owner-checked), and release the lock once that
    // is answered (the lease rides in the handler): a release that went first would leave the
    // script nothing to end, and observers would see the end only at the lease's expiry.
    // Nothing to do if that cannot even be sent (no memory): the lease is released here.
    try {
        const std::string owner(l.owner_id());
        auto kept = std::make_shared<corolock::lease>(std::move(l));
        const std::string_view keys[] = {core->name, core->record};
        const auto rec = core->record_ms();
        const std::string_view args[] = {owner, rec, core->publish_flag(), core->channel};
        core->eval(detail::resign_script(), keys, args, std::make_shared<generic_response>(),
                   [kept](error_code) {});
    } catch (...) {
    }
}

void leadership::proclaim_impl(std::string value,
                               asio::any_completion_handler<void(error_code)> h) {
    if (!held())
        return deliver(std::move(h), asio::system_executor(), error_code(error::not_owner));
    const auto& ex = core_->io.executor();
    if (!valid())
        return deliver(std::move(h), ex, error_code(error::lease_lost));
    const std::string_view keys[] = {core_->name, core_->record};
    const auto rec = core_->record_ms();
    const std::string_view args[] = {lease_.owner_id(), value, rec, core_->publish_flag(),
                                     core_->channel};
    auto resp = std::make_shared<generic_response>();
    core_->eval(detail::proclaim_script(), keys, args, resp,
                [this, core = core_, resp, value, h = std::move(h)](error_code ec) mutable {
                    std::int64_t version = 0;
                    if (!ec)
                        ec = detail::decode_integer(*resp, version);
                    if (!ec && version <= 0)
                        ec = error::lease_lost;
                    if (!ec) {
                        value_ = std::move(value);
                        version_ = static_cast<std::uint64_t>(version);
                    }
                    deliver(std::move(h), core->io.executor(), ec);
                });
}

void leadership::resign_impl(asio::any_completion_handler<void(error_code)> h) {
    if (!held())
        return deliver(std::move(h), asio::system_executor(), error_code(error::not_owner));
    auto core = std::move(core_);
    auto l = std::move(lease_);
    value_.clear();
    version_ = 0;
    const std::string_view keys[] = {core->name, core->record};
    const auto rec = core->record_ms();
    const std::string_view args[] = {l.owner_id(), rec, core->publish_flag(), core->channel};
    // The release goes out behind the resign on the same connection; its outcome is the call's.
    core->eval(detail::resign_script(), keys, args, std::make_shared<generic_response>(),
               [core, l = std::move(l), h = std::move(h)](error_code) mutable {
                   l.async_release(asio::bind_executor(
                       core->io.strand(), [core, h = std::move(h)](error_code ec) mutable {
                           deliver(std::move(h), core->io.executor(), ec);
                       }));
               });
}

} // namespace corolock
