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
    return name_problem(name).empty();
}

std::string_view name_problem(std::string_view name) noexcept {
    if (name.empty())
        return "empty";
    if (!has_hash_tag(name))
        return name.find('}') == std::string_view::npos
                   ? std::string_view()
                   : "not hash-tagged but contains '}' (a tag is '{', at least one character, "
                     "'}'; '{}' is none)";
    // Every derived key has a hash tag and ends in one of these: a lock of that name would be
    // another lock's fence key or channel.
    for (std::string_view suffix : reserved_suffixes)
        if (name.ends_with(suffix))
            return "hash-tagged and ends in a reserved suffix (:fence, :released, :leader, :job): "
                   "it is, or "
                   "could be, another lock's derived key";
    return {};
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
    // tokens"). Lua numbers are doubles, exact up to 2^53 (year 2255 in µs). The free path comes
    // first and makes five calls: the server's work per cycle is the library's throughput limit
    // at 50 coroutines and more (issue 30). A refused waiter (ARGV[4] 'wait') marks the hash with
    // `w`, so that the release publishes only when someone waits.
    static const script s(R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then
  local now = redis.call('TIME')
  local token = now[1] * 1000000 + now[2]
  local text = string.format('%.0f', token)
  local last = tonumber(redis.call('SET', KEYS[2], text, 'PX', ARGV[3], 'GET'))
  if last and last >= token then
    token = last + 1
    text = string.format('%.0f', token)
    redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
  end
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', text)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, token}
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0 then
  return redis.error_reply('WRONGTYPE the key at the lock name is not a corolock lock')
end
local held = redis.call('HMGET', KEYS[1], 'owner', 'token')
if held[1] == ARGV[1] then
  -- An earlier attempt of this same acquisition ran but its reply was lost: still ours.
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(held[2])}
end
-- Refused out of memory, the mark is missing: the release then sends no message, and the
-- waiter retries on its timer, as when a PUBLISH is refused.
if ARGV[4] == 'wait' then redis.pcall('HSET', KEYS[1], 'w', '1') end
return {0, redis.call('PTTL', KEYS[1])}
)lua");
    return s;
}

const script& release_script() {
    // Reply 1: released, and the release message went out; 2: released, and no message (nobody
    // waited, or the PUBLISH was refused); 0: not ours, nothing changed.
    static const script s(R"lua(
local held = redis.pcall('HMGET', KEYS[1], 'owner', 'w')
if held.err or (not held[1] and redis.call('EXISTS', KEYS[1]) == 1) then
  return redis.error_reply('WRONGTYPE the key at the lock name is not a corolock lock')
end
if held[1] ~= ARGV[1] then return 0 end
-- DEL and PUBLISH only, which Redis allows even when out of memory. The PUBLISH may be refused
-- (an ACL user without channel rights): the release stands, waiters retry on their timers.
-- ARGV[3] 'S': a cluster, where waiters listen with SSUBSCRIBE at the channel's slot.
redis.call('DEL', KEYS[1])
if not held[2] then return 2 end
local sent = redis.pcall(ARGV[3] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[2], 'released')
if type(sent) == 'table' and sent.err then return 2 end
return 1
)lua");
    return s;
}

const script& renew_script() {
    // One call renews leases of every record kind (doc/design.md, "Record kinds"): 'h', the
    // mutex's hash, owned by its 'owner' field; 'z', a member of a sorted set whose score is the
    // member's deadline in server ms. An expired member is never brought back (its permits may
    // be someone else's by now), whether or not a purge removed it yet. The key's expiry is set
    // in the same ms as the member's deadline (PEXPIREAT), never before it. A 'z' renewal the
    // server refuses (out of memory: ZADD may grow the set) reports that lease not renewed
    // instead of failing the batch: a 'h' renewal (PEXPIRE) works even then.
    static const script s(R"lua(
local out = {}
local now
for i, key in ipairs(KEYS) do
  out[i] = 0
  local kind, member, lease = ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i]
  local ktype = redis.call('TYPE', key)['ok']
  if kind == 'h' then
    if ktype == 'hash' and redis.call('HGET', key, 'owner') == member then
      redis.call('PEXPIRE', key, lease)
      out[i] = 1
    end
  elseif kind == 'z' and ktype == 'zset' then
    if not now then
      local t = redis.call('TIME')
      now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    local score = tonumber(redis.call('ZSCORE', key, member))
    local deadline = now + tonumber(lease)
    if score and score >= now then
      local ok = redis.pcall('ZADD', key, 'XX', deadline, member)
      if type(ok) ~= 'table' or not ok.err then
        if redis.call('PEXPIRETIME', key) < deadline then
          redis.call('PEXPIREAT', key, deadline)
        end
        out[i] = 1
      end
    end
  end
end
return out
)lua");
    return s;
}

