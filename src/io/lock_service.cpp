// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/lock_service.hpp"

#include "core/lock_scripts.hpp"
#include "core/slot_table.hpp"
#include "io/acquire_op.hpp"
#include "io/cluster_impl.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace corolock::detail {

namespace asio = boost::asio;

namespace {

std::int64_t to_ms(clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The renewal script's kind argument (static storage: the request copies it at once anyway).
std::string_view kind_arg(record_kind k) noexcept {
    static constexpr char kinds[] = {'h', 'z'};
    return {k == record_kind::hash ? &kinds[0] : &kinds[1], 1};
}

// "250 ms", or "1500 us" when not a whole number of milliseconds.
std::string in_ms(clock::duration d) {
    using namespace std::chrono;
    if (d % milliseconds(1) == clock::duration::zero())
        return std::to_string(duration_cast<milliseconds>(d).count()) + " ms";
    return std::to_string(duration_cast<microseconds>(d).count()) + " us";
}

// The argument check: the error, and which field or rule it is, named as the user wrote it.
std::pair<error_code, std::string> check(std::string_view name, const mutex_options& o) {
    using std::chrono::milliseconds;
    if (const auto problem = name_problem(name); !problem.empty())
        return {error::invalid_name, "the name is " + std::string(problem)};
    if (!valid_lease(o.lease))
        return {error::invalid_lease,
                "the lease (mutex_options::lease, or acquire_options::lease for one call) is " +
                    in_ms(o.lease) + ", not " + in_ms(min_lease) + " to 365 days"};
    const auto field = [&](const char* what, clock::duration d, const char* rule) {
        return std::pair<error_code, std::string>{error::invalid_argument,
                                                  std::string("mutex_options::") + what + " is " +
                                                      in_ms(d) + ", not " + rule};
    };
    const auto zero = clock::duration::zero();
    if (!within(o.max_hold, zero))
        return field("max_hold", o.max_hold, "0 (no limit) to 365 days");
    if (!within(o.retry_base, milliseconds(1)))
        return field("retry_base", o.retry_base, "1 ms to 365 days");
    if (!within(o.retry_max, o.retry_base))
        return field("retry_max", o.retry_max, "retry_base to 365 days");
    if (!within(o.fence_retention, milliseconds(1)))
        return field("fence_retention", o.fence_retention, "1 ms to 365 days");
    if (!within(o.try_timeout, milliseconds(1)))
        return field("try_timeout", o.try_timeout, "1 ms to 365 days");
    const auto& rs = o.replica_sync;
    if (rs.replicas < 0 || rs.replicas > 1000)
        return {error::invalid_argument, "mutex_options::replica_sync.replicas is " +
                                             std::to_string(rs.replicas) + ", not 0 to 1000"};
    if (rs.replicas > 0 && !within(rs.timeout, milliseconds(1), o.lease / 2))
        return field("replica_sync.timeout", rs.timeout, "1 ms to half the lease");
    return {};
}

} // namespace

std::string describe(const lock_spec& spec) {
    std::string out = "corolock: lock '";
    out.append(spec.name.size() > 64 ? spec.name.substr(0, 64) + "..." : spec.name);
    out.append("': ");
    return out;
}

lock_spec::lock_spec(lock_transport t, std::string n, mutex_options o, std::size_t limit)
    : lock_spec(std::move(t), std::move(n), o) {
    what = kind::semaphore;
    record = record_kind::member;
    fence_key.clear(); // a semaphore has no tokens
    capacity = limit;
    // At most 10 digits and ':' (member_id::max_prefix).
    if (!invalid && (limit < 1 || limit > 1'000'000'000)) {
        invalid = error::invalid_argument;
        invalid_reason =
            "the semaphore's limit is " + std::to_string(limit) + ", not 1 to 1000000000";
    }
    if (!invalid)
        limit_arg = std::to_string(limit);
}

std::string_view lock_spec::member_prefix(std::size_t n, std::array<char, 24>& buf) const noexcept {
    if (what != kind::semaphore)
        return {};
    auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size() - 1, n);
    *end++ = ':';
    return {buf.data(), static_cast<std::size_t>(end - buf.data())};
}

const script& lock_spec::acquire_script() const noexcept {
    switch (what) {
    case kind::semaphore:
        return semaphore_acquire_script();
    case kind::shared:
        return read_acquire_script();
    case kind::exclusive:
        return write_acquire_script();
    case kind::fair:
        return fair_acquire_script();
    default:
        return detail::acquire_script();
    }
}

const script& lock_spec::release_script() const noexcept {
    switch (what) {
    case kind::semaphore:
        return semaphore_release_script();
    case kind::shared:
        return read_release_script();
    case kind::exclusive:
        return write_release_script();
    case kind::fair:
        return fair_release_script();
    default:
        return detail::release_script();
    }
}

request lock_spec::acquire_request(std::string_view member, bool once, std::size_t n) const {
    switch (what) {
    case kind::semaphore: {
        const std::string k = std::to_string(n);
        const std::string_view keys[] = {name};
        const std::string_view args[] = {member,    lease_ms,  k,
                                         limit_arg, intent_ms, once ? "try" : "wait"};
        return make_evalsha(acquire_script(), keys, args);
    }
    case kind::shared: {
        const std::string_view keys[] = {name, readers, intents, fence_key};
        const std::string_view args[] = {member, lease_ms};
        return make_evalsha(acquire_script(), keys, args);
    }
    case kind::exclusive:
    case kind::fair: {
        // The writer's KEYS: N, fence, {N}:r, {N}:w; the fair lock's: N, fence, {N}:q, {N}:qd.
        const std::string_view keys[] = {name, fence_key, readers, intents};
        const std::string_view args[] = {member, lease_ms, fence_ms, intent_ms,
                                         once ? "try" : "wait"};
        return make_evalsha(acquire_script(), keys, args);
    }
    default: {
        const std::string_view keys[] = {name, fence_key};
        const std::string_view args[] = {member, lease_ms, fence_ms, once ? "try" : "wait"};
        return make_evalsha(acquire_script(), keys, args);
    }
    }
}

request lock_spec::release_request(std::string_view member, std::string_view publish, bool eval,
                                   bool keep_place) const {
    // The fair lock's ARGV[4], ARGV[5]: keep the place (and its lease) or leave the line.
    const std::string_view args[] = {member, channel, publish, keep_place ? "keep" : "leave",
                                     intent_ms};
    const std::string_view one[] = {key};
    const std::string_view two[] = {key, intents};
    const std::string_view three[] = {key, readers, intents}; // the fair lock's line
    const std::span<const std::string_view> keys =
        what == kind::exclusive ? std::span<const std::string_view>(two)
        : what == kind::fair    ? std::span<const std::string_view>(three)
                                : one;
    const auto argv = std::span<const std::string_view>(args).first(what == kind::fair ? 5 : 3);
    return eval ? make_eval(release_script(), keys, argv)
                : make_evalsha(release_script(), keys, argv);
}

lock_spec::lock_spec(lock_transport t, std::string n, mutex_options o, kind k)
    : io(std::move(t)), what(k), name(std::move(n)), opts(o) {
    std::tie(invalid, invalid_reason) = check(name, opts);
    if (lockable_name(name)) {
        fence_key = derived_key(name, "fence");
        channel = derived_key(name, "released");
        key = name;
        if (what == kind::shared || what == kind::exclusive) {
            readers = derived_key(name, "r");
            intents = derived_key(name, "w");
            // Readers share the name, and a writer's release lets every waiter retry.
            capacity = static_cast<std::size_t>(-1);
            units = static_cast<std::size_t>(-1);
        }
        if (what == kind::fair) {
            readers = derived_key(name, "q");  // the line: waiter -> ticket
            intents = derived_key(name, "qd"); // waiter -> the deadline of its place
        }
        if (what == kind::shared) {
            key = readers;
            record = record_kind::member;
            units = 1; // a reader's release matters to the writer at the head
        }
    }
    if (invalid)
        return;
    lease_ms = std::to_string(to_ms(opts.lease));
    fence_ms = std::to_string(to_ms(opts.lease + opts.fence_retention));
    intent_ms = std::to_string(to_ms(waiting_record_ttl(opts.retry_max)));
    if (opts.replica_sync.replicas > 0) {
        wait_replicas = std::to_string(opts.replica_sync.replicas);
        wait_ms = std::to_string(to_ms(opts.replica_sync.timeout));
    }
    drift = drift_for(opts.lease);
}

lease_state::lease_state(std::shared_ptr<lock_service> s, std::shared_ptr<const lock_spec> sp,
                         const owner_id& o, const member_id& m, std::size_t n, std::uint64_t t)
    : svc(std::move(s)), spec(std::move(sp)), owner(o), member(m), units(n), token(t) {
    lease = spec->opts.lease;
    drift = spec->drift;
    watchdog = spec->opts.watchdog;
    const auto& rs = spec->opts.replica_sync;
    replicas = rs.replicas;
    wait_timeout = rs.timeout;
    count_connected = rs.on_shortfall == replica_sync::shortfall::count_connected;
}

// ---------------------------------------------------------------------------------------------
// The per-name subscription: release messages wake the head of the local queue.

class lock_service::listener final : public push_listener {
public:
    listener(std::weak_ptr<lock_service> svc, std::string name, lock_spec::kind k)
        : svc_(std::move(svc)), name_(std::move(name)), kind_(k) {}
    void on_message(std::string_view, std::string_view payload) override {
        auto s = svc_.lock();
        if (!s || !forced_owner(payload).empty()) // for holders; "released" follows it
            return;
        switch (kind_) {
        case lock_spec::kind::fair: // "head <member>": that waiter; else every one
            return s->on_independent_message(name_, named_head(payload), false);
        case lock_spec::kind::shared: // "released": a reader left, which only writers wait for
        case lock_spec::kind::exclusive:
            return s->on_independent_message(name_, {}, payload == "released");
        default:
            return s->on_release_message(name_, release_credits(payload));
        }
    }
    // Releases published while the connection was down are lost: try again.
    void on_reconnect() override { on_message({}, {}); }
    // No release message will come (e.g. an ACL without channel rights): the waiters go on with
    // their fallback timers alone.
    void on_subscribe_failed(error_code ec) override {
        if (auto s = svc_.lock())
            s->log().log(logger::level::error,
                         "corolock: lock '" + name_ + "': waiters get no release messages (" +
                             ec.message() + "); they retry on their back-off timers only");
    }

private:
    std::weak_ptr<lock_service> svc_;
    std::string name_;
    lock_spec::kind kind_;
};

// Force-unlocks: each message names the owner id of a lock an administrator deleted. On
// corolock:forced the payload is the owner; on a cluster, where it listens on the release
// channel of each name it holds, "forced <owner>" (the channel's other messages are waiters').
class lock_service::forced_listener final : public push_listener {
public:
    explicit forced_listener(std::weak_ptr<lock_service> svc) : svc_(std::move(svc)) {}
    void on_message(std::string_view channel, std::string_view payload) override {
        const auto owner = channel == forced_channel ? payload : forced_owner(payload);
        if (owner.empty())
            return;
        if (auto s = svc_.lock())
            s->on_forced(owner);
    }
    void on_subscribe_failed(error_code ec) override {
        if (auto s = svc_.lock())
            s->log().log(logger::level::warning,
                         "corolock: no force-unlock messages (" + ec.message() +
                             "): a force-unlocked lease is reported lost at its next renewal");
    }

private:
    std::weak_ptr<lock_service> svc_;
};

lock_service::lock_service(lock_transport io)
    : io_(std::move(io)), core_(std::random_device{}(), io_.sharded()), timer_(io_.strand()) {}

namespace {

// The lock service of a connection or a cluster, made on first use; when the owner stops for
// good, every lease is lost and every waiter ends.
template <class Owner>
std::shared_ptr<lock_service> service_of(Owner& c) {
    return std::static_pointer_cast<lock_service>(
        c.lock_service([&c](std::function<void()>& on_stop, std::function<void()>& on_reconnect) {
            auto svc = make_abandonable<lock_service>(
                c.executor(), lock_transport(c.shared_from_this()).borrowed());
            on_stop = [weak = std::weak_ptr<lock_service>(svc)] {
                if (auto s = weak.lock())
                    s->on_connection_stopped();
            };
            on_reconnect = [weak = std::weak_ptr<lock_service>(svc)] {
                if (auto s = weak.lock())
                    s->renew_all_now();
            };
            return svc;
        }));
}

} // namespace

void lock_service::configure(lock_metrics_options opts) {
    stats_.named.configure(opts.max_named_locks, std::move(opts.overflow_name));
    asio::post(io_.strand(), [self = shared_from_this(), f = std::move(opts.on_event)]() mutable {
        self->on_event_ = std::move(f);
    });
}

void lock_service::notify(lock_event_kind kind, std::string_view name, clock::duration elapsed,
                          std::uint64_t token, acquire_outcome outcome, error_code ec) {
    if (!on_event_)
        return;
    try {
        on_event_(lock_event{.kind = kind,
                             .name = name,
                             .elapsed = elapsed,
                             .token = token,
                             .outcome = outcome,
                             .ec = ec});
    } catch (...) {
        // A tracing hook must not break the lock layer: its failure is dropped.
    }
}

void lock_service::end_hold(lease_state& s, lock_event_kind kind, error_code ec) {
    const auto held = clock::now() - s.granted_at;
    if (!s.hold_counted) {
        s.hold_counted = true;
        stats_.hold.observe(held);
        if (stats_.named.on())
            stats_.named.held(s.spec->name, held);
    }
    if (kind == lock_event_kind::lost && stats_.named.on())
        stats_.named.lost(s.spec->name);
    notify(kind, s.spec->name, held, s.token, acquire_outcome::granted, ec);
}

std::shared_ptr<lock_service> lock_service::of(connection_impl& c) {
    return service_of(c);
}

std::shared_ptr<lock_service> lock_service::of(cluster_impl& c) {
    return service_of(c);
}

namespace {

template <class Owner>
bool carries(Owner& c) noexcept {
    const auto s = std::static_pointer_cast<lock_service>(c.existing_lock_service());
    return s && (s->stats_.leases_held.load(std::memory_order_relaxed) > 0 ||
                 s->acquiring_.load(std::memory_order_relaxed) > 0);
}

} // namespace

bool carries_locks(connection_impl& c) noexcept {
    return carries(c) || c.has_redlock_users();
}

bool carries_locks(cluster_impl& c) noexcept {
    return carries(c);
}

// ---------------------------------------------------------------------------------------------
// Acquisitions: each event goes to the lock core; its actions are performed here.

template <class Actions, class F>
void lock_service::run_core(Actions& buffer, F event) {
    // Performing never feeds the core synchronously (sends and completions are posted), but a
    // nested run would find the buffer taken and use its own.
    Actions out = std::move(buffer);
    out.clear();
    event(core_, clock::now(), out);
    perform(out);
    out.clear();
    buffer = std::move(out);
}

template <class F>
void lock_service::run(F event) {
    run_core(buffer_, std::move(event));
    stats_.waiters.store(core_.waiters(), std::memory_order_relaxed);
}

template <class F>
void lock_service::run_leases(F event) {
    run_core(lease_buffer_, std::move(event));
}

void lock_service::perform(const lock_actions& actions) {
    for (const auto& x : actions) {
        auto& op = acquire_op::of(*x.acq);
        const auto keep = op.shared_from_this(); // completing may drop the last other reference
        switch (x.what) {
        case lock_action::kind::subscribe: {
            auto sub = std::make_shared<listener>(weak_from_this(), op.spec().name, op.spec().what);
            io_.add_listener(op.spec().channel, sub);
            subs_.insert_or_assign(op.spec().name, std::move(sub));
            break;
        }
        case lock_action::kind::unsubscribe:
            if (auto it = subs_.find(op.spec().name); it != subs_.end()) {
                io_.remove_listener(op.spec().channel, it->second.get());
                subs_.erase(it);
            }
            break;
        case lock_action::kind::give_back:
            give_back(op.spec(), op.member(), x.keep_place);
            break;
        case lock_action::kind::attempt:
            op.send_attempt();
            break;
        case lock_action::kind::complete:
            op.complete(x.ec, x.granted);
            break;
        case lock_action::kind::arm:
            op.arm(x.at);
            break;
        }
    }
}

void lock_service::start(acquire_op& op) {
    run([&](lock_core& c, clock::time_point now, lock_actions& out) { c.start(op, now, out); });
}

void lock_service::cancel(acquire_op& op) {
    run([&](lock_core& c, clock::time_point now, lock_actions& out) { c.cancel(op, now, out); });
}

void lock_service::on_reply(acquire_op& op, const attempt_reply& r, bool answered) {
    if (answered)
        core_.on_script_reply(core_.slot_of(op.name)); // the server is alive
    run([&](lock_core& c, clock::time_point now, lock_actions& out) {
        c.on_reply(op, r, now, out);
        for (const auto& x : out) {
            if (x.acq != &op)
                continue;
            if (x.what == lock_action::kind::complete && x.ec == error::replicas_not_synced)
                log().log(logger::level::warning, describe(op.spec()) +
                                                      "grant given back: WAIT saw " +
                                                      std::to_string(r.acks) + " of " +
                                                      op.spec().wait_replicas + " replicas");
            else if (x.what == lock_action::kind::give_back &&
                     r.what == attempt_reply::kind::granted &&
                     !(r.acks < op.spec().opts.replica_sync.replicas))
                log().log(logger::level::info,
                          "corolock: a grant arrived after its lease deadline or after the "
                          "caller stopped waiting; it is given back");
        }
    });
}

void lock_service::on_timer(acquire_op& op) {
    run([&](lock_core& c, clock::time_point now, lock_actions& out) {
        if (c.on_timer(op, now, out))
            stats_.timer_wakeups.fetch_add(1, std::memory_order_relaxed);
    });
}

void lock_service::on_release_message(const std::string& name, std::size_t credits) {
    run([&](lock_core& c, clock::time_point now, lock_actions& out) {
        if (c.on_release_message(name, credits, now, out))
            stats_.pubsub_wakeups.fetch_add(1, std::memory_order_relaxed);
    });
}

void lock_service::on_independent_message(const std::string& name, std::string_view member,
                                          bool writers_only) {
    run([&](lock_core& c, clock::time_point now, lock_actions& out) {
        if (c.on_independent_message(name, member, writers_only, now, out))
            stats_.pubsub_wakeups.fetch_add(1, std::memory_order_relaxed);
    });
}

void lock_service::give_back(const lock_spec& spec, const member_id& member, bool keep_place) {
    stats_.undos.fetch_add(1, std::memory_order_relaxed);
    log().log(logger::level::info, describe(spec) + "undo sent (a grant nobody waits for, or an "
                                                    "attempt with an unknown outcome)");
    // EVAL, not EVALSHA: an undo must reach Redis before anything queued after it (a NOSCRIPT
    // retry would put it behind the next attempt, and it would delete that new grant).
    auto call = std::make_shared<script_call>(
        spec.release_request(member.view(), publish_flag(), true, keep_place));
    io_.eval(spec.release_script(), spec.name, call->req, call->resp, [call](error_code) {});
}

// ---------------------------------------------------------------------------------------------
// Leases

void lock_service::watch(const std::shared_ptr<lease_state>& s, clock::time_point sent) {
    if (s->spec->opts.max_hold > clock::duration::zero())
        s->max_hold_at = clock::time_point::max() - sent > s->spec->opts.max_hold
                             ? sent + s->spec->opts.max_hold
                             : clock::time_point::max();
    if (io_.sharded())
        s->cluster_slot = key_slot(s->spec->name);
    stats_.leases_held.fetch_add(1, std::memory_order_relaxed);
    run_leases(
        [&](lock_core& c, clock::time_point, lease_actions& out) { c.watch(*s, sent, out); });
    s->publish_deadline();
    listen_forced(*s);
}

void lock_service::on_first_use() {
    forced_ = std::make_shared<forced_listener>(weak_from_this());
    if (!io_.sharded()) // a cluster's holders listen per name instead (listen_forced)
        io_.add_listener(std::string(forced_channel), forced_);
    // An evicting server can delete a held lock behind its holder (noticed at the next renewal,
    // up to lease/3 later): say so once. A server that refuses CONFIG (ACL, renamed) says nothing.
    auto req = std::make_shared<request>();
    req->push("CONFIG", "GET", "maxmemory-policy");
    auto resp = std::make_shared<generic_response>();
    io_.exec({}, req, make_adapter(*resp),
             [req, resp, weak = weak_from_this()](error_code ec, std::size_t) {
                 auto self = weak.lock();
                 if (ec || !self || resp->size() < 3)
                     return;
                 const auto& policy = resp->back().value;
                 if (policy != "noeviction")
                     self->log().log(
                         logger::level::warning,
                         "corolock: the server's maxmemory-policy is '" + policy +
                             "': it may evict a held lock's key (two holders until the next "
                             "renewal); a lock server should run 'noeviction'");
             });
}

void lock_service::listen_forced(lease_state& s) {
    // A cluster has no channel every node serves: a force-unlock publishes on the name's release
    // channel, in the name's slot, which the holder's cluster subscribes while it holds the name.
    // Only a hash can be force-unlocked (a mutex's, a writer's, a fair lock's).
    if (!io_.sharded() || !forced_ || s.spec->record != record_kind::hash || s.forced_listening)
        return;
    s.forced_listening = true;
    if (held_channels_[s.spec->channel]++ == 0)
        io_.add_listener(s.spec->channel, forced_);
}

void lock_service::unlisten_forced(lease_state& s) {
    if (!s.forced_listening)
        return;
    s.forced_listening = false;
    auto it = held_channels_.find(s.spec->channel);
    if (it != held_channels_.end() && --it->second == 0) {
        io_.remove_listener(s.spec->channel, forced_.get());
        held_channels_.erase(it);
    }
}

void lock_service::on_forced(std::string_view owner) {
    std::shared_ptr<lease_state> hit;
    core_.leases().for_each([&](lease_watch& w) {
        auto& s = static_cast<lease_state&>(w);
        if (s.owner_view() == owner)
            hit = s.shared_from_this();
    });
    if (!hit)
        return;
    // Verified, not trusted: anyone may PUBLISH on the channel. A renewal now finds the key gone
    // after a real force-unlock (the lease is lost within a round trip), and renews it otherwise.
    log().log(logger::level::info,
              describe(*hit->spec) + "a force-unlock names this lease: renewing it now");
    run_leases(
        [&](lock_core& c, clock::time_point, lease_actions& out) { c.renew_now(*hit, out); });
}

void lock_service::forget(lease_state& s) {
    unlisten_forced(s); // every end of a lease comes here, also one already out of the table
    if (!lease_table::contains(s))
        return;
    core_.leases().remove(s);
    stats_.leases_held.fetch_sub(1, std::memory_order_relaxed);
    // The last lease gone, the timer is left to run out: it then finds nothing and the loop
    // stops. The next lease (the usual case: acquire, release, acquire) wakes no later than it,
    // so it costs no re-arm; cancelling here cost a timer completion, a post to restart the
    // loop and two timerfd_settime calls per cycle at one coroutine. The loop is still stopped at
    // once when the connection stops (on_connection_stopped).
}

void lock_service::lose(lease_state& s, error why, lease_loss reason) {
    if (s.released || s.lost_view.load(std::memory_order_relaxed) != 0)
        return;
    forget(s);
    s.lost_reason = why;
    s.lost_view.store(static_cast<int>(why), std::memory_order_relaxed);
    stats_.lease_lost(reason);
    end_hold(s, lock_event_kind::lost, error_code(why));
    if (log().enabled(logger::level::warning))
        log().log(logger::level::warning,
                  describe(*s.spec) + "lease lost, token " + std::to_string(s.token) + " (" +
                      std::string(to_string(reason)) + ": " + make_error_code(why).message() + ")");
    auto waiters = s.lost_waiters.take_all();
    for (auto& [id, h] : waiters)
        deliver(std::move(h), io_.executor(), error_code(why));
    // Redis may still have the key (a renewal answered too late, max_hold): delete it now,
    // owner-checked, so that no one else waits for it to expire.
    give_back(*s.spec, s.member);
}

void lock_service::convert(std::shared_ptr<lease_state> s, std::shared_ptr<const lock_spec> to,
                           bool downgrade,
                           asio::any_completion_handler<void(error_code, lease)> h) {
    if (s->released || s->converted || s->lost_view.load(std::memory_order_relaxed) != 0)
        return deliver(std::move(h), io_.executor(),
                       error_code(s->released || s->converted ? error::not_owner : s->lost_reason),
                       lease{});
    const auto& from = *s->spec;
    const auto& sc = downgrade ? downgrade_script() : try_upgrade_script();
    request req;
    if (downgrade) {
        const std::string_view keys[] = {from.name, from.readers};
        const std::string_view args[] = {s->member.view(), to->lease_ms, from.channel,
                                         publish_flag()};
        req = make_evalsha(sc, keys, args);
    } else {
        const std::string_view keys[] = {from.name, from.fence_key, from.readers};
        const std::string_view args[] = {s->member.view(), to->lease_ms, to->fence_ms};
        req = make_evalsha(sc, keys, args);
    }
    auto call = std::make_shared<script_call>(std::move(req));
    const auto sent = clock::now();
    io_.eval(
        sc, from.name, call->req, call->resp,
        [self = shared_from_this(), s, to = std::move(to), call, sent, downgrade,
         h = std::move(h)](error_code ec) mutable {
            acquire_reply ar;
            if (!ec)
                ec = decode_acquire(call->resp, ar, false);
            if (ec == error::connection_lost) {
                // It may have run: undo the new record; the old one is reported lost at
                // its next renewal if it is gone.
                self->give_back(*to, s->member);
            }
            if (ec)
                return deliver(std::move(h), self->io_.executor(), ec, lease{});
            if (!ar.acquired)
                return deliver(std::move(h), self->io_.executor(),
                               downgrade ? error_code(error::lease_lost) : error_code(), lease{});
            // The old lease ends here, with no release: its record is the new one's.
            s->converted = true;
            self->forget(*s);
            s->valid_until_view.store(0, std::memory_order_relaxed);
            for (auto& [id, w] : s->lost_waiters.take_all())
                deliver(std::move(w), self->io_.executor(),
                        error_code(asio::error::operation_aborted));
            auto st =
                std::make_shared<lease_state>(self, to, s->owner, s->member, to->units, ar.token);
            self->watch(st, sent);
            deliver(std::move(h), self->io_.executor(), error_code(), make_lease(std::move(st)));
        });
}

void lock_service::release(std::shared_ptr<lease_state> s, completion done) {
    if (s->converted) { // its record is another lease's now
        s->released = true;
        if (done)
            deliver(std::move(done), io_.executor(), error_code());
        return;
    }
    s->released = true;
    auto waiters = s->lost_waiters.take_all();
    for (auto& [id, h] : waiters)
        deliver(std::move(h), io_.executor(), error_code(asio::error::operation_aborted));
    if (s->lost_view.load(std::memory_order_relaxed) != 0) {
        if (done)
            deliver(std::move(done), io_.executor(), error_code(s->lost_reason));
        return;
    }
    forget(*s);
    end_hold(*s, lock_event_kind::released);
    // With a hand-off the head's attempt follows on the socket: send EVAL, never answered
    // NOSCRIPT, so the release cannot be re-queued behind that attempt (name_queue decides when).
    const bool hand_over = core_.release_hands_over(s->spec->name);
    // The release and the hand-off attempt leave in one write. A dropped lease's release (no
    // completion) is not held back to leave with its holder's next request: a connection
    // stopped right after the drop would discard it unwritten on TLS, where the stop cannot
    // write what is queued (test mutex/release/a_lease_dropped_right_before_the_connection_...).
    const auto batch = io_.write_batch(hand_over);
    auto call = std::make_shared<script_call>(
        s->spec->release_request(s->member.view(), publish_flag(), hand_over));
    io_.eval(s->spec->release_script(), s->spec->name, call->req, call->resp,
             [self = shared_from_this(), s, call, done = std::move(done)](error_code ec) mutable {
                 bool released = false, published = false;
                 if (ec != condition::connection_failure && ec != asio::error::operation_aborted)
                     self->core_.on_script_reply(self->core_.slot_of(s->spec->name));
                 if (!ec)
                     ec = decode_release(call->resp, released, published);
                 self->run([&](lock_core& c, clock::time_point now, lock_actions& out) {
                     if (c.on_release_reply(s->spec->name, call->handed_off, released, published,
                                            s->units, now, out))
                         self->stats_.handoffs.fetch_add(1, std::memory_order_relaxed);
                 });
                 if (!ec && !released) {
                     // Gone or taken before we released: the section may have overlapped.
                     ec = error::lease_lost;
                     self->stats_.lease_lost(lease_loss::release_refused);
                     self->end_hold(*s, lock_event_kind::lost, ec);
                     self->log().log(logger::level::warning,
                                     describe(*s->spec) + "lease lost, token " +
                                         std::to_string(s->token) +
                                         " (release_refused: found expired or taken at release)");
                 } else if (ec == asio::error::operation_aborted || ec == error::not_connected) {
                     // The connection was stopped by its owner, maybe after the release was
                     // written (it was sent first): not a fault, and maybe not a failure.
                     self->log().log(logger::level::debug,
                                     describe(*s->spec) + "release not confirmed (" + ec.message() +
                                         "): if it did not run, the key expires with its lease");
                 } else if (ec) {
                     self->log().log(logger::level::warning,
                                     describe(*s->spec) + "release failed (" + ec.message() +
                                         "); unless it ran, the key expires with its lease");
                 }
                 if (done)
                     deliver(std::move(done), self->io_.executor(), ec);
             });
    // A hand-off: the head's attempt goes out right behind the release, in the same write, so
    // the lock changes hands in one round trip instead of two (release, message, attempt). The
    // release's own message, which arrives before either reply, is then not a wake-up.
    if (hand_over)
        run([&](lock_core& c, clock::time_point now, lock_actions& out) {
            if (c.hand_off(s->spec->name, s->units, now, out)) {
                call->handed_off = true;
                stats_.handoffs.fetch_add(1, std::memory_order_relaxed);
            }
        });
}

void lock_service::extend(std::shared_ptr<lease_state> s, completion done) {
    if (s->lost_view.load(std::memory_order_relaxed) != 0) {
        deliver(std::move(done), io_.executor(), error_code(s->lost_reason));
        return;
    }
    const std::string_view keys[] = {s->spec->key};
    const std::string_view args[] = {kind_arg(s->spec->record), s->member.view(),
                                     s->spec->lease_ms};
    auto call = std::make_shared<script_call>(detail::make_evalsha(renew_script(), keys, args));
    add_wait(call->req, s->spec->wait_replicas, s->spec->wait_ms, count_connected(*s->spec));
    const auto sent = clock::now();
    io_.eval(
        renew_script(), s->spec->name, call->req, call->resp,
        [self = shared_from_this(), s, call, sent, done = std::move(done)](error_code ec) mutable {
            std::vector<bool> renewed;
            const std::int64_t acks =
                !ec && s->replicas > 0
                    ? take_wait_reply(call->resp, count_connected(*s->spec), s->replicas)
                    : std::numeric_limits<std::int64_t>::max();
            if (!ec)
                ec = decode_renew(call->resp, renewed);
            if (!ec && renewed.size() != 1)
                ec = error::unexpected_reply;
            if (!ec && !lease_table::contains(*s))
                ec = s->lost_view.load(std::memory_order_relaxed) != 0
                         ? error_code(s->lost_reason)
                         : error_code(error::not_owner);
            if (!ec) {
                if (auto loss =
                        self->core_.leases().on_renewed(*s, sent, clock::now(), renewed[0], acks)) {
                    self->stats_.leases_held.fetch_sub(1, std::memory_order_relaxed);
                    self->lose(*s, static_cast<error>(loss.value()),
                               renewal_loss(loss, renewed[0]));
                    ec = loss;
                } else {
                    s->publish_deadline();
                }
                self->replan(lease_table::next_event(*s));
            }
            deliver(std::move(done), self->io_.executor(), ec);
        });
}

void lock_service::wait_lost(std::shared_ptr<lease_state> s, std::uint64_t id, completion h) {
    if (s->lost_view.load(std::memory_order_relaxed) != 0)
        return deliver(std::move(h), io_.executor(), error_code(s->lost_reason));
    if (s->released)
        return deliver(std::move(h), io_.executor(), error_code(asio::error::operation_aborted));
    s->lost_waiters.add(id, std::move(h));
}

void lock_service::cancel_wait_lost(lease_state& s, std::uint64_t id) {
    if (auto h = s.lost_waiters.take(id)) // else completed already
        deliver(std::move(*h), io_.executor(), error_code(asio::error::operation_aborted));
}

// ---------------------------------------------------------------------------------------------
// The watchdog: one timer per connection, woken at the earliest renewal or deadline.

void lock_service::replan(clock::time_point t) {
    if (!loop_running_) {
        if (core_.leases().empty())
            return;
        loop_running_ = true;
        asio::post(io_.strand(), [self = shared_from_this()] { self->run_watchdog(); });
        return;
    }
    // Wake the loop only when something needs it before its planned wake-up: adding a lease or a
    // renewal reply costs O(1), not a walk over every lease.
    if (t < planned_)
        timer_.cancel();
}

void lock_service::perform(const lease_actions& actions) {
    // Every lease the actions name stays alive until they are all performed: a loss ends what
    // the table knew of one, and its owner may let it go meanwhile.
    std::vector<std::shared_ptr<lease_state>> keep;
    for (const auto& x : actions) {
        if (x.lease)
            keep.push_back(static_cast<lease_state*>(x.lease)->shared_from_this());
        for (auto* w : x.batch)
            keep.push_back(static_cast<lease_state*>(w)->shared_from_this());
    }
    for (const auto& x : actions) {
        auto* s = static_cast<lease_state*>(x.lease);
        switch (x.what) {
        case lease_action::kind::lose:
            if (x.why == error::replicas_not_synced)
                log().log(logger::level::warning, describe(*s->spec) + "renewal: WAIT saw " +
                                                      std::to_string(x.acks) + " of " +
                                                      s->spec->wait_replicas + " replicas");
            stats_.leases_held.fetch_sub(1, std::memory_order_relaxed);
            lose(*s, x.why, x.reason);
            break;
        case lease_action::kind::renew:
            renew(x);
            break;
        case lease_action::kind::renewed:
            s->publish_deadline();
            stats_.renewals.fetch_add(1, std::memory_order_relaxed);
            break;
        case lease_action::kind::renew_failed:
            stats_.renewal_failures.fetch_add(1, std::memory_order_relaxed);
            log().log(logger::level::warning, describe(*s->spec) + "renewal failed (" +
                                                  x.ec.message() +
                                                  "); retrying until the deadline");
            break;
        case lease_action::kind::arm:
            if (x.at == clock::time_point::max()) { // nothing is watched: the loop stops
                loop_running_ = false;
                planned_ = clock::time_point::max();
                break;
            }
            planned_ = x.at;
            timer_.expires_at(planned_);
            timer_.async_wait([self = shared_from_this()](error_code) { self->run_watchdog(); });
            break;
        case lease_action::kind::replan:
            replan(x.at);
            break;
        }
    }
}

void lock_service::run_watchdog() {
    run_leases(
        [](lock_core& c, clock::time_point now, lease_actions& out) { c.on_watchdog(now, out); });
}

void lock_service::renew(const lease_action& x) {
    std::vector<std::shared_ptr<lease_state>> batch;
    batch.reserve(x.batch.size());
    for (auto* w : x.batch)
        batch.push_back(static_cast<lease_state*>(w)->shared_from_this());
    const auto sent = clock::now();
    std::vector<std::string_view> keys, args;
    keys.reserve(batch.size());
    args.reserve(3 * batch.size());
    for (auto& s : batch) {
        keys.push_back(s->spec->key);
        args.push_back(kind_arg(s->spec->record)); // one batch renews every kind of record
        args.push_back(s->member.view());
        args.push_back(s->spec->lease_ms);
    }
    const lock_spec* strictest = x.wait ? static_cast<lease_state*>(x.wait)->spec.get() : nullptr;
    const bool count = x.count_connected; // every lease asks only the replicas the master has
    auto call = std::make_shared<script_call>(detail::make_evalsha(renew_script(), keys, args));
    if (strictest)
        add_wait(call->req, strictest->wait_replicas, strictest->wait_ms, count);
    stats_.renewal_calls.fetch_add(1, std::memory_order_relaxed);
    const std::string_view route_key = batch.front()->spec->name; // before batch moves
    const bool several = batch.size() > 1;
    io_.eval(
        renew_script(), route_key, call->req, call->resp,
        [self = shared_from_this(), batch = std::move(batch), leases = x.batch, call, sent,
         waited = strictest != nullptr, count,
         wanted = strictest ? strictest->opts.replica_sync.replicas : 0](error_code ec) {
            renew_reply r;
            r.ec = ec;
            if (!ec && waited)
                r.acks = take_wait_reply(call->resp, count, wanted);
            if (!ec)
                r.ec = decode_renew(call->resp, r.renewed);
            const auto now = clock::now();
            self->run_leases([&](lock_core& c, clock::time_point, lease_actions& out) {
                if (c.on_renew_reply(leases, sent, r, now, out)) // answered, if only with an error
                    self->stats_.renewal_rtt.observe(now - sent);
            });
        },
        several);
}

void lock_service::track(acquire_op& op) {
    if (!forced_)
        on_first_use(); // its requests go out ahead of the first attempt
    acquiring_.fetch_add(1, std::memory_order_relaxed);
    op.live = true;
    op.prev_live = nullptr;
    op.next_live = live_;
    if (live_)
        live_->prev_live = &op;
    live_ = &op;
}

void lock_service::untrack(acquire_op& op) noexcept {
    if (!op.live)
        return;
    acquiring_.fetch_sub(1, std::memory_order_relaxed);
    op.live = false;
    (op.prev_live ? op.prev_live->next_live : live_) = op.next_live;
    if (op.next_live)
        op.next_live->prev_live = op.prev_live;
    op.prev_live = op.next_live = nullptr;
}

void lock_service::abandon() noexcept {
    // Collected first and destroyed when this returns: destroying a handler may destroy a
    // coroutine and with it mutexes and leases, whose destructors post to the (dead) strand.
    std::vector<completion> waits;
    core_.leases().for_each([&](lease_watch& w) {
        auto& s = static_cast<lease_state&>(w);
        for (auto& [id, h] : s.lost_waiters.take_all())
            waits.push_back(std::move(h));
    });
    std::vector<acquire_op::handler_type> acquires;
    std::vector<std::shared_ptr<acquire_op>> ops; // alive until the handlers are gone
    while (live_) {
        ops.push_back(live_->shared_from_this());
        acquires.push_back(live_->abandon());
    }
    acquires.clear();
    waits.clear();
}

void lock_service::renew_all_now() {
    run_leases(
        [](lock_core& c, clock::time_point now, lease_actions& out) { c.on_reconnect(now, out); });
}

void lock_service::on_connection_stopped() {
    // No renewal can happen any more: every held lease is lost now, and every waiter ends.
    std::vector<std::shared_ptr<lease_state>> held;
    core_.leases().for_each(
        [&](lease_watch& w) { held.push_back(static_cast<lease_state*>(&w)->shared_from_this()); });
    for (auto& s : held)
        lose(*s, error::lease_lost, lease_loss::connection_stopped);
    run([](lock_core& c, clock::time_point now, lock_actions& out) { c.stop(now, out); });
    if (loop_running_)
        timer_.cancel(); // the watchdog's loop ends now, not when its timer runs out
}

} // namespace corolock::detail
