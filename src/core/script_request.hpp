// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// How a script call is written on the wire, in one pure place: EVALSHA and EVAL requests built
// from their inputs, the EVAL form of an EVALSHA request (its NOSCRIPT retry), the NOSCRIPT test
// and a cluster's ASKING prefix.
#ifndef COROLOCK_SRC_CORE_SCRIPT_REQUEST_HPP
#define COROLOCK_SRC_CORE_SCRIPT_REQUEST_HPP

#include "core/access.hpp"
#include <corolock/request.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::detail {

// `EVALSHA <sha1> <numkeys> keys... args...`, in one allocation.
request make_evalsha(const script& s, std::span<const std::string_view> keys,
                     std::span<const std::string_view> args);
// `EVAL <source> <numkeys> keys... args...`: never answered NOSCRIPT, so it keeps its place on
// the socket (an EVALSHA answered NOSCRIPT is re-sent as EVAL behind whatever was queued).
request make_eval(const script& s, std::span<const std::string_view> keys,
                  std::span<const std::string_view> args);
// Whether `req` starts with an EVALSHA command (as make_evalsha writes it).
bool starts_with_evalsha(const request& req) noexcept;
// The EVAL form of a request that starts with EVALSHA (for its NOSCRIPT retry), with every
// command after the script (a WAIT) kept; an empty request if `req` does not start with EVALSHA.
request evalsha_to_eval(const request& req, const script& s);
// The reply says the script is not in the server's cache.
bool is_noscript(const generic_response& resp);
// `ASKING` then `req`, as one request: ASKING applies to the next command only, and a request is
// written whole, so nothing comes between them (a cluster's ASK redirect).
request with_asking(const request& req);

} // namespace corolock::detail

#endif
