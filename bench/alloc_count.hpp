// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// The bench binary replaces the global operator new and delete (alloc_count.cpp) to count every
// allocation made through them, and, on request, to record where they come from. malloc calls
// that bypass operator new (OpenSSL, glibc) are not counted.
#ifndef COROLOCK_BENCH_ALLOC_COUNT_HPP
#define COROLOCK_BENCH_ALLOC_COUNT_HPP

#include <cstddef>
#include <cstdint>
#include <iosfwd>

namespace corolock::bench::alloc {

// operator new calls (every thread) since the start.
std::uint64_t count() noexcept;
// Bytes asked of operator new since the start.
std::uint64_t bytes() noexcept;

// Records a backtrace of each operator new between begin and end (fixed storage, no
// allocation while recording). `print_sites` prints the most frequent call sites, symbolised
// with addr2line, each as a count per `cycles`.
void trace_begin() noexcept;
void trace_end() noexcept;
void print_sites(std::ostream& os, std::uint64_t cycles, std::size_t top);

} // namespace corolock::bench::alloc

#endif
