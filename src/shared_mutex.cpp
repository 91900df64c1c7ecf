// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/access.hpp"
#include "io/acquire_op.hpp"
#include "io/cluster_impl.hpp"
#include <corolock/shared_mutex.hpp>

#include <boost/asio/post.hpp>

#include <utility>

namespace corolock {

namespace asio = boost::asio;
using detail::clock;

namespace detail {

// The two sides of a shared_mutex, each an acquisition handle of its own kind on one name.
struct shared_mutex_core {
    shared_mutex_core(const lock_transport& io, const std::string& name, const mutex_options& o,
                      const std::shared_ptr<lock_service>& svc)
        : reader(make(io, name, o, svc, lock_spec::kind::shared)),
          writer(make(io, name, o, svc, lock_spec::kind::exclusive)) {}

    static std::shared_ptr<mutex_core> make(const lock_transport& io, const std::string& name,
                                            const mutex_options& o,
                                            const std::shared_ptr<lock_service>& svc,
                                            lock_spec::kind k) {
        auto c = std::make_shared<mutex_core>();
        c->spec = std::make_shared<const lock_spec>(io, name, o, k);
        c->svc = svc;
        return c;
    }

    std::shared_ptr<mutex_core> reader, writer;
};

} // namespace detail

shared_mutex::shared_mutex(connection& conn, std::string name, mutex_options opts)
    : core_(std::make_shared<detail::shared_mutex_core>(
          detail::lock_transport(detail::access::impl(conn).shared_from_this()), name, opts,
          detail::lock_service::of(detail::access::impl(conn)))) {}

shared_mutex::shared_mutex(cluster& c, std::string name, mutex_options opts)
    : core_(std::make_shared<detail::shared_mutex_core>(
          detail::lock_transport(detail::access::impl(c).shared_from_this()), name, opts,
          detail::lock_service::of(detail::access::impl(c)))) {}

shared_mutex::~shared_mutex() {
    cancel();
}

void shared_mutex::cancel() {
    asio::post(core_->writer->spec->io.strand(), [core = core_] {
        for (const auto& side : {core->reader, core->writer})
            for (auto& op : std::vector(side->pending))
                op->cancel();
    });
}

shared_mutex::executor_type shared_mutex::get_executor() const noexcept {
    return core_->writer->spec->io.executor();
}
const std::string& shared_mutex::name() const noexcept {
    return core_->writer->spec->name;
}
const mutex_options& shared_mutex::options() const noexcept {
    return core_->writer->spec->opts;
}

void shared_mutex::start(bool exclusive, clock::time_point deadline, bool once, acquire_handler h) {
    detail::start_acquire(exclusive ? core_->writer : core_->reader, deadline, once, std::move(h));
}

void shared_mutex::convert_impl(const lease& from, bool downgrade, acquire_handler h) {
    auto st = detail::access::state(from);
    const auto& side = downgrade ? core_->writer : core_->reader;
    const auto& to = downgrade ? core_->reader : core_->writer;
    if (!st || st->spec != side->spec)
        return detail::deliver(std::move(h), side->spec->io.executor(),
                               error_code(error::not_owner), lease{});
    auto& strand = side->spec->io.strand();
    detail::enter_strand(
        strand, [st = std::move(st), to = to->spec, downgrade, h = std::move(h)]() mutable {
            auto svc = st->svc;
            svc->convert(std::move(st), std::move(to), downgrade, std::move(h));
        });
}

} // namespace corolock
