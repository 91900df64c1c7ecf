// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The cluster's pure topology: key -> slot (CRC16 with hash tags, as the Redis Cluster spec
// defines it), the slot table (slot -> master), and the CLUSTER SHARDS reply parser. No I/O.
#ifndef COROLOCK_SRC_DETAIL_SLOT_TABLE_HPP
#define COROLOCK_SRC_DETAIL_SLOT_TABLE_HPP

#include <corolock/error.hpp>
#include <corolock/response.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::detail {

inline constexpr std::size_t slot_count = 16384;

// CRC16-CCITT (XModem): polynomial 0x1021, initial value 0.
std::uint16_t crc16(std::string_view data) noexcept;
// The slot of a key: CRC16 of the hash tag (the text between the first `{` and the first `}`
// after it, when not empty), else of the whole key, modulo 16384.
std::uint16_t key_slot(std::string_view key) noexcept;
// The slot every key maps to; nullopt when they differ. No keys: slot 0 (any node runs it).
std::optional<std::uint16_t> common_slot(std::span<const std::string_view> keys) noexcept;

// A master, as CLUSTER SHARDS or a MOVED names it. `id` is empty when only a MOVED named it.
struct cluster_node {
    std::string id;
    std::string host;
    std::string port;
    std::string address() const { return host + ":" + port; }
    friend bool operator==(const cluster_node&, const cluster_node&) = default;
};
std::ostream& operator<<(std::ostream& os, const cluster_node& n);

// Slot -> master. Uncovered slots have no owner.
class slot_table {
public:
    slot_table() { owner_.fill(none); }

    // The master of a slot, or nullptr when no master serves it.
    const cluster_node* owner(std::uint16_t slot) const noexcept {
        const auto i = owner_[slot % slot_count];
        return i == none ? nullptr : &nodes_[i];
    }
    // Gives [first, last] to `node` (found by address, else added).
    void assign(std::uint16_t first, std::uint16_t last, const cluster_node& node);
    // The masters that own at least one slot (and any added by assign since; see prune).
    const std::vector<cluster_node>& nodes() const noexcept { return nodes_; }
    std::size_t covered() const noexcept;
    // Forgets nodes that own no slot.
    void prune();

private:
    static constexpr std::uint16_t none = 0xffff;
    std::size_t index_of(const cluster_node& node);

    std::array<std::uint16_t, slot_count> owner_;
    std::vector<cluster_node> nodes_;
};

// Builds a table from the reply of CLUSTER SHARDS (RESP3 maps, or RESP2 flat key/value arrays).
// Only online masters are kept; the slots of a shard without one stay uncovered. Unknown
// fields are skipped. An error reply gives classify_server_error(text); anything malformed
// (bad slot ranges, missing fields, bad ports, truncated nodes) gives error::unexpected_reply.
error_code parse_cluster_shards(const generic_response& reply, slot_table& out);

} // namespace corolock::detail

#endif
