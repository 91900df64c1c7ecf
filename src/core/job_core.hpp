// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The scheduled job's scripts and their replies (doc/job.md): pure, unit-tested.
#ifndef COROLOCK_SRC_CORE_JOB_CORE_HPP
#define COROLOCK_SRC_CORE_JOB_CORE_HPP

#include <corolock/job.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

namespace corolock::detail {

// The longest at_least_for and record_retention (job_options).
inline constexpr std::chrono::hours max_job_duration{24 * 365};

// KEYS: name (the job's lock), record ({J}:job); ARGV: owner, slot, mode ('L' at least once,
// 'M' at most once), at-least-for ms, record ms. Replies 0 (the lock is not the caller's), 1
// (run it: the record says it started), or the job_outcome that skips it (2 done, 3 too soon
// after the last run's start, 4 abandoned).
const script& job_begin_script();
// KEYS: name, record; ARGV: owner, slot, record ms. Marks the slot done (the mark only grows)
// while the caller holds the lock. Replies 1, or 0 (not the holder: nothing marked).
const script& job_complete_script();
// KEYS: record. Replies the last slot done, or nil.
const script& job_read_script();

// The begin script's reply: nullopt = run it; else why not (job_outcome::ran stands for "the
// lock is no longer the caller's").
error_code decode_job_begin(const generic_response& r, std::optional<job_outcome>& skip);
// The read script's reply.
error_code decode_job_read(const generic_response& r, std::optional<std::uint64_t>& done);
// TIME's reply as ms since the epoch, and the slot of `period_ms` it falls in.
error_code decode_server_slot(const generic_response& r, std::uint64_t period_ms,
                              std::uint64_t& slot);

} // namespace corolock::detail

#endif
