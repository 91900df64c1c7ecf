// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The lock's Lua scripts, key naming and reply decoding: pure, unit-tested (doc/design.md lists
// each script's KEYS and ARGV).
#ifndef COROLOCK_SRC_DETAIL_LOCK_SCRIPTS_HPP
#define COROLOCK_SRC_DETAIL_LOCK_SCRIPTS_HPP

#include <corolock/error.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::detail {

// A key or channel that lands in the same cluster slot as `name`: `name:suffix` when the name
// carries a hash tag, else `{name}:suffix`.
std::string derived_key(std::string_view name, std::string_view suffix);

// The suffixes of the derived keys (derived_key(name, "fence") ends in ":fence"); ":leader" is
// an election's record, ":job" a scheduled job's.
inline constexpr std::string_view reserved_suffixes[] = {":fence", ":released", ":leader", ":job"};

// Whether `name` can be a lock's name: false for an empty name, for a name without a hash tag
// that contains '}' (wrapping it in braces would end the tag early, so derived_key could not keep
// its slot), and for a name with a hash tag that ends in a reserved suffix (it is, or could be,
// another lock's derived key).
bool lockable_name(std::string_view name) noexcept;
// Why lockable_name refuses `name`, as the end of "this name is ..." (empty when it does not).
std::string_view name_problem(std::string_view name) noexcept;

// KEYS: name, fence key; ARGV: owner, lease ms, fence ms.
const script& acquire_script();
// KEYS: name; ARGV: owner, channel, publish ('S': SPUBLISH on a cluster; else PUBLISH).
const script& release_script();
// The record a lease holds in Redis, which the renewal script renews by its kind.
enum class record_kind : char {
    hash = 'h',   // the mutex: a hash at the name, owned by its 'owner' field
    member = 'z', // a member of a sorted set at the name, its score the deadline (server ms)
};

// KEYS: names; ARGV: kind ('h' or 'z', record_kind), member (the owner id for 'h') and lease ms
// of each, in order.
const script& renew_script();
// KEYS: name; ARGV: member ("<k>:<owner>"), lease ms, k, limit, reservation ms, 'wait' |
// 'try' (a refused 'wait' records the reservation "?<member>" if nobody else holds one).
const script& semaphore_acquire_script();
// KEYS: name; ARGV: member, channel, publish (as release_script). Removes the member and its
// reservation; publishes "permits <k>" if either was there (and the member live).
const script& semaphore_release_script();

// KEYS: name. Replies {limit, permits held by live leases} ({0, 0}: no key).
const script& semaphore_usage_script();
// KEYS: name; ARGV: limit. Replies 1 (changed) or 0 (no key: the next acquire sets it).
const script& semaphore_set_limit_script();

// A shared_mutex's, over N (the writer's hash, the mutex's), {N}:r (readers: member -> deadline)
// and {N}:w (waiting writers' intents: member -> deadline). See doc/shared_mutex.md.
// KEYS: N, {N}:r, {N}:w, fence; ARGV: member, lease ms.
const script& read_acquire_script();
// KEYS: N, fence, {N}:r, {N}:w; ARGV: member, lease ms, fence ms, intent ms, 'wait' | 'try'.
const script& write_acquire_script();
// KEYS: {N}:r; ARGV: member, channel, publish. Publishes "released".
const script& read_release_script();
// KEYS: N, {N}:w; ARGV: member, channel, publish. Publishes "all".
const script& write_release_script();

// KEYS: N, {N}:r; ARGV: member, lease ms, channel, publish. A writer's record becomes a
// reader's: {1, write token}, or {0, 0} when the writer's record is gone.
const script& downgrade_script();
// KEYS: N, fence, {N}:r; ARGV: member, lease ms, fence ms. The only live reader, with no writer,
// becomes the writer: {1, token}; else {0, 0}.
const script& try_upgrade_script();

// A fair lock's, over N (the mutex's hash), {N}:q (waiter -> ticket) and {N}:qd (waiter -> the
// deadline of its place). See doc/fair_mutex.md.
// KEYS: N, fence, {N}:q, {N}:qd; ARGV: member, lease ms, fence ms, place ms, 'wait' | 'try'.
const script& fair_acquire_script();
// KEYS: N, {N}:q, {N}:qd; ARGV: member, channel, publish. Publishes "head <member>" or
// "released".
const script& fair_release_script();

