// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public redlock and its lease: the handle's options are checked and its spec built here;
// acquisitions, leases and their timers are the driver's (io/redlock_driver.cpp), to which these
// bodies post. See doc/redlock.md.
#include "core/access.hpp"
#include "core/lease_table.hpp"
#include "core/lock_policy.hpp"
#include "core/lock_scripts.hpp"
#include "io/deliver.hpp"
#include "io/redlock_driver.hpp"
#include <corolock/redlock.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace corolock {

namespace asio = boost::asio;

namespace detail {
namespace {

error_code check(std::size_t n, bool duplicates, std::string_view name, const redlock_options& o) {
    if (n < 3 || n % 2 == 0 || duplicates)
        return error::invalid_argument;
    if (!lockable_name(name))
        return error::invalid_name;
    if (!valid_lease(o.lease))
        return error::invalid_lease;
    const auto zero = clock::duration::zero();
    if (!within(o.node_timeout, zero) || !(o.drift_factor >= 0.0 && o.drift_factor <= 0.5) ||
        !within(o.max_hold, zero) || !valid_retry(o.retry_base, o.retry_max))
        return error::invalid_argument;
    return {};
}

} // namespace
} // namespace detail

// ---------------------------------------------------------------------------------------------
// redlock

redlock::redlock(std::span<connection* const> nodes, std::string name, redlock_options opts) {
    if (nodes.empty() || std::find(nodes.begin(), nodes.end(), nullptr) != nodes.end())
        throw std::invalid_argument("corolock::redlock: needs non-null connections");
    auto spec = std::make_shared<detail::redlock_spec>();
    for (auto* c : nodes)
        spec->nodes.push_back(detail::access::impl(*c).shared_from_this());
    const bool duplicates =
        std::set<connection*>(nodes.begin(), nodes.end()).size() != nodes.size();
    spec->name = std::move(name);
    spec->opts = opts;
    spec->invalid = detail::check(nodes.size(), duplicates, spec->name, opts);
    if (detail::lockable_name(spec->name))
        spec->channel = detail::derived_key(spec->name, "released");
    if (!spec->invalid) {
        using detail::clock;
        spec->drift = detail::drift_for(opts.lease, opts.drift_factor);
        spec->node_timeout =
            opts.node_timeout > clock::duration::zero()
                ? opts.node_timeout
                : std::max<clock::duration>(opts.lease / 20, std::chrono::milliseconds(5));
        spec->lease_ms = std::to_string(detail::to_ms(opts.lease));
    }
    auto ex = spec->executor();
    core_ = detail::make_abandonable<detail::redlock_core>(ex, std::move(spec));
}

redlock::~redlock() {
    cancel();
}

void redlock::cancel() {
    asio::post(core_->strand, [core = core_] {
        for (auto& op : std::vector(core->pending))
            op->cancel();
    });
}

redlock::executor_type redlock::get_executor() const noexcept {
    return core_->spec->executor();
}
const std::string& redlock::name() const noexcept {
    return core_->spec->name;
}
const redlock_options& redlock::options() const noexcept {
    return core_->spec->opts;
}
std::size_t redlock::size() const noexcept {
    return core_->spec->nodes.size();
}

redlock_stats redlock::stats() const noexcept {
    constexpr auto r = std::memory_order_relaxed;
    const auto& c = core_->stats;
    return {c.rounds.load(r),     c.rounds_timed_out.load(r), c.validity_failures.load(r),
            c.extensions.load(r), c.leases_lost.load(r),      c.releases_sent.load(r)};
}

void redlock::acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
    const auto& spec = *core_->spec;
    auto ec = spec.invalid;
    if (!ec && deadline == clock::time_point::min())
        ec = error::invalid_wait;
    if (ec) // fails before anything is sent, and never inline
        return detail::deliver(std::move(h), spec.executor(), ec, redlock_lease{});
    detail::redlock_params p;
    p.nodes = spec.nodes.size();
    // A wait already over when it begins (a zero wait, a deadline past) is one round, as a try:
    // the lock if it is free, else acquire_timeout. Racing a round against a deadline already
    // past would abandon every round (as mutex's acquire does not either).
    const bool no_wait = !once && deadline <= clock::now();
    p.deadline = no_wait ? clock::time_point::max() : deadline;
    p.once = once || no_wait;
    p.held_is_timeout = no_wait;
    p.lease = spec.opts.lease;
    p.drift = spec.drift;
    p.node_timeout = spec.node_timeout;
    p.retry_base = spec.opts.retry_base;
    p.retry_max = spec.opts.retry_max;
    auto slot = asio::get_associated_cancellation_slot(h);
    auto op = std::make_shared<detail::redlock_acquire_op>(core_, p, std::move(h));
    auto strand = core_->strand;
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<detail::redlock_acquire_op>(op),
                     strand](asio::cancellation_type) {
            asio::post(strand, [weak] {
                if (auto o = weak.lock())
                    o->cancel();
            });
        });
    asio::post(strand, [op = std::move(op)] { op->start(); });
}

// ---------------------------------------------------------------------------------------------
// redlock_lease

redlock_lease& redlock_lease::operator=(redlock_lease&& other) noexcept {
    if (this != &other) {
        reset();
        share_ = std::move(other.share_);
    }
    return *this;
}

redlock_lease::~redlock_lease() {
    reset();
}

void redlock_lease::reset() noexcept {
    if (!share_)
        return;
    auto s = std::move(share_);
    auto strand = s->core->strand;
    asio::post(strand, [s = std::move(s)] { s->release({}); });
}

bool redlock_lease::valid() const noexcept {
    return share_ && share_->lost_view.load(std::memory_order_relaxed) == 0 &&
           clock::now().time_since_epoch().count() <
               share_->valid_until_view.load(std::memory_order_relaxed);
}

redlock_lease::clock::time_point redlock_lease::valid_until() const noexcept {
    return share_ ? clock::time_point(
                        clock::duration(share_->valid_until_view.load(std::memory_order_relaxed)))
                  : clock::time_point::min();
}

bool redlock_lease::lost() const noexcept {
    return share_ && share_->lost_view.load(std::memory_order_relaxed) != 0;
}

const std::string& redlock_lease::name() const noexcept {
    static const std::string none;
    return share_ ? share_->core->spec->name : none;
}

std::string_view redlock_lease::owner_id() const noexcept {
    return share_ ? detail::view(share_->reqs->owner) : std::string_view();
}

void redlock_lease::wait_lost_impl(std::shared_ptr<detail::redlock_lease_state> s, handler_ec h) {
    // The slot is wired here, not on the strand: a cancellation emitted before the posted
    // registration runs is posted after it, so it finds the waiter.
    const auto id = s->next_waiter.fetch_add(1, std::memory_order_relaxed) + 1;
    auto strand = s->core->strand;
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<detail::redlock_lease_state>(s), id,
                     strand](asio::cancellation_type) {
            asio::post(strand, [weak, id] {
                if (auto st = weak.lock())
                    st->cancel_wait_lost(id);
            });
        });
    asio::post(strand, [s = std::move(s), id, h = std::move(h)]() mutable {
        s->wait_lost(id, std::move(h));
    });
}

void redlock_lease::release_impl(std::shared_ptr<detail::redlock_lease_state> s, handler_ec h) {
    auto strand = s->core->strand;
    asio::post(strand,
               [s = std::move(s), h = std::move(h)]() mutable { s->release(std::move(h)); });
}

} // namespace corolock
