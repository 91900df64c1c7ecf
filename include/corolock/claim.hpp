// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_CLAIM_HPP
#define COROLOCK_CLAIM_HPP

#include <corolock/connection.hpp>
#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace corolock {

namespace detail {
class connection_impl;
} // namespace detail

/// An idempotency claim on one key: proof that this caller, and nobody else, may do the work the
/// key names (apply an order, send an e-mail) during a retention window. Made by `async_claim`.
///
/// Unlike a lock, a claim is not released when the work is done: it stays in Redis for its whole
/// window, so a repeat of the same request within the window is refused, whether it arrives
/// during the work or after it. Only `async_give_back` (the work failed, let a retry proceed)
/// ends it early. Destroying a claim does nothing.
///
/// Move-only; a moved-from or default-constructed claim is empty. Thread safety: as an Asio
/// object (distinct objects, safe; one object, not safe).
class COROLOCK_DECL claim {
public:
    /// A retention window.
    using duration = std::chrono::steady_clock::duration;
    /// A point on the steady clock (`valid_until()`).
    using time_point = std::chrono::steady_clock::time_point;

    /// An empty claim.
    claim() noexcept = default;
    /// Takes `other`'s ownership; `other` is left empty.
    claim(claim&& other) noexcept;
    /// Gives up what this object holds, then takes `other`'s; `other` is left empty.
    claim& operator=(claim&& other) noexcept;
    claim(const claim&) = delete;
    claim& operator=(const claim&) = delete;
    /// Does nothing in Redis: the key stays claimed until its window ends (that is the point).
    ~claim();

    /// True when this object holds a claim (false: refused, moved from, or given back).
    explicit operator bool() const noexcept { return conn_ != nullptr; }
    /// The claimed key (empty for an empty claim).
    const std::string& key() const noexcept { return key_; }
    /// The value stored at the key: 32 hex digits from a CSPRNG, unique to this claim.
    const std::string& owner() const noexcept { return owner_; }
    /// A local, conservative end of the window: the time the SET was sent plus the retention
    /// (the server's window starts later, so it ends no earlier). Past it the key may be free
    /// again and a repeat may proceed; work that can run that long needs a longer retention.
    time_point valid_until() const noexcept { return valid_until_; }

    /// The work failed: deletes the key if its value is still this claim's owner (a Lua
    /// compare-and-delete), so that a retry can claim it. Consumes the claim: it is empty as soon
    /// as the operation starts, whatever the outcome.
    ///
    /// Completion signature: `void(error_code)`.
    /// Object lifetimes: the claim need not outlive the operation once it has started; the
    /// connection must.
    /// Executor: completes on the token's associated executor (else the connection's; for an
    /// empty claim, which has no connection, the system executor), never inside the initiating
    /// call.
    /// Cancellation: terminal and partial, as `connection::async_exec`. A cancelled give-back
    /// may or may not have deleted the key; if it did not, the key stays claimed for the window
    /// (a retry is then refused, never let through twice).
    /// Errors: `not_owner` when the key no longer holds this claim (the window passed, maybe
    /// claimed again by someone else, whose claim is left untouched), or for an empty claim;
    /// connection errors (the key then keeps its window); `server_error`.
    /// Thread safety: one operation per claim.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_give_back(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            [](auto handler, claim* self) { self->give_back_impl(std::move(handler)); }, token,
            this);
    }

private:
    friend struct detail::access;
    claim(std::shared_ptr<detail::connection_impl> conn, std::string key, std::string owner,
          time_point valid_until) noexcept;
    void give_back_impl(boost::asio::any_completion_handler<void(error_code)> handler);

    std::shared_ptr<detail::connection_impl> conn_;
    std::string key_;
    std::string owner_;
    time_point valid_until_{};
};

namespace detail {
COROLOCK_DECL void
async_claim_impl(connection& conn, std::string key, std::chrono::steady_clock::duration retention,
                 boost::asio::any_completion_handler<void(error_code, claim)> handler);
}

/// Claims `key` for `retention`: `SET key <owner> NX PX <retention in ms, rounded up>`. At most
/// one caller gets a non-empty claim per key and window (see doc/design.md for the limits of
/// that promise under failover).
///
/// Completion signature: `void(error_code, claim)`. An empty claim (`!c`) with no error means the
/// key is taken (claimed by someone else, or any other key of that name exists): not an error.
/// Object lifetimes: `key` is copied before the call returns; the connection must outlive the
/// operation and the claim.
/// Executor: completes on the token's associated executor (else the connection's), never inside
/// the initiating call.
/// Cancellation: terminal. Completes promptly with `operation_aborted` and an empty claim; if the
/// SET had been written and its reply then shows the key was claimed, the claim is given back
/// in the background, so a cancelled claim never blocks the key for its window. The same holds
/// for a cancellation that comes after the reply, while the completion is on its way (the timer
/// of `async_claim(...) || timer` winning late): that completion is `operation_aborted` too, and
/// the claim is given back.
/// Errors: `invalid_name` (empty key) and `invalid_argument` (retention below 1 ms or above 365
/// days), before anything is sent; `not_connected`; `connection_lost`: the SET was written but
/// its reply was lost, so the outcome is unknown and the key may stay claimed, by nobody who
/// knows it, until the window ends (the SET is not re-sent); `server_error`.
/// Thread safety: any number of claims may run at once on one connection.
template <class CompletionToken = boost::asio::deferred_t>
auto async_claim(connection& conn, std::string_view key,
                 std::chrono::steady_clock::duration retention, CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, claim)>(
        [](auto handler, connection* conn, std::string key,
           std::chrono::steady_clock::duration retention) {
            detail::async_claim_impl(*conn, std::move(key), retention, std::move(handler));
        },
        token, &conn, std::string(key), retention);
}

} // namespace corolock

#endif
