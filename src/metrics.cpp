// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_metrics.hpp"
#include <corolock/connection.hpp>
#include <corolock/metrics.hpp>
#include <corolock/mutex.hpp>

#include <algorithm>
#include <atomic>
#include <ostream>
#include <vector>

namespace corolock {

namespace {

constexpr std::string_view outcome_names[acquire_outcome_count] = {
    "granted", "busy", "timeout", "cancelled", "error", "server_timeout"};
constexpr std::string_view loss_names[lease_loss_count] = {
    "expired",  "renewal_refused",     "release_refused",
    "max_hold", "replicas_not_synced", "connection_stopped"};
constexpr std::string_view event_names[lock_event_kind_count] = {"acquire_start", "granted",
                                                                 "not_granted", "lost", "released"};

// Writes one exposition: the caller's labels go on every sample, before the sample's own.
class exposition {
public:
    exposition(std::string& out, std::string_view prefix, std::span<const metric_label> labels)
        : out_(out), prefix_(prefix), labels_(labels.begin(), labels.end()) {}

    // Samples written until pop_label carry this label too (after the caller's).
    void push_label(std::string_view name, std::string_view value) {
        labels_.push_back({name, value});
    }
    void pop_label() { labels_.pop_back(); }

    void family(std::string_view name, std::string_view type, std::string_view help) {
        out_.append("# HELP ").append(prefix_).append("_").append(name).append(" ").append(help);
        out_.append("\n# TYPE ").append(prefix_).append("_").append(name).append(" ");
        out_.append(type).append("\n");
    }
    // One sample; `label` (may be empty) is the sample's own label, `value` its text.
    void sample(std::string_view name, std::string_view label, std::string_view label_value,
                std::string_view value) {
        out_.append(prefix_).append("_").append(name);
        if (!labels_.empty() || !label.empty()) {
            out_.append("{");
            bool first = true;
            for (const auto& l : labels_) {
                pair(first, l.name, l.value);
                first = false;
            }
            if (!label.empty())
                pair(first, label, label_value);
            out_.append("}");
        }
        out_.append(" ").append(value).append("\n");
    }
    void sample(std::string_view name, std::string_view label, std::string_view label_value,
                std::uint64_t value) {
        sample(name, label, label_value, std::to_string(value));
    }
    void single(std::string_view name, std::string_view type, std::string_view help,
                std::uint64_t value) {
        family(name, type, help);
        sample(name, {}, {}, value);
    }
    void histogram(std::string_view name, std::string_view help, const duration_histogram& h) {
        family(name, "histogram", help);
        histogram_samples(name, h);
    }
    // A histogram's samples (its family written before).
    void histogram_samples(std::string_view name, const duration_histogram& h) {
        const std::string bucket = std::string(name) + "_bucket";
        std::uint64_t cumulative = 0;
        for (std::size_t b = 0; b < h.buckets.size(); ++b) {
            cumulative += h.buckets[b];
            sample(bucket, "le", b < h.bounds.size() ? seconds(h.bounds[b]) : "+Inf", cumulative);
        }
        sample(std::string(name) + "_sum", {}, {}, seconds(h.sum));
        sample(std::string(name) + "_count", {}, {}, h.count);
    }

private:
    void pair(bool first, std::string_view name, std::string_view value) {
        if (!first)
            out_.append(",");
        out_.append(name).append("=\"");
        for (std::size_t i = 0; i < value.size();) {
            const char c = value[i];
            if (const std::size_t n = utf8_length(value.substr(i)); n > 1) {
                out_.append(value.substr(i, n));
                i += n;
                continue;
            }
            if (c == '\\')
                out_.append("\\\\");
            else if (c == '"')
                out_.append("\\\"");
            else if (c == '\n')
                out_.append("\\n");
            else if (static_cast<unsigned char>(c) < 0x80)
                out_.push_back(c);
            else
                append_byte_escape(static_cast<unsigned char>(c));
            ++i;
        }
        out_.append("\"");
    }
    // A label value must be UTF-8 or Prometheus refuses the whole scrape; lock names may be any
    // bytes. A byte that starts no well-formed sequence is written as the text `\xNN` (its
    // backslash escaped).
    void append_byte_escape(unsigned char b) {
        static const char hex[] = "0123456789abcdef";
        out_.append("\\\\x");
        out_.push_back(hex[b >> 4]);
        out_.push_back(hex[b & 15]);
    }
    // The length of the well-formed multi-byte UTF-8 sequence that `s` starts with (2 to 4), or
    // 1 for ASCII and for a byte that starts none (no overlong forms, no surrogates, at most
    // U+10FFFF).
    static std::size_t utf8_length(std::string_view s) {
        const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
        const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
        const unsigned char lead = b(0);
        if (lead >= 0xC2 && lead <= 0xDF)
            return cont(1) ? 2 : 1;
        if (lead >= 0xE0 && lead <= 0xEF) {
            if (!cont(1) || !cont(2) || (lead == 0xE0 && b(1) < 0xA0) ||
                (lead == 0xED && b(1) > 0x9F))
                return 1;
            return 3;
        }
        if (lead >= 0xF0 && lead <= 0xF4) {
            if (!cont(1) || !cont(2) || !cont(3) || (lead == 0xF0 && b(1) < 0x90) ||
                (lead == 0xF4 && b(1) > 0x8F))
                return 1;
            return 4;
        }
        return 1;
    }
    // Exact decimal seconds, no trailing zeros: 100 µs is "0.0001", 30 s is "30".
    static std::string seconds(std::chrono::nanoseconds d) {
        const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(d.count(), 0));
        std::string s = std::to_string(ns / 1'000'000'000);
        if (auto frac = ns % 1'000'000'000) {
            std::string digits = std::to_string(frac);
            digits.insert(0, 9 - digits.size(), '0');
            digits.erase(digits.find_last_not_of('0') + 1);
            s.append(".").append(digits);
        }
        return s;
    }

