// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The multi-lock's driver: one coroutine per acquisition sequences single-name acquisitions
// (`mutex`, with its waiting, wake-ups, renewal and fencing) on the connection's strand. The
// decisions it takes are in core/multi_plan.hpp (pure).
#include "io/multi_lock_driver.hpp"

#include "core/multi_plan.hpp"
#include "io/deliver.hpp"
#include "io/lock_service.hpp"
#include "io/nothrow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <tuple>

namespace corolock {

namespace asio = boost::asio;

namespace detail {

namespace {

using try_op = decltype(std::declval<mutex&>().async_try_acquire(asio::deferred));
using acquire_result = std::pair<error_code, multi_lease>;

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
                co_return acquire_result{
                    error_code{}, access::construct<multi_lease>(std::move(held), core->conn)};
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
                                     access::construct<multi_lease>(std::move(held), core->conn)};
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

void spawn_acquire(std::shared_ptr<multi_core> core,
                   std::shared_ptr<asio::cancellation_signal> signal, clock::time_point deadline,
                   bool once, asio::any_completion_handler<void(error_code, multi_lease)> h,
                   asio::any_completion_executor work) {
    core->pending.push_back(signal);
    auto& strand = core->conn->strand();
    asio::co_spawn(
        strand, run_acquire(core, deadline, once),
        asio::bind_cancellation_slot(
            signal->slot(),
            asio::bind_executor(strand, [core, signal, h = std::move(h), work = std::move(work)](
                                            std::exception_ptr ep, acquire_result r) mutable {
                auto& p = core->pending;
                p.erase(std::remove(p.begin(), p.end(), signal), p.end());
                if (ep) // only an allocation can fail in there
                    r = {asio::error::no_memory, multi_lease{}};
                deliver(std::move(h), core->conn->executor(), r.first, std::move(r.second));
                work = {};
            })));
}

} // namespace detail
} // namespace corolock
