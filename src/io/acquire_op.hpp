// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_ACQUIRE_OP_HPP
#define COROLOCK_SRC_DETAIL_ACQUIRE_OP_HPP

#include "io/lock_service.hpp"

#include <boost/asio/any_completion_executor.hpp>

namespace corolock::detail {

// One acquisition in progress: its decisions are the lock core's (it is the core's
// `acquisition`); it holds what performing them needs: the caller's handler, a timer, the
// request, the reply and the owner id. lock_service::perform calls it.
class acquire_op : public acquisition, public std::enable_shared_from_this<acquire_op> {
public:
    using handler_type = boost::asio::any_completion_handler<void(error_code, lease)>;

    // `units`: a semaphore's permits (0: the spec's); `spec`: this call's own (a per-call
    // lease), else the handle's.
    acquire_op(std::shared_ptr<mutex_core> core, const acquire_params& p, handler_type h,
               std::size_t units = 0, std::shared_ptr<const lock_spec> own_spec = nullptr);
    ~acquire_op();
    acquire_op(const acquire_op&) = delete;
    acquire_op& operator=(const acquire_op&) = delete;

    static acquire_op& of(acquisition& a) noexcept { return static_cast<acquire_op&>(a); }
    const lock_spec& spec() const noexcept { return *spec_; }
    const owner_id& owner() const noexcept { return owner_; }
    const member_id& member() const noexcept { return member_; }

    // Strand only.
    void start();
    void cancel();
    // The execution context is shutting down: the handler is handed over to be destroyed,
    // never invoked (lock_service::abandon).
    handler_type abandon() noexcept;

    // The lock core's actions for this acquisition (lock_service::perform; strand only).
    void send_attempt();
    void complete(error_code ec, bool granted);
    void arm(clock::time_point t);

    // Started and not completed: linked into its lock_service's list (strand only).
    acquire_op* prev_live = nullptr;
    acquire_op* next_live = nullptr;
    bool live = false;

private:
    void on_reply(error_code ec);
    void unlist() noexcept; // out of core_->pending

    std::shared_ptr<mutex_core> core_;
    std::shared_ptr<const lock_spec> spec_; // the handle's, or this call's own
    lock_service& svc_;
    const bool once_; // a try: one attempt, TRYAGAIN is an answer (not waited out)
    handler_type handler_;
    boost::asio::any_completion_executor handler_ex_;
    boost::asio::steady_timer timer_;
    clock::time_point armed_ = clock::time_point::max();
    const clock::time_point started_; // when the caller asked: the wait the metrics count
    owner_id owner_;
    std::size_t units_;
    member_id member_;
    request req_;
    generic_response resp_;
};

// Starts an acquisition through a handle (a mutex's, or a semaphore's for `units` permits): an
// invalid argument or a deadline of time_point::min() (a negative wait) fails before anything is
// sent, and never inline. A non-zero `lease` replaces the handle's mutex_options::lease for this
// call (a mutex's; checked as the option is).
void start_acquire(const std::shared_ptr<mutex_core>& core, clock::time_point deadline, bool once,
                   acquire_op::handler_type h, std::size_t units = 0,
                   clock::duration lease_override = clock::duration::zero());

} // namespace corolock::detail

#endif
