// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_scripts.hpp"
#include "core/script_request.hpp"
#include "io/lock_service.hpp"
#include <corolock/lease.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

namespace corolock {

namespace asio = boost::asio;
using detail::clock;
using detail::deliver;

namespace detail {

lease_share lease_share::another() const noexcept {
    state_->shares.fetch_add(1, std::memory_order_relaxed);
    return lease_share(state_);
}

void lease_share::reset() noexcept {
    if (!state_)
        return;
    if (state_->shares.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // The last share: release without waiting (owner-checked).
        auto s = std::move(state_);
        auto& strand = s->spec->io.strand();
        detail::enter_strand(strand, [s = std::move(s)]() mutable {
            auto svc = s->svc;
            svc->release(std::move(s), {});
        });
    }
    state_.reset();
}

std::shared_ptr<lease_state> lease_share::take_for_release() noexcept {
    auto s = std::move(state_);
    if (s && s->shares.fetch_sub(1, std::memory_order_acq_rel) == 1)
        return s;
    return nullptr;
}

} // namespace detail

fenced_script::fenced_script(std::string_view body)
    : script_(detail::make_fenced_source(body)), guarded_(detail::make_guarded_source(body)),
      held_(detail::make_held_source(body)) {}

namespace {

const std::string empty_name;

} // namespace

std::shared_ptr<detail::lease_state> lease::state() const noexcept {
    return share_.get() ? share_.get()->shared_from_this() : nullptr;
}

bool lease::valid() const noexcept {
    return share_.get() && share_.get()->valid_now();
}

clock::time_point lease::valid_until() const noexcept {
    const auto* s = share_.get();
    return s ? clock::time_point(
                   clock::duration(s->valid_until_view.load(std::memory_order_relaxed)))
             : clock::time_point::min();
}

bool lease::lost() const noexcept {
    const auto* s = share_.get();
    return s && s->lost_view.load(std::memory_order_relaxed) != 0;
}

fencing_token lease::token() const noexcept {
    return {lock_backend::redis, share_.get() ? share_.get()->token : 0};
}

const std::string& lease::name() const noexcept {
    return share_.get() ? share_.get()->spec->name : empty_name;
}

std::string_view lease::owner_id() const noexcept {
    return share_.get() ? share_.get()->owner_view() : std::string_view();
}

nested_hold lease::hold() const {
    if (!share_.get())
        throw std::logic_error("corolock::lease::hold on an empty lease");
    return nested_hold(share_.another());
}

bool nested_hold::valid() const noexcept {
    return share_.get() && share_.get()->valid_now();
}

fencing_token nested_hold::token() const noexcept {
    return {lock_backend::redis, share_.get() ? share_.get()->token : 0};
}

void lease::wait_lost_impl(std::shared_ptr<detail::lease_state> s, handler_ec h) {
    // The slot is wired here, not on the strand: a cancellation emitted before the posted
    // registration runs must not be missed (it is posted after it, so it finds the waiter).
    const auto id = s->next_waiter.fetch_add(1, std::memory_order_relaxed) + 1;
    auto& strand = s->spec->io.strand();
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign(
            [weak = std::weak_ptr<detail::lease_state>(s), id, strand](asio::cancellation_type) {
                asio::post(strand, [weak, id] {
                    if (auto st = weak.lock())
                        st->svc->cancel_wait_lost(*st, id);
                });
            });
    asio::post(strand, [s = std::move(s), id, h = std::move(h)]() mutable {
        auto svc = s->svc;
        svc->wait_lost(std::move(s), id, std::move(h));
    });
}

void lease::release_impl(detail::lease_share share, handler_ec h) {
    const auto fallback = share.get()->spec->io.executor();
    const auto lost = share.get()->lost_view.load(std::memory_order_relaxed);
    auto s = share.take_for_release();
    if (!s) // nested holds are still alive: the last of them releases; a loss is still news
        return deliver(std::move(h), fallback,
                       lost != 0 ? error_code(static_cast<error>(lost)) : error_code{});
    auto& strand = s->spec->io.strand();
    detail::enter_strand(strand, [s = std::move(s), h = std::move(h)]() mutable {
        auto svc = s->svc;
        svc->release(std::move(s), std::move(h));
    });
}

void lease::extend_impl(std::shared_ptr<detail::lease_state> s, handler_ec h) {
    auto& strand = s->spec->io.strand();
    asio::post(strand, [s = std::move(s), h = std::move(h)]() mutable {
        auto svc = s->svc;
        svc->extend(std::move(s), std::move(h));
    });
}

void lease::fenced_impl(std::shared_ptr<detail::lease_state> st, const fenced_script* sp,
                        std::span<const std::string_view> keys,
                        std::span<const std::string_view> args, generic_response* rp,
                        handler_ec h) {
    const fenced_script& s = *sp;
    generic_response& resp = *rp;
    const auto lost = st->lost_view.load(std::memory_order_relaxed);
    if (!st->valid_now())
        return deliver(std::move(h), st->spec->io.executor(),
                       error_code(lost != 0 ? static_cast<error>(lost) : error::lease_lost));
    // A token: KEYS the lock, its fence key, then the caller's; ARGV the token, then the
    // caller's. No token (a semaphore's permits): KEYS the sorted set, then the caller's; ARGV the
    // lease's member, then the caller's.
    // A writer of a shared_mutex: KEYS the lock, then the caller's; ARGV the token, then the
    // caller's.
    const bool tokens = st->spec->tokens();
    const bool writer = st->spec->what == detail::lock_spec::kind::exclusive;
    const auto& wrapped = writer ? s.held() : tokens ? s.wrapped() : s.guarded();
    std::vector<std::string_view> k{tokens ? st->spec->name : st->spec->key};
    if (tokens && !writer)
        k.push_back(st->spec->fence_key);
    k.insert(k.end(), keys.begin(), keys.end());
    const std::string token_text = tokens ? std::to_string(st->token) : std::string();
    std::vector<std::string_view> a{tokens ? std::string_view(token_text) : st->member.view()};
    a.insert(a.end(), args.begin(), args.end());
    auto req = std::make_shared<request>(detail::make_evalsha(wrapped, k, a));
    auto ex = asio::get_associated_executor(h, st->spec->io.executor());
    auto slot = asio::get_associated_cancellation_slot(h);
    st->spec->io.start_eval(
        wrapped, st->spec->name, std::move(req), resp,
        asio::bind_cancellation_slot(
            slot, asio::bind_executor(ex, [r = &resp, h = std::move(h)](error_code ec) mutable {
                if (!ec)
                    if (const auto* e = find_error(*r))
                        ec = e->value.starts_with("STALE_TOKEN ") ? error_code(error::stale_token)
                                                                  : error_code(error::server_error);
                std::move(h)(ec);
            })));
}

} // namespace corolock
