// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/latch_scripts.hpp"

#include "core/lock_scripts.hpp"

#include <charconv>

namespace corolock::detail {

latch_keys make_latch_keys(std::string_view name) {
    return {std::string(name), derived_key(name, "d"), derived_key(name, "released")};
}

bool latch_name(std::string_view name) noexcept {
    if (!lockable_name(name))
        return false;
    // A tagged name ending in ":d" is, or could be, another latch's participant set.
    const auto open = name.find('{');
    const bool tagged = open != std::string_view::npos &&
                        name.find('}', open + 1) != std::string_view::npos &&
                        name.find('}', open + 1) > open + 1;
    return !(tagged && name.ends_with(":d"));
}

namespace {

// Both keys must be the latch's own: the hash at the name with its `gen` field (a mutex's hash
// has `owner` instead) and a set (or nothing) at the participant key.
constexpr std::string_view type_checks = R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and (kind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'gen') == 0) then
  return redis.error_reply('WRONGTYPE the key at the latch name is not a corolock latch')
end
local dkind = redis.call('TYPE', KEYS[2])['ok']
if dkind ~= 'none' and dkind ~= 'set' then
  return redis.error_reply('WRONGTYPE the latch participant key is not a set')
end
)lua";

script with_checks(std::string_view body) {
    std::string src(type_checks);
    src.append(body);
    return script(std::move(src));
}

} // namespace

const script& latch_create_script() {
    // The generation is server TIME in µs, and above the round it replaces even if the server
    // clock stepped back. Formatted with %.0f: tostring would print 16 digits as 1.7e+15.
    static const script s = with_checks(R"lua(
local ttl = ARGV[2]
if kind == 'hash' then
  local h = redis.call('HMGET', KEYS[1], 'target', 'gen', 'open')
  if h[3] ~= '1' then
    if h[1] ~= ARGV[1] then return {1, tonumber(h[2]), tonumber(h[1]), 0} end
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
    return {0, tonumber(h[2]), tonumber(h[1]), 0}
  end
end
local t = redis.call('TIME')
local gen = tonumber(t[1]) * 1000000 + tonumber(t[2])
local prev = '0'
local created = 1
if kind == 'hash' then
  prev = redis.call('HGET', KEYS[1], 'gen')
  if gen <= tonumber(prev) then gen = tonumber(prev) + 1 end
  created = 2
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'target', ARGV[1], 'gen', string.format('%.0f', gen), 'open', '0',
           'prev', prev)
redis.call('PEXPIRE', KEYS[1], ttl)
return {0, gen, tonumber(ARGV[1]), created}
)lua");
    return s;
}

const script& latch_count_down_script() {
    // SADD makes a repeat by the same id a no-op; only the transition to open publishes, so the
    // message goes out once per round. PUBLISH may be refused (an ACL without channel rights):
    // the open stands and awaiters see it on their fallback reads.
    static const script s = with_checks(R"lua(
if kind == 'none' then return {1, 0, 0, 0} end
local h = redis.call('HMGET', KEYS[1], 'target', 'gen', 'open')
if h[2] ~= ARGV[2] then return {2, 0, 0, tonumber(h[2])} end
local ttl = ARGV[5]
local open = 0
local remaining = 0
if h[3] == '1' then
  open = 1
else
  redis.call('SADD', KEYS[2], ARGV[1])
  remaining = tonumber(h[1]) - redis.call('SCARD', KEYS[2])
  if remaining <= 0 then
    remaining = 0
    open = 1
    redis.call('HSET', KEYS[1], 'open', '1')
    redis.pcall(ARGV[4] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[3], 'open ' .. ARGV[2])
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {0, open, remaining, tonumber(h[2])}
)lua");
    return s;
}

