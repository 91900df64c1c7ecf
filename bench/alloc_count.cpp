// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "alloc_count.hpp"

#include "common/redis_process.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <execinfo.h>
#include <map>
#include <new>
#include <ostream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace corolock::bench::alloc {

namespace {

std::atomic<std::uint64_t> calls{0};
std::atomic<std::uint64_t> asked{0};
std::atomic<bool> tracing{false};
thread_local bool in_hook = false;

constexpr int depth = 14;
constexpr std::size_t slots = 4096; // distinct stacks kept; more are counted as "other"

struct site {
    std::array<void*, depth> frames{};
    int n = 0;
    std::uint64_t hits = 0;
    std::uint64_t bytes = 0;
};
site table[slots];
std::uint64_t overflow = 0;

void record(std::size_t size) noexcept {
    in_hook = true;
    void* frames[depth + 2];
    const int n = ::backtrace(frames, depth + 2);
    // Frame 0 is record, frame 1 is the operator new replacement.
    const int skip = std::min(n, 2);
    std::uintptr_t h = 1469598103934665603u;
    for (int i = skip; i < n; ++i)
        h = (h ^ reinterpret_cast<std::uintptr_t>(frames[i])) * 1099511628211u;
    for (std::size_t k = 0; k < slots; ++k) {
        auto& s = table[(h + k) % slots];
        if (s.hits == 0) {
            s.n = n - skip;
            std::copy(frames + skip, frames + n, s.frames.begin());
        } else if (s.n != n - skip || !std::equal(frames + skip, frames + n, s.frames.begin())) {
            continue;
        }
        ++s.hits;
        s.bytes += size;
        in_hook = false;
        return;
    }
    ++overflow;
    in_hook = false;
}

void* allocate(std::size_t size, std::size_t align = 0) {
    calls.fetch_add(1, std::memory_order_relaxed);
    asked.fetch_add(size, std::memory_order_relaxed);
    if (tracing.load(std::memory_order_relaxed) && !in_hook)
        record(size);
    if (size == 0)
        size = 1;
    void* p = nullptr;
    if (align > alignof(std::max_align_t)) {
        if (::posix_memalign(&p, align, size) != 0)
            p = nullptr;
    } else {
        p = std::malloc(size);
    }
    return p;
}

// "function at file" for the frames in this executable, via addr2line (run once, at the end).
std::map<void*, std::string> symbolise(const std::vector<void*>& addrs) {
    std::map<void*, std::string> out;
    // The path, not /proc/self/exe: in the child that would name addr2line itself.
    char exe[4096] = {};
    const auto len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return out;
    std::vector<std::string> args{"addr2line", "-C", "-f", "-e",
                                  std::string(exe, std::size_t(len))};
    std::vector<void*> mine;
    for (void* a : addrs) {
        Dl_info info{};
        if (::dladdr(a, &info) == 0 || info.dli_fname == nullptr) {
            out[a].assign(1, '?');
            continue;
        }
        const auto offset = reinterpret_cast<std::uintptr_t>(a) -
                            reinterpret_cast<std::uintptr_t>(info.dli_fbase) - 1;
        const std::string file = info.dli_fname;
        Dl_info self{};
        ::dladdr(reinterpret_cast<void*>(&symbolise), &self);
        const bool exe = info.dli_fbase == self.dli_fbase;
        if (!exe) {
            const auto slash = file.rfind('/');
            std::string& name = out[a];
            name.assign(info.dli_sname ? info.dli_sname : "?");
            name.append(" [").append(file, slash == std::string::npos ? 0 : slash + 1);
            name.push_back(']');
            continue;
        }
        std::ostringstream hex;
        hex << std::hex << "0x" << offset;
        args.push_back(hex.str());
        mine.push_back(a);
    }
    if (mine.empty())
        return out;
    const auto res = test::run_program(args);
    std::istringstream lines(res.output);
    std::string fn, where;
    for (void* a : mine) {
        if (!std::getline(lines, fn) || !std::getline(lines, where))
            break;
        if (fn.size() > 140) {
            fn.resize(137);
            fn.append("...");
        }
        out[a] = fn;
    }
    return out;
}

bool boring(const std::string& fn) {
    // Frames that say nothing about who allocates.
    return fn.starts_with("operator new") || fn.starts_with("corolock::bench::alloc::") ||
           fn.starts_with("std::") || fn.starts_with("__gnu_cxx::") ||
           fn.starts_with("void std::") || fn.find("allocator") != std::string::npos;
}

} // namespace