const script& semaphore_acquire_script() {
    // The zset holds one member per lease, "<k>:<owner>" -> deadline (server ms); the limit as
    // the member '=limit' scored -limit (below every deadline: no range of live or expired
    // members includes it); and at most one reservation, "?<k>:<owner>" -> its deadline: the
    // first waiter refused records it, and later acquisitions are granted only if they fit
    // beside it, so a large request is not starved by small ones. The key lives until its
    // latest deadline (PEXPIREAT in the same ms).
    static const script s(R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease, k, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' then
  local stored = kind == 'zset' and redis.call('ZSCORE', KEYS[1], '=limit')
  if not stored then
    return redis.error_reply('WRONGTYPE the key at the name is not a corolock semaphore')
  end
  if -tonumber(stored) ~= limit then
    return redis.error_reply('LIMIT_MISMATCH corolock: the semaphore has the limit ' ..
                             string.format('%.0f', -tonumber(stored)))
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, '(' .. now)
local function live_until(deadline)
  if redis.call('PEXPIRETIME', KEYS[1]) < deadline then
    redis.call('PEXPIREAT', KEYS[1], deadline)
  end
end
local want = '?' .. ARGV[1]
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  -- An earlier attempt of this same acquisition ran but its reply was lost: still ours.
  redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[1])
  redis.call('ZREM', KEYS[1], want)
  live_until(now + lease)
  return {1, 0}
end
local used, reserved, reserver = 0, 0, nil
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')) do
  local n = tonumber(string.match(m, '^(%d+):'))
  if n then
    used = used + n
  else
    n = tonumber(string.match(m, '^%?(%d+):'))
    if not n then
      return redis.error_reply('WRONGTYPE a member of the semaphore is not corolock\'s')
    end
    reserver = m
    if m ~= want then reserved = reserved + n end
  end
end
if used + k + reserved <= limit then
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1], -limit, '=limit')
  redis.call('ZREM', KEYS[1], want)
  live_until(now + lease)
  return {1, 0}
end
if ARGV[6] == 'wait' and (not reserver or reserver == want) then
  local intent = tonumber(ARGV[5])
  redis.call('ZADD', KEYS[1], now + intent, want, -limit, '=limit')
  live_until(now + intent)
end
local first = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
return {0, tonumber(first[2]) - now}
)lua");
    return s;
}

const script& semaphore_release_script() {
    // Also removes the member's reservation: the release of a waiter that gave up.
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return 0 end
if kind ~= 'zset' or not redis.call('ZSCORE', KEYS[1], '=limit') then
  return redis.error_reply('WRONGTYPE the key at the name is not a corolock semaphore')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reserved = redis.call('ZREM', KEYS[1], '?' .. ARGV[1])
local score = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
local freed = 0
if score then
  redis.call('ZREM', KEYS[1], ARGV[1])
  -- Expired: its permits were free already (and may be taken); the release is refused.
  if score >= now then freed = 1 end
end
if redis.call('ZCARD', KEYS[1]) == 1 then redis.call('DEL', KEYS[1]) end
if freed == 1 or reserved == 1 then
  redis.pcall(ARGV[3] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[2],
              'permits ' .. string.match(ARGV[1], '^(%d+):'))
end
return freed
)lua");
    return s;
}

const script& semaphore_usage_script() {
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return {0, 0} end
local stored = kind == 'zset' and redis.call('ZSCORE', KEYS[1], '=limit')
if not stored then
  return redis.error_reply('WRONGTYPE the key at the name is not a corolock semaphore')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local used = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')) do
  local n = tonumber(string.match(m, '^(%d+):'))
  if n then
    used = used + n
  elseif not string.match(m, '^%?%d+:') then
    return redis.error_reply('WRONGTYPE a member of the semaphore is not corolock\'s')
  end
end
return {-tonumber(stored), used}
)lua");
    return s;
}

