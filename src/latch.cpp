// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The public latch: the create and count-down scripts go out from here; the awaiters are handed
// to the driver (io/latch_impl.cpp), which performs what core/latch_core decides for them.
#include "core/access.hpp"
#include "core/script_request.hpp"
#include "io/cluster_impl.hpp"
#include "io/deliver.hpp"
#include "io/latch_impl.hpp"
#include <corolock/latch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace corolock {

namespace asio = boost::asio;

latch::latch(connection& conn, std::string name, latch_options opts)
    : impl_(std::make_shared<detail::latch_impl>(
          detail::lock_transport(detail::access::impl(conn).shared_from_this()), std::move(name),
          opts)) {}

latch::latch(cluster& c, std::string name, latch_options opts)
    : impl_(std::make_shared<detail::latch_impl>(
          detail::lock_transport(detail::access::impl(c).shared_from_this()), std::move(name),
          opts)) {}

latch::~latch() {
    cancel();
}

void latch::cancel() {
    asio::post(impl_->io.strand(), [impl = impl_] {
        impl->run([](detail::latch_core& c, auto, detail::latch_actions& out) {
            c.cancel_all(error_code(asio::error::operation_aborted), out);
        });
    });
}

latch::executor_type latch::get_executor() const noexcept {
    return impl_->io.executor();
}
const std::string& latch::name() const noexcept {
    return impl_->name;
}
const latch_options& latch::options() const noexcept {
    return impl_->opts;
}

void latch::create_impl(std::uint64_t target,
                        asio::any_completion_handler<void(error_code, latch_round)> h) {
    const auto& im = *impl_;
    auto ec = im.invalid;
    if (!ec && (target == 0 || target > detail::max_latch_target))
        ec = error::invalid_argument;
    if (ec)
        return detail::deliver(std::move(h), im.io.executor(), ec, latch_round{});
    const std::string t = std::to_string(target);
    const std::string_view keys[] = {im.keys.name, im.keys.done};
    const std::string_view args[] = {t, im.retention_ms};
    const auto& sc = detail::latch_create_script();
    auto req = std::make_shared<request>(detail::make_evalsha(sc, keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, im.io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    im.io.start_eval(
        sc, im.keys.name, req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                detail::latch_created c;
                if (!ec)
                    ec = detail::decode_latch_create(*resp, c);
                if (ec && ec != error::target_mismatch)
                    c = {};
                std::move(h)(ec, latch_round{c.generation, c.target, c.created != 0});
            })));
}

void latch::count_down_impl(std::string id, std::uint64_t generation,
                            asio::any_completion_handler<void(error_code, latch_state)> h) {
    const auto& im = *impl_;
    auto ec = im.invalid;
    if (!ec && (id.empty() || id.size() > detail::max_participant_id || generation == 0))
        ec = error::invalid_argument;
    if (ec)
        return detail::deliver(std::move(h), im.io.executor(), ec, latch_state{});
    const std::string gen = std::to_string(generation);
    const std::string_view keys[] = {im.keys.name, im.keys.done};
    const std::string_view args[] = {id, gen, im.keys.channel, im.io.sharded() ? "S" : "P",
                                     im.retention_ms};
    const auto& sc = detail::latch_count_down_script();
    auto req = std::make_shared<request>(detail::make_evalsha(sc, keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(h, im.io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    im.io.start_eval(
        sc, im.keys.name, req, *resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [resp, h = std::move(h)](error_code ec) mutable {
                detail::latch_count c;
                if (!ec)
                    ec = detail::decode_latch_count_down(*resp, c);
                latch_state st;
                if (!ec)
                    st = {c.open, c.remaining};
                std::move(h)(ec, st);
            })));
}

void latch::wait_impl(clock::time_point deadline,
                      asio::any_completion_handler<void(error_code)> h) {
    auto& im = *impl_;
    if (im.invalid)
        return detail::deliver(std::move(h), im.io.executor(), im.invalid);
    const auto id = im.next_id.fetch_add(1, std::memory_order_relaxed) + 1;
    auto slot = asio::get_associated_cancellation_slot(h);
    const auto& strand = im.io.strand();
    if (slot.is_connected())
        slot.assign(
            [weak = std::weak_ptr<detail::latch_impl>(impl_), id, strand](asio::cancellation_type) {
                asio::post(strand, [weak, id] {
                    if (auto l = weak.lock())
                        l->run([id](detail::latch_core& c, auto now, detail::latch_actions& out) {
                            c.cancel(id, now, out);
                        });
                });
            });
    detail::enter_strand(strand, [impl = impl_, id, deadline, h = std::move(h)]() mutable {
        impl->waiting.add(id, std::move(h));
        impl->run([id, deadline](detail::latch_core& c, auto now, detail::latch_actions& out) {
            c.add(id, deadline, now, out);
        });
    });
}

} // namespace corolock
