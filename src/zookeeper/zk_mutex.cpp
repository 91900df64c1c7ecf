// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/deliver.hpp"
#include "zookeeper/io/zk_grant.hpp"
#include "zookeeper/io/zk_lock_op.hpp"
#include <corolock/zookeeper/mutex.hpp>
#include <corolock/zookeeper/shared_mutex.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

#include <stdexcept>
#include <zookeeper/zookeeper.h>

namespace corolock {

namespace asio = boost::asio;

namespace {

// Any thread: one share of `g` ends (on the strand).
void end_share(std::shared_ptr<detail::zk_grant> g) {
    auto& strand = g->session->strand();
    asio::post(strand, [g = std::move(g)] { g->drop_share({}, false); });
}

} // namespace

// zk_lease

zk_lease& zk_lease::operator=(zk_lease&& other) noexcept {
    if (this != &other) {
        if (auto g = std::move(share_))
            end_share(std::move(g));
        share_ = std::move(other.share_);
    }
    return *this;
}

zk_lease::~zk_lease() {
    if (share_)
        end_share(std::move(share_));
}

bool zk_lease::valid() const noexcept {
    return share_ && share_->valid();
}

zk_lease::clock::time_point zk_lease::valid_until() const noexcept {
    return share_ ? share_->valid_until() : clock::time_point::min();
}

bool zk_lease::lost() const noexcept {
    return share_ && share_->lost.load();
}

fencing_token zk_lease::token() const noexcept {
    return {lock_backend::zookeeper, share_ ? static_cast<std::uint64_t>(share_->czxid) : 0};
}

const std::string& zk_lease::name() const noexcept {
    static const std::string empty;
    return share_ ? share_->node : empty;
}

zk_hold zk_lease::hold() const {
    if (!share_)
        throw std::logic_error("corolock::zk_lease::hold on an empty lease");
    ++share_->shares;
    return zk_hold(share_);
}

void zk_lease::wait_lost_impl(std::shared_ptr<detail::zk_grant> g, handler_ec h) {
    // The slot is connected now, in the caller: a cancellation emitted before the strand runs
    // the wait is then queued behind it, never lost.
    const auto id = ++g->next_wait;
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected()) {
        slot.assign([w = std::weak_ptr<detail::zk_grant>(g), id](asio::cancellation_type t) {
            if ((t & (asio::cancellation_type::terminal | asio::cancellation_type::partial |
                      asio::cancellation_type::total)) == asio::cancellation_type::none)
                return;
            auto g = w.lock();
            if (!g)
                return;
            asio::post(g->session->strand(), [g, id] {
                if (auto h = g->lost_waits.take(id))
                    detail::deliver(std::move(*h), g->session->executor(),
                                    error_code(asio::error::operation_aborted));
            });
        });
    }
    auto strand = g->session->strand();
    asio::post(strand, [g = std::move(g), h = std::move(h), id]() mutable {
        if (g->lost.load())
            return detail::deliver(std::move(h), g->session->executor(), g->loss);
        if (g->released)
            return detail::deliver(std::move(h), g->session->executor(),
                                   error_code(asio::error::operation_aborted));
        g->lost_waits.add(id, std::move(h));
    });
}

void zk_lease::release_impl(std::shared_ptr<detail::zk_grant> g, handler_ec h) {
    auto strand = g->session->strand();
    asio::post(strand, [g = std::move(g), h = std::move(h)]() mutable {
        g->drop_share(std::move(h), true);
    });
}

void zk_lease::fenced_write_impl(std::shared_ptr<detail::zk_grant> g, std::string path,
                                 std::string data, handler_ec h) {
    if (!detail::valid_lock_path(path))
        return detail::deliver(std::move(h), g->session->executor(),
                               error_code(error::invalid_name));
    auto strand = g->session->strand();
    asio::post(strand, [g = std::move(g), path = std::move(path), data = std::move(data),
                        h = std::move(h)]() mutable {
        auto done = std::make_shared<detail::handler_list<handler_ec>>();
        done->add(0, std::move(h));
        auto finish = [g, done](error_code ec) {
            if (auto h = done->take(0))
                detail::deliver(std::move(*h), g->session->executor(), ec);
        };
        auto map = [](const detail::zk_reply& r) -> error_code {
            if (r.rc == ZOK)
                return {};
            if (r.failed_op == 0 && r.rc == ZNONODE)
                return error::stale_token;
            return detail::zk_error(r.rc);
        };
        std::vector<detail::zk_op> ops{{detail::zk_op::kind::check, g->node, {}},
                                       {detail::zk_op::kind::set, path, data}};
        g->session->multi(ops, [g, path, data, finish, map](detail::zk_reply r) {
            if (!(r.rc == ZNONODE && r.failed_op == 1))
                return finish(map(r));
            // No such node yet: create it, under the same check.
            std::vector<detail::zk_op> create{{detail::zk_op::kind::check, g->node, {}},
                                              {detail::zk_op::kind::create, path, data}};
            g->session->multi(create, [finish, map](detail::zk_reply r) { finish(map(r)); });
        });
    });
}

// zk_hold

zk_hold& zk_hold::operator=(zk_hold&& other) noexcept {
    if (this != &other) {
        reset();
        share_ = std::move(other.share_);
    }
    return *this;
}

zk_hold::~zk_hold() {
    reset();
}

void zk_hold::reset() noexcept {
    if (auto g = std::move(share_))
        end_share(std::move(g));
}

bool zk_hold::valid() const noexcept {
    return share_ && share_->valid();
}

fencing_token zk_hold::token() const noexcept {
    return {lock_backend::zookeeper, share_ ? static_cast<std::uint64_t>(share_->czxid) : 0};
}

// zk_mutex

zk_mutex::zk_mutex(zk_connection& conn, std::string path)
    : session_(conn.impl_), path_(std::move(path)), id_(session_->next_id()) {}

zk_mutex::~zk_mutex() {
    cancel();
}

zk_mutex::executor_type zk_mutex::get_executor() const noexcept {
    return session_->executor();
}

void zk_mutex::cancel() {
    detail::cancel_zk_acquires(session_, id_);
}

void zk_mutex::acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
    detail::start_zk_acquire(session_, {path_, detail::zk_node_kind::lock, deadline, once, 0, id_},
                             std::move(h));
}

// zk_shared_mutex

zk_shared_mutex::zk_shared_mutex(zk_connection& conn, std::string path)
    : session_(conn.impl_), path_(std::move(path)), id_(session_->next_id()) {}

zk_shared_mutex::~zk_shared_mutex() {
    cancel();
}

zk_shared_mutex::executor_type zk_shared_mutex::get_executor() const noexcept {
    return session_->executor();
}

void zk_shared_mutex::cancel() {
    detail::cancel_zk_acquires(session_, id_);
}

void zk_shared_mutex::start(bool write, clock::time_point deadline, bool once, acquire_handler h) {
    const auto kind = write ? detail::zk_node_kind::write : detail::zk_node_kind::read;
    detail::start_zk_acquire(session_, {path_, kind, deadline, once, 0, id_}, std::move(h));
}

} // namespace corolock
