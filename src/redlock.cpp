// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// RedLock's driver: it runs the pure machines of detail/redlock_fsm on the redlock's own strand
// and performs their actions: one script per node and round (all written at once), the
// subscriptions, one timer per acquisition and per lease, and the completions. Every node
// answers on its connection's strand; the answer is posted to the redlock's strand. See
// doc/redlock.md.
#include "core/handler_list.hpp"
#include "core/lock_policy.hpp"
#include "core/lock_scripts.hpp"
#include "core/redlock_fsm.hpp"
#include "core/redlock_scripts.hpp"
#include "core/waiter_queue.hpp"
#include "io/access.hpp"
#include "io/connection_impl.hpp"
#include "io/exec.hpp"
#include "io/owner_id.hpp"
#include "io/rearm.hpp"
#include <corolock/redlock.hpp>

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

namespace corolock {

namespace asio = boost::asio;

namespace detail {

using completion_ec = asio::any_completion_handler<void(error_code)>;

namespace {

std::int64_t to_ms(clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

error_code check(std::size_t n, bool duplicates, std::string_view name, const redlock_options& o) {
    if (n < 3 || n % 2 == 0 || duplicates)
        return error::invalid_argument;
    if (!lockable_name(name))
        return error::invalid_name;
    if (!valid_lease(o.lease))
        return error::invalid_lease;
    const auto zero = clock::duration::zero();
    if (!within(o.node_timeout, zero) || !(o.drift_factor >= 0.0 && o.drift_factor <= 0.5) ||
        !within(o.max_hold, zero) || !valid_retry(o.retry_base, o.retry_max))
        return error::invalid_argument;
    return {};
}

} // namespace

// What every acquisition through one redlock shares, checked once.
struct redlock_spec {
    std::vector<std::shared_ptr<connection_impl>> nodes;
    std::string name, channel;
    redlock_options opts;
    clock::duration drift{}, node_timeout{};
    std::string lease_ms;
    error_code invalid;

    const logger& log() const noexcept { return nodes.front()->log(); }
    asio::any_io_executor executor() const { return nodes.front()->executor(); }
};

// The three scripts of one acquisition (its owner id is fixed), serialised once as EVAL: never
// answered NOSCRIPT, so never re-queued behind a release (an acquire that ran after our release
// would leave our key behind).
struct owner_requests {
    owner_requests(const redlock_spec& spec, const owner_id& o) : owner(o), nodes(spec.nodes) {
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
    ~owner_requests() {
        for (auto& n : nodes)
            n->redlock_users(-1);
    }
    owner_requests(const owner_requests&) = delete;
    owner_requests& operator=(const owner_requests&) = delete;
    owner_id owner;
    std::vector<std::shared_ptr<connection_impl>> nodes;
    request acquire, extend, release;
};

class redlock_acquire_op;

// Registered with the context's shutdown (make_abandonable): `abandon` destroys the handlers of
// pending acquisitions, which may own the handle that owns this.
struct redlock_core : std::enable_shared_from_this<redlock_core>, context_shutdown_hook {
    explicit redlock_core(std::shared_ptr<const redlock_spec> s)
        : spec(std::move(s)), strand(asio::make_strand(spec->executor())),
          rng(std::random_device{}()) {}
    void abandon() noexcept override;

    std::shared_ptr<const redlock_spec> spec;
    asio::strand<asio::any_io_executor> strand;
    std::vector<std::shared_ptr<redlock_acquire_op>> pending; // strand only
    std::minstd_rand rng;                                     // strand only
    // The acquisitions of this handle that wait for a release, in arrival order, and the one
    // subscription of the handle (on every node while anyone waits). A release message wakes
    // the first only: 50 waiters woken by every message made 50 rounds per release, each on
    // every node. The others retry on their back-off timers, or wake when they come first.
    waiter_queue waiters;                    // strand only (ids: the ops' addresses)
    std::shared_ptr<push_listener> listener; // strand only
    void join(redlock_acquire_op* op);       // strand only
    void leave(redlock_acquire_op* op);      // strand only
    void wake_head();                        // strand only
    struct counters {
        std::atomic<std::uint64_t> rounds{0}, rounds_timed_out{0}, validity_failures{0},
            extensions{0}, leases_lost{0}, releases_sent{0};
    } stats;

    static redlock_lease make_lease(std::shared_ptr<redlock_lease_state> s) noexcept {
        return redlock_lease(std::move(s));
    }