const script& semaphore_set_limit_script() {
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return 0 end
if kind ~= 'zset' or not redis.call('ZSCORE', KEYS[1], '=limit') then
  return redis.error_reply('WRONGTYPE the key at the name is not a corolock semaphore')
end
redis.call('ZADD', KEYS[1], 'XX', -tonumber(ARGV[1]), '=limit')
return 1
)lua");
    return s;
}

namespace {

// The shared_mutex's scripts name their keys KEYS[W] (the writer's hash), KEYS[R] (readers) and
// KEYS[I] (intents) so that their common start reads the same; this puts the indices in.
// Their common start: the time, the types of the three keys, the purge of expired readers and
// intents.
const std::string rw_prologue = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wkind = redis.call('TYPE', KEYS[W])['ok']
if wkind ~= 'none' and (wkind ~= 'hash' or redis.call('HEXISTS', KEYS[W], 'owner') == 0) then
  return redis.error_reply('WRONGTYPE the key at the name is not a corolock lock')
end
for _, k in ipairs({KEYS[R], KEYS[I]}) do
  local kind = redis.call('TYPE', k)['ok']
  if kind ~= 'none' and kind ~= 'zset' then
    return redis.error_reply('WRONGTYPE a shared_mutex key holds another type')
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[R], 0, '(' .. now)
redis.call('ZREMRANGEBYSCORE', KEYS[I], 0, '(' .. now)
)lua";

std::string keys_at(std::string s, int w, int r, int i) {
    auto put = [&](std::string_view from, int n) {
        const std::string to = "KEYS[" + std::to_string(n) + "]";
        for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
            s.replace(at, from.size(), to);
    };
    put("KEYS[W]", w);
    put("KEYS[R]", r);
    put("KEYS[I]", i);
    return s;
}

} // namespace

const script& read_acquire_script() {
    // KEYS: N, {N}:r, {N}:w, fence; ARGV: member, lease ms. Writer preference: a live intent
    // keeps new readers out. A reader's grant carries the last write token (0: none yet).
    static const script s(keys_at(rw_prologue + std::string(R"lua(
local lease = tonumber(ARGV[2])
local token = tonumber(redis.call('GET', KEYS[4])) or 0
local function grant()
  redis.call('ZADD', KEYS[R], now + lease, ARGV[1])
  if redis.call('PEXPIRETIME', KEYS[R]) < now + lease then
    redis.call('PEXPIREAT', KEYS[R], now + lease)
  end
  return {1, token}
end
-- An earlier attempt of this same acquisition ran but its reply was lost: still ours.
if redis.call('ZSCORE', KEYS[R], ARGV[1]) then return grant() end
if wkind == 'hash' then return {0, redis.call('PTTL', KEYS[W])} end
local intent = redis.call('ZRANGEBYSCORE', KEYS[I], now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if intent[1] then return {0, tonumber(intent[2]) - now} end
return grant()
)lua"),
                                  1, 2, 3));
    return s;
}

const script& write_acquire_script() {
    // KEYS: N, fence, {N}:r, {N}:w; ARGV: member, lease ms, lease + fence retention ms, intent
    // ms, mode ('wait' records the writer's intent when refused; 'try' leaves nothing).
    static const script s(keys_at(rw_prologue + std::string(R"lua(
local function refused(wait)
  if ARGV[5] == 'wait' then
    local intent = tonumber(ARGV[4])
    redis.call('ZADD', KEYS[I], now + intent, ARGV[1])
    if redis.call('PEXPIRETIME', KEYS[I]) < now + intent then
      redis.call('PEXPIREAT', KEYS[I], now + intent)
    end
  end
  return {0, wait}
end
if wkind == 'hash' then
  if redis.call('HGET', KEYS[W], 'owner') == ARGV[1] then
    redis.call('PEXPIRE', KEYS[W], ARGV[2])
    return {1, tonumber(redis.call('HGET', KEYS[W], 'token'))}
  end
  -- Another writer: no intent (writers do not keep readers out of each other's gaps).
  return {0, redis.call('PTTL', KEYS[W])}
end
local reader = redis.call('ZRANGEBYSCORE', KEYS[R], now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if reader[1] then return refused(tonumber(reader[2]) - now) end
local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]))
if last and last >= token then token = last + 1 end
local text = string.format('%.0f', token)
redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
redis.call('HSET', KEYS[W], 'owner', ARGV[1], 'token', text)
redis.call('PEXPIRE', KEYS[W], ARGV[2])
redis.call('ZREM', KEYS[I], ARGV[1])
return {1, token}
)lua"),
                                  1, 3, 4));
    return s;
}