    std::string& out_;
    std::string_view prefix_;
    std::vector<metric_label> labels_;
};

// The families that a connection's lock_stats and a lock_meter share, written alike.
void acquire_families(exposition& e, std::span<const std::uint64_t, acquire_outcome_count> acquires,
                      const duration_histogram& wait) {
    e.family("acquires_total", "counter", "Lock acquisitions, by outcome.");
    for (std::size_t i = 0; i < acquire_outcome_count; ++i)
        e.sample("acquires_total", "outcome", outcome_names[i], acquires[i]);
    e.histogram("acquire_wait_seconds", "Time from the acquire call to the grant.", wait);
}

void hold_family(exposition& e, const duration_histogram& hold) {
    e.histogram("lease_hold_seconds", "Time from the grant to the release or the loss.", hold);
}

} // namespace

namespace detail {

struct lock_meter_state {
    std::array<std::atomic<std::uint64_t>, acquire_outcome_count> acquires{};
    std::atomic<std::uint64_t> leases_lost{0};
    atomic_histogram acquire_wait;
    atomic_histogram hold;
};

} // namespace detail

lock_meter::lock_meter() : state_(std::make_unique<detail::lock_meter_state>()) {}

lock_meter::~lock_meter() = default;

void lock_meter::record_acquire(const error_code& ec, bool granted,
                                std::chrono::nanoseconds wait) noexcept {
    const acquire_outcome o = detail::outcome_of(ec, granted);
    state_->acquires[static_cast<std::size_t>(o)].fetch_add(1, std::memory_order_relaxed);
    if (o == acquire_outcome::granted)
        state_->acquire_wait.observe(wait);
}

void lock_meter::record_hold(std::chrono::nanoseconds held, bool lost) noexcept {
    state_->hold.observe(held);
    if (lost)
        state_->leases_lost.fetch_add(1, std::memory_order_relaxed);
}

lock_meter_stats lock_meter::snapshot() const noexcept {
    lock_meter_stats s;
    for (std::size_t i = 0; i < acquire_outcome_count; ++i)
        s.acquires[i] = state_->acquires[i].load(std::memory_order_relaxed);
    s.leases_lost = state_->leases_lost.load(std::memory_order_relaxed);
    s.acquire_wait = state_->acquire_wait.snapshot();
    s.hold = state_->hold.snapshot();
    return s;
}

std::string_view to_string(acquire_outcome o) noexcept {
    const auto i = static_cast<std::size_t>(o);
    return i < acquire_outcome_count ? outcome_names[i] : "unknown";
}

std::string_view to_string(lease_loss l) noexcept {
    const auto i = static_cast<std::size_t>(l);
    return i < lease_loss_count ? loss_names[i] : "unknown";
}

std::ostream& operator<<(std::ostream& os, acquire_outcome o) {
    return os << to_string(o);
}

std::ostream& operator<<(std::ostream& os, lease_loss l) {
    return os << to_string(l);
}

std::string_view to_string(lock_event_kind k) noexcept {
    const auto i = static_cast<std::size_t>(k);
    return i < lock_event_kind_count ? event_names[i] : "unknown";
}

std::ostream& operator<<(std::ostream& os, lock_event_kind k) {
    return os << to_string(k);
}

std::size_t duration_histogram::bucket_of(duration d) noexcept {
    return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), d) -
                                    bounds.begin());
}

