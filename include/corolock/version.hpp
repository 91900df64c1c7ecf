// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_VERSION_HPP
#define COROLOCK_VERSION_HPP

// The library's version, the one source of it: CMakeLists.txt and conanfile.py read these lines.
#define COROLOCK_VERSION_MAJOR 0
#define COROLOCK_VERSION_MINOR 1
#define COROLOCK_VERSION_PATCH 0

/// MAJOR * 100000 + MINOR * 100 + PATCH, as BOOST_VERSION: 0.1.0 is 100, 1.2.3 is 100203.
#define COROLOCK_VERSION                                                                           \
    (COROLOCK_VERSION_MAJOR * 100000 + COROLOCK_VERSION_MINOR * 100 + COROLOCK_VERSION_PATCH)

#endif