const script& latch_read_script() {
    // Reads only: awaiters polling a latch do not keep it alive past its retention.
    static const script s = with_checks(R"lua(
if kind == 'none' then return {1, 0, 0, 0, 0} end
local h = redis.call('HMGET', KEYS[1], 'target', 'gen', 'open', 'prev')
local open = 0
local remaining = 0
if h[3] == '1' then
  open = 1
else
  remaining = tonumber(h[1]) - redis.call('SCARD', KEYS[2])
  if remaining < 0 then remaining = 0 end
end
return {0, open, remaining, tonumber(h[2]), tonumber(h[4] or '0')}
)lua");
    return s;
}

namespace {

bool parse_uint(const resp3::node& n, std::uint64_t& out) {
    if (n.data_type != resp3::type::number || n.value.empty())
        return false;
    auto [p, ec] = std::from_chars(n.value.data(), n.value.data() + n.value.size(), out);
    return ec == std::errc() && p == n.value.data() + n.value.size();
}

// A flat array of `count` non-negative integers, checked before anything is read: a hostile
// reply of any size or depth is refused here.
bool flat_array(const generic_response& resp, std::size_t count, std::uint64_t* out) {
    if (resp.size() != count + 1 || resp[0].data_type != resp3::type::array ||
        resp[0].aggregate_size != count || resp[0].depth != 0)
        return false;
    for (std::size_t i = 0; i < count; ++i)
        if (resp[i + 1].depth != 1 || !parse_uint(resp[i + 1], out[i]))
            return false;
    return true;
}

} // namespace

error_code decode_latch_create(const generic_response& resp, latch_created& out) {
    if (auto ec = server_failure(resp))
        return ec;
    std::uint64_t v[4];
    if (!flat_array(resp, 4, v) || v[1] == 0 || v[2] == 0 || v[3] > 2)
        return error::unexpected_reply;
    out.generation = v[1];
    out.target = v[2];
    out.created = static_cast<int>(v[3]);
    if (v[0] == 1)
        return v[3] == 0 ? error_code(error::target_mismatch) : error::unexpected_reply;
    if (v[0] != 0)
        return error::unexpected_reply;
    return {};
}

error_code decode_latch_count_down(const generic_response& resp, latch_count& out) {
    if (auto ec = server_failure(resp))
        return ec;
    std::uint64_t v[4];
    if (!flat_array(resp, 4, v) || v[1] > 1)
        return error::unexpected_reply;
    switch (v[0]) {
    case 0:
        if (v[3] == 0 || (v[1] == 1 && v[2] != 0))
            return error::unexpected_reply;
        out = {v[1] == 1, v[2], v[3]};
        return {};
    case 1:
        return error::no_latch;
    case 2:
        out = {false, 0, v[3]};
        return error::stale_generation;
    default:
        return error::unexpected_reply;
    }
}

error_code decode_latch_read(const generic_response& resp, latch_snapshot& out) {
    if (auto ec = server_failure(resp))
        return ec;
    std::uint64_t v[5];
    if (!flat_array(resp, 5, v) || v[1] > 1)
        return error::unexpected_reply;
    if (v[0] == 1)
        return error::no_latch;
    if (v[0] != 0 || v[3] == 0 || (v[1] == 1 && v[2] != 0))
        return error::unexpected_reply;
    out = {v[1] == 1, v[2], v[3], v[4]};
    return {};
}

std::optional<std::uint64_t> parse_open_message(std::string_view payload) noexcept {
    constexpr std::string_view prefix = "open ";
    if (!payload.starts_with(prefix))
        return std::nullopt;
    payload.remove_prefix(prefix.size());
    std::uint64_t gen = 0;
    auto [p, ec] = std::from_chars(payload.data(), payload.data() + payload.size(), gen);
    if (ec != std::errc() || p != payload.data() + payload.size() || gen == 0 || payload.empty())
        return std::nullopt;
    return gen;
}

std::string make_open_message(std::uint64_t generation) {
    return "open " + std::to_string(generation);
}

} // namespace corolock::detail
