// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public multi-lock and its lease. The multi-lock holds one `mutex` per name and has no
// script of its own; an acquisition is checked here and handed to the driver
// (io/multi_lock_driver.cpp), which sequences the single-name acquisitions.
#include "core/access.hpp"
#include "core/multi_plan.hpp"
#include "io/cluster_impl.hpp"
#include "io/lock_service.hpp"
#include "io/multi_lock_driver.hpp"
#include <corolock/multi_lock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <algorithm>

namespace corolock {

namespace asio = boost::asio;
using detail::clock;
using detail::deliver;

namespace detail {
namespace {

using release_op = decltype(std::declval<lease&>().async_release(asio::deferred));

} // namespace
} // namespace detail

// ---------------------------------------------------------------------------------------------
// multi_lease

bool multi_lease::valid() const noexcept {
    return owns() &&
           std::all_of(members_.begin(), members_.end(), [](const lease& l) { return l.valid(); });
}

clock::time_point multi_lease::valid_until() const noexcept {
    if (!owns())
        return clock::time_point::min();
    auto t = clock::time_point::max();
    for (const auto& l : members_)
        t = std::min(t, l.valid_until());
    return t;
}

bool multi_lease::lost() const noexcept {
    return std::any_of(members_.begin(), members_.end(), [](const lease& l) { return l.lost(); });
}

fencing_token multi_lease::token(std::string_view name) const noexcept {
    auto it = std::lower_bound(members_.begin(), members_.end(), name,
                               [](const lease& l, std::string_view n) { return l.name() < n; });
    return it != members_.end() && it->name() == name ? it->token()
                                                      : fencing_token(lock_backend::redis, 0);
}

std::vector<fencing_token> multi_lease::tokens() const {
    std::vector<fencing_token> out;
    out.reserve(members_.size());
    for (const auto& l : members_)
        out.push_back(l.token());
    return out;
}

std::shared_ptr<detail::multi_wait> multi_lease::prepare_wait() {
    if (!owns())
        return nullptr;
    auto w = std::make_shared<detail::multi_wait>();
    w->conn = conn_;
    w->ops.reserve(members_.size());
    for (auto& l : members_)
        w->ops.push_back(l.async_wait_lost(asio::deferred));
    return w;
}

void multi_lease::wait_lost_impl(std::shared_ptr<detail::multi_wait> w, handler_ec h) {
    // The first member to complete decides: lost, or aborted (released or cancelled); the
    // others are then cancelled. The handler's slot reaches every member's wait.
    auto slot = asio::get_associated_cancellation_slot(h);
    auto conn = w->conn;
    auto& strand = conn->strand();
    asio::experimental::make_parallel_group(std::move(w->ops))
        .async_wait(asio::experimental::wait_for_one(),
                    asio::bind_cancellation_slot(
                        slot, asio::bind_executor(strand, [conn, h = std::move(h)](
                                                              std::vector<std::size_t> order,
                                                              std::vector<error_code> ecs) mutable {
                            deliver(std::move(h), conn->executor(), ecs[order.front()]);
                        })));
}

void multi_lease::release_impl(std::vector<lease> members,
                               std::shared_ptr<const detail::lock_transport> conn, handler_ec h) {
    // Each member's release is posted to the strand, one after the other, before the writer
    // runs: they leave in one write.
    std::vector<detail::release_op> ops;
    ops.reserve(members.size());
    for (auto& l : members)
        ops.push_back(l.async_release(asio::deferred));
    auto& strand = conn->strand();
    const auto batch = conn->write_batch(); // the releases run here when the strand is idle
    asio::experimental::make_parallel_group(std::move(ops))
        .async_wait(asio::experimental::wait_for_all(),
                    asio::bind_executor(
                        strand, [conn, h = std::move(h)](std::vector<std::size_t>,
                                                         std::vector<error_code> ecs) mutable {
                            // A loss first: it is what the caller must act on.
                            auto it = std::find_if(ecs.begin(), ecs.end(), [](const error_code& e) {
                                return e == condition::lock_lost;
                            });
                            if (it == ecs.end())
                                it = std::find_if(ecs.begin(), ecs.end(),
                                                  [](const error_code& e) { return !!e; });
                            deliver(std::move(h), conn->executor(),
                                    it == ecs.end() ? error_code{} : *it);
                        }));
}

// ---------------------------------------------------------------------------------------------
// multi_lock

namespace detail {

// The members of a multi-lock over `where` (a connection or a cluster).
template <class Where>
void make_members(multi_core& c, Where& where, std::vector<std::string> names, mutex_options opts) {
    c.conn = std::make_shared<const lock_transport>(detail::access::impl(where).shared_from_this());
    c.opts = opts;
    c.invalid = order_names(names);
    c.names = std::move(names);
    if (c.invalid)
        return;
    c.mutexes.reserve(c.names.size());
    for (const auto& name : c.names) {
        // Checked here, for every name, so that a bad name fails before anything is sent.
        if (!c.invalid)
            c.invalid = lock_spec(*c.conn, name, opts).invalid;
        c.mutexes.push_back(std::make_unique<mutex>(where, name, opts));
    }
}

} // namespace detail

multi_lock::multi_lock(connection& conn, std::vector<std::string> names, mutex_options opts)
    : core_(std::make_shared<detail::multi_core>()) {
    detail::make_members(*core_, conn, std::move(names), opts);
}

multi_lock::multi_lock(cluster& cl, std::vector<std::string> names, mutex_options opts)
    : core_(std::make_shared<detail::multi_core>()) {
    detail::make_members(*core_, cl, std::move(names), opts);
}

multi_lock::~multi_lock() {
    cancel();
}

void multi_lock::cancel() {
    asio::post(core_->conn->strand(), [core = core_] {
        for (auto& s : std::vector(core->pending))
            s->emit(asio::cancellation_type::terminal);
    });
}

multi_lock::executor_type multi_lock::get_executor() const noexcept {
    return core_->conn->executor();
}
const std::vector<std::string>& multi_lock::names() const noexcept {
    return core_->names;
}
const mutex_options& multi_lock::options() const noexcept {
    return core_->opts;
}

void multi_lock::acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
    auto ec = core_->invalid;
    if (!ec && deadline == clock::time_point::min())
        ec = error::invalid_wait;
    if (ec) // before anything is sent, and never inline
        return deliver(std::move(h), core_->conn->executor(), ec, multi_lease{});
    auto signal = std::make_shared<asio::cancellation_signal>();
    auto& strand = core_->conn->strand();
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<asio::cancellation_signal>(signal),
                     strand](asio::cancellation_type t) {
            asio::post(strand, [weak, t] {
                if (auto s = weak.lock())
                    s->emit(t);
            });
        });
    // Tracked: a pending acquire keeps the caller's execution context from running out of work.
    asio::any_completion_executor work =
        asio::prefer(asio::get_associated_executor(h, core_->conn->executor()),
                     asio::execution::outstanding_work.tracked);
    asio::post(strand, [core = core_, signal, deadline, once, h = std::move(h),
                        work = std::move(work)]() mutable {
        detail::spawn_acquire(std::move(core), std::move(signal), deadline, once, std::move(h),
                              std::move(work));
    });
}

} // namespace corolock
