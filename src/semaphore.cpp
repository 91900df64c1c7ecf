// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/access.hpp"
#include "core/lock_scripts.hpp"
#include "io/acquire_op.hpp"
#include "io/cluster_impl.hpp"
#include <corolock/semaphore.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

namespace corolock {

namespace asio = boost::asio;
using detail::clock;
using detail::deliver;

namespace detail {

// The semaphore handle's shared part: one acquisition handle, whose acquisitions each ask for
// their own number of permits.
struct semaphore_core {
    semaphore_core(lock_transport t, std::string n, std::size_t l, mutex_options o,
                   std::shared_ptr<lock_service> s)
        : limit(l), handle(std::make_shared<mutex_core>()) {
        handle->spec = std::make_shared<const lock_spec>(std::move(t), std::move(n), o, l);
        handle->svc = std::move(s);
    }

    const std::size_t limit;
    std::shared_ptr<mutex_core> handle;
    const lock_spec& spec() const noexcept { return *handle->spec; }
};

} // namespace detail

semaphore::semaphore(connection& conn, std::string name, std::size_t limit, mutex_options opts)
    : core_(std::make_shared<detail::semaphore_core>(
          detail::lock_transport(detail::access::impl(conn).shared_from_this()), std::move(name),
          limit, opts, detail::lock_service::of(detail::access::impl(conn)))) {}

semaphore::semaphore(cluster& c, std::string name, std::size_t limit, mutex_options opts)
    : core_(std::make_shared<detail::semaphore_core>(
          detail::lock_transport(detail::access::impl(c).shared_from_this()), std::move(name),
          limit, opts, detail::lock_service::of(detail::access::impl(c)))) {}

semaphore::~semaphore() {
    cancel();
}

void semaphore::cancel() {
    asio::post(core_->spec().io.strand(), [h = core_->handle] {
        for (auto& op : std::vector(h->pending))
            op->cancel();
    });
}

semaphore::executor_type semaphore::get_executor() const noexcept {
    return core_->spec().io.executor();
}
const std::string& semaphore::name() const noexcept {
    return core_->spec().name;
}
std::size_t semaphore::limit() const noexcept {
    return core_->limit;
}
const mutex_options& semaphore::options() const noexcept {
    return core_->spec().opts;
}

void semaphore::acquire_impl(std::size_t permits, clock::time_point deadline, bool once,
                             acquire_handler h) {
    const auto& spec = core_->spec();
    if (!spec.invalid && (permits < 1 || permits > core_->limit)) {
        // Fails before anything is sent, and never inline.
        core_->handle->svc->stats_.acquired(acquire_outcome::error, {});
        return deliver(std::move(h), spec.io.executor(), error_code(error::invalid_argument),
                       lease{});
    }
    detail::start_acquire(core_->handle, deadline, once, std::move(h), permits);
}

void semaphore::usage_impl(asio::any_completion_handler<void(error_code, semaphore_usage)> h) {
    const auto& spec = core_->spec();
    if (spec.invalid && spec.invalid != error::invalid_argument) // a bad limit: still readable
        return deliver(std::move(h), spec.io.executor(), spec.invalid, semaphore_usage{});
    const std::string_view keys[] = {spec.name};
    auto req =
        std::make_shared<request>(detail::make_evalsha(detail::semaphore_usage_script(), keys, {}));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, spec.io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    spec.io.start_eval(
        detail::semaphore_usage_script(), spec.name, req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                semaphore_usage u;
                if (!ec)
                    ec = detail::decode_pair(*resp, u.limit, u.used);
                std::move(h)(ec, u);
            })));
}

void semaphore::set_limit_impl(std::size_t limit,
                               asio::any_completion_handler<void(error_code)> h) {
    const auto& spec = core_->spec();
    auto ec = spec.invalid == error::invalid_argument ? error_code() : spec.invalid;
    if (!ec && (limit < 1 || limit > 1'000'000'000))
        ec = error::invalid_argument;
    if (ec)
        return deliver(std::move(h), spec.io.executor(), ec);
    const std::string_view keys[] = {spec.name};
    const std::string text = std::to_string(limit);
    const std::string_view args[] = {text};
    auto req = std::make_shared<request>(
        detail::make_evalsha(detail::semaphore_set_limit_script(), keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, spec.io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    spec.io.start_eval(
        detail::semaphore_set_limit_script(), spec.name, req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                std::int64_t v = 0;
                if (!ec)
                    ec = detail::decode_integer(*resp, v);
                std::move(h)(ec);
            })));
}

} // namespace corolock
