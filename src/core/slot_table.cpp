// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/slot_table.hpp"

#include <algorithm>
#include <charconv>
#include <ostream>

namespace corolock::detail {

std::uint16_t crc16(std::string_view data) noexcept {
    std::uint16_t crc = 0;
    for (unsigned char c : data) {
        crc ^= static_cast<std::uint16_t>(c << 8);
        for (int i = 0; i < 8; ++i)
            crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

std::uint16_t key_slot(std::string_view key) noexcept {
    if (auto open = key.find('{'); open != std::string_view::npos) {
        auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return crc16(key) % slot_count;
}

std::optional<std::uint16_t> common_slot(std::span<const std::string_view> keys) noexcept {
    if (keys.empty())
        return 0;
    const auto slot = key_slot(keys.front());
    for (auto k : keys.subspan(1))
        if (key_slot(k) != slot)
            return std::nullopt;
    return slot;
}

std::ostream& operator<<(std::ostream& os, const cluster_node& n) {
    return os << n.host << ':' << n.port << (n.id.empty() ? "" : " (" + n.id + ")");
}

std::size_t slot_table::index_of(const cluster_node& node) {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].host == node.host && nodes_[i].port == node.port) {
            if (nodes_[i].id.empty())
                nodes_[i].id = node.id;
            return i;
        }
    nodes_.push_back(node);
    return nodes_.size() - 1;
}

void slot_table::assign(std::uint16_t first, std::uint16_t last, const cluster_node& node) {
    const auto i = static_cast<std::uint16_t>(index_of(node));
    for (std::size_t s = first; s <= last && s < slot_count; ++s)
        owner_[s] = i;
}

std::size_t slot_table::covered() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(owner_.begin(), owner_.end(), [](std::uint16_t i) { return i != none; }));
}

void slot_table::prune() {
    std::vector<std::uint16_t> remap(nodes_.size(), none);
    std::vector<cluster_node> kept;
    for (auto& i : owner_) {
        if (i == none)
            continue;
        if (remap[i] == none) {
            remap[i] = static_cast<std::uint16_t>(kept.size());
            kept.push_back(nodes_[i]);
        }
        i = remap[i];
    }
    nodes_ = std::move(kept);
}

namespace {

// A cursor over one reply's pre-order nodes. Every step checks bounds: a response built by
// hand (or cut short) must give an error, never a read past the end.
class cursor {
public:
    explicit cursor(const generic_response& r) : r_(r) {}

    const resp3::node* peek() const noexcept { return i_ < r_.size() ? &r_[i_] : nullptr; }
    const resp3::node* next() noexcept { return i_ < r_.size() ? &r_[i_++] : nullptr; }
    // Skips one value and everything under it.
    bool skip() noexcept {
        std::size_t pending = 1;
        while (pending > 0) {
            const auto* n = next();
            if (!n)
                return false;
            --pending;
            if (resp3::is_aggregate(n->data_type)) {
                if (n->aggregate_size > r_.size())
                    return false;
                pending += n->aggregate_size * resp3::element_multiplicity(n->data_type);
            }
        }
        return true;
    }
    // An aggregate of key/value pairs (a map, or a RESP2 flat array): its pair count.
    std::optional<std::size_t> open_pairs() noexcept {
        const auto* n = next();
        if (!n)
            return std::nullopt;
        if (n->data_type == resp3::type::map)
            return n->aggregate_size;
        if (n->data_type == resp3::type::array && n->aggregate_size % 2 == 0)
            return n->aggregate_size / 2;
        return std::nullopt;
    }
    // A scalar's text.
    std::optional<std::string_view> scalar() noexcept {
        const auto* n = next();
        if (!n || resp3::is_aggregate(n->data_type) || resp3::is_error(n->data_type))
            return std::nullopt;
        return std::string_view(n->value);
    }

private:
    const generic_response& r_;
    std::size_t i_ = 0;
};

template <class T>
bool parse_number(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && p == s.data() + s.size();
}

struct shard_node {
    cluster_node node;
    std::string port, tls_port, ip, endpoint, role, health;
};

bool parse_node(cursor& c, shard_node& out) {
    auto pairs = c.open_pairs();
    if (!pairs)
        return false;
    for (std::size_t i = 0; i < *pairs; ++i) {
        auto key = c.scalar();
        if (!key)
            return false;
        std::string* field = nullptr;
        if (*key == "id")
            field = &out.node.id;
        else if (*key == "port")
            field = &out.port;
        else if (*key == "tls-port")
            field = &out.tls_port;
        else if (*key == "ip")
            field = &out.ip;
        else if (*key == "endpoint")
            field = &out.endpoint;
        else if (*key == "role")
            field = &out.role;
        else if (*key == "health")
            field = &out.health;
        if (!field) {
            if (!c.skip())
                return false;
            continue;
        }
        auto v = c.scalar();
        if (!v)
            return false;
        *field = std::string(*v);
    }
    // The preferred endpoint, unless the server does not know it ("?"), then the IP.
    out.node.host = !out.endpoint.empty() && out.endpoint != "?" ? out.endpoint : out.ip;
    out.node.port = !out.port.empty() && out.port != "0" ? out.port : out.tls_port;
    std::uint16_t port = 0;
    return !out.node.id.empty() && !out.node.host.empty() && parse_number(out.node.port, port) &&
           port != 0;
}

} // namespace

error_code parse_cluster_shards(const generic_response& reply, slot_table& out) {
    if (const auto* e = find_error(reply))
        return classify_server_error(e->value);
    cursor c(reply);
    const auto* top = c.next();
    if (!top || top->data_type != resp3::type::array || top->aggregate_size > reply.size())
        return error::unexpected_reply;
    slot_table table;
    for (std::size_t s = 0; s < top->aggregate_size; ++s) {
        auto pairs = c.open_pairs();
        if (!pairs)
            return error::unexpected_reply;
        std::vector<std::pair<std::uint16_t, std::uint16_t>> ranges;
        std::optional<cluster_node> master;
        for (std::size_t i = 0; i < *pairs; ++i) {
            auto key = c.scalar();
            if (!key)
                return error::unexpected_reply;
            if (*key == "slots") {
                const auto* arr = c.next();
                if (!arr || arr->data_type != resp3::type::array || arr->aggregate_size % 2 != 0)
                    return error::unexpected_reply;
                for (std::size_t k = 0; k < arr->aggregate_size; k += 2) {
                    auto a = c.scalar(), b = c.scalar();
                    std::uint16_t first = 0, last = 0;
                    if (!a || !b || !parse_number(*a, first) || !parse_number(*b, last) ||
                        first > last || last >= slot_count)
                        return error::unexpected_reply;
                    ranges.emplace_back(first, last);
                }
            } else if (*key == "nodes") {
                const auto* arr = c.next();
                if (!arr || arr->data_type != resp3::type::array ||
                    arr->aggregate_size > reply.size())
                    return error::unexpected_reply;
                for (std::size_t k = 0; k < arr->aggregate_size; ++k) {
                    shard_node n;
                    if (!parse_node(c, n))
                        return error::unexpected_reply;
                    if (n.role == "master" && n.health == "online")
                        master = std::move(n.node);
                }
            } else if (!c.skip()) {
                return error::unexpected_reply;
            }
        }
        if (master)
            for (auto [first, last] : ranges)
                table.assign(first, last, *master);
    }
    if (c.peek())
        return error::unexpected_reply; // more than one reply, or trailing nodes
    out = std::move(table);
    return {};
}

} // namespace corolock::detail
