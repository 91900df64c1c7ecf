// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The multi-lock sequences single-name acquisitions (`mutex`, with its waiting, wake-ups,
// renewal and fencing) and holds their leases together; it has no script of its own. The
// decisions it takes are in detail/multi_plan.hpp (pure).
#include "core/multi_plan.hpp"
#include "io/access.hpp"
#include "io/cluster_impl.hpp"
#include "io/lock_service.hpp"
#include <corolock/multi_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <tuple>

namespace corolock {

namespace asio = boost::asio;
using detail::clock;
using detail::deliver;

namespace detail {

struct multi_core {
    std::shared_ptr<const lock_transport> conn;
    std::vector<std::string> names; // sorted
    mutex_options opts;
    error_code invalid;
    std::vector<std::unique_ptr<mutex>> mutexes;                     // one per name, in name order
    std::vector<std::shared_ptr<asio::cancellation_signal>> pending; // strand only
};

struct multi_lease_access {
    static multi_lease make(std::vector<lease> members,
                            std::shared_ptr<const lock_transport> conn) {
        return multi_lease(std::move(members), std::move(conn));
    }
};

using wait_lost_op = decltype(std::declval<lease&>().async_wait_lost(asio::deferred));
struct multi_wait {
    std::vector<wait_lost_op> ops;
    std::shared_ptr<const lock_transport> conn;
};

namespace {

using try_op = decltype(std::declval<mutex&>().async_try_acquire(asio::deferred));
using release_op = decltype(std::declval<lease&>().async_release(asio::deferred));
using acquire_result = std::pair<error_code, multi_lease>;

asio::awaitable<bool> cancelled() {
    auto cs = co_await asio::this_coro::cancellation_state;
    co_return cs.cancelled() != asio::cancellation_type::none;
}

bool all_valid(const std::vector<lease>& held) {
    return std::all_of(held.begin(), held.end(), [](const lease& l) { return l.valid(); });
}

// One acquisition, on the connection's strand. Leases dropped on any early return are released
// without waiting, so no partial hold survives it.
asio::awaitable<acquire_result> run_acquire(std::shared_ptr<multi_core> core,
                                            clock::time_point deadline, bool once) {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    const auto n = core->mutexes.size();
    for (;;) {
        std::vector<lease> held(n);
        // 1. Every name at once: the tries are queued together, so they leave in one write and
        //    an uncontended acquisition costs one round trip. Tries never wait, so they cannot
        //    close a cycle with another multi-lock.
        std::vector<try_op> tries;
        tries.reserve(n);
        for (auto& m : core->mutexes)
            tries.push_back(m->async_try_acquire(asio::deferred));
        std::vector<std::size_t> order;
        std::vector<error_code> ecs;
        std::vector<lease> leases;
        {
            // Queued from the strand, after this suspends: they leave in the writer's one write.
            const auto batch = core->conn->write_batch();
            std::tie(order, ecs, leases) =
                co_await asio::experimental::make_parallel_group(std::move(tries))
                    .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
        }
        std::vector<bool> granted(n);
        for (std::size_t i = 0; i < n; ++i)
            granted[i] = leases[i].owns();
        auto plan = after_try_all(ecs, granted, once, clock::now() >= deadline);
        if (co_await cancelled())
            plan = {try_all_outcome::next::complete, asio::error::operation_aborted, 0};
        for (std::size_t i = 0; i < plan.keep; ++i)
            held[i] = std::move(leases[i]);
        leases.clear(); // the grants not kept are released here
        if (plan.what == try_all_outcome::next::complete) {
            if (plan.keep == n && !plan.ec)
                co_return acquire_result{error_code{},
                                         multi_lease_access::make(std::move(held), core->conn)};
            co_return acquire_result{plan.ec, multi_lease{}};
        }
        // 2. Wait for the rest in name order, holding the names below: a global order, so two
        //    multi-locks over overlapping sets never wait for each other in a cycle.
        for (std::size_t i = plan.keep; i < n; ++i) {
            auto [ec, l] = co_await core->mutexes[i]->async_acquire_until(
                deadline, asio::as_tuple(asio::use_awaitable));
            if (!ec && co_await cancelled())
                ec = asio::error::operation_aborted;
            if (ec)
                co_return acquire_result{ec, multi_lease{}};
            held[i] = std::move(l);
        }
        if (all_valid(held))
            co_return acquire_result{error_code{},
                                     multi_lease_access::make(std::move(held), core->conn)};
        // A name held since the first round was lost while waiting for a later one: everything
        // is given back and the acquisition starts over within its deadline.
        core->conn->log().log(logger::level::warning,
                              "corolock: multi-lock: a name was lost while waiting for the "
                              "others; every name is given back and the acquisition restarts");
        if (clock::now() >= deadline)
            co_return acquire_result{error_code(error::acquire_timeout), multi_lease{}};
    }
}

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

clock::time_point multi_lock::deadline_in(duration wait) noexcept {
    const auto now = clock::now();
    return wait >= clock::time_point::max() - now ? clock::time_point::max() : now + wait;
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
        core->pending.push_back(signal);
        auto& strand = core->conn->strand();
        asio::co_spawn(
            strand, detail::run_acquire(core, deadline, once),
            asio::bind_cancellation_slot(
                signal->slot(),
                asio::bind_executor(
                    strand, [core, signal, h = std::move(h), work = std::move(work)](
                                std::exception_ptr ep, detail::acquire_result r) mutable {
                        auto& p = core->pending;
                        p.erase(std::remove(p.begin(), p.end(), signal), p.end());
                        if (ep) // only an allocation can fail in there
                            r = {asio::error::no_memory, multi_lease{}};
                        deliver(std::move(h), core->conn->executor(), r.first, std::move(r.second));
                        work = {};
                    })));
    });
}

} // namespace corolock
