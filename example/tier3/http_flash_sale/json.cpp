// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Boost.JSON's implementation, compiled once (Debian's Boost 1.81 ships it header-only).
#include <boost/json/src.hpp>
