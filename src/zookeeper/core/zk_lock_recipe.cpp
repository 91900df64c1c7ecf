// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "zookeeper/core/zk_lock_recipe.hpp"

#include <boost/asio/error.hpp>

#include <ostream>

namespace corolock::detail {

namespace {

constexpr std::size_t sequence_digits = 10;

std::string_view kind_name(zk_node_kind k) noexcept {
    switch (k) {
    case zk_node_kind::lock:
        return "lock";
    case zk_node_kind::read:
        return "read";
    case zk_node_kind::write:
        return "write";
    }
    return "lock";
}

bool conflicts(zk_node_kind mine, zk_node_kind earlier) noexcept {
    return mine != zk_node_kind::read || earlier != zk_node_kind::read;
}

} // namespace

static_assert(max_lock_path == 900, "zk_path_problem's text states the limit");

std::string_view zk_path_problem(std::string_view path) noexcept {
    if (path.empty() || path.front() != '/')
        return "is not absolute (it must start with '/')";
    if (path.size() < 2)
        return "is the root (a lock needs a node of its own)";
    if (path.size() > max_lock_path)
        return "is too long (at most 900 bytes: room for the lock's node names below it)";
    if (path.back() == '/')
        return "ends with '/'";
    std::size_t start = 1;
    while (start <= path.size()) {
        auto end = path.find('/', start);
        if (end == std::string_view::npos)
            end = path.size();
        const auto part = path.substr(start, end - start);
        if (part.empty())
            return "has an empty component ('//')";
        if (part == "." || part == "..")
            return "has a '.' or '..' component";
        for (const char c : part) {
            const auto u = static_cast<unsigned char>(c);
            if (u < 0x20 || u >= 0x7f)
                return "has a control or non-ASCII byte (printable ASCII only)";
        }
        if (start == 1 && part == "zookeeper")
            return "is under /zookeeper, which the server reserves";
        start = end + 1;
    }
    return {};
}

bool valid_lock_path(std::string_view path) noexcept {
    return zk_path_problem(path).empty();
}

std::string node_prefix(std::string_view owner, zk_node_kind kind) {
    std::string out;
    const auto k = kind_name(kind);
    out.reserve(owner.size() + k.size() + 2);
    out.append(owner).append("-").append(k).append("-");
    return out;
}

std::optional<zk_node_name> parse_node_name(std::string_view name) noexcept {
    if (name.size() <= sequence_digits + 1)
        return std::nullopt;
    const auto digits = name.substr(name.size() - sequence_digits);
    std::uint64_t seq = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9')
            return std::nullopt;
        seq = seq * 10 + static_cast<unsigned>(c - '0');
    }
    auto rest = name.substr(0, name.size() - sequence_digits);
    if (rest.back() != '-')
        return std::nullopt;
    rest.remove_suffix(1);
    const auto dash = rest.rfind('-');
    if (dash == std::string_view::npos || dash == 0)
        return std::nullopt;
    zk_node_name out;
    out.owner = rest.substr(0, dash);
    const auto kind = rest.substr(dash + 1);
    if (kind == "lock")
        out.kind = zk_node_kind::lock;
    else if (kind == "read")
        out.kind = zk_node_kind::read;
    else if (kind == "write")
        out.kind = zk_node_kind::write;
    else
        return std::nullopt;
    // The server's counter is a signed 32-bit int printed as ten digits; it wraps after 2^31
    // creations under one parent, which this recipe does not survive (doc/zookeeper.md).
    out.sequence = static_cast<std::uint32_t>(seq);
    return out;
}

std::ostream& operator<<(std::ostream& os, zk_lock_decision::verdict v) {
    switch (v) {
    case zk_lock_decision::verdict::holds:
        return os << "holds";
    case zk_lock_decision::verdict::wait:
        return os << "wait";
    case zk_lock_decision::verdict::gone:
        return os << "gone";
    }
    return os << "verdict(" << static_cast<int>(v) << ")";
}

zk_lock_decision decide(std::span<const std::string> children, std::string_view mine) {
    const auto me = parse_node_name(mine);
    zk_lock_decision d;
    if (!me)
        return d; // gone: a name we never create
    bool present = false;
    const std::string* best = nullptr;
    std::uint32_t best_seq = 0;
    for (const auto& c : children) {
        if (c == mine) {
            present = true;
            continue;
        }
        const auto n = parse_node_name(c);
        if (!n || n->sequence >= me->sequence || !conflicts(me->kind, n->kind))
            continue;
        if (best == nullptr || n->sequence > best_seq) {
            best = &c;
            best_seq = n->sequence;
        }
    }
    if (!present)
        return d;
    if (best == nullptr) {
        d.what = zk_lock_decision::verdict::holds;
        return d;
    }
    d.what = zk_lock_decision::verdict::wait;
    d.predecessor = *best;
    return d;
}

std::optional<std::string> find_own(std::span<const std::string> children, std::string_view owner) {
    for (const auto& c : children) {
        const auto n = parse_node_name(c);
        if (n && n->owner == owner)
            return c;
    }
    return std::nullopt;
}

corolock::error_code zk_stop_waiting(bool cancelled, bool once,
                                     std::chrono::steady_clock::time_point deadline,
                                     std::chrono::steady_clock::time_point now) noexcept {
    if (cancelled)
        return boost::asio::error::operation_aborted;
    if (now < deadline)
        return {};
    return once ? error::connection_lost : error::acquire_timeout;
}

std::ostream& operator<<(std::ostream& os, zk_orphan_step s) {
    switch (s) {
    case zk_orphan_step::none:
        return os << "none";
    case zk_orphan_step::remove_node:
        return os << "remove_node";
    case zk_orphan_step::find_by_owner:
        return os << "find_by_owner";
    }
    return os << "zk_orphan_step(" << static_cast<int>(s) << ")";
}

zk_orphan_step orphan_step(bool created, bool outcome_unknown) noexcept {
    if (created)
        return zk_orphan_step::remove_node;
    return outcome_unknown ? zk_orphan_step::find_by_owner : zk_orphan_step::none;
}

} // namespace corolock::detail