const script& read_release_script() {
    // KEYS: {N}:r; ARGV: member, channel, publish. Every live reader's release publishes (a
    // waiting writer's head retries; the core counts its own releases' messages).
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return 0 end
if kind ~= 'zset' then
  return redis.error_reply('WRONGTYPE a shared_mutex key holds another type')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not score then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
if score < now then return 0 end
redis.pcall(ARGV[3] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[2], 'released')
return 1
)lua");
    return s;
}

const script& write_release_script() {
    // KEYS: N, {N}:w; ARGV: member, channel, publish. Removes the writer's intent too (the
    // release of a writer that gave up waiting), and lets every waiter retry ('all').
    static const script s(R"lua(
local ikind = redis.call('TYPE', KEYS[2])['ok']
if ikind ~= 'none' and ikind ~= 'zset' then
  return redis.error_reply('WRONGTYPE a shared_mutex key holds another type')
end
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and (kind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0) then
  return redis.error_reply('WRONGTYPE the key at the name is not a corolock lock')
end
local removed = ikind == 'zset' and redis.call('ZREM', KEYS[2], ARGV[1]) or 0
local freed = 0
if kind == 'hash' and redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  freed = 1
end
if freed == 1 or removed == 1 then
  redis.pcall(ARGV[3] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[2], 'all')
end
return freed
)lua");
    return s;
}

const script& downgrade_script() {
    // KEYS: N, {N}:r; ARGV: member, lease ms, channel, publish. The writer's record becomes a
    // reader's in one step: no other writer can come in between. {1, the write token} or {0, 0}
    // (the writer's lease is gone).
    static const script s(R"lua(
local rkind = redis.call('TYPE', KEYS[2])['ok']
if rkind ~= 'none' and rkind ~= 'zset' then
  return redis.error_reply('WRONGTYPE a shared_mutex key holds another type')
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
   redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return {0, 0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], deadline, ARGV[1])
if redis.call('PEXPIRETIME', KEYS[2]) < deadline then
  redis.call('PEXPIREAT', KEYS[2], deadline)
end
local token = tonumber(redis.call('HGET', KEYS[1], 'token'))
redis.call('DEL', KEYS[1])
redis.pcall(ARGV[4] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[3], 'all')
return {1, token}
)lua");
    return s;
}

const script& try_upgrade_script() {
    // KEYS: N, fence, {N}:r; ARGV: member, lease ms, lease + fence retention ms. Only the one
    // live reader, with no writer, becomes the writer (a new token); anything else: {0, 0} at
    // once, the reader's record untouched. Never waits: two upgraders cannot deadlock.
    static const script s(R"lua(
local wkind = redis.call('TYPE', KEYS[1])['ok']
if wkind ~= 'none' and (wkind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0) then
  return redis.error_reply('WRONGTYPE the key at the name is not a corolock lock')
end
local rkind = redis.call('TYPE', KEYS[3])['ok']
if rkind ~= 'none' and rkind ~= 'zset' then
  return redis.error_reply('WRONGTYPE a shared_mutex key holds another type')
end
if wkind ~= 'none' then return {0, 0} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[3], 0, '(' .. now)
local live = redis.call('ZRANGEBYSCORE', KEYS[3], now, '+inf', 'LIMIT', 0, 2)
if #live ~= 1 or live[1] ~= ARGV[1] then return {0, 0} end
redis.call('ZREM', KEYS[3], ARGV[1])
local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]))
if last and last >= token then token = last + 1 end
local text = string.format('%.0f', token)
redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', text)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, token}
)lua");
    return s;
}

