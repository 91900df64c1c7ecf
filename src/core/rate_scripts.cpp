// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/rate_scripts.hpp"

#include "core/lock_scripts.hpp"
#include "core/script_request.hpp"

#include <boost/asio/error.hpp>

#include <charconv>
#include <ostream>

namespace corolock::detail {

error_code validate_rate_limit(std::string_view name, const rate_limit& limit, rate_params& out) {
    if (!lockable_name(name))
        return error::invalid_name;
    if (limit.rate == 0 || limit.burst == 0 || limit.period < min_rate_period ||
        limit.period > max_rate_period)
        return error::invalid_argument;
    if (limit.burst >= max_rate_product / limit.rate)
        return error::invalid_argument;
    const auto period_us = static_cast<std::uint64_t>(
        std::chrono::ceil<std::chrono::microseconds>(limit.period).count());
    rate_params p;
    p.rate = limit.rate;
    p.burst = limit.burst;
    p.t_us = period_us / limit.rate;
    p.t_rem = period_us % limit.rate;
    // B x T = B x period / rate, exactly (B x period < 2^52 x 2^45: 128 bits).
    const unsigned __int128 tau = static_cast<unsigned __int128>(limit.burst) * period_us;
    const unsigned __int128 tau_us = tau / limit.rate;
    if (tau_us > static_cast<unsigned __int128>(max_rate_span_us) ||
        (tau_us == static_cast<unsigned __int128>(max_rate_span_us) && tau % limit.rate != 0))
        return error::invalid_argument;
    p.tau_us = static_cast<std::uint64_t>(tau_us);
    p.tau_rem = static_cast<std::uint64_t>(tau % limit.rate);
    out = p;
    return {};
}

error_code validate_rate_call(const rate_params& p, std::uint64_t cost,
                              std::chrono::steady_clock::duration max_wait) {
    if (cost < 1 || cost > p.burst)
        return error::invalid_argument;
    if (max_wait < std::chrono::steady_clock::duration::zero() ||
        max_wait > std::chrono::microseconds(max_rate_span_us))
        return error::invalid_argument;
    return {};
}

std::int64_t max_wait_us(std::chrono::steady_clock::duration max_wait) {
    return std::chrono::floor<std::chrono::microseconds>(max_wait).count();
}

const script& rate_acquire_script() {
    // Times are microseconds of server TIME plus a remainder in 1/rate µs, so that T = period /
    // rate is exact at any rate (no drift). Every number stays an integer below 2^53: exact in
    // a Lua double. A TAT stored with another rate (another process's limit) is rounded up to
    // whole microseconds: never earlier than it was.
    static const script s(R"lua(
local v = redis.pcall('GET', KEYS[1])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local tq, tr, R = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local n, maxw = tonumber(ARGV[6]), tonumber(ARGV[7])
local tat, rem = now, 0
if v then
  -- A key of another type: GET's WRONGTYPE error, read as no value.
  if type(v) ~= 'string' then v = '' end
  local a, b, r = string.match(v, '^(%d+):(%d+):(%d+)$')
  if not a then
    return redis.error_reply('WRONGTYPE the key at the limiter name is not a corolock rate limiter')
  end
  a, b = tonumber(a), tonumber(b)
  if r ~= ARGV[3] and b > 0 then a, b = a + 1, 0 end
  if a > now or (a == now and b > 0) then tat, rem = a, b end
end
-- new = tat + n x T
local x = n * tr
local q = math.floor(x / R)
local left = x - q * R
if left < 0 then q, left = q - 1, left + R elseif left >= R then q, left = q + 1, left - R end
local new, nrem = tat + n * tq + q, rem + left
if nrem >= R then new, nrem = new + 1, nrem - R end
-- wait = new - B x T - now, rounded up to whole µs
local w, wrem = new - tonumber(ARGV[4]) - now, nrem - tonumber(ARGV[5])
if wrem < 0 then w, wrem = w - 1, wrem + R end
if wrem > 0 then w = w + 1 end
if w > maxw then
  return {0, w - maxw, now, ''}
end
local text = string.format('%.0f:%.0f:%s', new, nrem, ARGV[3])
local ttl = new - now
if nrem > 0 then ttl = ttl + 1 end
redis.call('SET', KEYS[1], text, 'PX', math.floor((ttl + 999) / 1000))
if w > 0 then return {2, w, now, text} end
return {1, 0, now, text}
)lua");
    return s;
}

const script& rate_refund_script() {
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local a, b, r = string.match(ARGV[1], '^(%d+):(%d+):(%d+)$')
if not a then return 0 end
local tat, rem, R = tonumber(a), tonumber(b), tonumber(r)
local n, tq, tr = tonumber(ARGV[4]), tonumber(ARGV[2]), tonumber(ARGV[3])
local x = n * tr
local q = math.floor(x / R)
local left = x - q * R
if left < 0 then q, left = q - 1, left + R elseif left >= R then q, left = q + 1, left - R end
local old, orem = tat - n * tq - q, rem - left
if orem < 0 then old, orem = old - 1, orem + R end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if old < now or (old == now and orem == 0) then
  redis.call('DEL', KEYS[1])
  return 1
end
local ttl = old - now
if orem > 0 then ttl = ttl + 1 end
redis.call('SET', KEYS[1], string.format('%.0f:%.0f:%s', old, orem, r), 'PX',
           math.floor((ttl + 999) / 1000))
return 1
)lua");
    return s;
}

