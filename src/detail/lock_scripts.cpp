// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "lock_scripts.hpp"

#include <charconv>

namespace corolock::detail {

namespace {

// Redis cluster's rule: the tag is between the first '{' and the first '}' after it, if
// non-empty.
bool has_hash_tag(std::string_view name) noexcept {
    const auto open = name.find('{');
    if (open == std::string_view::npos)
        return false;
    const auto close = name.find('}', open + 1);
    return close != std::string_view::npos && close > open + 1;
}

} // namespace

bool lockable_name(std::string_view name) noexcept {
    return !name.empty() && (has_hash_tag(name) || name.find('}') == std::string_view::npos);
}

std::string derived_key(std::string_view name, std::string_view suffix) {
    const bool tagged = has_hash_tag(name);
    std::string out;
    out.reserve(name.size() + suffix.size() + 3);
    if (tagged) {
        out.append(name);
    } else {
        out.push_back('{');
        out.append(name);
        out.push_back('}');
    }
    out.push_back(':');
    out.append(suffix);
    return out;
}

const script& acquire_script() {
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    local now = redis.call('TIME')
    redis.call('SET', KEYS[2], now[1] .. string.format('%06d', tonumber(now[2])))
  end
  local token = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'count', 1, 'token', token)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, token, 1}
end
if kind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0 then
  return redis.error_reply('WRONGTYPE the key at the lock name is not a corolock lock')
end
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  local count = redis.call('HINCRBY', KEYS[1], 'count', 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('HGET', KEYS[1], 'token')), count}
end
return {0, redis.call('PTTL', KEYS[1])}
)lua");
    return s;
}

const script& release_script() {
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return -1 end
if kind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0 then
  return redis.error_reply('WRONGTYPE the key at the lock name is not a corolock lock')
end
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return -1 end
if ARGV[3] ~= 'all' and tonumber(redis.call('HGET', KEYS[1], 'count')) > 1 then
  return redis.call('HINCRBY', KEYS[1], 'count', -1)
end
-- The last hold: DEL and PUBLISH only, which Redis allows even when out of memory.
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'released')
return 0
)lua");
    return s;
}

const script& renew_script() {
    static const script s(R"lua(
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = 0
  if redis.call('TYPE', key)['ok'] == 'hash' and
     redis.call('HGET', key, 'owner') == ARGV[2 * i - 1] then
    redis.call('PEXPIRE', key, ARGV[2 * i])
    out[i] = 1
  end
end
return out
)lua");
    return s;
}

const script& force_unlock_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
   redis.call('HEXISTS', KEYS[1], 'owner') == 0 then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], 'released')
return 1
)lua");
    return s;
}

namespace {

error_code server_failure(const generic_response& resp) {
    if (const auto* e = find_error(resp))
        return e->value.starts_with("WRONGTYPE") ? error_code(error::wrong_type)
               : e->value.starts_with("STALE")   ? error_code(error::stale_token)
                                                 : classify_server_error(e->value);
    return {};
}

template <class T>
bool parse_int(const resp3::node& n, T& out) {
    if (n.data_type != resp3::type::number)
        return false;
    auto [p, ec] = std::from_chars(n.value.data(), n.value.data() + n.value.size(), out);
    return ec == std::errc() && p == n.value.data() + n.value.size();
}

} // namespace

error_code decode_acquire(const generic_response& resp, acquire_reply& out) {
    if (auto ec = server_failure(resp))
        return ec;
    if (resp.size() < 3 || resp[0].data_type != resp3::type::array)
        return error::unexpected_reply;
    std::int64_t flag = 0;
    if (!parse_int(resp[1], flag))
        return error::unexpected_reply;
    if (flag == 1 && resp.size() == 4 && resp[0].aggregate_size == 3) {
        out.acquired = true;
        if (!parse_int(resp[2], out.token) || !parse_int(resp[3], out.count) || out.count == 0)
            return error::unexpected_reply;
        return {};
    }
    if (flag == 0 && resp.size() == 3 && resp[0].aggregate_size == 2) {
        out.acquired = false;
        if (!parse_int(resp[2], out.holder_ttl))
            return error::unexpected_reply;
        return {};
    }
    return error::unexpected_reply;
}

error_code decode_integer(const generic_response& resp, std::int64_t& out) {
    if (auto ec = server_failure(resp))
        return ec;
    if (resp.size() != 1 || !parse_int(resp[0], out))
        return error::unexpected_reply;
    return {};
}

error_code decode_release(const generic_response& resp, std::int64_t& out) {
    if (auto ec = decode_integer(resp, out))
        return ec;
    return out < -1 ? error_code(error::unexpected_reply) : error_code{};
}

error_code decode_renew(const generic_response& resp, std::vector<bool>& out) {
    if (auto ec = server_failure(resp))
        return ec;
    if (resp.empty() || resp[0].data_type != resp3::type::array ||
        resp.size() != resp[0].aggregate_size + 1)
        return error::unexpected_reply;
    out.clear();
    for (std::size_t i = 1; i < resp.size(); ++i) {
        std::int64_t v = 0;
        if (!parse_int(resp[i], v) || (v != 0 && v != 1))
            return error::unexpected_reply;
        out.push_back(v == 1);
    }
    return {};
}

std::string make_fenced_source(std::string_view body) {
    std::string s = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('STALE fencing token: a newer holder exists')
end
local function fenced(KEYS, ARGV)
)lua";
    s.append(body);
    s.append(R"lua(
end
return fenced({unpack(KEYS, 2)}, {unpack(ARGV, 2)})
)lua");
    return s;
}

} // namespace corolock::detail
