// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/acquire_op.hpp"

#include "core/lock_scripts.hpp"
#include "io/deliver.hpp"
#include "io/rearm.hpp"
#include <corolock/detail/deadline.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace corolock::detail {

namespace {

member_id make_member(const lock_spec& spec, std::size_t units, const owner_id& owner) {
    std::array<char, 24> buf;
    return member_id(spec.member_prefix(units, buf), owner);
}

// The error's text, and the part of the arguments that is wrong (the text lists every cause).
std::string refusal_reason(const lock_spec& spec, const error_code& ec) {
    if (ec == spec.invalid && !spec.invalid_reason.empty())
        return spec.invalid_reason;
    return ec == error::invalid_wait ? "the wait is negative" : ec.message();
}

} // namespace

acquire_op::acquire_op(std::shared_ptr<mutex_core> core, const acquire_params& p, handler_type h,
                       std::size_t units, std::shared_ptr<const lock_spec> own_spec)
    : acquisition(p, core->spec->name), core_(std::move(core)),
      spec_(own_spec ? std::move(own_spec) : core_->spec), svc_(*core_->svc), once_(p.once),
      handler_(std::move(h)),
      // Tracked: a pending acquire keeps the caller's io_context from running out of work.
      handler_ex_(tracked_work(handler_executor(handler_, spec().io.executor()))),
      timer_(spec().io.strand()), started_(clock::now()), owner_(random_owner_id()),
      units_(units ? units : spec().units), member_(make_member(spec(), units_, owner_)) {
    capacity = spec().capacity;
    independent = spec().what == lock_spec::kind::fair || spec().what == lock_spec::kind::shared ||
                  spec().what == lock_spec::kind::exclusive;
    writer = spec().what == lock_spec::kind::exclusive;
    record_member = member_.view();
    req_ = spec().acquire_request(member_.view(), once_, units_);
    // In the same write as the script: WAIT counts the replicas that have the grant.
    add_wait(req_, spec().wait_replicas, spec().wait_ms, count_connected(spec()));
    resp_.reserve(4); // the reply's shape: an array of two integers (then WAIT's integer)
}

acquire_op::~acquire_op() {
    svc_.untrack(*this);
}

acquire_op::handler_type acquire_op::abandon() noexcept {
    svc_.untrack(*this);
    unlist(); // the mutex's list and this op's core_ would hold each other
    handler_ex_ = {};
    return std::move(handler_);
}

void acquire_op::unlist() noexcept {
    detail::unlist(core_->pending, this);
}

void acquire_op::start() {
    core_->pending.push_back(shared_from_this());
    svc_.track(*this);
    svc_.notify(lock_event_kind::acquire_start, spec().name, {});
    svc_.start(*this);
}

void acquire_op::cancel() {
    svc_.cancel(*this);
}

void acquire_op::send_attempt() {
    svc_.stats_.attempts.fetch_add(1, std::memory_order_relaxed);
    resp_.clear();
    spec().io.eval(
        spec().acquire_script(), spec().name, req_, resp_,
        [self = shared_from_this()](error_code ec) { self->on_reply(ec); }, once_);
}

void acquire_op::on_reply(error_code ec) {
    attempt_reply r;
    acquire_reply ar;
    if (!ec && !spec().wait_replicas.empty())
        r.acks = take_wait_reply(resp_, count_connected(spec()), spec().opts.replica_sync.replicas);
    if (ec == error::connection_lost) {
        r.what = attempt_reply::kind::unknown;
        r.ec = ec;
    } else if (ec || (ec = decode_acquire(resp_, ar, spec().tokens()))) {
        r.what = attempt_reply::kind::failed;
        r.ec = ec;
        // The server's own words, which the error code cannot carry (a NOPERM for an ACL user
        // without EVALSHA, an OOM): never dropped.
        if (const auto* e = find_error(resp_); e && spec().io.log().enabled(logger::level::warning))
            spec().io.log().log(logger::level::warning,
                                describe(spec()) + "the server refused the acquire script: " +
                                    std::string(e->value));
    } else if (ar.acquired) {
        r.what = attempt_reply::kind::granted;
        r.token = ar.token;
    } else {
        r.what = attempt_reply::kind::held;
        r.holder_ttl = std::chrono::milliseconds(std::max<std::int64_t>(ar.holder_ttl, 0));
    }
    svc_.on_reply(*this, r,
                  r.ec != condition::connection_failure &&
                      r.ec != boost::asio::error::operation_aborted);
}