const script& fair_acquire_script() {
    // KEYS: N, fence, {N}:q (waiter -> ticket: its place in line), {N}:qd (waiter -> the
    // deadline of its place, server ms); ARGV: member, lease ms, lease + fence retention ms,
    // place ms, 'wait' | 'try'. The head of the line (after dead places are purged) gets the
    // lock when it is free; anyone else waits, its place kept (or taken, at the back: NX keeps
    // an earlier ticket) and its deadline refreshed by each attempt. A try never jumps a line.
    static const script s(R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wkind = redis.call('TYPE', KEYS[1])['ok']
if wkind ~= 'none' and (wkind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0) then
  return redis.error_reply('WRONGTYPE the key at the name is not a corolock lock')
end
for _, k in ipairs({KEYS[3], KEYS[4]}) do
  local kind = redis.call('TYPE', k)['ok']
  if kind ~= 'none' and kind ~= 'zset' then
    return redis.error_reply('WRONGTYPE a fair lock key holds another type')
  end
end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], 0, '(' .. now, 'LIMIT', 0, 100)) do
  redis.call('ZREM', KEYS[3], m)
  redis.call('ZREM', KEYS[4], m)
end
local function leave()
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
end
local function refused(wait)
  if ARGV[5] == 'wait' then
    local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
    local ticket = last[2] and tonumber(last[2]) + 1 or 1
    redis.call('ZADD', KEYS[3], 'NX', ticket, ARGV[1])
    local place = now + tonumber(ARGV[4])
    redis.call('ZADD', KEYS[4], place, ARGV[1])
    for _, k in ipairs({KEYS[3], KEYS[4]}) do
      if redis.call('PEXPIRETIME', k) < place then redis.call('PEXPIREAT', k, place) end
    end
  end
  return {0, wait}
end
if wkind == 'hash' then
  if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
    -- An earlier attempt of this same acquisition ran but its reply was lost: still ours.
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    leave()
    return {1, tonumber(redis.call('HGET', KEYS[1], 'token'))}
  end
  return refused(redis.call('PTTL', KEYS[1]))
end
local head, place
for _ = 1, 100 do
  head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  place = head and tonumber(redis.call('ZSCORE', KEYS[4], head))
  if not head or place then break end
  redis.call('ZREM', KEYS[3], head) -- a place without a deadline: not a live waiter's
end
if head and head ~= ARGV[1] then
  -- Free, but another is first in line: wait for it (at most until its place lapses).
  return refused(place - now)
end
local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]))
if last and last >= token then token = last + 1 end
local text = string.format('%.0f', token)
redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', text)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
leave()
return {1, token}
)lua");
    return s;
}

const script& fair_release_script() {
    // KEYS: N, {N}:q, {N}:qd; ARGV: member, channel, publish, 'leave' | 'keep', place ms.
    // Frees the lock if it is the member's, and with 'leave' takes its place out of the line (a
    // waiter that gave up, a holder's release). With 'keep' (the undo of an attempt whose outcome
    // is unknown, before the same waiter's next attempt) the place stays where it is, and a grant
    // it undoes puts the member back at the head of the line, where it was when granted: a fault
    // on a live waiter's connection never sends it to the back. Then names the head of the line
    // ("head <member>", or "released" for an empty line), so that only its process retries.
    static const script s(R"lua(
local wkind = redis.call('TYPE', KEYS[1])['ok']
if wkind ~= 'none' and (wkind ~= 'hash' or redis.call('HEXISTS', KEYS[1], 'owner') == 0) then
  return redis.error_reply('WRONGTYPE the key at the name is not a corolock lock')
end
for _, k in ipairs({KEYS[2], KEYS[3]}) do
  local kind = redis.call('TYPE', k)['ok']
  if kind ~= 'none' and kind ~= 'zset' then
    return redis.error_reply('WRONGTYPE a fair lock key holds another type')
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = ARGV[4] == 'keep'
local was_head = redis.call('ZRANGE', KEYS[2], 0, 0)[1] == ARGV[1]
local left = 0
if not keep then
  left = redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
local freed = 0
if wkind == 'hash' and redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  freed = 1
  if keep then
    local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    local ticket = first[2] and tonumber(first[2]) - 1 or 1
    redis.call('ZADD', KEYS[2], ticket, ARGV[1])
    local place = now + tonumber(ARGV[5])
    redis.call('ZADD', KEYS[3], place, ARGV[1])
    for _, k in ipairs({KEYS[2], KEYS[3]}) do
      if redis.call('PEXPIRETIME', k) < place then redis.call('PEXPIREAT', k, place) end
    end
  end
end
if freed == 1 or (left == 1 and was_head and redis.call('EXISTS', KEYS[1]) == 0) then
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], 0, '(' .. now, 'LIMIT', 0, 100)) do
    redis.call('ZREM', KEYS[2], m)
    redis.call('ZREM', KEYS[3], m)
  end
  local head
  for _ = 1, 100 do
    head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if not head or redis.call('ZSCORE', KEYS[3], head) then break end
    redis.call('ZREM', KEYS[2], head)
  end
  redis.pcall(ARGV[3] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[2],
              head and ('head ' .. head) or 'released')
