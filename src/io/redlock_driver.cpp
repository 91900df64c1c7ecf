// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// RedLock's driver: it runs the pure machines of detail/redlock_fsm on the redlock's own strand
// and performs their actions: one script per node and round (all written at once), the
// subscriptions, one timer per acquisition and per lease, and the completions. Every node
// answers on its connection's strand; the answer is posted to the redlock's strand. See
// doc/redlock.md.
#include "io/redlock_driver.hpp"

#include "core/lock_policy.hpp"
#include "core/redlock_scripts.hpp"
#include "io/exec.hpp"
#include "io/rearm.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <string>

namespace corolock {

namespace asio = boost::asio;

namespace detail {

std::int64_t to_ms(clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

owner_requests::owner_requests(const redlock_spec& spec, const owner_id& o)
    : owner(o), nodes(spec.nodes) {
    // From the first round to the lease's end, every node's connection carries this lock:
    // it refuses blocking commands, as a connection with a mutex lease does.
    for (auto& n : nodes)
        n->redlock_users(+1);
    const std::string_view keys[] = {spec.name};
    const std::string_view lease_args[] = {view(owner), spec.lease_ms};
    const std::string_view release_args[] = {view(owner), spec.channel};
    acquire = make_eval(redlock_acquire_script(), keys, lease_args);
    extend = make_eval(redlock_extend_script(), keys, lease_args);
    release = make_eval(redlock_release_script(), keys, release_args);
}

owner_requests::~owner_requests() {
    for (auto& n : nodes)
        n->redlock_users(-1);
}

template <class F>
void redlock_core::fan_out(const std::shared_ptr<const owner_requests>& reqs,
                           request owner_requests::*which, F on_vote, bool skip_down) {
    for (std::size_t i = 0; i < spec->nodes.size(); ++i) {
        if (skip_down && spec->nodes[i]->known_down()) {
            asio::post(strand, [i, on_vote]() mutable {
                on_vote(i, vote::failed, error_code(error::not_connected));
            });
            continue;
        }
        auto resp = std::make_shared<generic_response>();
        start_exec(spec->nodes[i], (*reqs).*which, make_adapter(*resp),
                   asio::bind_executor(
                       strand, [reqs, resp, i, on_vote](error_code ec, std::size_t) mutable {
                           error_code why;
                           const auto v = decode_vote(ec, *resp, why);
                           on_vote(i, v, why);
                       }));
    }
}

template <class F>
void redlock_core::release_all(const std::shared_ptr<const owner_requests>& reqs, F on_vote) {
    stats.releases_sent.fetch_add(1, std::memory_order_relaxed);
    fan_out(reqs, &owner_requests::release, std::move(on_vote));
}

std::string describe(const redlock_spec& spec) {
    std::string out = "corolock: redlock '";
    out.append(spec.name.size() > 64 ? spec.name.substr(0, 64) + "..." : spec.name);
    out.append("': ");
    return out;
}

// ---------------------------------------------------------------------------------------------
// A held lease

auto redlock_lease_state::vote_handler() {
    return [self = shared_from_this(), round = fsm.round()](std::size_t node, vote v, error_code) {
        const auto before = self->fsm.current();
        const auto a = self->fsm.on_vote(clock::now(), round, node, v);
        if (before == redlock_lease_fsm::state::extending &&
            self->fsm.current() == redlock_lease_fsm::state::held) {
            self->core->stats.extensions.fetch_add(1, std::memory_order_relaxed);
            if (const auto& log = self->core->spec->log(); log.enabled(logger::level::debug))
                log.log(logger::level::debug,
                        describe(*self->core->spec) + "lease: extended at node " +
                            std::to_string(node) + "'s vote, round " + std::to_string(round));
        }
        self->act(a);
    };
}

void redlock_lease_state::act(const redlock_lease_action& a) {
    const auto& spec = *core->spec;
    if (spec.log().enabled(logger::level::debug) && (a.send_extend || a.lost || a.released))
        spec.log().log(logger::level::debug,
                       describe(spec) + "lease: round " + std::to_string(fsm.round()) +
                           (a.send_extend ? " extend" : "") + (a.lost ? " lost" : "") +
                           (a.released ? " released" : "") + " (granted " +
                           std::to_string(fsm.tally().count(vote::granted)) + ", refused " +
                           std::to_string(fsm.tally().count(vote::refused)) + ", failed " +
                           std::to_string(fsm.tally().count(vote::failed)) + ")");
    if (a.send_extend)
        core->fan_out(reqs, &owner_requests::extend, vote_handler());
    if (a.release_all)
        core->release_all(reqs, vote_handler());
    if (a.lost) {
        lost_view.store(a.ec.value(), std::memory_order_relaxed);
        core->stats.leases_lost.fetch_add(1, std::memory_order_relaxed);
        spec.log().log(logger::level::warning,
                       describe(spec) + "lease lost (" + a.ec.message() + ")");
        auto waiters = lost_waiters.take_all();
        for (auto& [id, h] : waiters)
            deliver(std::move(h), spec.executor(), a.ec);
    }
    if (a.released && release_done && *release_done) {
        deliver(std::move(*release_done), spec.executor(), a.ec);
        release_done.reset();
    }
    publish();
    arm();
}

void redlock_lease_state::arm() {
    rearm(
        shared_from_this(), timer, armed, fsm.wake_at(),
        [](redlock_lease_state& s, clock::duration late) {
            const auto before = s.fsm.current();
            const auto round = s.fsm.round();
            const auto missing = s.fsm.tally().missing();
            const auto a = s.fsm.on_timer(clock::now());
            // An extension or a release decided by the timer, not by the votes.
            const bool decided = (before == redlock_lease_fsm::state::extending ||
                                  before == redlock_lease_fsm::state::releasing) &&
                                 s.fsm.current() != before;
            if (const auto& log = s.core->spec->log(); decided && log.enabled(logger::level::debug))
                log.log(logger::level::debug,
                        describe(*s.core->spec) + "lease: round " + std::to_string(round) +
                            " decided by the timer with " + std::to_string(missing) +
                            " votes missing (it ran " + std::to_string(to_ms(late)) + " ms late)");
            s.act(a);
        });
}

void redlock_lease_state::release(completion_ec done) {
    auto waiters = lost_waiters.take_all();
    for (auto& [id, h] : waiters)
        deliver(std::move(h), core->spec->executor(), error_code(asio::error::operation_aborted));
    release_done.emplace(std::move(done));
    act(fsm.on_release(clock::now()));
}

void redlock_lease_state::abandon() noexcept {
    // Moved out first: destroying a handler may destroy the lease (the caller holds this).
    auto waiters = lost_waiters.take_all();
    auto done = std::move(release_done);
    release_done.reset();
}

void redlock_lease_state::wait_lost(std::uint64_t id, completion_ec h) {
    const auto s = fsm.current();
    if (s == redlock_lease_fsm::state::lost ||
        (s == redlock_lease_fsm::state::done && fsm.lost_reason()))
        return deliver(std::move(h), core->spec->executor(), fsm.lost_reason());
    if (s != redlock_lease_fsm::state::held && s != redlock_lease_fsm::state::extending)
        return deliver(std::move(h), core->spec->executor(),
                       error_code(asio::error::operation_aborted));
    lost_waiters.add(id, std::move(h));
}

void redlock_lease_state::cancel_wait_lost(std::uint64_t id) {
    if (auto h = lost_waiters.take(id))
        deliver(std::move(*h), core->spec->executor(), error_code(asio::error::operation_aborted));
}

// ---------------------------------------------------------------------------------------------
// One acquisition in progress

redlock_acquire_op::redlock_acquire_op(std::shared_ptr<redlock_core> core, const redlock_params& p,
                                       handler_type h)
    : core_(std::move(core)), fsm_(p), handler_(std::move(h)),
      // Tracked: a pending acquire keeps the caller's io_context from running out of work.
      handler_ex_(tracked_work(handler_executor(handler_, spec().executor()))),
      timer_(core_->strand),
      reqs_(std::make_shared<const owner_requests>(spec(), random_owner_id())) {}

void redlock_acquire_op::start() {
    core_->pending.push_back(shared_from_this());
    act(fsm_.start(clock::now()));
}

void redlock_acquire_op::cancel() {
    act(fsm_.on_cancel());
}

void redlock_acquire_op::wake() {
    act(fsm_.on_wake(clock::now()));
}

redlock_acquire_op::handler_type redlock_acquire_op::abandon() noexcept {
    joined_ = false;
    handler_ex_ = {};
    return std::move(handler_);
}

void redlock_acquire_op::act(const redlock_action& a) {
    auto self = shared_from_this(); // completing may drop the last other reference
    if (a.release_all) {
        if (fsm_.tally().current() == redlock_tally::outcome::reached) {
            core_->stats.validity_failures.fetch_add(1, std::memory_order_relaxed);
            spec().log().log(logger::level::info,
                             describe(spec()) +
                                 "a quorum arrived with no validity left; it is given back");
        }
        core_->release_all(reqs_, [](std::size_t, vote, error_code) {});
    }
    if (a.subscribe)
        subscribe();
    if (a.send_round) {
        // Nodes known to be down vote "no" at once: with a majority of them down, the round
        // is decided without waiting for the node timeout. Only acquire rounds skip them:
        // an extension or a release goes to every node (a lease is not lost, nor a release
        // reported failed, because of a node that is merely reconnecting).
        core_->stats.rounds.fetch_add(1, std::memory_order_relaxed);
        core_->fan_out(
            reqs_, &owner_requests::acquire,
            [self, round = fsm_.round()](std::size_t node, vote v, error_code why) {
                if (why && !is_connection_error(why) && why != asio::error::operation_aborted)
                    self->spec().log().log(logger::level::warning,
                                           describe(self->spec()) + "node " + std::to_string(node) +
                                               ": " + why.message());
                else if (why == error::not_connected &&
                         self->spec().log().enabled(logger::level::debug))
                    self->spec().log().log(logger::level::debug,
                                           describe(self->spec()) + "node " + std::to_string(node) +
                                               ": not connected, counted as a no");
                if (self->spec().log().enabled(logger::level::debug))
                    self->spec().log().log(
                        logger::level::debug,
                        describe(self->spec()) + "acquire round " + std::to_string(round) +
                            ": node " + std::to_string(node) + " voted " +
                            std::to_string(static_cast<int>(v)) + " (" + why.message() + ")");
                self->act(self->fsm_.on_vote(clock::now(), round, node, v, self->core_->rng));
            },
            true);
    }
    if (a.complete)
        complete(a.ec, a.granted);
    arm();
}

void redlock_acquire_op::subscribe() {
    if (!joined_)
        core_->join(this);
    joined_ = true;
}

void redlock_acquire_op::unsubscribe() {
    if (joined_)
        core_->leave(this);
    joined_ = false;
}

void redlock_acquire_op::arm() {
    rearm(shared_from_this(), timer_, armed_, fsm_.wake_at(),
          [](redlock_acquire_op& op, clock::duration late) {
              const bool attempting = op.fsm_.current() == redlock_acquire_fsm::state::attempting;
              const auto round = op.fsm_.round();
              const auto missing = op.fsm_.tally().missing();
              const auto a = op.fsm_.on_timer(clock::now(), op.core_->rng);
              if (a.round_timed_out)
                  op.core_->stats.rounds_timed_out.fetch_add(1, std::memory_order_relaxed);
              // The round decided by the timer (node timeout or deadline), not by the votes.
              if (attempting && (a.release_all || a.complete || a.send_round))
                  if (const auto& log = op.spec().log(); log.enabled(logger::level::debug))
                      log.log(logger::level::debug,
                              describe(op.spec()) + "acquire round " + std::to_string(round) +
                                  " decided by the timer with " + std::to_string(missing) +
                                  " votes missing (it ran " + std::to_string(to_ms(late)) +
                                  " ms late)");
              op.act(a);
          });
}

void redlock_acquire_op::complete(error_code ec, bool granted) {
    unsubscribe();
    redlock_lease out;
    if (granted) {
        const auto& o = spec().opts;
        redlock_hold_params hp;
        hp.nodes = spec().nodes.size();
        hp.lease = o.lease;
        hp.drift = spec().drift;
        hp.node_timeout = spec().node_timeout;
        hp.watchdog = o.watchdog;
        if (o.max_hold > clock::duration::zero())
            hp.max_hold_at = fsm_.sent() + o.max_hold;
        auto st =
            make_abandonable<redlock_lease_state>(spec().executor(), core_, reqs_, hp, fsm_.sent());
        st->arm();
        out = redlock_core::make_lease(std::move(st));
    }
    deliver(std::move(handler_), spec().executor(), ec, std::move(out));
    handler_ex_ = {};
    unlist(core_->pending, this);
}

// Wakes the first waiter of a handle on a release message from any node (or a reconnect, after
// which messages may have been lost).
class redlock_listener final : public push_listener {
public:
    redlock_listener(std::weak_ptr<redlock_core> core, asio::strand<asio::any_io_executor> s)
        : core_(std::move(core)), strand_(std::move(s)) {}
    void on_message(std::string_view, std::string_view) override {
        asio::post(strand_, [core = core_] {
            if (auto c = core.lock())
                c->wake_head();
        });
    }
    void on_reconnect() override { on_message({}, {}); }

private:
    std::weak_ptr<redlock_core> core_;
    asio::strand<asio::any_io_executor> strand_;
};

namespace {

waiter_queue::id id_of(redlock_acquire_op* op) noexcept {
    return static_cast<waiter_queue::id>(reinterpret_cast<std::uintptr_t>(op));
}

} // namespace

void redlock_core::join(redlock_acquire_op* op) {
    if (waiters.empty()) {
        // Queued on each connection ahead of the round that follows: no release is missed.
        listener = std::make_shared<redlock_listener>(weak_from_this(), strand);
        for (auto& node : spec->nodes)
            asio::post(node->strand(),
                       [node, ch = spec->channel, l = listener] { node->add_listener(ch, l); });
    }
    waiters.push(id_of(op));
}

void redlock_core::leave(redlock_acquire_op* op) {
    if (waiters.empty())
        return;
    waiters.erase(id_of(op));
    if (!waiters.empty() || !listener)
        return;
    for (auto& node : spec->nodes)
        asio::post(node->strand(), [node, ch = spec->channel, l = listener] {
            node->remove_listener(ch, l.get());
        });
    listener.reset();
}

void redlock_core::abandon() noexcept {
    // No thread runs the context any more; the ops outlive their handlers, which may own the
    // handle (and its destructor posts to the dead strand).
    auto ops = std::move(pending);
    pending.clear();
    waiters = {};
    listener.reset();
    std::vector<redlock_acquire_op::handler_type> handlers;
    for (auto& op : ops)
        handlers.push_back(op->abandon());
    handlers.clear();
}

void redlock_core::wake_head() {
    if (const auto head = waiters.head())
        reinterpret_cast<redlock_acquire_op*>(static_cast<std::uintptr_t>(head))->wake();
}

} // namespace detail

} // namespace corolock
