// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// corolock-bench: throughput figures next to a reference measured in the same run against the
// same server. A benchmark, not a test: it never fails because something is slow.
//
//   corolock-bench pipeline [--coroutines K] [--seconds S] [--threads N] [--host H --port P]
//                           [--json]
//   corolock-bench lock [--seconds S] [--locks N] [--alloc-sites] [--host H --port P] [--json]
//   corolock-bench soak [--seconds S] [--interval I] [--locks N] [--host H --port P] [--json]
//   corolock-bench multi [--seconds S] [--host H --port P] [--json]
//   corolock-bench redlock [--seconds S] [--json]
//   corolock-bench cluster [--seconds S] [--json]
//   corolock-bench sync [--seconds S] [--host H --port P] [--json]
//   corolock-bench rate [--seconds S] [--host H --port P] [--json]
//   corolock-bench election [--seconds S] [--host H --port P] [--json]
//   corolock-bench zk [--seconds S] [--json]       (with corolock::zookeeper)
//
// One file per subcommand (pipeline.cpp, lock.cpp with many_locks.cpp, soak.cpp, multi.cpp,
// redlock.cpp, cluster.cpp, rate_limiter.cpp); what they share is in common.hpp. See
// bench/README.md for what each figure means.
#include "common.hpp"

#include <exception>
#include <iostream>
#include <string_view>

namespace {

struct subcommand {
    std::string_view name;
    int (*run)(const corolock::bench::options&);
};

constexpr subcommand subcommands[] = {
    {"pipeline", corolock::bench::run_pipeline},
    {"lock", corolock::bench::run_lock},
    {"soak", corolock::bench::run_soak},
    {"multi", corolock::bench::run_multi},
    {"redlock", corolock::bench::run_redlock},
    {"cluster", corolock::bench::run_cluster},
    {"sync", corolock::bench::run_sync},
    {"election", corolock::bench::run_election},
    {"rate", corolock::bench::run_rate},
#ifdef COROLOCK_BENCH_ZOOKEEPER
    {"zk", corolock::bench::run_zk},
#endif
};

} // namespace

int main(int argc, char** argv) {
    using corolock::bench::usage;
    if (argc < 2) {
        usage(std::cerr);
        return 2;
    }
    const std::string_view name = argv[1];
    if (name == "-h" || name == "--help") {
        usage(std::cout);
        return 0;
    }
    for (const auto& sc : subcommands) {
        if (sc.name != name)
            continue;
        const auto o = corolock::bench::parse_options(argc, argv, 2);
        if (!o)
            return 2;
        try {
            return sc.run(*o);
        } catch (const std::exception& e) {
            std::cerr << "corolock-bench: " << e.what() << "\n";
            return 1;
        }
    }
    std::cerr << "corolock-bench: unknown subcommand " << name << "\n";
    usage(std::cerr);
    return 2;
}
