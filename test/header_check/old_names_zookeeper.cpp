// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Code written against the 0.x header names still compiles: each <corolock/zk_*.hpp>, now a
// forwarding header, is included in dependency order and gives at once the types it held.
#include <cstddef>

namespace {
template <class T>
constexpr bool complete = sizeof(T) > 0;
} // namespace

#include <corolock/zk_connection.hpp>
static_assert(complete<corolock::zk_connection> && complete<corolock::zk_config> &&
              complete<corolock::zk_session_state>);

#include <corolock/zk_mutex.hpp>
static_assert(complete<corolock::zk_mutex> && complete<corolock::zk_lease> &&
              complete<corolock::zk_hold>);

#include <corolock/zk_shared_mutex.hpp>
static_assert(complete<corolock::zk_shared_mutex>);
