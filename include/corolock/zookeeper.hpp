// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_ZOOKEEPER_HPP
#define COROLOCK_ZOOKEEPER_HPP

// The ZooKeeper backend (corolock::zookeeper, doc/zookeeper.md); link corolock::zookeeper.
#include <corolock/zookeeper/connection.hpp>
#include <corolock/zookeeper/election.hpp>
#include <corolock/zookeeper/mutex.hpp>
#include <corolock/zookeeper/shared_mutex.hpp>

#endif
