// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/script.hpp>

#include <openssl/evp.h>
#include <stdexcept>

namespace corolock {

script::script(std::string source) : source_(std::move(source)) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(source_.data(), source_.size(), digest, &len, EVP_sha1(), nullptr) != 1)
        throw std::runtime_error("corolock::script: SHA1 failed");
    static constexpr char hex[] = "0123456789abcdef";
    sha1_.reserve(2 * len);
    for (unsigned int i = 0; i < len; ++i) {
        sha1_.push_back(hex[digest[i] >> 4]);
        sha1_.push_back(hex[digest[i] & 0xf]);
    }
}

} // namespace corolock
