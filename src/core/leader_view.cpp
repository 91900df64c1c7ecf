// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/leader_view.hpp"

#include "core/decimal.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace corolock::detail {

namespace {

// (term, version), a term's end after all its versions.
std::pair<std::uint64_t, std::uint64_t> order_of(std::uint64_t term, std::uint64_t version,
                                                 bool ended) {
    return {term, ended ? std::numeric_limits<std::uint64_t>::max() : version};
}

} // namespace

std::optional<leader_view> parse_leader_message(std::string_view payload) {
    leader_view v;
    const auto kind = next_word(payload);
    if (kind == "ended") {
        v.ended = true;
        if (!parse_decimal(payload, v.term))
            return std::nullopt;
        return v;
    }
    if (kind != "leader")
        return std::nullopt;
    v.present = true;
    if (!parse_decimal(next_word(payload), v.term) ||
        !parse_decimal(next_word(payload), v.version) ||
        !parse_decimal(next_word(payload), v.ttl_ms))
        return std::nullopt;
    v.value = payload;
    return v;
}

std::string leader_message(std::uint64_t term, std::uint64_t version, std::int64_t ttl_ms,
                           std::string_view value) {
    std::string s = "leader " + std::to_string(term) + ' ' + std::to_string(version) + ' ' +
                    std::to_string(ttl_ms) + ' ';
    s.append(value);
    return s;
}

std::chrono::steady_clock::duration next_read_in(const leader_view& v,
                                                 std::chrono::steady_clock::duration poll) {
    if (v.present && v.ttl_ms >= 0)
        return std::min<std::chrono::steady_clock::duration>(
            poll, std::chrono::milliseconds(v.ttl_ms + 1));
    return poll;
}

leader_info info_of(const leader_view& v, lock_backend backend) {
    leader_info i;
    i.present = v.present;
    i.term = fencing_token(backend, v.term);
    i.version = v.present ? v.version : 0;
    i.value = v.present ? v.value : std::string();
    return i;
}

std::optional<leader_event> observe_core::on_view(const leader_view& v) {
    auto term = v.term;
    auto ended = v.ended;
    // Redis: "nobody holds it" with an older term than the one delivered: the fence key that
    // records the last term is gone (fence_retention), so the end is that of the delivered term.
    // Elsewhere the term a read names is the record's own: an older one is only a late read.
    if (backend_ == lock_backend::redis && !v.present && term < last_.term.value()) {
        term = last_.term.value();
        ended = true;
    }
    const auto order = order_of(term, v.version, ended);
    const auto last = order_of(last_.term.value(), last_version_, last_ended_);
    if (delivered_ && order <= last)
        return std::nullopt;
    const bool was_present = last_.present;
    const bool skipped =
        delivered_ && (gap_ || (v.present && was_present && term == last_.term.value() &&
                                v.version > last_version_ + 1));
    last_.present = v.present;
    last_.term = fencing_token(backend_, term);
    last_.version = v.present ? v.version : 0;
    last_.value = v.present ? v.value : std::string();
    last_version_ = v.version;
    last_ended_ = ended;
    if (delivered_ && !v.present && !was_present)
        return std::nullopt; // still nobody: nothing to tell
    delivered_ = true;
    gap_ = false;
    leader_event e;
    static_cast<leader_info&>(e) = last_;
    e.skipped = skipped;
    return e;
}

} // namespace corolock::detail
