// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_POSTGRES_HPP
#define COROLOCK_POSTGRES_HPP

// The PostgreSQL backend (corolock::postgres, doc/postgres.md); link corolock::postgres.
#include <corolock/postgres/config.hpp>
#include <corolock/postgres/connection.hpp>
#include <corolock/postgres/election.hpp>
#include <corolock/postgres/mutex.hpp>
#include <corolock/postgres/xact_mutex.hpp>

#endif
