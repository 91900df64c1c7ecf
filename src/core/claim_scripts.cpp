// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/claim_scripts.hpp"

#include <stdexcept>

namespace corolock::detail {

error_code validate_claim(std::string_view key, std::chrono::steady_clock::duration retention) {
    if (key.empty())
        return error::invalid_name;
    if (retention < min_retention || retention > max_retention)
        return error::invalid_argument;
    return {};
}

std::int64_t retention_ms(std::chrono::steady_clock::duration retention) {
    return std::chrono::ceil<std::chrono::milliseconds>(retention).count();
}

request make_claim_request(std::string_view key, std::string_view owner, std::int64_t ms) {
    request r;
    r.push("SET", key, owner, "NX", "PX", ms);
    return r;
}

error_code decode_claim(const generic_response& resp, bool& claimed) {
    if (find_error(resp))
        return error::server_error;
    if (resp.size() != 1)
        return error::unexpected_reply;
    const auto& n = resp.front();
    if (n.data_type == resp3::type::simple_string && n.value == "OK") {
        claimed = true;
        return {};
    }
    if (n.data_type == resp3::type::null) {
        claimed = false;
        return {};
    }
    return error::unexpected_reply;
}

const script& give_back_script() {
    // Compare and delete in one step: a GET then DEL from the client could delete a claim made
    // by someone else between the two.
    static const script s(R"lua(
if redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
)lua");
    return s;
}

error_code decode_give_back(const generic_response& resp, bool& given_back) {
    if (find_error(resp))
        return error::server_error;
    if (resp.size() != 1 || resp.front().data_type != resp3::type::number)
        return error::unexpected_reply;
    if (resp.front().value == "1") {
        given_back = true;
        return {};
    }
    if (resp.front().value == "0") {
        given_back = false;
        return {};
    }
    return error::unexpected_reply;
}

} // namespace corolock::detail
