// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_ACQUIRE_OP_HPP
#define COROLOCK_SRC_DETAIL_ACQUIRE_OP_HPP

#include "io/lock_service.hpp"

#include <boost/asio/any_completion_executor.hpp>

namespace corolock::detail {

// One acquisition in progress: runs its acquire_fsm on the strand and performs its actions.
class acquire_op : public std::enable_shared_from_this<acquire_op> {
public:
    using handler_type = boost::asio::any_completion_handler<void(error_code, lease)>;

    acquire_op(std::shared_ptr<mutex_core> core, const acquire_params& p, handler_type h);
    ~acquire_op();
    acquire_op(const acquire_op&) = delete;
    acquire_op& operator=(const acquire_op&) = delete;

    static acquire_op& from_id(waiter_queue::id id) noexcept {
        return *reinterpret_cast<acquire_op*>(static_cast<std::uintptr_t>(id));
    }
    waiter_queue::id id() const noexcept {
        return static_cast<waiter_queue::id>(reinterpret_cast<std::uintptr_t>(this));
    }
    const lock_spec& spec() const noexcept { return *core_->spec; }

    // Strand only.
    void start();
    void cancel() { act(fsm_.on_cancel()); }
    void stop() { act(fsm_.on_stop()); }
    void wake(); // became head, or a release message came for the head
    void joined(waiter_queue& q) noexcept { queue_ = &q; }
    // The execution context is shutting down: the handler is handed over to be destroyed,
    // never invoked (lock_service::abandon).
    handler_type abandon() noexcept;

    // Started and not completed: linked into its lock_service's list (strand only).
    acquire_op* prev_live = nullptr;
    acquire_op* next_live = nullptr;
    bool live = false;

private:
    void act(const acquire_action& a);
    void send_attempt();
    void on_reply(error_code ec);
    void on_timer();
    void arm();
    void complete(error_code ec, bool granted);
    void unlist() noexcept; // out of core_->pending
    bool head() const { return queue_ ? queue_->is_head(id()) : !svc_.has_waiters(spec().name); }
    bool woken() const noexcept { return queue_ && queue_->woken(id()); }

    std::shared_ptr<mutex_core> core_;
    lock_service& svc_;
    acquire_fsm fsm_;
    const bool once_; // a try: one attempt, TRYAGAIN is an answer (not waited out)
    handler_type handler_;
    boost::asio::any_completion_executor handler_ex_;
    boost::asio::steady_timer timer_;
    clock::time_point armed_ = clock::time_point::max();
    const clock::time_point started_; // when the caller asked: the wait the metrics count
    owner_id owner_;
    request req_;
    generic_response resp_;
    waiter_queue* queue_ = nullptr;
    std::uint64_t replies_at_send_ = 0; // the service's reply count when the attempt went out
};

} // namespace corolock::detail

#endif