end
return freed
)lua");
    return s;
}

std::size_t release_credits(std::string_view payload) noexcept {
    if (payload == "all")
        return static_cast<std::size_t>(-1);
    constexpr std::string_view permits = "permits ";
    if (payload.starts_with(permits)) {
        std::size_t k = 0;
        const auto* first = payload.data() + permits.size();
        const auto* last = payload.data() + payload.size();
        auto [p, ec] = std::from_chars(first, last, k);
        if (ec == std::errc() && p == last && k > 0)
            return k;
    }
    // "released", a reconnect (empty: messages may have been missed) or anything unknown: one
    // waiter may retry. A wake-up too many costs one script; one too few, a fallback timer.
    return 1;
}

// The owner goes out before "released": a holder that also has waiters for the name sends the
// renewal that finds the key gone ahead of their attempt.
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
if ARGV[3] ~= '' then
  redis.pcall('PUBLISH', ARGV[3], owner)
else
  redis.pcall(ARGV[2] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[1], 'forced ' .. owner)
end
redis.pcall(ARGV[2] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[1], 'released')
return 1
)lua");
    return s;
}

namespace {

template <class T>
bool parse_int(const resp3::node& n, T& out) {
    if (n.data_type != resp3::type::number)
        return false;
    auto [p, ec] = std::from_chars(n.value.data(), n.value.data() + n.value.size(), out);
    return ec == std::errc() && p == n.value.data() + n.value.size();
}

} // namespace

error_code server_failure(const generic_response& resp) {
    if (const auto* e = find_error(resp)) {
        if (e->value.starts_with("STALE_TOKEN "))
            return error::stale_token;
        if (e->value.starts_with("LIMIT_MISMATCH "))
            return error::limit_mismatch;
        return classify_server_error(e->value);
    }
    return {};
}

error_code decode_acquire(const generic_response& resp, acquire_reply& out, bool tokens) {
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
        if (!parse_int(resp[2], out.token) || (tokens && out.token == 0))
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

error_code decode_pair(const generic_response& resp, std::int64_t& first, std::int64_t& second) {
    if (auto ec = server_failure(resp))
        return ec;
    if (resp.size() != 3 || resp[0].data_type != resp3::type::array ||
        resp[0].aggregate_size != 2 || !parse_int(resp[1], first) || !parse_int(resp[2], second))
        return error::unexpected_reply;
    return {};
}

error_code decode_integer(const generic_response& resp, std::int64_t& out) {
    if (auto ec = server_failure(resp))
        return ec;
    if (resp.size() != 1 || !parse_int(resp[0], out))
        return error::unexpected_reply;
    return {};
}

error_code decode_release(const generic_response& resp, bool& released, bool& published) {
    std::int64_t v = 0;
    if (auto ec = decode_integer(resp, v))
        return ec;
    if (v < 0 || v > 2)
        return error::unexpected_reply;
    released = v != 0;
    published = v == 1;
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

std::string make_held_source(std::string_view body) {
    // Only while the lock's hash records this very token: a writer of a shared_mutex whose lease
    // ran out is refused even when no newer writer exists (a reader may hold, and readers do not
    // move the fence).
    std::string s = R"lua(
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
   redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return redis.error_reply('STALE_TOKEN corolock: the lease is gone')
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

std::string make_guarded_source(std::string_view body) {
    std::string s = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local score = redis.call('TYPE', KEYS[1])['ok'] == 'zset' and
              tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not score or score < now then
  return redis.error_reply('STALE_TOKEN corolock: the permit is gone')
end
local function guarded(KEYS, ARGV)
)lua";
    s.append(body);
    s.append(R"lua(
end
return guarded({unpack(KEYS, 2)}, {unpack(ARGV, 2)})
)lua");
    return s;
}

} // namespace corolock::detail
