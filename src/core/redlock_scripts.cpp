// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/redlock_scripts.hpp"

#include "core/lock_scripts.hpp"

namespace corolock::detail {

const script& redlock_acquire_script() {
    static const script s(R"lua(
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if kind ~= 'string' then
  return redis.error_reply('WRONGTYPE the key at the lock name is not a corolock redlock')
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
)lua");
    return s;
}

const script& redlock_extend_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
)lua");
    return s;
}

const script& redlock_release_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.pcall('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0
)lua");
    return s;
}

vote decode_vote(error_code ec, const generic_response& resp, error_code& why) {
    std::int64_t v = -1;
    if (!ec)
        ec = decode_integer(resp, v);
    if (!ec && v != 0 && v != 1)
        ec = error::unexpected_reply;
    why = ec;
    if (ec)
        return vote::failed;
    return v == 1 ? vote::granted : vote::refused;
}

} // namespace corolock::detail
