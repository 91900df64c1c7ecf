// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The scheduled job's driver: one begin is the job's mutex (waiting up to `wait`), then the
// begin script, which decides from the record whether this process runs the slot
// (core/job_core.hpp).
#include "io/job_driver.hpp"

#include "core/access.hpp"
#include "core/decimal.hpp"
#include "core/job_core.hpp"
#include "core/lock_scripts.hpp"
#include "io/deliver.hpp"
#include "io/spawn_op.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tuple>

namespace corolock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

using begin_result = std::tuple<error_code, job_run>;

asio::awaitable<begin_result> run_begin(std::shared_ptr<job_core> c, std::uint64_t slot) {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (!c->invalid.empty()) {
        c->io.log().log(logger::level::warning, "job " + c->name + ": " + c->invalid);
        co_return begin_result{error::invalid_argument, job_run{}};
    }
    // Two statements, not a conditional of two co_awaits (g++ 12 miscompiles that).
    std::tuple<error_code, lease> got;
    if (c->opts.wait == clock::duration::zero())
        got = co_await c->lock->async_try_acquire(asio::as_tuple(asio::use_awaitable));
    else
        got =
            co_await c->lock->async_acquire_for(c->opts.wait, asio::as_tuple(asio::use_awaitable));
    auto& [ec, l] = got;
    if (ec == error::acquire_timeout || (!ec && !l.owns()))
        co_return begin_result{error_code{},
                               access::construct<job_run>(lease{}, c, slot, job_outcome::busy)};
    if (ec)
        co_return begin_result{ec, job_run{}};
    const auto text = std::to_string(slot);
    const auto least = ms_text(c->opts.at_least_for);
    const auto rec = c->record_ms();
    const std::string_view keys[] = {c->name, c->record};
    const std::string_view args[] = {
        l.owner_id(), text, c->opts.mode == job_mode::at_most_once ? "M" : "L", least, rec};
    auto resp = std::make_shared<generic_response>();
    // Not cancellable once sent: its outcome decides what the lease is for.
    auto [eec] = co_await asio::async_initiate<decltype(asio::as_tuple(asio::use_awaitable)) const,
                                               void(error_code)>(
        [&](auto h) {
            c->io.run_script(job_begin_script(), c->name, keys, args, resp,
                             asio::bind_cancellation_slot(asio::cancellation_slot(), std::move(h)));
        },
        asio::as_tuple(asio::use_awaitable));
    std::optional<job_outcome> skip;
    if (!eec)
        eec = decode_job_begin(*resp, skip);
    if (eec || skip) {
        // Nothing to run (or an unknown outcome: the record may say started): the lock is
        // released, and the begin completes once it is free.
        co_await l.async_release(asio::as_tuple(asio::use_awaitable));
        if (eec)
            co_return begin_result{eec, job_run{}};
        if (skip == job_outcome::ran)
            co_return begin_result{error::lease_lost, job_run{}};
        co_return begin_result{error_code{}, access::construct<job_run>(lease{}, c, slot, *skip)};
    }
    co_return begin_result{error_code{},
                           access::construct<job_run>(std::move(l), c, slot, job_outcome::ran)};
}

} // namespace

job_core::job_core(lock_transport t, std::string n, job_options o,
                   std::unique_ptr<corolock::mutex> m)
    : io(std::move(t)), name(std::move(n)), record(derived_key(name, "job")), opts(o),
      lock(std::move(m)) {
    const clock::duration year = max_job_duration;
    if (opts.at_least_for < clock::duration::zero() || opts.at_least_for > year)
        invalid = "job_options::at_least_for is out of range (0 to 365 days)";
    else if (opts.record_retention < std::chrono::milliseconds(1) || opts.record_retention > year)
        invalid = "job_options::record_retention is out of range (1 ms to 365 days)";
    else if (opts.at_most_for < clock::duration::zero())
        invalid = "job_options::at_most_for is negative";
    else if (opts.wait < clock::duration::zero())
        invalid = "job_options::wait is negative";
}

std::string job_core::record_ms() const {
    return ms_text(opts.record_retention);
}

void spawn_job_begin(std::shared_ptr<job_core> core, std::uint64_t slot,
                     asio::any_completion_handler<void(error_code, job_run)> h) {
    const auto strand = core->io.strand();
    const auto ex = core->io.executor();
    spawn_op<job_run>(strand, ex, run_begin(std::move(core), slot), std::move(h));
}

} // namespace corolock::detail
