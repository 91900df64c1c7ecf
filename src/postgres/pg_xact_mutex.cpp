// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/deliver.hpp"
#include "postgres/core/pg_lock_sql.hpp"
#include "postgres/io/pg_lock_service.hpp"
#include <corolock/postgres/xact_mutex.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

namespace corolock {

namespace asio = boost::asio;
using detail::pg_lock_service;

pg_xact_mutex::pg_xact_mutex(pg_connection& conn, std::string name, pg_xact_options opts)
    : core_(std::make_shared<detail::pg_xact_core>()) {
    core_->service = pg_lock_service::of(detail::access::impl_ptr(conn));
    core_->name = std::move(name);
    core_->key = detail::pg_sql::xact_key(core_->name);
    core_->opts = opts;
    core_->invalid = detail::pg_sql::check_name(core_->name);
    if (!core_->invalid)
        core_->invalid = detail::pg_sql::check_xact_options(opts);
}

pg_xact_mutex::~pg_xact_mutex() {
    cancel();
}

pg_xact_mutex::executor_type pg_xact_mutex::get_executor() const noexcept {
    return core_->service->conn().get_executor();
}

const std::string& pg_xact_mutex::name() const noexcept {
    return core_->name;
}

std::int64_t pg_xact_mutex::key() const noexcept {
    return core_->key;
}

void pg_xact_mutex::cancel() {
    detail::cancel_pending(core_, &pg_lock_service::cancel_xact);
}

void pg_xact_mutex::transact_impl(clock::time_point deadline,
                                  std::span<const pg_query_view> queries,
                                  std::vector<pg_result>& results, handler_type h) {
    auto svc = core_->service;
    results.clear();
    std::vector<detail::pg_query> qs;
    bool bad = queries.empty();
    for (const auto& q : queries) {
        detail::pg_query copy{std::string(q.sql), {}};
        bad = bad || q.sql.find('\0') != std::string_view::npos;
        for (const auto& p : q.params) {
            bad = bad || (p && p->find('\0') != std::string_view::npos);
            copy.params.push_back(p ? std::optional<std::string>(std::string(*p)) : std::nullopt);
        }
        qs.push_back(std::move(copy));
    }
    if (bad && !core_->invalid)
        return detail::deliver(std::move(h), asio::system_executor(),
                               error_code(error::invalid_argument));
    if (auto ec = core_->invalid
                      ? core_->invalid
                      : (deadline == clock::time_point::min() ? error_code(error::invalid_wait)
                                                              : error_code()))
        return detail::deliver(std::move(h), svc->conn().get_executor(), ec);
    auto slot = asio::get_associated_cancellation_slot(h);
    auto op = std::make_shared<detail::pg_xact_op>(
        core_, detail::pg_sql::xact_params_of(core_->opts, deadline, clock::now()), std::move(h),
        svc->conn().strand());
    op->deadline = deadline;
    op->queries = std::move(qs);
    op->results = &results;
    detail::cancel_on_signal(slot, svc, op, &pg_lock_service::cancel_xact);
    asio::dispatch(svc->conn().strand(), [svc, op] { svc->start_xact(op); });
}

} // namespace corolock
