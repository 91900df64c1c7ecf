// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_scripts.hpp"

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
    if (name.empty())
        return false;
    if (!has_hash_tag(name))
        return name.find('}') == std::string_view::npos;
    // Every derived key has a hash tag and ends in one of these: a lock of that name would be
    // another lock's fence key or channel.
    for (std::string_view suffix : reserved_suffixes)
        if (name.ends_with(suffix))
            return false;
    return true;
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
    // The token is max(last token + 1, server time in µs): it grows across a lost fence key, a
    // restart without persistence and a restore from an older snapshot (doc/design.md, "Fencing
    // tokens"). Lua numbers are doubles, exact up to 2^53 (year 2255 in µs).
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then
  local now = redis.call('TIME')
  local token = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local last = tonumber(redis.call('GET', KEYS[2]))
  if last and last >= token then token = last + 1 end
  local text = string.format('%.0f', token)
  redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', text)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, token}
end
if kind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0 then
  return redis.error_reply('WRONGTYPE the key at the lock name is not a corolock lock')
end
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  -- An earlier attempt of this same acquisition ran but its reply was lost: still ours.
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('HGET', KEYS[1], 'token'))}
end
return {0, redis.call('PTTL', KEYS[1])}
)lua");
    return s;
}

const script& release_script() {
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return 0 end
if kind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0 then
  return redis.error_reply('WRONGTYPE the key at the lock name is not a corolock lock')
end
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
-- DEL and PUBLISH only, which Redis allows even when out of memory. The PUBLISH may be refused
-- (an ACL user without channel rights): the release stands, waiters retry on their timers.
-- ARGV[3] 'S': a cluster, where waiters listen with SSUBSCRIBE at the channel's slot.
redis.call('DEL', KEYS[1])
redis.pcall(ARGV[3] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[2], 'released')
return 1
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
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then
  return 0
end
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return 0
end
redis.call('DEL', KEYS[1])
redis.pcall(ARGV[2] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[1], 'released')
if ARGV[3] ~= '' then
  redis.pcall('PUBLISH', ARGV[3], owner)
end
return 1
)lua");
    return s;
}

namespace {

error_code server_failure(const generic_response& resp) {
    if (const auto* e = find_error(resp))
        return e->value.starts_with("STALE_TOKEN ") ? error_code(error::stale_token)
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
    // Checked before anything else is read: a hostile reply of any size is refused here.
    if (resp.size() != 3 || resp[0].data_type != resp3::type::array || resp[0].aggregate_size != 2)
        return error::unexpected_reply;
    std::int64_t flag = 0;
    if (!parse_int(resp[1], flag))
        return error::unexpected_reply;
    if (flag == 1) {
        out.acquired = true;
        if (!parse_int(resp[2], out.token) || out.token == 0)
            return error::unexpected_reply;
        return {};
    }
    if (flag == 0) {
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

error_code decode_release(const generic_response& resp, bool& released) {
    std::int64_t v = 0;
    if (auto ec = decode_integer(resp, v))
        return ec;
    if (v != 0 && v != 1)
        return error::unexpected_reply;
    released = v == 1;
    return {};
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

void add_wait(request& req, std::string_view replicas, std::string_view ms, bool count_connected) {
    if (replicas.empty())
        return;
    req.push("WAIT", replicas, ms);
    if (count_connected)
        req.push("ROLE");
}

namespace {

// The WAIT reply at the end of `resp`, removed (-1: failed or missing).
std::int64_t pop_wait(generic_response& resp) {
    if (resp.empty() || resp.back().depth != 0)
        return -1;
    std::int64_t acks = -1;
    if (!parse_int(resp.back(), acks) || acks < 0)
        acks = -1;
    resp.pop_back();
    return acks;
}

} // namespace

std::int64_t take_wait_reply(generic_response& resp, bool count_connected, int wanted) {
    std::int64_t connected = -1;
    if (count_connected) {
        // ROLE of a master: ["master", offset, [[ip, port, offset], ...]].
        std::size_t r = resp.size();
        while (r > 0 && resp[r - 1].depth != 0)
            --r;
        if (r == 0)
            return -1;
        --r;
        std::size_t third = 0;
        for (std::size_t i = r + 1, k = 0; i < resp.size(); ++i)
            if (resp[i].depth == 1 && ++k == 3)
                third = i;
        if (resp[r].data_type == resp3::type::array && resp.size() > r + 1 &&
            resp[r + 1].value == "master" && third != 0 &&
            resp[third].data_type == resp3::type::array)
            connected = static_cast<std::int64_t>(resp[third].aggregate_size);
        resp.erase(resp.begin() + static_cast<std::ptrdiff_t>(r), resp.end());
    }
    const auto acks = pop_wait(resp);
    if (connected >= 0 && connected < wanted && acks >= connected)
        return wanted;
    return acks;
}

std::string make_fenced_source(std::string_view body) {
    // A stale holder is refused whether the fence key is there (a newer token was issued) or has
    // expired (then only the current holder, whose token the lock key records, may write).
    std::string s = R"lua(
local last = redis.call('GET', KEYS[2])
if last then
  if tonumber(last) > tonumber(ARGV[1]) then
    return redis.error_reply('STALE_TOKEN corolock: a newer holder exists')
  end
elseif redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
       redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return redis.error_reply('STALE_TOKEN corolock: the lease is gone')
end
local function fenced(KEYS, ARGV)
)lua";
    s.append(body);
    s.append(R"lua(
end
return fenced({unpack(KEYS, 3)}, {unpack(ARGV, 2)})
)lua");
    return s;
}

} // namespace corolock::detail