void acquire_op::arm(clock::time_point t) {
    rearm(shared_from_this(), timer_, armed_, t,
          [](acquire_op& self, clock::duration) { self.svc_.on_timer(self); });
}

void acquire_op::complete(error_code ec, bool granted) {
    svc_.untrack(*this);
    // No attempt was answered because the connection is down: say why (a wrong password, a
    // refused port) rather than "the server is slow, stalled or unreachable".
    if (ec == error::server_timeout)
        if (auto cause = spec().io.down_cause())
            ec = cause;
    const auto outcome = outcome_of(ec, granted);
    const auto waited = clock::now() - started_;
    svc_.stats_.acquired(outcome, waited);
    if (svc_.stats_.named.on())
        svc_.stats_.named.acquired(spec().name, outcome);
    svc_.notify(granted ? lock_event_kind::granted : lock_event_kind::not_granted, spec().name,
                waited, granted ? fsm.token() : 0, outcome, ec);
    if (const auto& log = spec().io.log(); log.enabled(logger::level::debug)) {
        // Never the owner id: it is the secret that releases the lock.
        auto line = describe(spec()) + std::string(to_string(outcome)) + " after " +
                    std::to_string(std::chrono::duration<double, std::milli>(waited).count()) +
                    " ms";
        if (granted)
            line += ", token " + std::to_string(fsm.token());
        else if (outcome == acquire_outcome::error)
            line += " (" + ec.message() + ")";
        log.log(logger::level::debug, line);
    }
    lease out;
    if (granted) {
        auto st =
            std::make_shared<lease_state>(core_->svc, spec_, owner_, member_, units_, fsm.token());
        svc_.watch(st, fsm.sent());
        out = make_lease(std::move(st));
    }
    deliver_on(handler_ex_, std::move(handler_), spec().io.executor(), ec, std::move(out));
    handler_ex_ = {};
    unlist();
}

void start_acquire(const std::shared_ptr<mutex_core>& core, clock::time_point deadline, bool once,
                   acquire_op::handler_type h, std::size_t units, clock::duration lease_override) {
    namespace asio = boost::asio;
    // A per-call lease: this call's own spec, the handle's with another lease (and the
    // arguments derived from it), checked as the handle's was.
    std::shared_ptr<const lock_spec> own;
    if (lease_override != clock::duration::zero() && lease_override != core->spec->opts.lease) {
        auto opts = core->spec->opts;
        opts.lease = lease_override;
        own = std::make_shared<const lock_spec>(core->spec->io, core->spec->name, opts,
                                                core->spec->what);
    }
    const auto& spec = own ? *own : *core->spec;
    auto ec = spec.invalid;
    if (!ec && deadline == clock::time_point::min())
        ec = error::invalid_wait;
    if (ec) {
        // Fails before anything is sent, and never inline. The log names the field or rule
        // (the error only says which kind of argument).
        core->svc->stats_.acquired(acquire_outcome::error, {});
        if (spec.io.log().enabled(logger::level::warning))
            spec.io.log().log(logger::level::warning, describe(spec) + ec.message() + ": " +
                                                          refusal_reason(spec, ec) +
                                                          " (nothing was sent)");
        return deliver(std::move(h), spec.io.executor(), ec, lease{});
    }
    // A wait already over when it begins (a zero wait, a deadline past) is one attempt, as a
    // try, its reply waited for at most `try_timeout`: the lock if it is free, else
    // `acquire_timeout`. Racing the attempt against a deadline already past would make the
    // outcome depend on whether the reply or the timer is seen first.
    const bool no_wait = !once && deadline <= clock::now();
    acquire_params p;
    p.deadline = once || no_wait ? deadline_of(spec.opts.try_timeout) : deadline;
    p.once = once || no_wait;
    p.held_is_timeout = no_wait;
    p.lease = spec.opts.lease;
    p.drift = spec.drift;
    p.retry_base = spec.opts.retry_base;
    p.retry_max = spec.opts.retry_max;
    p.replicas = spec.opts.replica_sync.replicas;
    p.leaves_record = spec.leaves_record() && !p.once; // a try records no intent
    auto slot = asio::get_associated_cancellation_slot(h);
    auto op = std::make_shared<acquire_op>(core, p, std::move(h), units, std::move(own));
    auto& strand = spec.io.strand();
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<acquire_op>(op), strand](asio::cancellation_type) {
            asio::post(strand, [weak] {
                if (auto o = weak.lock())
                    o->cancel();
            });
        });
    enter_strand(strand, [op = std::move(op)] { op->start(); });
}

} // namespace corolock::detail
