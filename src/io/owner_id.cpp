// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/owner_id.hpp"

#include <openssl/rand.h>
#include <stdexcept>

namespace corolock::detail {

owner_id random_owner_id() {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1)
        throw std::runtime_error("corolock: the CSPRNG (RAND_bytes) failed");
    static constexpr char hex[] = "0123456789abcdef";
    owner_id out;
    for (std::size_t i = 0; i < sizeof bytes; ++i) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 0xf];
    }
    return out;
}

} // namespace corolock::detail
