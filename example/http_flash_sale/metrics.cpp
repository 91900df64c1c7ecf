// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "metrics.hpp"

#include <corolock/mutex.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <charconv>
#include <string_view>

namespace flash_sale {

namespace {

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, std::uint64_t v) {
    out.append(name);
    if (!labels.empty())
        out.append("{").append(labels).append("}");
    out.append(" ").append(std::to_string(v)).append("\n");
}

// One family with a single sample.
void metric(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            std::uint64_t v) {
    family(out, name, type, help);
    sample(out, name, {}, v);
}

// Prometheus wants seconds; the shortest text that reads back as the same double.
std::string seconds(std::uint64_t us) {
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, static_cast<double>(us) / 1e6,
                                   std::chars_format::fixed)
                         .ptr;
    return std::string(buf, end);
}

} // namespace

void metrics::acquired(std::chrono::steady_clock::duration waited,
                       const corolock::error_code& ec) noexcept {
    const auto us = static_cast<std::uint64_t>(std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::microseconds>(waited).count()));
    const auto bucket =
        std::lower_bound(bounds_us_.begin(), bounds_us_.end(), us) - bounds_us_.begin();
    wait_buckets_[static_cast<std::size_t>(bucket)].fetch_add(1, relaxed);
    wait_sum_us_.fetch_add(us, relaxed);
    const auto what = !ec                                           ? granted
                      : ec == corolock::error::acquire_timeout      ? timeout
                      : ec == boost::asio::error::operation_aborted ? cancelled
                                                                    : error;
    acquires_[what].fetch_add(1, relaxed);
}

std::string metrics::orders_line() const {
    std::string out;
    for (int o = 0; o < outcome_count; ++o)
        out.append(o ? " " : "")
            .append(to_string(static_cast<outcome>(o)))
            .append("=")
            .append(std::to_string(orders_[o].load(relaxed)));
    return out;
}

std::string metrics::prometheus(corolock::connection& conn) const {
    std::string out;
    family(out, "flash_sale_orders_total", "counter", "Order requests answered, by outcome.");
    for (int o = 0; o < outcome_count; ++o)
        sample(out, "flash_sale_orders_total",
               "outcome=\"" + std::string(to_string(static_cast<outcome>(o))) + "\"",
               orders_[o].load(relaxed));

    // The lock layer, as seen by the handlers.
    constexpr std::string_view wait = "corolock_acquire_wait_seconds";
    family(out, wait, "histogram", "Time from asking for an item's lock to the answer.");
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < wait_buckets_.size(); ++b) {
        cumulative += wait_buckets_[b].load(relaxed);
        const std::string le = b < bounds_us_.size() ? seconds(bounds_us_[b]) : "+Inf";
        sample(out, std::string(wait) + "_bucket", "le=\"" + le + "\"", cumulative);
    }
    out.append(wait).append("_sum ").append(seconds(wait_sum_us_.load(relaxed))).append("\n");
    sample(out, std::string(wait) + "_count", {}, cumulative);
    family(out, "corolock_acquires_total", "counter", "Lock acquisitions, by outcome.");
    constexpr std::string_view acquire_names[] = {"granted", "timeout", "cancelled", "error"};
    for (int a = 0; a < acquire_outcomes; ++a)
        sample(out, "corolock_acquires_total", "outcome=\"" + std::string(acquire_names[a]) + "\"",
               acquires_[a].load(relaxed));

    // The lock layer's own counters on this connection.
    const corolock::lock_stats l = corolock::get_lock_stats(conn);
    metric(out, "corolock_leases_held", "gauge", "Leases held now.", l.leases_held);
    metric(out, "corolock_lock_waiters", "gauge", "Acquisitions waiting now.", l.waiters);
    metric(out, "corolock_lock_attempts_total", "counter", "Acquire scripts sent.", l.attempts);
    metric(out, "corolock_lock_handoffs_total", "counter",
           "Waiters woken by a release sent on this connection.", l.handoffs);
    family(out, "corolock_lock_wakeups_total", "counter", "Waiters woken from elsewhere, by what.");
    sample(out, "corolock_lock_wakeups_total", "by=\"pubsub\"", l.pubsub_wakeups);
    sample(out, "corolock_lock_wakeups_total", "by=\"timer\"", l.timer_wakeups);
    metric(out, "corolock_lease_renewals_total", "counter", "Leases renewed by the watchdog.",
           l.renewals);
    metric(out, "corolock_leases_lost_total", "counter", "Leases lost while held.", l.leases_lost);
    metric(out, "corolock_lock_undos_total", "counter",
           "Grants given back (nobody waited for them, or their outcome was unknown).", l.undos);

    // The Redis connection.
    const corolock::connection_stats c = conn.stats();
    metric(out, "corolock_connection_up", "gauge", "1 while connected to Redis.",
           conn.is_connected() ? 1 : 0);
    metric(out, "corolock_connection_connects_total", "counter", "Connections made.", c.connects);
    metric(out, "corolock_connection_commands_total", "counter", "Commands written.", c.commands);
    metric(out, "corolock_connection_writes_total", "counter",
           "Socket writes (each carries many commands).", c.writes);
    metric(out, "corolock_connection_replies_total", "counter", "Replies read.", c.replies);
    metric(out, "corolock_connection_written_bytes_total", "counter", "Bytes written.",
           c.bytes_written);
    metric(out, "corolock_connection_read_bytes_total", "counter", "Bytes read.", c.bytes_read);
    return out;
}

} // namespace flash_sale
