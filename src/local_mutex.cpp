// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The in-process backend. Every decision is taken at a call (acquire, release, extend, cancel,
// force_unlock) or at an instant of the manual clock inside local_backend::advance; completions
// are posted, so no user code runs inside this file's state changes.
#include "core/access.hpp"
#include "core/exec_cancel.hpp"
#include "core/handler_list.hpp"
#include "core/lock_policy.hpp"
#include <corolock/local_mutex.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace corolock {

namespace asio = boost::asio;
using time_point = local_clock::time_point;
using duration = local_clock::duration;

namespace detail {

using handler_ec = asio::any_completion_handler<void(error_code)>;
using acquire_handler = asio::any_completion_handler<void(error_code, local_lease)>;

// Posts `h(args...)` to its associated executor, else `fallback`.
template <class Handler, class... Args>
void post_completion(const asio::any_io_executor& fallback, Handler h, Args... args) {
    auto ex = asio::get_associated_executor(h, fallback);
    asio::post(fallback,
               asio::bind_executor(ex, [h = std::move(h), ... args = std::move(args)]() mutable {
                   std::move(h)(std::move(args)...);
               }));
}

struct local_waiter {
    std::uint64_t id;
    std::uint64_t mutex_id;
    time_point deadline;
    duration lease;
    bool watchdog;
    duration max_hold;
    acquire_handler handler;
};

struct local_lock {
    std::uint64_t last_token = 0;
    std::weak_ptr<local_grant> holder;
    // Never shifted: a std::list only links and unlinks its nodes, so no handler is assigned.
    std::list<local_waiter> waiters;
};

struct local_grant {
    std::shared_ptr<local_core> core;
    std::string name;
    std::uint64_t token = 0;
    duration lease{};
    bool watchdog = true;
    time_point renewed_at{};
    time_point deadline{};
    time_point hold_until = time_point::max();
    bool lost = false;
    error_code loss;
    bool released = false;          // given back to the lock (or lost): nothing more to do
    bool release_requested = false; // the lease's async_release ran while holds were alive
    int shares = 0;                 // the lease and its nested holds
    std::uint64_t next_wait = 0;
    handler_list<handler_ec> lost_waits;
};

struct local_core : std::enable_shared_from_this<local_core> {
    explicit local_core(asio::any_io_executor e) : ex(std::move(e)) {}

    asio::any_io_executor ex;
    time_point now{};
    bool renewals_paused = false;
    std::uint64_t next_id = 0;
    std::map<std::string, local_lock, std::less<>> locks;

    bool healthy_watchdog(const local_grant& g) const { return g.watchdog && !renewals_paused; }

    // The renewals a healthy watchdog made up to `now`, every lease/3 since the last one.
    void catch_up(local_grant& g) {
        if (g.released || !healthy_watchdog(g))
            return;
        const auto period = std::max(g.lease / 3, duration(1));
        const auto steps = (now - g.renewed_at) / period;
        g.renewed_at += steps * period;
        g.deadline = g.renewed_at + g.lease;
    }

    // The next instant at which something happens to `g`.
    time_point next_event(const local_grant& g) const {
        auto t = g.hold_until;
        if (!healthy_watchdog(g))
            t = std::min(t, g.deadline);
        return t;
    }

    local_lease grant(local_lock& lock, const std::string& name, const local_waiter& w) {
        auto g = std::make_shared<local_grant>();
        g->core = shared_from_this();
        g->name = name;
        g->token = ++lock.last_token;
        g->lease = w.lease;
        g->watchdog = w.watchdog;
        g->renewed_at = now;
        g->deadline = now + w.lease;
        if (w.max_hold > duration::zero())
            g->hold_until = now + w.max_hold;
        g->shares = 1;
        lock.holder = g;
        return access::construct<local_lease>(std::move(g));
    }

    // `from_slot`: called by the handler's own cancellation slot, whose function must not be
    // destroyed while it runs (it stays installed and finds nothing if emitted again).
    void complete_waiter(std::list<local_waiter>::iterator it, local_lock& lock, error_code ec,
                         local_lease l, bool from_slot = false) {
        auto h = std::move(it->handler);
        lock.waiters.erase(it);
        auto slot = asio::get_associated_cancellation_slot(h);
        if (slot.is_connected() && !from_slot)
            slot.clear();
        post_completion(ex, std::move(h), ec, std::move(l));
    }

    // Gives a free lock to its first waiter.
    void hand_over(const std::string& name, local_lock& lock) {
        if (!lock.holder.expired() || lock.waiters.empty())
            return;
        auto it = lock.waiters.begin();
        auto l = grant(lock, name, *it);
        complete_waiter(it, lock, {}, std::move(l));
    }

    void finish_lost_waits(local_grant& g, error_code ec) {
        auto waits = g.lost_waits.take_all();
        for (auto& [id, h] : waits) {
            auto slot = asio::get_associated_cancellation_slot(h);
            if (slot.is_connected())
                slot.clear();
            post_completion(ex, std::move(h), ec);
        }
    }

