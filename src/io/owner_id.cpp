// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "io/owner_id.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdexcept>

namespace corolock::detail {

namespace {

// RAND_bytes costs far more per call than per byte (a DRBG lookup, a fork check by getpid(), an
// AES-CTR set-up): at 16 bytes an acquisition it was a fifth of an uncontended cycle's client CPU
// at 256 coroutines. So each thread draws 64 ids' worth at once and hands them out in turn.
constexpr std::size_t id_bytes = 16;
constexpr std::size_t pool_ids = 64;

// A forked child must not hand out the ids its parent holds in its pool: pthread_atfork bumps
// the generation in the child, and a pool of another generation is thrown away.
std::atomic<unsigned> fork_generation{0};

void on_fork_child() noexcept {
    fork_generation.fetch_add(1, std::memory_order_relaxed);
}

struct id_pool {
    unsigned char bytes[id_bytes * pool_ids];
    std::size_t next = pool_ids; // empty
    unsigned generation = 0;

    ~id_pool() { OPENSSL_cleanse(bytes, sizeof bytes); }

    // 16 fresh bytes into `out`; each is used once and wiped from the pool.
    void take(unsigned char* out) {
        static std::once_flag registered;
        std::call_once(registered, [] { ::pthread_atfork(nullptr, nullptr, on_fork_child); });
        const unsigned g = fork_generation.load(std::memory_order_relaxed);
        if (next == pool_ids || generation != g) {
            if (RAND_bytes(bytes, static_cast<int>(sizeof bytes)) != 1)
                throw std::runtime_error("corolock: the CSPRNG (RAND_bytes) failed");
            next = 0;
            generation = g;
        }
        unsigned char* slot = bytes + next++ * id_bytes;
        std::memcpy(out, slot, id_bytes);
        OPENSSL_cleanse(slot, id_bytes);
    }
};

} // namespace

owner_id random_owner_id() {
    thread_local id_pool pool;
    unsigned char bytes[id_bytes];
    pool.take(bytes);
    static constexpr char hex[] = "0123456789abcdef";
    owner_id out;
    for (std::size_t i = 0; i < sizeof bytes; ++i) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 0xf];
    }
    OPENSSL_cleanse(bytes, sizeof bytes);
    return out;
}

} // namespace corolock::detail
