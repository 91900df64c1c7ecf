// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// RedLock's driver (io/redlock_driver.cpp): the handle's shared state, a held lease and one
// acquisition in progress, each running a pure machine of core/redlock_fsm on the redlock's own
// strand. The public bodies (redlock.cpp) build them and post to them. See doc/redlock.md.
#ifndef COROLOCK_SRC_IO_REDLOCK_DRIVER_HPP
#define COROLOCK_SRC_IO_REDLOCK_DRIVER_HPP

#include "core/access.hpp"
#include "core/handler_list.hpp"
#include "core/redlock_fsm.hpp"
#include "core/waiter_queue.hpp"
#include "io/connection_impl.hpp"
#include "io/owner_id.hpp"
#include <corolock/redlock.hpp>

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace corolock::detail {

using completion_ec = boost::asio::any_completion_handler<void(error_code)>;

std::int64_t to_ms(clock::duration d);

// What every acquisition through one redlock shares, checked once.
struct redlock_spec {
    std::vector<std::shared_ptr<connection_impl>> nodes;
    std::string name, channel;
    redlock_options opts;
    clock::duration drift{}, node_timeout{};
    std::string lease_ms;
    error_code invalid;

    const logger& log() const noexcept { return nodes.front()->log(); }
    boost::asio::any_io_executor executor() const { return nodes.front()->executor(); }
};

// The three scripts of one acquisition (its owner id is fixed), serialised once as EVAL: never
// answered NOSCRIPT, so never re-queued behind a release (an acquire that ran after our release
// would leave our key behind).
struct owner_requests {
    owner_requests(const redlock_spec& spec, const owner_id& o);
    ~owner_requests();
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
        : spec(std::move(s)), strand(boost::asio::make_strand(spec->executor())),
          rng(std::random_device{}()) {}
    void abandon() noexcept override;

    std::shared_ptr<const redlock_spec> spec;
    boost::asio::strand<boost::asio::any_io_executor> strand;
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
        return access::construct<redlock_lease>(std::move(s));
    }

    // Sends `which` of `reqs` to every node at once; each answer, as a vote, goes to
    // `on_vote(node, vote, why)` on the strand. The request lives as long as `reqs`.
    // `skip_down`: a node whose connection is known to be down (lost, reconnecting, failing to
    // connect; not a first connect under way) gets nothing and votes `failed` at once (posted,
    // error::not_connected), instead of a request that would wait there past the node timeout.
    // Never sent, it cannot have run: there is nothing to clean up on that node.
    // (Defined in io/redlock_driver.cpp, the only caller.)
    template <class F>
    void fan_out(const std::shared_ptr<const owner_requests>& reqs, request owner_requests::*which,
                 F on_vote, bool skip_down = false);

    // The owner-checked release to every node, the silent ones included: on each connection it
    // queues behind whatever this owner sent before, so it runs after it, even on a node that
    // resumes later.
    template <class F>
    void release_all(const std::shared_ptr<const owner_requests>& reqs, F on_vote);
};

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
    boost::asio::steady_timer timer;
    clock::time_point armed = clock::time_point::max();
    handler_list<completion_ec> lost_waiters;
    std::optional<completion_ec> release_done;

    void publish() noexcept {
        valid_until_view.store(fsm.valid_until().time_since_epoch().count(),
                               std::memory_order_relaxed);
    }

    auto vote_handler(); // defined in io/redlock_driver.cpp, the only caller
    void act(const redlock_lease_action& a);
    void arm();
    void release(completion_ec done);
    void abandon() noexcept override;
    void wait_lost(std::uint64_t id, completion_ec h);
    void cancel_wait_lost(std::uint64_t id);
};

// ---------------------------------------------------------------------------------------------
// One acquisition in progress

class redlock_acquire_op : public std::enable_shared_from_this<redlock_acquire_op> {
public:
    using handler_type = boost::asio::any_completion_handler<void(error_code, redlock_lease)>;

    redlock_acquire_op(std::shared_ptr<redlock_core> core, const redlock_params& p, handler_type h);

    const redlock_spec& spec() const noexcept { return *core_->spec; }

    // Strand only.
    void start();
    void cancel();
    void wake();
    // The context is shutting down: the handler, to be destroyed, never invoked.
    handler_type abandon() noexcept;

private:
    void act(const redlock_action& a);
    void subscribe();
    void unsubscribe();
    void arm();
    void complete(error_code ec, bool granted);

    std::shared_ptr<redlock_core> core_;
    redlock_acquire_fsm fsm_;
    handler_type handler_;
    boost::asio::any_completion_executor handler_ex_;
    boost::asio::steady_timer timer_;
    clock::time_point armed_ = clock::time_point::max();
    std::shared_ptr<const owner_requests> reqs_;
    bool joined_ = false; // in the handle's queue of waiters
};

} // namespace corolock::detail

#endif