    void lose(local_grant& g, error_code why) {
        if (g.released)
            return;
        g.lost = true;
        g.loss = why;
        g.released = true;
        auto it = locks.find(g.name);
        finish_lost_waits(g, why);
        if (it != locks.end()) {
            it->second.holder.reset();
            hand_over(it->first, it->second);
        }
    }

    // The last share is gone, or an explicit release with no share left.
    void give_back(local_grant& g) {
        if (g.released)
            return;
        g.released = true;
        finish_lost_waits(g, asio::error::operation_aborted);
        auto it = locks.find(g.name);
        if (it != locks.end()) {
            it->second.holder.reset();
            hand_over(it->first, it->second);
        }
    }

    void drop_share(local_grant& g) {
        if (--g.shares == 0)
            give_back(g);
    }

    void advance_to(time_point target) {
        for (;;) {
            auto next = time_point::max();
            for (auto& [name, lock] : locks) {
                if (auto g = lock.holder.lock())
                    next = std::min(next, next_event(*g));
                for (const auto& w : lock.waiters)
                    next = std::min(next, w.deadline);
            }
            if (next > target)
                break;
            now = std::max(now, next);
            for (auto& [name, lock] : locks) {
                if (auto g = lock.holder.lock()) {
                    catch_up(*g);
                    if (g->hold_until <= now)
                        lose(*g, error::max_hold_reached);
                    else if (g->deadline <= now)
                        lose(*g, error::lease_lost);
                }
                for (auto it = lock.waiters.begin(); it != lock.waiters.end();) {
                    auto cur = it++;
                    if (cur->deadline <= now)
                        complete_waiter(cur, lock, error::acquire_timeout, local_lease());
                }
            }
        }
        now = target;
        for (auto& [name, lock] : locks)
            if (auto g = lock.holder.lock())
                catch_up(*g);
    }

    void cancel_waiter(const std::string& name, std::uint64_t id) {
        auto lk = locks.find(name);
        if (lk == locks.end())
            return;
        auto& ws = lk->second.waiters;
        auto it = std::find_if(ws.begin(), ws.end(), [&](const auto& w) { return w.id == id; });
        if (it != ws.end())
            complete_waiter(it, lk->second, asio::error::operation_aborted, local_lease(), true);
    }

    void cancel_mutex(std::uint64_t mutex_id) {
        for (auto& [name, lock] : locks) {
            for (auto it = lock.waiters.begin(); it != lock.waiters.end();) {
                auto cur = it++;
                if (cur->mutex_id == mutex_id)
                    complete_waiter(cur, lock, asio::error::operation_aborted, local_lease());
            }
        }
    }
};

} // namespace detail

// local_backend

local_backend::local_backend(executor_type ex)
    : core_(std::make_shared<detail::local_core>(std::move(ex))) {}

local_backend::~local_backend() = default;

local_backend::executor_type local_backend::get_executor() const noexcept {
    return core_->ex;
}

local_clock::time_point local_backend::now() const noexcept {
    return core_->now;
}

void local_backend::advance(clock::duration d) {
    if (d < clock::duration::zero())
        throw std::invalid_argument("corolock::local_backend::advance: negative duration");
    core_->advance_to(core_->now + d);
}

void local_backend::pause_renewals() {
    // Renewals made before the pause stand.
    for (auto& [name, lock] : core_->locks)
        if (auto g = lock.holder.lock())
            core_->catch_up(*g);
    core_->renewals_paused = true;
}

void local_backend::resume_renewals() {
    if (!core_->renewals_paused)
        return;
    core_->renewals_paused = false;
    for (auto& [name, lock] : core_->locks) {
        if (auto g = lock.holder.lock(); g && g->watchdog) {
            g->renewed_at = core_->now;
            g->deadline = core_->now + g->lease;
        }
    }
}

// local_lease

local_lease& local_lease::operator=(local_lease&& other) noexcept {
    if (this != &other) {
        if (auto g = std::move(share_))
            g->core->drop_share(*g);
        share_ = std::move(other.share_);
    }
    return *this;
}

local_lease::~local_lease() {
    if (share_)
        share_->core->drop_share(*share_);
}

bool local_lease::valid() const noexcept {
    return share_ && !share_->lost && share_->core->now < share_->deadline;
}

local_clock::time_point local_lease::valid_until() const noexcept {
    return share_ ? share_->deadline : clock::time_point::min();
}

bool local_lease::lost() const noexcept {
    return share_ && share_->lost;
}

fencing_token local_lease::token() const noexcept {
    return {lock_backend::local, share_ ? share_->token : 0};
}

const std::string& local_lease::name() const noexcept {
    static const std::string empty;
    return share_ ? share_->name : empty;
}

local_hold local_lease::hold() const {
    if (!share_)
        throw std::logic_error("corolock::local_lease::hold on an empty lease");
    ++share_->shares;
    return local_hold(share_);
}

