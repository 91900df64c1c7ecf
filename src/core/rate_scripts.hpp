// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The rate limiter's GCRA script, its refund script, their arguments and reply decoding, and the
// state machine of one call (reply, sleep, cancellation): pure, unit-tested (doc/rate_limiter.md
// gives the scripts' KEYS, ARGV and replies).
#ifndef COROLOCK_SRC_CORE_RATE_SCRIPTS_HPP
#define COROLOCK_SRC_CORE_RATE_SCRIPTS_HPP

#include <corolock/error.hpp>
#include <corolock/rate_limiter.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace corolock::detail {

// Bounds of a rate_limit and of a call's arguments.
inline constexpr std::chrono::milliseconds min_rate_period{1};
inline constexpr std::chrono::hours max_rate_period{24 * 365};
// Longest burst window (burst x emission interval) and longest max_wait: 365 days.
inline constexpr std::int64_t max_rate_span_us = std::int64_t{365} * 24 * 3600 * 1000000;
// burst x rate stays below this, so that every product the script makes of a cost and a fraction
// of a microsecond is an exact integer in a Lua number (a double).
inline constexpr std::uint64_t max_rate_product = std::uint64_t{1} << 52;

// The emission interval T = period / rate, exactly, as whole microseconds plus a remainder over
// `rate` (the period counts in whole microseconds, rounded up), and the burst tolerance B x T in
// the same form. What the script receives.
struct rate_params {
    std::uint64_t t_us = 0;   // whole microseconds of T
    std::uint64_t t_rem = 0;  // T's remainder, in 1/rate microseconds (< rate)
    std::uint64_t rate = 0;   // the denominator
    std::uint64_t tau_us = 0; // whole microseconds of B x T
    std::uint64_t tau_rem = 0;
    std::uint64_t burst = 0;
};

// invalid_name (lockable_name refuses the name) or invalid_argument (a limit out of range: rate
// or burst 0, period outside 1 ms..365 days, burst x rate >= 2^52, burst x T over 365 days), else
// success; fills `out` on success.
error_code validate_rate_limit(std::string_view name, const rate_limit& limit, rate_params& out);

// invalid_argument for a cost outside 1..burst or a max_wait outside 0..365 days.
error_code validate_rate_call(const rate_params& p, std::uint64_t cost,
                              std::chrono::steady_clock::duration max_wait);

// max_wait in whole microseconds, rounded down (a slot is never further away than asked).
std::int64_t max_wait_us(std::chrono::steady_clock::duration max_wait);

// KEYS[1] = the limiter's key. ARGV: t_us, t_rem, rate, tau_us, tau_rem, cost, max_wait_us.
// Reply {status, delay_us, now_us, tat}: status 1 admitted now (delay 0), 2 reserved (the slot
// starts delay_us after now), 0 refused (retry after delay_us; tat ""); now_us = the server's
// TIME; tat = the value stored ("<µs>:<remainder>:<rate>"). WRONGTYPE when the key holds
// anything else.
const script& rate_acquire_script();
// KEYS[1] = the key. ARGV: tat (as the acquire replied), t_us, t_rem, cost. Moves the TAT back
// by cost x T only while the key still holds exactly `tat`; returns 1 refunded, 0 not.
const script& rate_refund_script();

request make_rate_acquire(const script& s, std::string_view key, const rate_params& p,
                          std::uint64_t cost, std::int64_t max_wait_us);
request make_rate_refund(const script& s, std::string_view key, const rate_params& p,
                         std::string_view tat, std::uint64_t cost);

// What one acquire script replied.
struct rate_reply {
    int status = 0;            // 0 refused, 1 admitted now, 2 reserved
    std::int64_t delay_us = 0; // wait (status 2) or retry-after (status 0)
    std::int64_t now_us = 0;
    std::string tat; // empty when refused
    bool took_slot() const noexcept { return status != 0; }
};

// Server errors: WRONGTYPE -> wrong_type, others classified (classify_server_error); any other
// shape, or values a correct script cannot produce (given the call's max_wait_us) ->
// unexpected_reply.
error_code decode_rate_acquire(const generic_response& resp, std::int64_t max_wait_us,
                               rate_reply& out);
error_code decode_rate_refund(const generic_response& resp, bool& refunded);

// The public decision for a reply.
rate_decision to_decision(const rate_reply& r);

// The script's arithmetic in exact integers (128-bit, in 1/rate µs), for the tests: they check
// the GCRA bound on it and cross-check the server's replies against it. `tat_us`/`tat_rem` are
// the stored TAT (0, 0: no key); a step at server time `now_us` returns what the script would
// reply (with `tat` empty) and updates the state when it takes a slot.
struct gcra_state {
    std::int64_t tat_us = 0;
    std::uint64_t tat_rem = 0;
};
rate_reply gcra_step(const rate_params& p, gcra_state& st, std::int64_t now_us, std::uint64_t cost,
                     std::int64_t max_wait_us);
// The key's TTL the script sets after a step that took a slot: (TAT - now) rounded up to whole
// milliseconds.
std::int64_t gcra_ttl_ms(const gcra_state& st, std::int64_t now_us);

// One call (try, reserve or acquire) as a state machine: it owns no socket or timer; the driver
// feeds it the script's reply, its timer's expiry and a cancellation, and does what it returns.
class rate_call_fsm {
public:
    enum class state { sending, sleeping, done, orphan };
    enum class action {
        none,     // nothing to do
        complete, // complete the caller (error, decision below)
        sleep,    // wait `sleep_us`, then feed on_timer
        refund,   // send the refund script for this reply's tat (the caller already completed)
        complete_and_refund, // both
    };

    // `sleep_for_slot`: acquire (sleeps until its slot); else try / reserve (complete at reply).
    explicit rate_call_fsm(bool sleep_for_slot) noexcept : sleep_(sleep_for_slot) {}

    state current() const noexcept { return state_; }
    // The outcome to complete the caller with, after `complete`/`complete_and_refund`.
    error_code result() const noexcept { return ec_; }
    const rate_reply& reply() const noexcept { return reply_; }
    std::int64_t sleep_us() const noexcept { return reply_.delay_us; }

    // The script's reply (ec: transport error or decode error).
    action on_reply(error_code ec, const rate_reply& r);
    // The sleep ended.
    action on_timer();
    // The caller's cancellation (terminal, partial or total), or rate_limiter::cancel.
    action on_cancel();

private:
    bool sleep_;
    state state_ = state::sending;
    error_code ec_;
    rate_reply reply_;
};

std::ostream& operator<<(std::ostream& os, rate_call_fsm::state s);
std::ostream& operator<<(std::ostream& os, rate_call_fsm::action a);

} // namespace corolock::detail

#endif
