// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_LEASE_HPP
#define COROLOCK_LEASE_HPP

#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/lease_base.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace corolock {

namespace detail {
struct lease_state;

// One share of a lease's ownership: the lease itself or a nested hold. The last share to go
// releases the lock in Redis without waiting (owner-checked), unless it was released explicitly.
class COROLOCK_DECL lease_share {
public:
    lease_share() noexcept = default;
    explicit lease_share(std::shared_ptr<lease_state> s) noexcept : state_(std::move(s)) {}
    lease_share(lease_share&&) noexcept = default;
    lease_share& operator=(lease_share&& o) noexcept {
        if (this != &o) {
            reset();
            state_ = std::move(o.state_);
        }
        return *this;
    }
    ~lease_share() { reset(); }

    lease_share another() const noexcept; // a new share of the same lease (no allocation)
    void reset() noexcept;
    // Gives this share up for an explicit release: the state if it was the last share (the
    // caller then releases), else null (the last share left releases).
    std::shared_ptr<lease_state> take_for_release() noexcept;
    lease_state* get() const noexcept { return state_.get(); }
    explicit operator bool() const noexcept { return state_ != nullptr; }

private:
    std::shared_ptr<lease_state> state_;
};
} // namespace detail

/// A Lua write that runs only while the caller's lease is current (`lease::async_fenced_eval`
/// fails with `error::stale_token` otherwise): for a mutex's lease, while its fencing token is
/// the newest for its lock; for a shared_mutex writer's, while the lock records its token; for
/// a semaphore's or a reader's, while its record's deadline has not passed on the server's
/// clock. The body uses KEYS and ARGV as usual.
class COROLOCK_DECL fenced_script {
public:
    /// Wraps `body` in the token check; the body's own KEYS and ARGV follow the lease's.
    explicit fenced_script(std::string_view body);
    /// The script sent for a mutex's lease.
    const script& wrapped() const noexcept { return script_; }
    /// The script sent for a semaphore's lease or a shared_mutex reader's.
    const script& guarded() const noexcept { return guarded_; }
    /// The script sent for a shared_mutex writer's lease.
    const script& held() const noexcept { return held_; }

private:
    script script_;
    script guarded_;
    script held_;
};

class nested_hold;

/// Proof that one acquisition holds a lock: what `mutex::async_acquire` gives. Move-only, like
/// `std::unique_lock`. Each lease is its own owner in Redis (an owner id from a CSPRNG), with its
/// own fencing token and local deadline; nothing else can release, extend or prove it. Pass it
/// (by reference) to nested code that needs the lock instead of acquiring again.
///
/// Destroying a lease that still owns the lock never blocks: it stops the watchdog and sends the
/// owner-checked release without waiting for it (once every nested hold has ended too).
///
/// Loss and release (`lease_base`: async_wait_lost, async_release):
/// - Lost (`lease_lost`) when it expired, was taken, or the connection stopped; or
///   `max_hold_reached`.
/// - The release is an owner-checked compare-and-delete that wakes the lock's waiters; it
///   completes when Redis answers or the connection fails, both promptly. It fails with
///   `lease_lost` or `max_hold_reached` when the lease was lost before the release, or the
///   release found the key gone or taken (the critical section may have overlapped a later
///   owner), and with connection errors when the outcome is unknown (the key expires with its
///   lease).
///
/// Thread safety: one lease is used by one coroutine at a time, as a `std::unique_lock`; the
/// getters may be called from any thread.
/// Executors: operations complete on the token's associated executor, else the connection's; on
/// an empty lease (no connection) on the token's associated executor, which is the system
/// executor for a plain callback.
/// Lifetime: a lease keeps its connection's state alive, but not the connection's execution
/// context: destroy leases before the io_context they were acquired on (as any Asio object).
class COROLOCK_DECL lease : public lease_base<lease, detail::lease_share> {
public:
    /// The clock that deadlines and lease ends are read on.
    using clock = std::chrono::steady_clock;

    /// An empty lease (owns nothing): also what a try-acquire gives when another owner holds the
    /// lock.
    lease() noexcept = default;
    /// Takes `other`'s ownership; `other` is left empty.
    lease(lease&&) noexcept = default;
    /// Releases what this lease owned (without waiting), then takes `other`'s.
    lease& operator=(lease&&) noexcept = default;
    ~lease() = default;