void local_lease::wait_lost_impl(std::shared_ptr<detail::local_grant> g, handler_ec h) {
    auto& core = *g->core;
    if (g->lost)
        return detail::post_completion(core.ex, std::move(h), g->loss);
    if (g->released)
        return detail::post_completion(core.ex, std::move(h),
                                       error_code(asio::error::operation_aborted));
    const auto id = ++g->next_wait;
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected()) {
        slot.assign([w = std::weak_ptr<detail::local_grant>(g), id](asio::cancellation_type t) {
            auto g = w.lock();
            if (!g || !detail::cancels_wait(t))
                return;
            auto h = g->lost_waits.take(id);
            if (!h)
                return;
            // The slot is not cleared: that would destroy this function while it runs.
            detail::post_completion(g->core->ex, std::move(*h),
                                    error_code(asio::error::operation_aborted));
        });
    }
    g->lost_waits.add(id, std::move(h));
}

void local_lease::release_impl(std::shared_ptr<detail::local_grant> g, handler_ec h) {
    auto& core = *g->core;
    g->release_requested = true;
    const error_code loss = g->lost ? g->loss : error_code();
    core.drop_share(*g);
    detail::post_completion(core.ex, std::move(h), loss);
}

void local_lease::hold_release_impl(std::shared_ptr<detail::local_grant> g, handler_ec h) {
    auto& core = *g->core;
    // Only the last share of a lease released explicitly has an outcome to report.
    const bool report = g->shares == 1 && g->release_requested && g->lost;
    const error_code ec = report ? g->loss : error_code();
    core.drop_share(*g);
    detail::post_completion(core.ex, std::move(h), ec);
}

void local_lease::extend_impl(std::shared_ptr<detail::local_grant> g, handler_ec h) {
    auto& core = *g->core;
    if (g->lost)
        return detail::post_completion(core.ex, std::move(h), g->loss);
    g->renewed_at = core.now;
    g->deadline = core.now + g->lease;
    detail::post_completion(core.ex, std::move(h), error_code());
}

// local_hold

local_hold& local_hold::operator=(local_hold&& other) noexcept {
    if (this != &other) {
        reset();
        share_ = std::move(other.share_);
    }
    return *this;
}

local_hold::~local_hold() {
    reset();
}

void local_hold::reset() noexcept {
    if (auto g = std::move(share_))
        g->core->drop_share(*g);
}

bool local_hold::valid() const noexcept {
    return share_ && !share_->lost && share_->core->now < share_->deadline;
}

fencing_token local_hold::token() const noexcept {
    return {lock_backend::local, share_ ? share_->token : 0};
}

// local_mutex

local_mutex::local_mutex(local_backend& backend, std::string name, local_mutex_options opts)
    : core_(backend.core_), name_(std::move(name)), opts_(opts), id_(++core_->next_id) {}

local_mutex::~local_mutex() {
    cancel();
}

local_mutex::executor_type local_mutex::get_executor() const noexcept {
    return core_->ex;
}

const std::string& local_mutex::name() const noexcept {
    return name_;
}

const local_mutex_options& local_mutex::options() const noexcept {
    return opts_;
}

local_clock::time_point local_mutex::deadline_in(duration wait) const noexcept {
    if (wait < duration::zero())
        return clock::time_point::min();
    const auto left = clock::time_point::max() - core_->now;
    return wait >= left ? clock::time_point::max() : core_->now + wait;
}

void local_mutex::cancel() {
    core_->cancel_mutex(id_);
}

bool local_mutex::force_unlock() {
    auto it = core_->locks.find(name_);
    if (it == core_->locks.end())
        return false;
    auto g = it->second.holder.lock();
    if (!g)
        return false;
    core_->lose(*g, error::lease_lost);
    return true;
}

void local_mutex::acquire_impl(clock::time_point deadline, bool once, acquire_handler h) {
    auto& core = *core_;
    error_code ec;
    if (name_.empty())
        ec = error::invalid_name;
    else if (!detail::valid_lease(opts_.lease))
        ec = error::invalid_lease;
    else if (!detail::within(opts_.max_hold, duration::zero()))
        ec = error::invalid_argument;
    else if (deadline == clock::time_point::min())
        ec = error::invalid_wait;
    if (ec)
        return detail::post_completion(core.ex, std::move(h), ec, local_lease());

    auto& lock = core.locks[name_];
    detail::local_waiter w{++core.next_id, id_,         deadline, opts_.lease, opts_.watchdog,
                           opts_.max_hold, std::move(h)};
    if (lock.holder.expired() && lock.waiters.empty()) {
        auto l = core.grant(lock, name_, w);
        return detail::post_completion(core.ex, std::move(w.handler), error_code(), std::move(l));
    }
    if (once)
        return detail::post_completion(core.ex, std::move(w.handler), error_code(), local_lease());
    if (deadline <= core.now)
        return detail::post_completion(core.ex, std::move(w.handler),
                                       error_code(error::acquire_timeout), local_lease());
    auto slot = asio::get_associated_cancellation_slot(w.handler);
    if (slot.is_connected()) {
        slot.assign([c = std::weak_ptr<detail::local_core>(core_), name = name_,
                     id = w.id](asio::cancellation_type t) {
            if (auto core = c.lock(); core && detail::cancels_wait(t))
                core->cancel_waiter(name, id);
        });
    }
    lock.waiters.push_back(std::move(w));
}

} // namespace corolock
