// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Code written against the 0.x header names still compiles: each <corolock/pg_*.hpp>, now a
// forwarding header, is included in dependency order and gives at once the types it held.
#include <cstddef>

namespace {
template <class T>
constexpr bool complete = sizeof(T) > 0;
} // namespace

#include <corolock/pg_config.hpp>
static_assert(complete<corolock::pg_config> && complete<corolock::pg_mutex_options> &&
              complete<corolock::pg_xact_options>);

#include <corolock/pg_connection.hpp>
static_assert(complete<corolock::pg_connection> && complete<corolock::pg_result> &&
              complete<corolock::pg_listener>);

#include <corolock/pg_mutex.hpp>
static_assert(complete<corolock::pg_mutex> && complete<corolock::pg_lease> &&
              complete<corolock::pg_nested_hold>);

#include <corolock/pg_xact_mutex.hpp>
static_assert(complete<corolock::pg_xact_mutex> && complete<corolock::pg_query_view>);
