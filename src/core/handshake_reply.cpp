// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/handshake_reply.hpp"

namespace corolock::detail {

bool is_auth_error(std::string_view text) {
    return text.starts_with("WRONGPASS") || text.starts_with("NOAUTH") ||
           text.starts_with("NOPERM") || text.find("invalid password") != std::string_view::npos;
}

} // namespace corolock::detail
