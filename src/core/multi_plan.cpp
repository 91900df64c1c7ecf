// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/multi_plan.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <ostream>

namespace corolock::detail {

error_code order_names(std::vector<std::string>& names) {
    if (names.empty())
        return error::invalid_argument;
    std::sort(names.begin(), names.end());
    if (std::adjacent_find(names.begin(), names.end()) != names.end())
        return error::invalid_argument;
    return {};
}

namespace {

// What a waiting acquire retries past: an attempt with an unknown outcome (undone by the try
// that saw it), a grant that came back after its lease's deadline (given back). A member try's
// acquire_timeout is one of them: a try finds a held name with no error (an empty lease), so its
// acquire_timeout only says that no reply came within try_timeout while other replies of the
// slot did, which during a failover are the new master's while the try waited on the dead one.
bool rides_out(const error_code& ec) {
    // The attempt is undone when its reply comes: a retry within the deadline is safe.
    return ec == error::connection_lost || ec == error::lease_lost || ec == error::server_timeout ||
           ec == error::acquire_timeout;
}

} // namespace

try_all_outcome after_try_all(std::span<const error_code> ecs, const std::vector<bool>& granted,
                              bool once, bool past_deadline) {
    using next = try_all_outcome::next;
    const auto n = std::min(ecs.size(), granted.size());
    for (std::size_t i = 0; i < n; ++i)
        if (ecs[i] == boost::asio::error::operation_aborted)
            return {next::complete, ecs[i], 0};
    for (std::size_t i = 0; i < n; ++i)
        if (ecs[i] && (once || !rides_out(ecs[i])))
            return {next::complete, ecs[i], 0};
    std::size_t prefix = 0;
    while (prefix < n && granted[prefix] && !ecs[prefix])
        ++prefix;
    if (prefix == n)
        return {next::complete, {}, n};
    if (once)
        return {next::complete, {}, 0};
    if (past_deadline)
        return {next::complete, error::acquire_timeout, 0};
    return {next::wait, {}, prefix};
}

std::ostream& operator<<(std::ostream& os, const try_all_outcome& o) {
    return os << (o.what == try_all_outcome::next::complete ? "complete" : "wait") << "(ec "
              << o.ec.message() << ", keep " << o.keep << ")";
}

} // namespace corolock::detail
