// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// RedLock's per-node Lua scripts and the decoding of their replies into votes: pure,
// unit-tested (doc/redlock.md lists each script's KEYS and ARGV). The key is a plain string
// whose value is the acquisition's owner id: no fence key and no hold count.
#ifndef COROLOCK_SRC_DETAIL_REDLOCK_SCRIPTS_HPP
#define COROLOCK_SRC_DETAIL_REDLOCK_SCRIPTS_HPP

#include "core/redlock_fsm.hpp"
#include <corolock/error.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

namespace corolock::detail {

// KEYS[1] = name; ARGV[1] = owner, ARGV[2] = lease ms. Sets the key if absent or already ours
// (an earlier round of this acquisition), with PX: 1; another owner's: 0.
const script& redlock_acquire_script();
// KEYS[1] = name; ARGV[1] = owner, ARGV[2] = lease ms. PEXPIRE if ours: 1, else 0.
const script& redlock_extend_script();
// KEYS[1] = name; ARGV[1] = owner, ARGV[2] = channel. DEL and PUBLISH (pcall) if ours: 1, else 0.
const script& redlock_release_script();

// The vote of one node: 1 = granted, 0 = refused; an error (the connection's or the server's,
// e.g. WRONGTYPE) or any other reply = failed, with the reason in `why`.
vote decode_vote(error_code ec, const generic_response& resp, error_code& why);

} // namespace corolock::detail

#endif
