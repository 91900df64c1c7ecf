// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/sentinel_resolve.hpp"

#include <algorithm>

namespace corolock::detail {

namespace {

bool is_string(resp3::type t) noexcept {
    return t == resp3::type::blob_string || t == resp3::type::simple_string ||
           t == resp3::type::verbatim_string;
}

bool valid_port(std::string_view p) noexcept {
    return !p.empty() && p.size() <= 5 &&
           std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The nodes of the `index`-th reply (a reply starts at a depth-0 node).
std::pair<std::size_t, std::size_t> reply_range(const generic_response& resp, std::size_t index) {
    std::size_t begin = resp.size();
    std::size_t seen = 0;
    for (std::size_t i = 0; i < resp.size(); ++i) {
        if (resp[i].depth != 0)
            continue;
        if (seen == index)
            begin = i;
        else if (seen == index + 1)
            return {begin, i};
        ++seen;
    }
    return {begin, resp.size()};
}

} // namespace

request make_sentinel_request(const sentinel_config& cfg) {
    request req;
    if (cfg.password.empty())
        req.push("HELLO", 3);
    else
        req.push("HELLO", 3, "AUTH", cfg.username.empty() ? "default" : cfg.username, cfg.password);
    req.push("SENTINEL", "GET-MASTER-ADDR-BY-NAME", cfg.master_name);
    req.push("SENTINEL", "SENTINELS", cfg.master_name);
    return req;
}

sentinel_answer parse_sentinel_answer(const generic_response& resp) {
    sentinel_answer out;
    const auto [h0, h1] = reply_range(resp, 0);
    const auto [m0, m1] = reply_range(resp, 1);
    const auto [s0, s1] = reply_range(resp, 2);
    if (h0 == h1 || m0 == m1 || s0 == s1 || s1 != resp.size()) {
        out.ec = error::unexpected_reply;
        return out;
    }
    if (resp3::is_error(resp[h0].data_type)) {
        const std::string_view text = resp[h0].value;
        out.ec = text.starts_with("WRONGPASS") || text.starts_with("NOAUTH") ||
                         text.starts_with("NOPERM")
                     ? error_code(error::auth_failed)
                     : error_code(error::server_error);
        return out;
    }
    // The master: [ip, port], or null when this Sentinel does not monitor the name.
    const auto& m = resp[m0];
    if (m.data_type == resp3::type::null) {
        out.ec = error::sentinel_unknown_master;
        return out;
    }
    if (resp3::is_error(m.data_type)) {
        out.ec = classify_server_error(m.value);
        return out;
    }
    if (m.data_type != resp3::type::array || m.aggregate_size != 2 || m1 - m0 != 3 ||
        !is_string(resp[m0 + 1].data_type) || !is_string(resp[m0 + 2].data_type) ||
        resp[m0 + 1].value.empty() || !valid_port(resp[m0 + 2].value)) {
        out.ec = error::unexpected_reply;
        return out;
    }
    out.master = {resp[m0 + 1].value, resp[m0 + 2].value};
    // The other Sentinels: an array of maps (RESP3) or flat arrays (RESP2) of field/value pairs.
    // Only a refresh: a reply of another shape leaves the list as it was.
    const auto& s = resp[s0];
    if (s.data_type != resp3::type::array)
        return out;
    for (std::size_t i = s0 + 1; i < s1;) {
        if (resp[i].depth != 1)
            return out;
        address a;
        std::size_t j = i + 1;
        for (; j < s1 && resp[j].depth == 2; j += 2) {
            if (j + 1 >= s1 || resp[j + 1].depth != 2)
                return out;
            if (resp[j].value == "ip")
                a.host = resp[j + 1].value;
            else if (resp[j].value == "port")
                a.port = resp[j + 1].value;
        }
        if (!a.host.empty() && valid_port(a.port))
            out.sentinels.push_back(std::move(a));
        i = j;
    }
    return out;
}

error_code check_role(const generic_response& r) {
    if (r.size() >= 2 && r[0].data_type == resp3::type::array && r[0].aggregate_size >= 1 &&
        r[1].depth == 1 && is_string(r[1].data_type) && r[1].value == "master")
        return {};
    return error::role_check_failed;
}

std::optional<address> parse_switch_master(std::string_view payload, std::string_view master_name) {
    std::string_view words[5];
    std::size_t n = 0;
    while (!payload.empty()) {
        const auto sp = payload.find(' ');
        const auto w = payload.substr(0, sp);
        if (!w.empty()) {
            if (n == 5)
                return std::nullopt;
            words[n++] = w;
        }
        payload = sp == std::string_view::npos ? std::string_view{} : payload.substr(sp + 1);
    }
    if (n != 5 || words[0] != master_name || !valid_port(words[4]))
        return std::nullopt;
    return address{std::string(words[3]), std::string(words[4])};
}

sentinel_list::sentinel_list(std::vector<address> bootstrap)
    : bootstrap_(std::move(bootstrap)), list_(bootstrap_) {}

void sentinel_list::start_round() noexcept {
    pos_ = 0;
    unknown_ = false;
}

const address* sentinel_list::next() noexcept {
    return pos_ < list_.size() ? &list_[pos_++] : nullptr;
}

bool sentinel_list::on_answer(const sentinel_answer& a) {
    if (a.ec) {
        unknown_ = unknown_ || a.ec == error::sentinel_unknown_master;
        return false;
    }
    std::vector<address> next;
    auto add = [&next](const address& x) {
        if (std::find(next.begin(), next.end(), x) == next.end())
            next.push_back(x);
    };
    add(list_[pos_ - 1]);
    for (const auto& x : a.sentinels)
        add(x);
    for (const auto& x : bootstrap_)
        add(x);
    list_ = std::move(next);
    pos_ = list_.size();
    return true;
}

error_code sentinel_list::failure() const noexcept {
    return unknown_ ? error::sentinel_unknown_master : error::sentinel_resolve_failed;
}

} // namespace corolock::detail