    // Sends `which` of `reqs` to every node at once; each answer, as a vote, goes to
    // `on_vote(node, vote, why)` on the strand. The request lives as long as `reqs`.
    // `skip_down`: a node whose connection is known to be down (lost, reconnecting, failing to
    // connect; not a first connect under way) gets nothing and votes `failed` at once (posted,
    // error::not_connected), instead of a request that would wait there past the node timeout.
    // Never sent, it cannot have run: there is nothing to clean up on that node.
    template <class F>
    void fan_out(const std::shared_ptr<const owner_requests>& reqs, request owner_requests::*which,
                 F on_vote, bool skip_down = false) {
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

    // The owner-checked release to every node, the silent ones included: on each connection it
    // queues behind whatever this owner sent before, so it runs after it, even on a node that
    // resumes later.
    template <class F>
    void release_all(const std::shared_ptr<const owner_requests>& reqs, F on_vote) {
        stats.releases_sent.fetch_add(1, std::memory_order_relaxed);
        fan_out(reqs, &owner_requests::release, std::move(on_vote));
    }
};

std::string describe(const redlock_spec& spec) {
    std::string out = "corolock: redlock '";
    out.append(spec.name.size() > 64 ? spec.name.substr(0, 64) + "..." : spec.name);
    out.append("': ");
    return out;
}

// ---------------------------------------------------------------------------------------------
// A held lease

// Registered with the context's shutdown (make_abandonable): `abandon` destroys the handlers
// waiting for loss or release, which may own the lease that owns this.
struct redlock_lease_state : std::enable_shared_from_this<redlock_lease_state>,
                             context_shutdown_hook {
    redlock_lease_state(std::shared_ptr<redlock_core> c, std::shared_ptr<const owner_requests> r,
                        const redlock_hold_params& p, clock::time_point sent)
        : core(std::move(c)), reqs(std::move(r)), fsm(p, sent), timer(core->strand) {
        publish();
    }

    std::shared_ptr<redlock_core> core;
    std::shared_ptr<const owner_requests> reqs;

    // Any thread.
    std::atomic<clock::rep> valid_until_view{0};
    std::atomic<int> lost_view{0}; // an `error` value once lost
    std::atomic<std::uint64_t> next_waiter{0};

    // Strand only.
    redlock_lease_fsm fsm;
    asio::steady_timer timer;
    clock::time_point armed = clock::time_point::max();
    handler_list<completion_ec> lost_waiters;
    std::optional<completion_ec> release_done;

    void publish() noexcept {
        valid_until_view.store(fsm.valid_until().time_since_epoch().count(),
                               std::memory_order_relaxed);
    }

    auto vote_handler() {
        return [self = shared_from_this(), round = fsm.round()](std::size_t node, vote v,
                                                                error_code) {
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

    void act(const redlock_lease_action& a) {
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

    void arm() {
        rearm(shared_from_this(), timer, armed, fsm.wake_at(),
              [](redlock_lease_state& s, clock::duration late) {
                  const auto before = s.fsm.current();
                  const auto round = s.fsm.round();
                  const auto missing = s.fsm.tally().missing();
                  const auto a = s.fsm.on_timer(clock::now());
                  // An extension or a release decided by the timer, not by the votes.
                  const bool decided = (before == redlock_lease_fsm::state::extending ||
                                        before == redlock_lease_fsm::state::releasing) &&
                                       s.fsm.current() != before;
                  if (const auto& log = s.core->spec->log();
                      decided && log.enabled(logger::level::debug))
                      log.log(logger::level::debug,
                              describe(*s.core->spec) + "lease: round " + std::to_string(round) +
                                  " decided by the timer with " + std::to_string(missing) +
                                  " votes missing (it ran " + std::to_string(to_ms(late)) +
                                  " ms late)");
                  s.act(a);
              });
    }

    void release(completion_ec done) {
        auto waiters = lost_waiters.take_all();
        for (auto& [id, h] : waiters)
            deliver(std::move(h), core->spec->executor(),
                    error_code(asio::error::operation_aborted));
        release_done.emplace(std::move(done));
        act(fsm.on_release(clock::now()));
    }

    void abandon() noexcept override {
        // Moved out first: destroying a handler may destroy the lease (the caller holds this).
        auto waiters = lost_waiters.take_all();
        auto done = std::move(release_done);
        release_done.reset();
    }

    void wait_lost(std::uint64_t id, completion_ec h) {
        const auto s = fsm.current();
        if (s == redlock_lease_fsm::state::lost ||
            (s == redlock_lease_fsm::state::done && fsm.lost_reason()))
            return deliver(std::move(h), core->spec->executor(), fsm.lost_reason());
        if (s != redlock_lease_fsm::state::held && s != redlock_lease_fsm::state::extending)
            return deliver(std::move(h), core->spec->executor(),
                           error_code(asio::error::operation_aborted));
        lost_waiters.add(id, std::move(h));
    }

    void cancel_wait_lost(std::uint64_t id) {
        if (auto h = lost_waiters.take(id))
            deliver(std::move(*h), core->spec->executor(),
                    error_code(asio::error::operation_aborted));
    }
};

// ---------------------------------------------------------------------------------------------
// One acquisition in progress

class redlock_acquire_op : public std::enable_shared_from_this<redlock_acquire_op> {
public:
    using handler_type = asio::any_completion_handler<void(error_code, redlock_lease)>;

    redlock_acquire_op(std::shared_ptr<redlock_core> core, const redlock_params& p, handler_type h)
        : core_(std::move(core)), fsm_(p), handler_(std::move(h)),
          // Tracked: a pending acquire keeps the caller's io_context from running out of work.
          handler_ex_(tracked_work(handler_executor(handler_, spec().executor()))),
          timer_(core_->strand),
          reqs_(std::make_shared<const owner_requests>(spec(), random_owner_id())) {}

    const redlock_spec& spec() const noexcept { return *core_->spec; }

    // Strand only.
    void start() {
        core_->pending.push_back(shared_from_this());
        act(fsm_.start(clock::now()));
    }
    void cancel() { act(fsm_.on_cancel()); }
    void wake() { act(fsm_.on_wake(clock::now())); }
    // The context is shutting down: the handler, to be destroyed, never invoked.
    handler_type abandon() noexcept {
        joined_ = false;
        handler_ex_ = {};
        return std::move(handler_);
    }

private:
    void act(const redlock_action& a) {
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
                                               describe(self->spec()) + "node " +
                                                   std::to_string(node) + ": " + why.message());
                    else if (why == error::not_connected &&
                             self->spec().log().enabled(logger::level::debug))
                        self->spec().log().log(logger::level::debug,
                                               describe(self->spec()) + "node " +
                                                   std::to_string(node) +
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

    void subscribe() {
        if (!joined_)
            core_->join(this);
        joined_ = true;
    }

    void unsubscribe() {
        if (joined_)
            core_->leave(this);
        joined_ = false;
    }

    void arm() {
        rearm(shared_from_this(), timer_, armed_, fsm_.wake_at(),
              [](redlock_acquire_op& op, clock::duration late) {
                  const bool attempting =
                      op.fsm_.current() == redlock_acquire_fsm::state::attempting;
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

    void complete(error_code ec, bool granted) {
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
            auto st = make_abandonable<redlock_lease_state>(spec().executor(), core_, reqs_, hp,
                                                            fsm_.sent());
            st->arm();
            out = redlock_core::make_lease(std::move(st));
        }
        deliver(std::move(handler_), spec().executor(), ec, std::move(out));
        handler_ex_ = {};
        unlist(core_->pending, this);
    }

    std::shared_ptr<redlock_core> core_;
    redlock_acquire_fsm fsm_;
    handler_type handler_;
    asio::any_completion_executor handler_ex_;
    asio::steady_timer timer_;
    clock::time_point armed_ = clock::time_point::max();
    std::shared_ptr<const owner_requests> reqs_;
    bool joined_ = false; // in the handle's queue of waiters
};

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

// ---------------------------------------------------------------------------------------------
// redlock

redlock::redlock(std::span<connection* const> nodes, std::string name, redlock_options opts) {
    if (nodes.empty() || std::find(nodes.begin(), nodes.end(), nullptr) != nodes.end())
        throw std::invalid_argument("corolock::redlock: needs non-null connections");
    auto spec = std::make_shared<detail::redlock_spec>();
    for (auto* c : nodes)
        spec->nodes.push_back(detail::access::impl(*c).shared_from_this());
    const bool duplicates =
        std::set<connection*>(nodes.begin(), nodes.end()).size() != nodes.size();
    spec->name = std::move(name);
    spec->opts = opts;
    spec->invalid = detail::check(nodes.size(), duplicates, spec->name, opts);
    if (detail::lockable_name(spec->name))
        spec->channel = detail::derived_key(spec->name, "released");
    if (!spec->invalid) {
        using detail::clock;
        const auto scaled = std::chrono::duration_cast<clock::duration>(
            std::chrono::duration<double, clock::period>(static_cast<double>(opts.lease.count()) *
                                                         opts.drift_factor));
        spec->drift =
            std::min<clock::duration>(scaled + std::chrono::milliseconds(2), opts.lease / 2);
        spec->node_timeout =
            opts.node_timeout > clock::duration::zero()
                ? opts.node_timeout
                : std::max<clock::duration>(opts.lease / 20, std::chrono::milliseconds(5));
        spec->lease_ms = std::to_string(detail::to_ms(opts.lease));
    }
    auto ex = spec->executor();
    core_ = detail::make_abandonable<detail::redlock_core>(ex, std::move(spec));
}

redlock::~redlock() {
    cancel();
}

void redlock::cancel() {
    asio::post(core_->strand, [core = core_] {
        for (auto& op : std::vector(core->pending))
            op->cancel();
    });
}

redlock::executor_type redlock::get_executor() const noexcept {
    return core_->spec->executor();
}
const std::string& redlock::name() const noexcept {
    return core_->spec->name;
}
const redlock_options& redlock::options() const noexcept {
    return core_->spec->opts;
}
std::size_t redlock::size() const noexcept {
    return core_->spec->nodes.size();
}

redlock_stats redlock::stats() const noexcept {
    constexpr auto r = std::memory_order_relaxed;
    const auto& c = core_->stats;
    return {c.rounds.load(r),     c.rounds_timed_out.load(r), c.validity_failures.load(r),
            c.extensions.load(r), c.leases_lost.load(r),      c.releases_sent.load(r)};
}

redlock::clock::time_point redlock::deadline_in(duration wait) noexcept {
    const auto now = clock::now();
    return wait >= clock::time_point::max() - now ? clock::time_point::max() : now + wait;
}

void redlock::acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
    const auto& spec = *core_->spec;
    auto ec = spec.invalid;
    if (!ec && deadline == clock::time_point::min())
        ec = error::invalid_wait;
    if (ec) // fails before anything is sent, and never inline
        return detail::deliver(std::move(h), spec.executor(), ec, redlock_lease{});
    detail::redlock_params p;
    p.nodes = spec.nodes.size();
    p.deadline = deadline;
    p.once = once;
    p.lease = spec.opts.lease;
    p.drift = spec.drift;
    p.node_timeout = spec.node_timeout;
    p.retry_base = spec.opts.retry_base;
    p.retry_max = spec.opts.retry_max;
    auto slot = asio::get_associated_cancellation_slot(h);
    auto op = std::make_shared<detail::redlock_acquire_op>(core_, p, std::move(h));
    auto strand = core_->strand;
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<detail::redlock_acquire_op>(op),
                     strand](asio::cancellation_type) {
            asio::post(strand, [weak] {
                if (auto o = weak.lock())
                    o->cancel();
            });
        });
    asio::post(strand, [op = std::move(op)] { op->start(); });
}

// ---------------------------------------------------------------------------------------------
// redlock_lease

redlock_lease& redlock_lease::operator=(redlock_lease&& other) noexcept {
    if (this != &other) {
        reset();
        state_ = std::move(other.state_);
    }
    return *this;
}

redlock_lease::~redlock_lease() {
    reset();
}

void redlock_lease::reset() noexcept {
    if (!state_)
        return;
    auto s = std::move(state_);
    auto strand = s->core->strand;
    asio::post(strand, [s = std::move(s)] { s->release({}); });
}

bool redlock_lease::valid() const noexcept {
    return state_ && state_->lost_view.load(std::memory_order_relaxed) == 0 &&
           clock::now().time_since_epoch().count() <
               state_->valid_until_view.load(std::memory_order_relaxed);
}

redlock_lease::clock::time_point redlock_lease::valid_until() const noexcept {
    return state_ ? clock::time_point(
                        clock::duration(state_->valid_until_view.load(std::memory_order_relaxed)))
                  : clock::time_point::min();
}

bool redlock_lease::lost() const noexcept {
    return state_ && state_->lost_view.load(std::memory_order_relaxed) != 0;
}

const std::string& redlock_lease::name() const noexcept {
    static const std::string none;
    return state_ ? state_->core->spec->name : none;
}

std::string_view redlock_lease::owner_id() const noexcept {
    return state_ ? detail::view(state_->reqs->owner) : std::string_view();
}

void redlock_lease::wait_lost_impl(std::shared_ptr<detail::redlock_lease_state> s, handler_ec h) {
    // The slot is wired here, not on the strand: a cancellation emitted before the posted
    // registration runs is posted after it, so it finds the waiter.
    const auto id = s->next_waiter.fetch_add(1, std::memory_order_relaxed) + 1;
    auto strand = s->core->strand;
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<detail::redlock_lease_state>(s), id,
                     strand](asio::cancellation_type) {
            asio::post(strand, [weak, id] {
                if (auto st = weak.lock())
                    st->cancel_wait_lost(id);
            });
        });
    asio::post(strand, [s = std::move(s), id, h = std::move(h)]() mutable {
        s->wait_lost(id, std::move(h));
    });
}

void redlock_lease::release_impl(std::shared_ptr<detail::redlock_lease_state> s, handler_ec h) {
    auto strand = s->core->strand;
    asio::post(strand,
               [s = std::move(s), h = std::move(h)]() mutable { s->release(std::move(h)); });
}

} // namespace corolock
