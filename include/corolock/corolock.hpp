// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_COROLOCK_HPP
#define COROLOCK_COROLOCK_HPP

#include <corolock/capabilities.hpp>
#include <corolock/claim.hpp>
#include <corolock/cluster.hpp>
#include <corolock/config.hpp>
#include <corolock/connection.hpp>
#include <corolock/election.hpp>
#include <corolock/error.hpp>
#include <corolock/fair_mutex.hpp>
#include <corolock/fencing_token.hpp>
#include <corolock/job.hpp>
#include <corolock/latch.hpp>
#include <corolock/local_mutex.hpp>
#include <corolock/lock_concepts.hpp>
#include <corolock/logger.hpp>
#include <corolock/metrics.hpp>
#include <corolock/multi_lock.hpp>
#include <corolock/mutex.hpp>
#include <corolock/rate_limiter.hpp>
#include <corolock/redlock.hpp>
#include <corolock/request.hpp>
#include <corolock/resp3/parser.hpp>
#include <corolock/resp3/serializer.hpp>
#include <corolock/resp3/type.hpp>
#include <corolock/response.hpp>
#include <corolock/script.hpp>
#include <corolock/semaphore.hpp>
#include <corolock/shared_mutex.hpp>
#include <corolock/version.hpp>
#include <corolock/with_lock.hpp>

/// \namespace corolock
/// The public API: connections, locks, leases, errors, metrics.
/// \namespace corolock::resp3
/// The RESP3 wire codec: a parser and a serializer, no Asio inside.

#endif
