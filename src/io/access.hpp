// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The one door from corolock's own layers (and its tests) to the implementation objects behind
// the public handles; nothing public exposes them.
#ifndef COROLOCK_SRC_IO_ACCESS_HPP
#define COROLOCK_SRC_IO_ACCESS_HPP

#include <corolock/cluster.hpp>
#include <corolock/connection.hpp>

namespace corolock::detail {

struct access {
    static connection_impl& impl(connection& c) noexcept { return *c.impl_; }
    static cluster_impl& impl(cluster& c) noexcept { return *c.impl_; }
};

} // namespace corolock::detail

#endif
