// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/capabilities.hpp>
#include <corolock/fencing_token.hpp>

#include <ostream>
#include <stdexcept>
#include <string>

namespace corolock {

std::string_view to_string(lock_backend b) noexcept {
    switch (b) {
    case lock_backend::none:
        return "none";
    case lock_backend::redis:
        return "redis";
    case lock_backend::local:
        return "local";
    case lock_backend::postgres:
        return "postgres";
    case lock_backend::zookeeper:
        return "zookeeper";
    }
    return "unknown";
}

std::ostream& operator<<(std::ostream& os, lock_backend b) {
    return os << to_string(b);
}

void fencing_token::throw_backend_mismatch(const fencing_token& a, const fencing_token& b) {
    throw std::invalid_argument("corolock::fencing_token: tokens of different backends compared (" +
                                std::string(to_string(a.backend())) + " and " +
                                std::string(to_string(b.backend())) + ")");
}

std::ostream& operator<<(std::ostream& os, const fencing_token& t) {
    return os << t.backend() << ':' << t.value();
}

std::string_view to_string(fencing_kind f) noexcept {
    switch (f) {
    case fencing_kind::none:
        return "none";
    case fencing_kind::time_based:
        return "time_based";
    case fencing_kind::total_order:
        return "total_order";
    }
    return "unknown";
}

std::string_view to_string(lock_owner o) noexcept {
    switch (o) {
    case lock_owner::acquisition:
        return "acquisition";
    case lock_owner::session:
        return "session";
    }
    return "unknown";
}

std::ostream& operator<<(std::ostream& os, fencing_kind f) {
    return os << to_string(f);
}

std::ostream& operator<<(std::ostream& os, lock_owner o) {
    return os << to_string(o);
}

} // namespace corolock
