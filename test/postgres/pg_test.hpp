// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What the PostgreSQL suites share.
#ifndef COROLOCK_TEST_POSTGRES_PG_TEST_HPP
#define COROLOCK_TEST_POSTGRES_PG_TEST_HPP

#include "common/pg_process.hpp"
#include <corolock/pg_connection.hpp>

#include <chrono>

namespace corolock::test {

// A connection to `srv` tuned for tests: faults are noticed and repaired within a few hundred
// milliseconds (health check 300 ms, reconnect 20..200 ms, connect timeout 1 s).
inline pg_config pg_config_for(const pg_process& srv) {
    using namespace std::chrono_literals;
    pg_config cfg;
    cfg.conninfo = srv.conninfo() + " application_name=corolock-test";
    cfg.connect_timeout = 1s;
    cfg.health_check_interval = 300ms;
    cfg.reconnect_wait = 20ms;
    cfg.reconnect_wait_max = 200ms;
    return cfg;
}

} // namespace corolock::test

#endif
