// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/deliver.hpp"
#include "postgres/core/pg_lock_sql.hpp"
#include "postgres/io/pg_lock_service.hpp"
#include <corolock/postgres/mutex.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

namespace corolock {

namespace asio = boost::asio;
using detail::pg_lease_state;
using detail::pg_lock_service;

namespace {

template <class Handler>
void fail_with(Handler h, error_code ec) {
    detail::deliver(std::move(h), asio::system_executor(), ec);
}

// Ends one share of a lease (the lease or a nested hold) without waiting; the last share
// releases the lock in the background.
void end_share(std::shared_ptr<pg_lease_state>& held) noexcept {
    if (!held)
        return;
    auto s = std::move(held);
    auto svc = s->service;
    asio::post(svc->conn().strand(),
               [svc, s]() mutable { svc->end_share(std::move(s), std::nullopt); });
}

bool still_valid(const std::shared_ptr<pg_lease_state>& s) noexcept {
    using clock = pg_lease::clock;
    return s && !s->lost.load() &&
           clock::now() < clock::time_point(clock::duration(s->valid_until.load()));
}

} // namespace

pg_lease& pg_lease::operator=(pg_lease&& other) noexcept {
    if (this != &other) {
        reset();
        share_ = std::move(other.share_);
    }
    return *this;
}

pg_lease::~pg_lease() {
    reset();
}

void pg_lease::reset() noexcept {
    end_share(share_);
}

pg_nested_hold pg_lease::hold() const {
    if (!share_)
        return {};
    share_->shares.fetch_add(1);
    return pg_nested_hold(share_);
}

pg_nested_hold& pg_nested_hold::operator=(pg_nested_hold&& other) noexcept {
    if (this != &other) {
        end_share(share_);
        share_ = std::move(other.share_);
    }
    return *this;
}

pg_nested_hold::~pg_nested_hold() {
    end_share(share_);
}

void pg_nested_hold::reset() noexcept {
    end_share(share_);
}

bool pg_nested_hold::valid() const noexcept {
    return still_valid(share_);
}

fencing_token pg_nested_hold::token() const noexcept {
    return fencing_token(lock_backend::postgres, share_ ? share_->token : 0);
}

bool pg_lease::valid() const noexcept {
    return still_valid(share_);
}

pg_lease::clock::time_point pg_lease::valid_until() const noexcept {
    if (!share_)
        return clock::time_point::min();
    return clock::time_point(clock::duration(share_->valid_until.load()));
}

bool pg_lease::lost() const noexcept {
    return share_ && share_->lost.load();
}

fencing_token pg_lease::token() const noexcept {
    return fencing_token(lock_backend::postgres, share_ ? share_->token : 0);
}

const std::string& pg_lease::name() const noexcept {
    static const std::string empty;
    return share_ ? share_->name : empty;
}

std::string_view pg_lease::owner_id() const noexcept {
    return share_ ? detail::view(share_->owner) : std::string_view();
}

void pg_lease::wait_lost_impl(std::shared_ptr<pg_lease_state> s, handler_ec h) {
    auto svc = s->service;
    asio::dispatch(svc->conn().strand(), [svc, s, h = std::move(h)]() mutable {
        svc->wait_lost(std::move(s), std::move(h));
    });
}

void pg_lease::release_impl(std::shared_ptr<pg_lease_state> s, handler_ec h) {
    auto svc = s->service;
    asio::dispatch(svc->conn().strand(), [svc, s, h = std::move(h)]() mutable {
        svc->end_share(std::move(s), std::move(h));
    });
}

void pg_lease::fenced_impl(std::shared_ptr<pg_lease_state> s, std::string_view sql,
                           std::span<const pg_param> params, pg_result* out, handler_ec h) {
    detail::pg_query q{std::string(sql), {}};
    bool nul = sql.find('\0') != std::string_view::npos;
    for (const auto& p : params) {
        nul = nul || (p && p->find('\0') != std::string_view::npos);
        q.params.push_back(p ? std::optional<std::string>(std::string(*p)) : std::nullopt);
    }
    if (nul)
        return fail_with(std::move(h), error::invalid_argument);
    std::vector<detail::pg_query> qs;
    qs.push_back(std::move(q));
    auto svc = s->service;
    asio::dispatch(svc->conn().strand(),
                   [svc, s, qs = std::move(qs), out, h = std::move(h)]() mutable {
                       svc->fenced(std::move(s), std::move(qs), *out, std::move(h));
                   });
}

pg_mutex::pg_mutex(pg_connection& conn, std::string name, pg_mutex_options opts)
    : core_(std::make_shared<detail::pg_mutex_core>()) {
    core_->service = pg_lock_service::of(detail::access::impl_ptr(conn));
    core_->name = std::move(name);
    core_->opts = opts;
    core_->invalid = detail::pg_sql::check_name(core_->name);
    if (!core_->invalid)
        core_->invalid = detail::pg_sql::check_options(opts);
}

pg_mutex::~pg_mutex() {
    cancel();
}

pg_mutex::executor_type pg_mutex::get_executor() const noexcept {
    return core_->service->conn().get_executor();
}

const std::string& pg_mutex::name() const noexcept {
    return core_->name;
}

const pg_mutex_options& pg_mutex::options() const noexcept {
    return core_->opts;
}

void pg_mutex::cancel() {
    detail::cancel_pending(core_, &pg_lock_service::cancel_acquire);
}

void pg_mutex::acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
    auto svc = core_->service;
    // Fails before anything is sent, and never inline.
    if (auto ec = core_->invalid
                      ? core_->invalid
                      : (deadline == clock::time_point::min() ? error_code(error::invalid_wait)
                                                              : error_code()))
        return detail::deliver(std::move(h), svc->conn().get_executor(), ec, pg_lease{});
    auto slot = asio::get_associated_cancellation_slot(h);
    auto op = std::make_shared<detail::pg_acquire_op>(
        core_, detail::pg_sql::acquire_params_of(core_->opts, deadline, once, clock::now()),
        std::move(h), svc->conn().strand());
    detail::cancel_on_signal(slot, svc, op, &pg_lock_service::cancel_acquire);
    asio::dispatch(svc->conn().strand(), [svc, op] { svc->start_acquire(op); });
}

void pg_mutex::install_impl(asio::any_completion_handler<void(error_code)> h) {
    auto svc = core_->service;
    std::vector<detail::pg_query> qs;
    qs.push_back(detail::pg_query{std::string(detail::pg_sql::install), {}});
    auto st = detail::make_statement(
        std::move(qs), [svc, h = std::move(h)](error_code ec, detail::pg_statement& s) mutable {
            const auto& log = svc->conn().log();
            if (ec && !s.results.empty() && log.enabled(logger::level::error))
                log.log(logger::level::error,
                        "postgres lock: install failed: " + s.results.front().error_message());
            detail::deliver(std::move(h), svc->conn().get_executor(), ec);
        });
    asio::dispatch(svc->conn().strand(), [svc, st] { svc->conn().submit(st); });
}

} // namespace corolock
