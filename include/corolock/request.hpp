// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_REQUEST_HPP
#define COROLOCK_REQUEST_HPP

#include <corolock/detail/access.hpp>
#include <corolock/detail/export.hpp>
#include <corolock/resp3/serializer.hpp>

#include <charconv>
#include <concepts>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace corolock {

namespace detail {

// Arguments are strings (any type convertible to std::string_view) or integers.
inline void add_arg(std::string& out, std::string_view s) {
    resp3::add_blob(out, s);
}

template <class T>
requires std::integral<T> &&
    (!std::same_as<T, bool>)&&(!std::same_as<T, char>)void add_arg(std::string& out, T value) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    (void)ec; // 24 bytes hold any 64-bit integer
    resp3::add_blob(out, std::string_view(buf, static_cast<std::size_t>(end - buf)));
}

// Commands whose RESP3 answer arrives as push frames, not as replies.
COROLOCK_DECL bool is_subscription_command(std::string_view cmd) noexcept;
// Whether a command blocks the connection until an event or a timeout: BLPOP and its family,
// WAIT, WAITAOF, and XREAD/XREADGROUP with BLOCK. `serialized` is the command as written.
COROLOCK_DECL bool is_blocking_command(std::string_view cmd, std::string_view serialized) noexcept;
// +1 for MULTI, -1 for EXEC and DISCARD, 0 for any other command.
COROLOCK_DECL int transaction_step(std::string_view cmd) noexcept;

// Raw access for the connection (EVALSHA/EVAL rewriting).

} // namespace detail

/// One or more Redis commands sent together (a pipeline). The payload is serialised when a
/// command is pushed, so a request can be executed many times at no extra cost.
///
/// SUBSCRIBE-family commands are confirmed by RESP3 pushes, not replies, but a refusal (e.g.
/// `-NOPERM` for a channel the ACL user may not use) is an error reply. So that such a refusal can
/// never be taken for the reply of a later command, a `PING` is written right behind each of
/// them, and the command counts as one reply: the PONG when the server accepted it, or the error
/// reply that refused it (the PONG that follows it is dropped). An exec with `ignore` then fails
/// with `error::subscribe_refused`. Prefer `connection::subscribe`, which also re-subscribes
/// after a reconnect.
class COROLOCK_DECL request {
public:
    /// Appends `cmd args...`. Each argument is a string (binary-safe) or an integer.
    template <class... Args>
    void push(std::string_view cmd, const Args&... args) {
        const auto start = payload_.size();
        resp3::add_header(payload_, resp3::type::array, 1 + sizeof...(Args));
        resp3::add_blob(payload_, cmd);
        (detail::add_arg(payload_, args), ...);
        count(cmd, start);
    }

    /// Appends `cmd [prefix] elements...` where the elements come from a range.
    template <class Range>
    void push_range(std::string_view cmd, const Range& range) {
        push_range_impl(cmd, std::string_view{}, false, range);
    }
    template <class Range>
    /// As above, with `prefix` between the command and the elements.
    void push_range(std::string_view cmd, std::string_view prefix, const Range& range) {
        push_range_impl(cmd, prefix, true, range);
    }

    /// Number of commands.
    std::size_t size() const noexcept { return commands_; }
    /// Number of replies the request gets: one per command (see above for subscriptions).
    std::size_t expected_responses() const noexcept { return expected_; }
    /// Positions among the replies of those that answer a subscription command, in order.
    const std::vector<std::size_t>& subscription_replies() const noexcept { return guards_; }
    /// True if no command was added.
    bool empty() const noexcept { return commands_ == 0; }
    /// The serialised commands.
    std::string_view payload() const noexcept { return payload_; }
    /// Whether a command blocks the server's answers on this connection until an event or a
    /// timeout (BLPOP and its family, WAIT, WAITAOF, XREAD/XREADGROUP with BLOCK). Such a
    /// command between MULTI and EXEC (or DISCARD) of the same request does not count: the server
    /// never blocks inside a transaction. A connection that carries leases refuses a blocking
    /// request (`error::blocking_command`) unless `connection_config::allow_blocking_commands`
    /// is set.
    bool has_blocking_command() const noexcept { return blocking_; }

    /// Removes every command; the buffer keeps its capacity.
    void clear() noexcept {
        payload_.clear();
        guards_.clear();
        commands_ = expected_ = 0;
        blocking_ = in_multi_ = false;
    }
    /// Reserves `bytes` for the serialised commands.
    void reserve(std::size_t bytes) { payload_.reserve(bytes); }

private:
    friend struct detail::access;

    template <class Range>
    void push_range_impl(std::string_view cmd, std::string_view prefix, bool has_prefix,
                         const Range& range) {
        const auto n = static_cast<std::size_t>(std::distance(std::begin(range), std::end(range)));
        const auto start = payload_.size();
        resp3::add_header(payload_, resp3::type::array, 1 + (has_prefix ? 1 : 0) + n);
        resp3::add_blob(payload_, cmd);
        if (has_prefix)
            resp3::add_blob(payload_, prefix);
        for (const auto& e : range)
            detail::add_arg(payload_, e);
        count(cmd, start);
    }
    void count(std::string_view cmd, std::size_t start) {
        ++commands_;
        if (const int step = detail::transaction_step(cmd); step != 0)
            in_multi_ = step > 0;
        else if (!in_multi_ &&
                 detail::is_blocking_command(cmd, std::string_view(payload_).substr(start)))
            blocking_ = true;
        if (detail::is_subscription_command(cmd)) {
            // The guard: its PONG (RESP3 answers PING in subscribed mode too) ends the slot.
            resp3::add_header(payload_, resp3::type::array, 1);
            resp3::add_blob(payload_, "PING");
            guards_.push_back(expected_);
        }
        ++expected_;
    }

    std::string payload_;
    std::vector<std::size_t> guards_;
    std::size_t commands_ = 0;
    std::size_t expected_ = 0;
    bool blocking_ = false;
    bool in_multi_ = false; // between MULTI and EXEC/DISCARD: commands are queued, never block
};

} // namespace corolock

#endif
