// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The connection driver's construction, shutdown, statistics and request queueing.
#include "io/connection_impl.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

namespace corolock::detail {

namespace asio = boost::asio;

namespace {

asio::any_io_executor make_connection_strand(const asio::any_io_executor& ex) {
    if (const auto* io = ex.target<io_executor>())
        return asio::make_strand(*io);
    return asio::make_strand(ex);
}

} // namespace

connection_impl::connection_impl(asio::any_io_executor ex, asio::ssl::context* tls,
                                 connection_config cfg, logger log)
    : user_ex_(std::move(ex)), strand_(make_connection_strand(user_ex_)), tls_(tls),
      cfg_(std::move(cfg)), log_(std::move(log)), mpx_(cfg_.max_reply_nodes), parser_(cfg_.limits),
      writer_timer_(strand_), reaper_timer_(strand_), sleep_timer_(strand_),
      rng_(std::random_device{}()) {
    if (!cfg_.sentinel.addresses.empty()) {
        sentinels_.emplace(cfg_.sentinel.addresses);
        failover_.emplace(cfg_.sentinel.master_name, cfg_.sentinel.failover_hold);
    }
}

void connection_impl::abandon() noexcept {
    // No thread runs the context any more: what is moved out is destroyed when this returns.
    // (The lock layer registers on its own: lock_service::abandon.)
    mpx_.abandon_all();
    auto listeners = std::move(listeners_);
    listeners_.clear();
    auto orphans = std::move(orphan_claims); // they hold this connection, and their adopters
    orphan_claims.clear();
}

connection_stats connection_impl::stats() const noexcept {
    constexpr auto r = std::memory_order_relaxed;
    return {commands_.load(r),       writes_.load(r),   bytes_written_.load(r),
            bytes_read_.load(r),     replies_.load(r),  pushes_.load(r),
            pushes_dropped_.load(r), connects_.load(r), resolves_.load(r),
            master_switches_.load(r)};
}

void connection_impl::submit(std::shared_ptr<exec_entry> e) {
    asio::post(strand_, [self = shared_from_this(), e = std::move(e)]() mutable {
        self->add_entry(std::move(e));
    });
}

void connection_impl::add_entry(std::shared_ptr<exec_entry> e) {
    if (stopped_) {
        mpx_.add(std::move(e));
        mpx_.fail_all(error::not_connected);
        return;
    }
    mpx_.add(std::move(e));
    if (connected_)
        notify_writer();
    else
        reaper_timer_.cancel();
}

void connection_impl::fail_waiting(error_code ec) {
    asio::post(strand_, [self = shared_from_this(), ec] {
        if (!self->connected_)
            self->mpx_.fail_waiting_before(clock::time_point::max(), ec);
    });
}

} // namespace corolock::detail
