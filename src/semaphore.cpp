// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_scripts.hpp"
#include "io/access.hpp"
#include "io/acquire_op.hpp"
#include "io/cluster_impl.hpp"
#include <corolock/semaphore.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <map>
#include <mutex>

namespace corolock {

namespace asio = boost::asio;
using detail::clock;
using detail::deliver;

namespace detail {

// The semaphore handle's shared part: one acquisition handle per number of permits asked (each
// its own spec: the member prefix and the release's message carry k), made on first use.
struct semaphore_core {
    semaphore_core(lock_transport t, std::string n, std::size_t l, mutex_options o,
                   std::shared_ptr<lock_service> s)
        : io(std::move(t)), name(std::move(n)), limit(l), opts(o), svc(std::move(s)),
          usage_spec(io, name, opts, 1, limit == 0 ? 1 : limit) {}

    lock_transport io;
    const std::string name;
    const std::size_t limit;
    const mutex_options opts;
    std::shared_ptr<lock_service> svc;
    const lock_spec usage_spec; // the argument checks of the name and the options

    std::shared_ptr<mutex_core> handle(std::size_t permits) {
        std::lock_guard<std::mutex> g(m);
        auto& h = by_permits[permits];
        if (!h) {
            h = std::make_shared<mutex_core>();
            h->spec = std::make_shared<const lock_spec>(io, name, opts, permits, limit);
            h->svc = svc;
        }
        return h;
    }
    std::vector<std::shared_ptr<mutex_core>> handles() {
        std::lock_guard<std::mutex> g(m);
        std::vector<std::shared_ptr<mutex_core>> out;
        for (auto& [k, h] : by_permits)
            out.push_back(h);
        return out;
    }

    std::mutex m;
    std::map<std::size_t, std::shared_ptr<mutex_core>> by_permits;
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
    asio::post(core_->io.strand(), [handles = core_->handles()] {
        for (const auto& h : handles)
            for (auto& op : std::vector(h->pending))
                op->cancel();
    });
}

semaphore::executor_type semaphore::get_executor() const noexcept {
    return core_->io.executor();
}
const std::string& semaphore::name() const noexcept {
    return core_->name;
}
std::size_t semaphore::limit() const noexcept {
    return core_->limit;
}
const mutex_options& semaphore::options() const noexcept {
    return core_->opts;
}

clock::time_point semaphore::deadline_in(duration wait) noexcept {
    return detail::deadline_in(wait);
}

void semaphore::acquire_impl(std::size_t permits, clock::time_point deadline, bool once,
                             acquire_handler h) {
    // A count out of range is checked by its spec (invalid_argument); 0 gets a spec of its own
    // that says so, and never reaches the server.
    detail::start_acquire(core_->handle(permits), deadline, once, std::move(h));
}

void semaphore::usage_impl(asio::any_completion_handler<void(error_code, semaphore_usage)> h) {
    const auto& spec = core_->usage_spec;
    if (spec.invalid)
        return deliver(std::move(h), core_->io.executor(), spec.invalid, semaphore_usage{});
    const std::string_view keys[] = {core_->name};
    auto req =
        std::make_shared<request>(detail::make_evalsha(detail::semaphore_usage_script(), keys, {}));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, core_->io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    core_->io.start_eval(
        detail::semaphore_usage_script(), core_->name, req, *resp,
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
    auto ec = core_->usage_spec.invalid;
    if (!ec && (limit < 1 || limit > 1'000'000'000))
        ec = error::invalid_argument;
    if (ec)
        return deliver(std::move(h), core_->io.executor(), ec);
    const std::string_view keys[] = {core_->name};
    const std::string text = std::to_string(limit);
    const std::string_view args[] = {text};
    auto req = std::make_shared<request>(
        detail::make_evalsha(detail::semaphore_set_limit_script(), keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, core_->io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    core_->io.start_eval(
        detail::semaphore_set_limit_script(), core_->name, req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                std::int64_t v = 0;
                if (!ec)
                    ec = detail::decode_integer(*resp, v);
                std::move(h)(ec);
            })));
}

} // namespace corolock
