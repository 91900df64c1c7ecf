// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "metrics.hpp"

#include <corolock/mutex.hpp>

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

} // namespace

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

    // The lock layer: acquisitions by outcome, wait and renewal round-trip histograms, leases
    // held and lost by reason, waiters.
    corolock::write_prometheus(out, corolock::get_lock_stats(conn));

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