// The member a fair lock's release message names ("head <member>"); empty for any other.
inline std::string_view named_head(std::string_view payload) noexcept {
    constexpr std::string_view prefix = "head ";
    return payload.starts_with(prefix) ? payload.substr(prefix.size()) : std::string_view();
}

// How many local waiters a release message lets retry: "permits <k>" k, "all" every one, anything
// else ("released", or a reconnect after which messages may have been missed) one.
std::size_t release_credits(std::string_view payload) noexcept;
// KEYS: name; ARGV: channel, publish (as release_script), forced channel (empty: the release
// channel). The deleted lock's owner id is published on the forced channel, or as
// "forced <owner>" on the release channel (a cluster: a sharded channel in the name's slot), so
// that the holder's connection reports its lease lost at once; then "released" wakes waiters.
const script& force_unlock_script();

// Where force_unlock_script publishes the owner of a lock it deleted on a single server or
// behind Sentinel (one channel for every lock). A cluster has no channel that every node
// serves: there the owner goes out on the name's release channel (forced_owner).
inline constexpr std::string_view forced_channel = "corolock:forced";

// The owner a release channel's "forced <owner>" message names; empty for any other message.
inline std::string_view forced_owner(std::string_view payload) noexcept {
    constexpr std::string_view prefix = "forced ";
    return payload.starts_with(prefix) ? payload.substr(prefix.size()) : std::string_view();
}

struct acquire_reply {
    bool acquired = false;
    std::uint64_t token = 0;     // when acquired
    std::int64_t holder_ttl = 0; // ms left on the holder's lease, when not acquired
};

// Server errors: WRONGTYPE -> error::wrong_type, LIMIT_MISMATCH -> error::limit_mismatch,
// anything else -> error::server_error; a reply of the wrong shape -> error::unexpected_reply.
// `tokens`: a grant carries a fencing token (> 0); else its second element is whatever the
// kind returns (0 for a permit, the last write token for a reader).
error_code decode_acquire(const generic_response& resp, acquire_reply& out, bool tokens = true);
// released = the key was ours and is deleted; false = it was not ours (gone or taken).
// published = the release message went out (a mutex's release sends none when nobody waits).
error_code decode_release(const generic_response& resp, bool& released, bool& published);
// One flag per key: true = renewed.
error_code decode_renew(const generic_response& resp, std::vector<bool>& out);
error_code decode_integer(const generic_response& resp, std::int64_t& out);
// The error of a script's error reply (STALE_TOKEN, LIMIT_MISMATCH, else classify_server_error;
// the text stays in the response); none for any other reply.
error_code server_failure(const generic_response& resp);
// An array of two integers.
error_code decode_pair(const generic_response& resp, std::int64_t& first, std::int64_t& second);

// Appends `WAIT replicas ms` behind a script call (replica_sync); nothing when `replicas` is
// empty. `count_connected` (replica_sync::shortfall::count_connected): `ROLE` follows, to
// count the replicas the master has.
void add_wait(request& req, std::string_view replicas, std::string_view ms,
              bool count_connected = false);
// The last reply of `resp` is WAIT's: removes it and returns the replicas it counted, or -1
// when WAIT failed (an error such as -UNBLOCKED, or a reply of another shape). With
// `count_connected` the last reply is ROLE's, after WAIT's: both are removed, and when the
// master has fewer connected replicas than `wanted` and WAIT counted every one of them, the
// result is `wanted` (the requirement is met).
std::int64_t take_wait_reply(generic_response& resp, bool count_connected = false, int wanted = 0);

// Wraps a Lua body into a fenced script: KEYS[1] = lock name, KEYS[2] = fence key, ARGV[1] =
// token; the body sees its own KEYS and ARGV (the rest).
std::string make_fenced_source(std::string_view body);
// Wraps a Lua body into a script that runs only while the lock's hash (KEYS[1]) records the
// caller's token (ARGV[1]): a shared_mutex writer's fenced write (readers do not move the fence).
std::string make_held_source(std::string_view body);
// Wraps a Lua body into a guarded script, for leases without a token (a semaphore's permits):
// KEYS[1] = the sorted set, ARGV[1] = the lease's member; the body runs only while the member's
// deadline has not passed on the server's clock (else STALE_TOKEN).
std::string make_guarded_source(std::string_view body);

} // namespace corolock::detail

#endif