    /// Owns, not reported lost, and the local deadline has not passed: checks the clock.
    bool valid() const noexcept;
    /// The local end of the lease: its send time + lease - drift, pushed on by each renewal. A
    /// critical section that finishes before it cannot overlap a later owner (given the stated
    /// clock assumptions, doc/design.md). `time_point::min()` when empty.
    clock::time_point valid_until() const noexcept;
    /// The watchdog reported this lease lost (why: `async_wait_lost`).
    bool lost() const noexcept;
    /// The fencing token of this acquisition, tagged `lock_backend::redis` (value 0 when empty,
    /// and for a semaphore's permit): larger than every earlier token of the lock. Store
    /// `token().value()`; compare tokens only with tokens of the same backend.
    fencing_token token() const noexcept;
    /// The lock name (empty when empty).
    const std::string& name() const noexcept;
    /// 32 hex digits from a CSPRNG, unique to this acquisition (empty when empty).
    std::string_view owner_id() const noexcept;

    /// A nested hold: for code that wants reentrant "acquire again / release" pairs. It costs no
    /// round trip and no allocation and never adds anything in Redis; the lock is released when
    /// the lease and every nested hold taken from it are gone. Requires `owns()`.
    nested_hold hold() const;

    /// Renews the lease now for another `mutex_options::lease` (for fixed leases; with the
    /// watchdog it happens by itself). Owner-checked: a key that expired is never brought back.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the lease may be moved meanwhile.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: none once sent (it completes promptly).
    /// Errors: `lease_lost` (gone or taken: the lease is now reported lost); `not_owner` for an
    /// empty lease; connection errors (unknown outcome: the old deadline still stands).
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_extend(CompletionToken&& token = {}) {
        return detail::initiate_on(std::forward<CompletionToken>(token), &extend_impl, state());
    }

    /// Runs a fenced write with this lease's token. The body's reply is in `resp`.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: `s`, `resp`, and the keys and args until completion (as an Asio
    /// operation's buffers); the request is built when the operation starts.
    /// Executor: the token's associated executor, else the connection's; never inline.
    /// Cancellation: as `connection::async_exec`.
    /// Errors: `stale_token` (a newer acquisition exists, or the lease is gone from Redis);
    /// `lease_lost` when the lease is known lost or past `valid_until()` (nothing is sent);
    /// `not_owner` for an empty lease; `server_error` for the body's own errors; connection
    /// errors.
    /// Thread safety: as the class.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_fenced_eval(const fenced_script& s, std::span<const std::string_view> keys,
                           std::span<const std::string_view> args, generic_response& resp,
                           CompletionToken&& token = {}) {
        return detail::initiate_on(std::forward<CompletionToken>(token), &fenced_impl, state(), &s,
                                   keys, args, &resp);
    }

private:
    friend class lease_base<lease, detail::lease_share>;
    friend struct detail::access;
    friend class nested_hold;
    explicit lease(detail::lease_share s) noexcept : lease_base(std::move(s)) {}
    std::shared_ptr<detail::lease_state> state() const noexcept;
    std::shared_ptr<detail::lease_state> lost_watch() const noexcept { return state(); }

    static void wait_lost_impl(std::shared_ptr<detail::lease_state> s, handler_ec h);
    static void release_impl(detail::lease_share share, handler_ec h);
    static void extend_impl(std::shared_ptr<detail::lease_state> s, handler_ec h);
    static void fenced_impl(std::shared_ptr<detail::lease_state> st, const fenced_script* s,
                            std::span<const std::string_view> keys,
                            std::span<const std::string_view> args, generic_response* resp,
                            handler_ec h);
};

/// A nested hold on a lease (see `lease::hold`). Move-only; ending it never blocks.
class COROLOCK_DECL nested_hold : public hold_base<nested_hold, detail::lease_share> {
public:
    nested_hold() noexcept = default;
    /// As the lease's.
    bool valid() const noexcept;
    /// As the lease's.
    fencing_token token() const noexcept;
    /// Ends this hold now without waiting (the destructor does the same). If it was the last
    /// share of a lease already released, the release goes out in the background and a loss it
    /// finds reaches only the log: use `async_release` to hear it.
    void reset() noexcept { share_.reset(); }

private:
    friend class hold_base<nested_hold, detail::lease_share>;
    friend class lease;
    explicit nested_hold(detail::lease_share s) noexcept : hold_base(std::move(s)) {}
    static void release_impl(detail::lease_share s, handler_ec h) {
        lease::release_impl(std::move(s), std::move(h));
    }
};

} // namespace corolock

#endif
