// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Reading the handshake's replies: which refusal of HELLO means bad credentials.
#ifndef COROLOCK_SRC_CORE_HANDSHAKE_REPLY_HPP
#define COROLOCK_SRC_CORE_HANDSHAKE_REPLY_HPP

#include <string_view>

namespace corolock::detail {

// A HELLO refused for its credentials (WRONGPASS, NOAUTH, NOPERM): error::auth_failed.
bool is_auth_error(std::string_view text);

} // namespace corolock::detail

#endif
