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

    // The lock layer (acquisitions by outcome, wait, hold and renewal histograms, leases held
    // and lost) and the Redis connection's own counters and state, written by the library.
    corolock::write_prometheus(out, conn);
    return out;
}

} // namespace flash_sale
