// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/job_core.hpp"

#include "core/decimal.hpp"
#include "core/lock_scripts.hpp"

namespace corolock::detail {

// Slots are compared as Lua numbers: exact up to 2^53, which a slot of any schedule stays below
// (doc/job.md).
const script& job_begin_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
   redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE the key at the job record is not a corolock job record')
end
local slot = tonumber(ARGV[2])
local r = redis.call('HMGET', KEYS[2], 'done', 'started', 'until')
local done, started, hold = tonumber(r[1]), tonumber(r[2]), tonumber(r[3])
if done and done >= slot then return 2 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if hold and now < hold and started and started < slot then return 3 end
if ARGV[3] == 'M' and started and started >= slot then return 4 end
redis.call('HSET', KEYS[2], 'started', ARGV[2], 'until', string.format('%.0f', now + tonumber(ARGV[4])))
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
)lua");
    return s;
}

const script& job_complete_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' or
   redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
local done = tonumber(redis.call('HGET', KEYS[2], 'done'))
if not done or done < tonumber(ARGV[2]) then redis.call('HSET', KEYS[2], 'done', ARGV[2]) end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
)lua");
    return s;
}

const script& job_read_script() {
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return false end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE the key at the job record is not a corolock job record')
end
return redis.call('HGET', KEYS[1], 'done')
)lua");
    return s;
}

error_code decode_job_begin(const generic_response& r, std::optional<job_outcome>& skip) {
    std::int64_t v = 0;
    if (auto ec = decode_integer(r, v))
        return ec;
    switch (v) {
    case 0:
        skip = job_outcome::ran; // not ours: the caller reports the lease lost
        return {};
    case 1:
        skip.reset();
        return {};
    case 2:
        skip = job_outcome::done_already;
        return {};
    case 3:
        skip = job_outcome::too_soon;
        return {};
    case 4:
        skip = job_outcome::abandoned;
        return {};
    default:
        return error::unexpected_reply;
    }
}

error_code decode_job_read(const generic_response& r, std::optional<std::uint64_t>& done) {
    if (const auto* e = find_error(r))
        return classify_server_error(e->value);
    if (r.size() != 1)
        return error::unexpected_reply;
    if (r[0].data_type == resp3::type::null) {
        done.reset();
        return {};
    }
    std::uint64_t v = 0;
    if (r[0].data_type != resp3::type::blob_string || !parse_decimal(r[0].value, v))
        return error::unexpected_reply;
    done = v;
    return {};
}

error_code decode_server_slot(const generic_response& r, std::uint64_t period_ms,
                              std::uint64_t& slot) {
    if (const auto* e = find_error(r))
        return classify_server_error(e->value);
    std::uint64_t sec = 0, usec = 0;
    if (period_ms == 0 || r.size() != 3 || r[0].data_type != resp3::type::array ||
        r[0].aggregate_size != 2 || !parse_decimal(r[1].value, sec) ||
        !parse_decimal(r[2].value, usec) || usec >= 1000000 || sec > (std::uint64_t{1} << 40))
        return error::unexpected_reply;
    slot = (sec * 1000 + usec / 1000) / period_ms;
    return {};
}

} // namespace corolock::detail
