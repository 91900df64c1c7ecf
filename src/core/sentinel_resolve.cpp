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

namespace {

// Up to `N` words of `payload`, split at spaces; the count is N + 1 when there are more.
template <std::size_t N>
std::size_t split_words(std::string_view payload, std::string_view (&words)[N]) {
    std::size_t n = 0;
    while (!payload.empty()) {
        const auto sp = payload.find(' ');
        const auto w = payload.substr(0, sp);
        if (!w.empty()) {
            if (n == N)
                return N + 1;
            words[n++] = w;
        }
        payload = sp == std::string_view::npos ? std::string_view{} : payload.substr(sp + 1);
    }
    return n;
}

// The master an instance event is about: "master <name> <ip> <port> ..." or
// "<type> <name> <ip> <port> @ <master name> <master ip> <master port> ...".
struct event_master {
    std::string_view name;
    address master;
};
std::optional<event_master> parse_event(std::string_view payload) {
    std::string_view w[12];
    const auto n = split_words(payload, w);
    if (n >= 4 && w[0] == "master" && valid_port(w[3]))
        return event_master{w[1], {std::string(w[2]), std::string(w[3])}};
    if (n >= 8 && w[4] == "@" && valid_port(w[7]))
        return event_master{w[5], {std::string(w[6]), std::string(w[7])}};
    return std::nullopt;
}

// The channels a watch subscribes to: the switch, then the events that say a failover of the
// master they name has started or goes on, then the aborts.
constexpr std::string_view all_channels[] = {
    "+switch-master",
    "+try-failover",
    "+elected-leader",
    "+failover-state-select-slave",
    "+selected-slave",
    "+failover-state-send-slaveof-noone",
    "+failover-state-wait-promotion",
    "+promoted-slave",
    "+failover-state-reconf-slaves",
    "+failover-end-for-timeout",
    "+failover-end",
    "-failover-abort-not-elected",
    "-failover-abort-no-good-slave",
    "-failover-abort-slave-timeout",
};
constexpr auto progress_channels = std::span(all_channels).subspan(1, 10);
constexpr auto abort_channels = std::span(all_channels).subspan(11);

bool one_of(std::string_view c, std::span<const std::string_view> set) {
    return std::find(set.begin(), set.end(), c) != set.end();
}

} // namespace

std::span<const std::string_view> failover_watch::channels() noexcept {
    return all_channels;
}

failover_watch::action failover_watch::on_message(std::string_view source, std::string_view channel,
                                                  std::string_view payload, const address& current,
                                                  bool connected, clock::time_point now) {
    const bool on = hold_ > clock::duration::zero();
    const auto until =
        clock::time_point::max() - now > hold_ ? now + hold_ : clock::time_point::max();
    if (channel == "+switch-master") {
        std::string_view w[5];
        if (split_words(payload, w) != 5 || w[0] != name_ || !valid_port(w[2]) || !valid_port(w[4]))
            return action::none;
        address from{std::string(w[1]), std::string(w[2])};
        address to{std::string(w[3]), std::string(w[4])};
        // That failover is over, wherever it was announced; the master it left stays unused.
        std::erase_if(failing_, [&](const auto& f) { return f.second.master == from; });
        if (on && from != to)
            replaced_ = hold{from, until};
        if (replaced_ && replaced_->master == to)
            replaced_.reset(); // switched back
        to_ = to;
        return connected && current == to ? action::none : action::drop;
    }
    if (!on)
        return action::none;
    const bool progress = one_of(channel, progress_channels);
    if (!progress && !one_of(channel, abort_channels))
        return action::none;
    const auto e = parse_event(payload);
    if (!e || e->name != name_)
        return action::none;
    if (!progress) {
        // This Sentinel gave up (another may still lead a failover: its own hold stays).
        if (auto it = failing_.find(source); it != failing_.end() && it->second.master == e->master)
            failing_.erase(it);
        return action::none;
    }
    if (auto it = failing_.find(source); it != failing_.end())
        it->second = hold{e->master, until};
    else
        failing_.emplace(std::string(source), hold{e->master, until});
    return connected && current == e->master ? action::drop : action::none;
}

std::ostream& operator<<(std::ostream& os, failover_watch::action a) {
    return os << (a == failover_watch::action::drop ? "drop" : "none");
}

bool failover_watch::usable(const address& master, clock::time_point now) const {
    if (replaced_ && replaced_->master == master && now < replaced_->until)
        return false;
    for (const auto& [source, h] : failing_)
        if (h.master == master && now < h.until)
            return false;
    return true;
}

std::optional<address> pick_watch_target(const std::vector<address>& list,
                                         const std::vector<std::optional<address>>& watching,
                                         std::size_t self, std::size_t from) {
    if (list.empty())
        return std::nullopt;
    for (std::size_t k = 0; k < list.size(); ++k) {
        const auto& a = list[(from + k) % list.size()];
        bool taken = false;
        for (std::size_t i = 0; i < watching.size(); ++i)
            taken = taken || (i != self && watching[i] && *watching[i] == a);
        if (!taken)
            return a;
    }
    return list[from % list.size()];
}

sentinel_list::sentinel_list(std::vector<address> bootstrap)
    : bootstrap_(std::move(bootstrap)), list_(bootstrap_) {}

void sentinel_list::start_round() noexcept {
    pos_ = 0;
    unknown_ = false;
    unusable_ = false;
}

const address* sentinel_list::next() noexcept {
    return pos_ < list_.size() ? &list_[pos_++] : nullptr;
}

bool sentinel_list::on_answer(const sentinel_answer& a, bool usable) {
    if (a.ec) {
        unknown_ = unknown_ || a.ec == error::sentinel_unknown_master;
        return false;
    }
    if (!usable) {
        unusable_ = true; // a Sentinel not yet told of the switch, or a failover under way
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
    if (unusable_)
        return error::failover_in_progress;
    return unknown_ ? error::sentinel_unknown_master : error::sentinel_resolve_failed;
}

} // namespace corolock::detail