request make_rate_acquire(const script& s, std::string_view key, const rate_params& p,
                          std::uint64_t cost, std::int64_t max_wait_us) {
    const std::string a[] = {std::to_string(p.t_us),     std::to_string(p.t_rem),
                             std::to_string(p.rate),     std::to_string(p.tau_us),
                             std::to_string(p.tau_rem),  std::to_string(cost),
                             std::to_string(max_wait_us)};
    const std::string_view keys[] = {key};
    const std::string_view args[] = {a[0], a[1], a[2], a[3], a[4], a[5], a[6]};
    return make_evalsha(s, keys, args);
}

request make_rate_refund(const script& s, std::string_view key, const rate_params& p,
                         std::string_view tat, std::uint64_t cost) {
    const std::string a[] = {std::to_string(p.t_us), std::to_string(p.t_rem), std::to_string(cost)};
    const std::string_view keys[] = {key};
    const std::string_view args[] = {tat, a[0], a[1], a[2]};
    return make_evalsha(s, keys, args);
}

namespace {

bool parse_i64(const resp3::node& n, std::int64_t& out) {
    if (n.data_type != resp3::type::number)
        return false;
    auto [p, ec] = std::from_chars(n.value.data(), n.value.data() + n.value.size(), out);
    return ec == std::errc() && p == n.value.data() + n.value.size();
}

// "<µs>:<remainder>:<rate>", digits only, as the script formats it.
bool is_tat(std::string_view v) {
    if (v.empty() || v.size() > 64)
        return false;
    int colons = 0;
    char prev = ':';
    for (char c : v) {
        if (c == ':') {
            if (prev == ':')
                return false;
            ++colons;
        } else if (c < '0' || c > '9')
            return false;
        prev = c;
    }
    return colons == 2 && prev != ':';
}

// Past this a reply's times are not a server's (about year 2255 in µs: 2^53).
constexpr std::int64_t max_time_us = std::int64_t{1} << 53;

} // namespace

error_code decode_rate_acquire(const generic_response& resp, std::int64_t max_wait_us,
                               rate_reply& out) {
    if (auto ec = server_failure(resp))
        return ec;
    // The shape first: a hostile reply of any size is refused before anything is read.
    if (resp.size() != 5 || resp[0].data_type != resp3::type::array ||
        resp[0].aggregate_size != 4 || resp[4].data_type != resp3::type::blob_string)
        return error::unexpected_reply;
    rate_reply r;
    std::int64_t status = -1;
    if (!parse_i64(resp[1], status) || !parse_i64(resp[2], r.delay_us) ||
        !parse_i64(resp[3], r.now_us))
        return error::unexpected_reply;
    if (r.now_us <= 0 || r.now_us >= max_time_us || r.delay_us < 0 ||
        r.delay_us > 2 * max_rate_span_us)
        return error::unexpected_reply;
    switch (status) {
    case 0: // refused: retry after a positive delay, nothing stored
        if (r.delay_us == 0 || !resp[4].value.empty())
            return error::unexpected_reply;
        break;
    case 1: // now
        if (r.delay_us != 0 || !is_tat(resp[4].value))
            return error::unexpected_reply;
        break;
    case 2: // reserved, within max_wait
        if (r.delay_us == 0 || r.delay_us > max_wait_us || !is_tat(resp[4].value))
            return error::unexpected_reply;
        break;
    default:
        return error::unexpected_reply;
    }
    r.status = static_cast<int>(status);
    r.tat = resp[4].value;
    out = std::move(r);
    return {};
}