void write_prometheus(std::string& out, const lock_stats& s, std::string_view prefix,
                      std::span<const metric_label> labels) {
    exposition e(out, prefix, labels);
    acquire_families(e, s.acquires, s.acquire_wait);
    e.single("lock_attempts_total", "counter", "Acquire scripts sent.", s.attempts);
    e.family("lock_wakeups_total", "counter", "Waiting heads woken, by what woke them.");
    e.sample("lock_wakeups_total", "by", "handoff", s.handoffs);
    e.sample("lock_wakeups_total", "by", "pubsub", s.pubsub_wakeups);
    e.sample("lock_wakeups_total", "by", "timer", s.timer_wakeups);
    e.single("lock_undos_total", "counter",
             "Grants given back (nobody waited for them, or their outcome was unknown).", s.undos);
    e.single("lock_waiters", "gauge", "Acquisitions waiting now.", s.waiters);
    e.single("leases_held", "gauge", "Leases held now.", s.leases_held);
    e.single("lease_renewals_total", "counter", "Leases renewed by the watchdog.", s.renewals);
    e.single("lease_renewal_calls_total", "counter", "Renew scripts sent by the watchdog.",
             s.renewal_calls);
    e.single("lease_renewal_failures_total", "counter",
             "Lease renewals that failed and were retried.", s.renewal_failures);
    e.histogram("lease_renewal_rtt_seconds", "Round trip of the watchdog's renew scripts.",
                s.renewal_rtt);
    e.family("leases_lost_total", "counter", "Held leases lost, by reason.");
    for (std::size_t i = 0; i < lease_loss_count; ++i)
        e.sample("leases_lost_total", "reason", loss_names[i], s.lost[i]);
    hold_family(e, s.hold);
    if (s.by_name.empty())
        return;
    e.family("named_acquires_total", "counter", "Lock acquisitions, by lock name and outcome.");
    for (const auto& n : s.by_name) {
        e.push_label("lock", n.name);
        for (std::size_t i = 0; i < acquire_outcome_count; ++i)
            e.sample("named_acquires_total", "outcome", outcome_names[i], n.acquires[i]);
        e.pop_label();
    }
    e.family("named_leases_lost_total", "counter", "Held leases lost, by lock name.");
    for (const auto& n : s.by_name)
        e.sample("named_leases_lost_total", "lock", n.name, n.leases_lost);
    const std::string_view hold_help = "Time from the grant to the release or the loss, by lock.";
    e.family("named_lease_hold_seconds", "histogram", hold_help);
    for (const auto& n : s.by_name) {
        e.push_label("lock", n.name);
        e.histogram_samples("named_lease_hold_seconds", n.hold);
        e.pop_label();
    }
}

void write_prometheus(std::string& out, const lock_meter_stats& s, std::string_view prefix,
                      std::span<const metric_label> labels) {
    exposition e(out, prefix, labels);
    acquire_families(e, s.acquires, s.acquire_wait);
    e.single("leases_lost_total", "counter", "Held leases lost.", s.leases_lost);
    hold_family(e, s.hold);
}

void write_prometheus(std::string& out, const connection_stats& s, bool connected,
                      std::string_view prefix, std::span<const metric_label> labels) {
    // The counters of connection_stats, in its order: family name, help, member.
    struct counter {
        std::string_view name, help;
        std::uint64_t connection_stats::*value;
    };
    static constexpr counter counters[] = {
        {"connects", "Connections made.", &connection_stats::connects},
        {"commands", "Commands written.", &connection_stats::commands},
        {"writes", "Socket writes (each carries many commands).", &connection_stats::writes},
        {"replies", "Replies read.", &connection_stats::replies},
        {"written_bytes", "Bytes written.", &connection_stats::bytes_written},
        {"read_bytes", "Bytes read.", &connection_stats::bytes_read},
        {"pushes", "RESP3 push frames received.", &connection_stats::pushes},
        {"pushes_dropped", "Pub/sub messages dropped because a subscriber fell behind.",
         &connection_stats::pushes_dropped},
        {"resolves", "Masters found through Sentinel.", &connection_stats::resolves},
        {"master_switches", "Sentinel switch-master messages that dropped the connection.",
         &connection_stats::master_switches},
    };
    exposition e(out, prefix, labels);
    e.single("connection_up", "gauge", "1 while connected to Redis.", connected ? 1 : 0);
    for (const auto& c : counters)
        e.single("connection_" + std::string(c.name) + "_total", "counter", c.help, s.*c.value);
}

void write_prometheus(std::string& out, connection& conn, std::string_view prefix,
                      std::span<const metric_label> labels) {
    write_prometheus(out, get_lock_stats(conn), prefix, labels);
    write_prometheus(out, conn.stats(), conn.is_connected(), prefix, labels);
}

} // namespace corolock
