// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public scheduled job and its run. A job holds one `mutex` (a run is its lease) and the
// record {J}:job (core/job_core.hpp); a begin is run by the driver (io/job_driver.cpp).
#include "core/access.hpp"
#include "core/job_core.hpp"
#include "core/lock_scripts.hpp"
#include "io/cluster_impl.hpp"
#include "io/deliver.hpp"
#include "io/job_driver.hpp"
#include <corolock/cluster.hpp>
#include <corolock/job.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>

namespace corolock {

namespace asio = boost::asio;
using detail::deliver;

namespace {

template <class Handle>
std::shared_ptr<detail::job_core> make_core(Handle& h, std::string name, job_options opts) {
    auto lock_opts = opts.lock;
    lock_opts.max_hold = opts.at_most_for;
    auto m = std::make_unique<mutex>(h, name, lock_opts);
    return std::make_shared<detail::job_core>(
        detail::lock_transport(detail::access::impl(h).shared_from_this()), std::move(name), opts,
        std::move(m));
}

} // namespace

job::job(connection& conn, std::string name, job_options opts)
    : core_(make_core(conn, std::move(name), opts)) {}

job::job(cluster& c, std::string name, job_options opts)
    : core_(make_core(c, std::move(name), opts)) {}

job::~job() {
    core_->lock->cancel();
}

job::executor_type job::get_executor() const noexcept {
    return core_->io.executor();
}
const std::string& job::name() const noexcept {
    return core_->name;
}
const job_options& job::options() const noexcept {
    return core_->opts;
}

void job::begin_impl(std::uint64_t slot,
                     asio::any_completion_handler<void(error_code, job_run)> h) {
    detail::spawn_job_begin(core_, slot, std::move(h));
}

void job::slot_impl(std::chrono::steady_clock::duration period,
                    asio::any_completion_handler<void(error_code, std::uint64_t)> h) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(period).count();
    if (ms < 1) {
        core_->io.log().log(logger::level::warning,
                            "job " + core_->name + ": async_server_slot's period is below 1 ms");
        return deliver(std::move(h), core_->io.executor(), error_code(error::invalid_argument),
                       std::uint64_t{0});
    }
    auto req = std::make_shared<request>();
    req->push("TIME");
    auto resp = std::make_shared<generic_response>();
    auto slot = asio::get_associated_cancellation_slot(h);
    auto ex = asio::get_associated_executor(h, core_->io.executor());
    core_->io.exec(core_->name, req, detail::make_adapter(*resp),
                   asio::bind_cancellation_slot(
                       slot, asio::bind_executor(ex, [req, resp, ms, h = std::move(h)](
                                                         error_code ec, std::size_t) mutable {
                           std::uint64_t s = 0;
                           if (!ec)
                               ec = detail::decode_server_slot(*resp,
                                                               static_cast<std::uint64_t>(ms), s);
                           std::move(h)(ec, s);
                       })));
}

void job::last_done_impl(
    asio::any_completion_handler<void(error_code, std::optional<std::uint64_t>)> h) {
    if (!detail::lockable_name(core_->name))
        return deliver(std::move(h), core_->io.executor(), error_code(error::invalid_name),
                       std::optional<std::uint64_t>());
    const std::string_view keys[] = {core_->record};
    auto resp = std::make_shared<generic_response>();
    core_->io.run_script(detail::job_read_script(), core_->name, keys, {}, resp,
                         [core = core_, resp, h = std::move(h)](error_code ec) mutable {
                             std::optional<std::uint64_t> done;
                             if (!ec)
                                 ec = detail::decode_job_read(*resp, done);
                             deliver(std::move(h), core->io.executor(), ec, done);
                         });
}

void job_run::complete_impl(asio::any_completion_handler<void(error_code)> h) {
    if (!runs() || !core_)
        return deliver(std::move(h), asio::system_executor(), error_code(error::not_owner));
    auto core = std::move(core_);
    auto l = std::move(lease_);
    const auto text = std::to_string(slot_);
    const auto rec = core->record_ms();
    const std::string_view keys[] = {core->name, core->record};
    const std::string_view args[] = {l.owner_id(), text, rec};
    auto resp = std::make_shared<generic_response>();
    // The release goes out behind the mark, on the same connection; a mark refused (the lease
    // ended first) or unknown is the call's outcome, else the release's.
    core->io.run_script(
        detail::job_complete_script(), core->name, keys, args, resp,
        [core, resp, l = std::move(l), h = std::move(h)](error_code ec) mutable {
            std::int64_t marked = 0;
            if (!ec)
                ec = detail::decode_integer(*resp, marked);
            if (!ec && marked != 1)
                ec = error::lease_lost;
            if (ec) {
                l = corolock::lease{};
                return deliver(std::move(h), core->io.executor(), ec);
            }
            l.async_release(asio::bind_executor(core->io.strand(),
                                                [core, h = std::move(h)](error_code rec) mutable {
                                                    deliver(std::move(h), core->io.executor(), rec);
                                                }));
        });
}

} // namespace corolock
