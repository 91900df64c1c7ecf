// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "zookeeper/core/zk_election_core.hpp"

#include "core/decimal.hpp"

namespace corolock::detail {

std::string zk_record_path(std::string_view election_path) {
    std::string p(election_path);
    p += "/leader";
    return p;
}

std::string format_record(const zk_record& r) {
    std::string s =
        (r.live ? "live " : "ended ") + std::to_string(r.term) + ' ' + std::to_string(r.version);
    if (r.live) {
        s += '\n';
        s += r.node;
        s += '\n';
        s += r.value;
    }
    return s;
}

std::optional<zk_record> parse_record(std::string_view data) {
    zk_record r;
    const auto nl = data.find('\n');
    auto head = data.substr(0, nl);
    const auto kind = next_word(head);
    if (kind != "live" && kind != "ended")
        return std::nullopt;
    r.live = kind == "live";
    if (!parse_decimal(next_word(head), r.term) || !parse_decimal(head, r.version) || r.term == 0 ||
        r.version == 0)
        return std::nullopt;
    if (!r.live)
        return nl == std::string_view::npos ? std::optional(r) : std::nullopt;
    if (nl == std::string_view::npos)
        return std::nullopt;
    auto rest = data.substr(nl + 1);
    const auto nl2 = rest.find('\n');
    if (nl2 == std::string_view::npos || nl2 == 0 || rest[0] != '/')
        return std::nullopt;
    r.node = rest.substr(0, nl2);
    r.value = rest.substr(nl2 + 1);
    return r;
}

zk_begin begin_step(const std::optional<zk_record>& last, std::uint64_t mine,
                    bool lock_delay_on) noexcept {
    if (lock_delay_on && last && last->live && last->term != mine)
        return zk_begin::delay;
    return zk_begin::begin;
}

leader_view view_of(const std::optional<zk_record>& r, bool leader_node_exists) {
    leader_view v;
    if (!r)
        return v;
    v.term = r->term;
    v.version = r->version;
    if (r->live && leader_node_exists) {
        v.present = true;
        v.value = r->value;
    } else {
        v.ended = true;
    }
    return v;
}

} // namespace corolock::detail
