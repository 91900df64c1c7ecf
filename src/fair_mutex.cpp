// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/access.hpp"
#include "io/acquire_op.hpp"
#include "io/cluster_impl.hpp"
#include <corolock/fair_mutex.hpp>

#include <boost/asio/post.hpp>

namespace corolock {

namespace asio = boost::asio;
using detail::clock;

namespace {

template <class Owner>
std::shared_ptr<detail::mutex_core> make_core(Owner& owner, std::string name,
                                              const mutex_options& o) {
    auto c = std::make_shared<detail::mutex_core>();
    c->spec = std::make_shared<const detail::lock_spec>(
        detail::lock_transport(detail::access::impl(owner).shared_from_this()), std::move(name), o,
        detail::lock_spec::kind::fair);
    c->svc = detail::lock_service::of(detail::access::impl(owner));
    return c;
}

} // namespace

fair_mutex::fair_mutex(connection& conn, std::string name, mutex_options opts)
    : core_(make_core(conn, std::move(name), opts)) {}

fair_mutex::fair_mutex(cluster& c, std::string name, mutex_options opts)
    : core_(make_core(c, std::move(name), opts)) {}

fair_mutex::~fair_mutex() {
    cancel();
}

void fair_mutex::cancel() {
    asio::post(core_->spec->io.strand(), [core = core_] {
        for (auto& op : std::vector(core->pending))
            op->cancel();
    });
}

fair_mutex::executor_type fair_mutex::get_executor() const noexcept {
    return core_->spec->io.executor();
}
const std::string& fair_mutex::name() const noexcept {
    return core_->spec->name;
}
const mutex_options& fair_mutex::options() const noexcept {
    return core_->spec->opts;
}

void fair_mutex::acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
    detail::start_acquire(core_, deadline, once, std::move(h));
}

} // namespace corolock
