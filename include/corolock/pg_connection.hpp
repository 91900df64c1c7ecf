// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Kept for 0.x; include <corolock/postgres/connection.hpp>.
#include <corolock/postgres/connection.hpp>