std::uint64_t count() noexcept {
    return calls.load(std::memory_order_relaxed);
}

std::uint64_t bytes() noexcept {
    return asked.load(std::memory_order_relaxed);
}

void trace_begin() noexcept {
    // backtrace() loads libgcc on its first call, which allocates: do it before recording.
    void* warm[2];
    ::backtrace(warm, 2);
    tracing.store(true, std::memory_order_relaxed);
}

void trace_end() noexcept {
    tracing.store(false, std::memory_order_relaxed);
}

void print_sites(std::ostream& os, std::uint64_t cycles, std::size_t top) {
    std::vector<const site*> used;
    std::uint64_t total = 0;
    for (const auto& s : table)
        if (s.hits) {
            used.push_back(&s);
            total += s.hits;
        }
    std::vector<void*> addrs;
    for (const auto* s : used)
        addrs.insert(addrs.end(), s->frames.begin(), s->frames.begin() + s->n);
    std::sort(addrs.begin(), addrs.end());
    addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
    const auto names = symbolise(addrs);
    auto name_of = [&](void* a) {
        const auto it = names.find(a);
        return it == names.end() ? std::string("?") : it->second;
    };

    // Grouped by (the library function that caused it, the frame that called operator new):
    // the full stacks differ in frames that do not matter (which handler resumed what).
    struct group {
        std::uint64_t hits = 0, bytes = 0;
        const site* example = nullptr;
    };
    std::map<std::pair<std::string, std::string>, group> groups;
    for (const auto* s : used) {
        std::string caller, owner;
        for (int i = 0; i < s->n; ++i) {
            const auto fn = name_of(s->frames[i]);
            if (caller.empty() && !boring(fn))
                caller = fn;
            if (owner.empty() && fn.starts_with("corolock::") &&
                !fn.starts_with("corolock::bench::"))
                owner = fn;
        }
        auto& g = groups[{owner.empty() ? "(no corolock frame: Asio or the bench)" : owner,
                          caller.empty() ? "?" : caller}];
        g.hits += s->hits;
        g.bytes += s->bytes;
        if (!g.example || s->hits > g.example->hits)
            g.example = s;
    }
    std::vector<std::pair<const std::pair<std::string, std::string>*, const group*>> order;
    for (const auto& [k, g] : groups)
        order.emplace_back(&k, &g);
    std::sort(order.begin(), order.end(),
              [](const auto& a, const auto& b) { return a.second->hits > b.second->hits; });
    if (order.size() > top)
        order.resize(top);

    const double per = cycles ? 1.0 / double(cycles) : 0;
    os << "  " << total << " operator new calls over " << cycles << " cycles ("
       << double(total) * per << " per cycle)"
       << (overflow ? ", " + std::to_string(overflow) + " on stacks not kept" : "")
       << "; grouped by the corolock function on the stack and the caller of operator new:\n";
    for (const auto& [k, g] : order) {
        os << "  " << double(g->hits) * per << " per cycle, "
           << g->bytes / std::max<std::uint64_t>(g->hits, 1) << " B avg\n      in  " << k->first
           << "\n      new " << k->second << "\n";
    }
}

} // namespace corolock::bench::alloc
// ---- the replacements (every form the standard lets a program replace)

void* operator new(std::size_t n) {
    if (void* p = corolock::bench::alloc::allocate(n))
        return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
    if (void* p = corolock::bench::alloc::allocate(n))
        return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    return corolock::bench::alloc::allocate(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    return corolock::bench::alloc::allocate(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
    if (void* p = corolock::bench::alloc::allocate(n, static_cast<std::size_t>(a)))
        return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
    if (void* p = corolock::bench::alloc::allocate(n, static_cast<std::size_t>(a)))
        return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return corolock::bench::alloc::allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return corolock::bench::alloc::allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}
