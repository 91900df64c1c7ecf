// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/election_core.hpp"

#include "core/decimal.hpp"
#include "core/lock_scripts.hpp"

namespace corolock::detail {

// Every script checks that the caller still holds the lock (its owner id in the hash) before it
// writes, and publishes with pcall: a PUBLISH refused by the ACL leaves the write standing, and
// observers then see it on their next read.
const script& begin_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
   redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
local token = redis.call('HGET', KEYS[1], 'token')
if ARGV[6] == '1' then
  local rec = redis.call('GET', KEYS[2])
  if rec then
    local term, state = string.match(rec, '^(%d+) (%a+)$')
    if state == 'live' and term ~= token then return 2 end
  end
end
redis.call('HSET', KEYS[1], 'value', ARGV[2], 'version', 1)
redis.call('SET', KEYS[2], token .. ' live', 'PX', ARGV[3])
local msg = 'leader ' .. token .. ' 1 ' .. redis.call('PTTL', KEYS[1]) .. ' ' .. ARGV[2]
redis.pcall(ARGV[4] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[5], msg)
return 1
)lua");
    return s;
}

const script& proclaim_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
   redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
local token = redis.call('HGET', KEYS[1], 'token')
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'value', ARGV[2])
redis.call('SET', KEYS[2], token .. ' live', 'PX', ARGV[3])
local msg = 'leader ' .. token .. ' ' .. v .. ' ' .. redis.call('PTTL', KEYS[1]) .. ' ' .. ARGV[2]
redis.pcall(ARGV[4] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[5], msg)
return v
)lua");
    return s;
}

const script& resign_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
   redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
local token = redis.call('HGET', KEYS[1], 'token')
redis.call('HDEL', KEYS[1], 'value', 'version')
redis.call('SET', KEYS[2], token .. ' ended', 'PX', ARGV[2])
redis.pcall(ARGV[3] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[4], 'ended ' .. token)
return 1
)lua");
    return s;
}

const script& leader_read_script() {
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return {-1, redis.call('GET', KEYS[2]) or '0'} end
if kind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0 then
  return redis.error_reply('WRONGTYPE the key at the election name is not a corolock lock')
end
local v = redis.call('HMGET', KEYS[1], 'token', 'value', 'version')
if not v[2] then return {0, v[1]} end
return {1, v[1], v[3], tostring(redis.call('PTTL', KEYS[1])), v[2]}
)lua");
    return s;
}

error_code decode_begin(const generic_response& r, begin_reply& out) {
    std::int64_t v = 0; // decode_integer keeps the server's error class
    if (auto ec = decode_integer(r, v))
        return ec;
    switch (v) {
    case 0:
        out = begin_reply::lost;
        return {};
    case 1:
        out = begin_reply::begun;
        return {};
    case 2:
        out = begin_reply::delayed;
        return {};
    default:
        return error::unexpected_reply;
    }
}

// The read script replies {1, term, version, ttl ms, value} (a proclaimed leader), {0, term} (a
// term begun, not yet proclaimed) or {-1, last token issued} (nobody holds the lock).
error_code decode_leader_read(const generic_response& r, leader_view& out) {
    if (const auto* e = find_error(r))
        return classify_server_error(e->value);
    // Checked before anything else is read: a hostile reply of any size is refused here.
    if (r.empty() || r[0].data_type != resp3::type::array || r.size() != r[0].aggregate_size + 1 ||
        (r.size() != 3 && r.size() != 6))
        return error::unexpected_reply;
    std::string_view cells[5];
    for (std::size_t i = 1; i < r.size(); ++i) {
        if (r[i].depth != 1 || r[i].data_type == resp3::type::array)
            return error::unexpected_reply;
        cells[i - 1] = r[i].value;
    }
    std::int64_t kind = 0;
    out = leader_view{};
    if (!parse_decimal(cells[0], kind) || !parse_decimal(cells[1], out.term))
        return error::unexpected_reply;
    const bool two = r.size() == 3;
    switch (kind) {
    case 1:
        if (two || !parse_decimal(cells[2], out.version) || !parse_decimal(cells[3], out.ttl_ms))
            return error::unexpected_reply;
        out.present = true;
        out.value = cells[4];
        return {};
    case 0:
        return two ? error_code() : error_code(error::unexpected_reply);
    case -1:
        out.ended = true;
        return two ? error_code() : error_code(error::unexpected_reply);
    default:
        return error::unexpected_reply;
    }
}

} // namespace corolock::detail
