// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/access.hpp"
#include "core/lock_scripts.hpp"
#include "io/acquire_op.hpp"
#include "io/cluster_impl.hpp"
#include <corolock/mutex.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

namespace corolock {

namespace asio = boost::asio;
using detail::clock;
using detail::deliver;

lock_stats get_lock_stats(connection& conn) {
    auto p = std::static_pointer_cast<detail::lock_service>(
        detail::access::impl(conn).existing_lock_service());
    return p ? p->stats() : lock_stats{};
}

lock_stats get_lock_stats(cluster& c) {
    auto p = std::static_pointer_cast<detail::lock_service>(
        detail::access::impl(c).existing_lock_service());
    return p ? p->stats() : lock_stats{};
}

void set_lock_metrics(connection& conn, lock_metrics_options opts) {
    detail::lock_service::of(detail::access::impl(conn))->configure(std::move(opts));
}

void set_lock_metrics(cluster& c, lock_metrics_options opts) {
    detail::lock_service::of(detail::access::impl(c))->configure(std::move(opts));
}

mutex::mutex(connection& conn, std::string name, mutex_options opts)
    : core_(std::make_shared<detail::mutex_core>()) {
    core_->spec = std::make_shared<const detail::lock_spec>(
        detail::lock_transport(detail::access::impl(conn).shared_from_this()), std::move(name),
        opts);
    core_->svc = detail::lock_service::of(detail::access::impl(conn));
}

mutex::mutex(cluster& c, std::string name, mutex_options opts)
    : core_(std::make_shared<detail::mutex_core>()) {
    core_->spec = std::make_shared<const detail::lock_spec>(
        detail::lock_transport(detail::access::impl(c).shared_from_this()), std::move(name), opts);
    core_->svc = detail::lock_service::of(detail::access::impl(c));
}

mutex::~mutex() {
    cancel();
}

void mutex::cancel() {
    asio::post(core_->spec->io.strand(), [core = core_] {
        for (auto& op : std::vector(core->pending))
            op->cancel();
    });
}

mutex::executor_type mutex::get_executor() const noexcept {
    return core_->spec->io.executor();
}
const std::string& mutex::name() const noexcept {
    return core_->spec->name;
}
const mutex_options& mutex::options() const noexcept {
    return core_->spec->opts;
}

void mutex::acquire_impl(clock::time_point deadline, bool once, duration lease_override,
                         acquire_handler h) {
    detail::start_acquire(core_, deadline, once, std::move(h), 0, lease_override);
}

void mutex::ttl_impl(asio::any_completion_handler<void(error_code, std::int64_t)> h) {
    const auto& spec = *core_->spec;
    if (!detail::lockable_name(spec.name))
        return deliver(std::move(h), spec.io.executor(), error_code(error::invalid_name),
                       std::int64_t{0});
    auto req = std::make_shared<request>();
    req->push("PTTL", spec.name);
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, spec.io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    auto done = [req, resp, h = std::move(h)](error_code ec, std::size_t) mutable {
        std::int64_t v = 0;
        if (!ec)
            ec = detail::decode_integer(*resp, v);
        std::move(h)(ec, v);
    };
    spec.io.exec(spec.name, req, detail::make_adapter(*resp),
                 asio::bind_cancellation_slot(slot, asio::bind_executor(ex, std::move(done))));
}

void mutex::force_unlock_impl(asio::any_completion_handler<void(error_code, bool)> h) {
    const auto& spec = *core_->spec;
    if (!detail::lockable_name(spec.name))
        return deliver(std::move(h), spec.io.executor(), error_code(error::invalid_name), false);
    const std::string_view keys[] = {spec.name};
    const bool sharded = spec.io.sharded();
    const std::string_view args[] = {spec.channel, sharded ? "S" : "P",
                                     sharded ? std::string_view() : detail::forced_channel};
    auto req =
        std::make_shared<request>(detail::make_evalsha(detail::force_unlock_script(), keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, spec.io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    spec.io.start_eval(
        detail::force_unlock_script(), spec.name, req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                std::int64_t v = 0;
                if (!ec)
                    ec = detail::decode_integer(*resp, v);
                std::move(h)(ec, v == 1);
            })));
}

} // namespace corolock
