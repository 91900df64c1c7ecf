// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/redirect_policy.hpp"

#include <charconv>
#include <ostream>

namespace corolock::detail {

std::optional<redirect_target> parse_redirect(std::string_view text) {
    std::string_view rest;
    if (text.starts_with("MOVED "))
        rest = text.substr(6);
    else if (text.starts_with("ASK "))
        rest = text.substr(4);
    else
        return std::nullopt;
    const auto space = rest.find(' ');
    if (space == std::string_view::npos)
        return std::nullopt;
    redirect_target t;
    const auto slot = rest.substr(0, space);
    auto [p, ec] = std::from_chars(slot.data(), slot.data() + slot.size(), t.slot);
    if (ec != std::errc{} || p != slot.data() + slot.size() || t.slot >= slot_count)
        return std::nullopt;
    const auto addr = rest.substr(space + 1);
    // The last colon: an IPv6 host has colons of its own.
    const auto colon = addr.rfind(':');
    if (colon == std::string_view::npos)
        return std::nullopt;
    const auto port = addr.substr(colon + 1);
    std::uint16_t n = 0;
    auto [pp, pec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (pec != std::errc{} || pp != port.data() + port.size() || n == 0 ||
        addr.substr(0, colon).find(' ') != std::string_view::npos)
        return std::nullopt;
    t.node.host = std::string(addr.substr(0, colon));
    t.node.port = std::string(port);
    return t;
}

redirect_policy::decision redirect_policy::on_outcome(error_code exec_ec,
                                                      std::string_view error_text,
                                                      const cluster_node& from) {
    decision d;
    action next = action::complete;
    const auto kind = error_text.empty() ? error_code{} : classify_server_error(error_text);
    if (exec_ec == error::not_connected) {
        // The request waited for a node that never answered and was never written. The node
        // may have failed over: refresh, then send to whoever owns the slot now.
        next = action::retry_later;
        d.refresh = true;
    } else if (exec_ec && exec_ec != condition::not_executed) {
        // A transport failure (connection_lost: maybe run), a cancellation: neither proves the
        // command did not run, so neither is re-sent.
        return d;
    } else if (kind == error::moved || kind == error::ask) {
        auto t = parse_redirect(error_text);
        if (!t)
            return d; // malformed: the caller gets the error reply as it is
        if (t->node.host.empty())
            t->node.host = from.host;
        d.target = std::move(*t);
        next = kind == error::moved ? action::moved : action::ask;
        d.refresh = kind == error::moved; // the map is stale (or the node lies): refresh
    } else if (kind == error::try_again || kind == error::loading) {
        next = action::retry_later;
    } else if (kind == error::cluster_down) {
        next = action::retry_later;
        d.refresh = true;
    } else {
        return d; // success, or an error that is the command's own answer
    }
    if (used_ >= budget_) {
        d.what = action::fail;
        d.ec = error::too_many_redirects;
        return d;
    }
    ++used_;
    d.what = next;
    return d;
}

std::ostream& operator<<(std::ostream& os, redirect_policy::action a) {
    switch (a) {
    case redirect_policy::action::complete:
        return os << "complete";
    case redirect_policy::action::moved:
        return os << "moved";
    case redirect_policy::action::ask:
        return os << "ask";
    case redirect_policy::action::retry_later:
        return os << "retry_later";
    case redirect_policy::action::fail:
        return os << "fail";
    }
    return os << "action(" << static_cast<int>(a) << ")";
}

} // namespace corolock::detail
