// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/exec_cancel.hpp"

namespace corolock::detail {

namespace asio = boost::asio;

bool cancels_written(asio::cancellation_type t) {
    return (t & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) !=
           asio::cancellation_type::none;
}

} // namespace corolock::detail