error_code decode_rate_refund(const generic_response& resp, bool& refunded) {
    std::int64_t v = 0;
    if (auto ec = server_failure(resp))
        return ec;
    if (resp.size() != 1 || !parse_i64(resp[0], v) || (v != 0 && v != 1))
        return error::unexpected_reply;
    refunded = v == 1;
    return {};
}

rate_decision to_decision(const rate_reply& r) {
    rate_decision d;
    d.admitted = r.took_slot();
    d.server_time_us = r.now_us;
    const auto delay = std::chrono::microseconds(r.delay_us);
    if (r.took_slot())
        d.wait = delay;
    else
        d.retry_after = delay;
    return d;
}

rate_reply gcra_step(const rate_params& p, gcra_state& st, std::int64_t now_us, std::uint64_t cost,
                     std::int64_t max_wait_us) {
    using i128 = __int128;
    const i128 r = static_cast<i128>(p.rate);
    const i128 now = static_cast<i128>(now_us) * r;
    i128 tat = static_cast<i128>(st.tat_us) * r + static_cast<i128>(st.tat_rem);
    if (tat < now)
        tat = now;
    const i128 t = static_cast<i128>(p.t_us) * r + static_cast<i128>(p.t_rem);
    const i128 tau = static_cast<i128>(p.tau_us) * r + static_cast<i128>(p.tau_rem);
    const i128 next = tat + static_cast<i128>(cost) * t;
    const i128 w = next - tau - now;
    const auto wait = static_cast<std::int64_t>(w <= 0 ? 0 : (w + r - 1) / r);
    rate_reply out;
    out.now_us = now_us;
    if (wait > max_wait_us) {
        out.status = 0;
        out.delay_us = wait - max_wait_us;
        return out;
    }
    out.status = wait > 0 ? 2 : 1;
    out.delay_us = wait;
    st.tat_us = static_cast<std::int64_t>(next / r);
    st.tat_rem = static_cast<std::uint64_t>(next % r);
    return out;
}

std::int64_t gcra_ttl_ms(const gcra_state& st, std::int64_t now_us) {
    const auto us = st.tat_us - now_us + (st.tat_rem > 0 ? 1 : 0);
    return (us + 999) / 1000;
}

rate_call_fsm::action rate_call_fsm::on_reply(error_code ec, const rate_reply& r) {
    if (state_ == state::orphan) {
        // The caller was cancelled while the script ran: give back what it took.
        state_ = state::done;
        if (!ec && r.took_slot()) {
            reply_ = r;
            return action::refund;
        }
        return action::none;
    }
    if (state_ != state::sending)
        return action::none;
    reply_ = r;
    ec_ = ec;
    if (!ec && sleep_ && r.status == 2 && r.delay_us > 0) {
        state_ = state::sleeping;
        return action::sleep;
    }
    state_ = state::done;
    return action::complete;
}

rate_call_fsm::action rate_call_fsm::on_timer() {
    if (state_ != state::sleeping)
        return action::none;
    state_ = state::done;
    return action::complete;
}

rate_call_fsm::action rate_call_fsm::on_cancel() {
    switch (state_) {
    case state::sending:
        state_ = state::orphan;
        ec_ = error_code(boost::asio::error::operation_aborted);
        return action::complete;
    case state::sleeping:
        state_ = state::done;
        ec_ = error_code(boost::asio::error::operation_aborted);
        return action::complete_and_refund;
    default:
        return action::none;
    }
}

std::ostream& operator<<(std::ostream& os, rate_call_fsm::state s) {
    switch (s) {
    case rate_call_fsm::state::sending:
        return os << "sending";
    case rate_call_fsm::state::sleeping:
        return os << "sleeping";
    case rate_call_fsm::state::done:
        return os << "done";
    case rate_call_fsm::state::orphan:
        return os << "orphan";
    }
    return os << "?";
}

std::ostream& operator<<(std::ostream& os, rate_call_fsm::action a) {
    switch (a) {
    case rate_call_fsm::action::none:
        return os << "none";
    case rate_call_fsm::action::complete:
        return os << "complete";
    case rate_call_fsm::action::sleep:
        return os << "sleep";
    case rate_call_fsm::action::refund:
        return os << "refund";
    case rate_call_fsm::action::complete_and_refund:
        return os << "complete_and_refund";
    }
    return os << "?";
}

} // namespace corolock::detail
