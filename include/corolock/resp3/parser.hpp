// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_RESP3_PARSER_HPP
#define COROLOCK_RESP3_PARSER_HPP

#include <corolock/detail/export.hpp>
#include <corolock/error.hpp>
#include <corolock/resp3/type.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace corolock::resp3 {

/// Bounds that keep a hostile or broken server from exhausting memory or stack.
struct parser_limits {
    /// Deepest allowed aggregate nesting (the top level is depth 0). At most `max_depth_cap`.
    std::size_t max_depth = 16;
    /// Longest blob (blob string, blob error, verbatim string) in bytes. Redis' own default
    /// proto-max-bulk-len is 512 MiB.
    std::size_t max_bulk_length = 512u * 1024u * 1024u;
    /// Most elements declared by one aggregate (pairs count once for maps).
    std::size_t max_aggregate_size = 16u * 1024u * 1024u;

    /// The largest `max_depth` a parser accepts.
    static constexpr std::size_t max_depth_cap = 64;
};

/// Incremental RESP3 (and RESP2) parser. It yields one node at a time and never allocates.
///
/// The caller keeps the bytes of the message being parsed in one contiguous buffer and passes
/// the whole buffer, starting at the first byte of the message, to every call of `consume`;
/// the parser remembers how far it got (`consumed()`). When `done()` turns true the message is
/// complete: the caller drops `consumed()` bytes from its buffer and calls `reset()`.
///
/// Any split of the input gives the same nodes: `consume` returns nothing, without error, until
/// a whole node is available. A parse error is final for the message (and the stream): the
/// caller must drop the connection.
class COROLOCK_DECL parser {
public:
    /// A parser that enforces `limits`.
    explicit parser(parser_limits limits = {}) noexcept;

    /// Parses the next node of the message that starts at `buffer[0]`. Returns it, or nullopt
    /// when more input is needed (ec clear) or the input is invalid (ec set). Node views point
    /// into `buffer`.
    std::optional<node_view> consume(std::string_view buffer, error_code& ec) noexcept;

    /// True once the top-level value (and any attribute before it) has been fully parsed.
    bool done() const noexcept { return depth_ == 0 && started_ && !in_attribute_prefix(); }

    /// Bytes of the current message consumed so far.
    std::size_t consumed() const noexcept { return consumed_; }

    /// Prepares for the next message.
    void reset() noexcept;

    /// The limits given at construction.
    const parser_limits& limits() const noexcept { return limits_; }

private:
    bool in_attribute_prefix() const noexcept { return pending_attribute_; }

    parser_limits limits_;
    std::size_t consumed_ = 0;
    std::size_t depth_ = 0; // open aggregates
    bool started_ = false;
    bool pending_attribute_ = false; // a top-level attribute ended; its value follows
    // Elements still expected by each open aggregate, innermost last.
    std::array<std::size_t, parser_limits::max_depth_cap + 1> remaining_{};
    // Whether each open aggregate is an attribute, which does not count in its parent.
    std::array<bool, parser_limits::max_depth_cap + 1> is_attribute_{};
    // Bytes after the type byte of the line at consumed_ already known to hold no CR or LF, so
    // that a long line fed in small pieces is scanned once.
    std::size_t scanned_ = 0;
    // A blob whose header has been read and whose body has not fully arrived yet.
    bool blob_pending_ = false;
    type blob_type_ = type::blob_string;
    std::size_t blob_body_ = 0; // offset of the body in the buffer
    std::size_t blob_size_ = 0;

    std::optional<node_view> parse_line(std::string_view buffer, type t, error_code& ec) noexcept;
    std::optional<node_view> parse_blob_header(std::string_view buffer, type t,
                                               error_code& ec) noexcept;
    std::optional<node_view> parse_blob_body(std::string_view buffer, error_code& ec) noexcept;
    std::optional<node_view> parse_aggregate(std::string_view buffer, type t,
                                             error_code& ec) noexcept;
    node_view emit(type t, std::size_t size, std::string_view value, std::size_t end) noexcept;
    void complete(bool attribute) noexcept;
};

} // namespace corolock::resp3

#endif
