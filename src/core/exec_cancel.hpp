// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Which cancellation a request honours once it is written (doc/design.md, Cancellation): a
// waiting request is removed on any, a written one completes at once on terminal or partial.
#ifndef COROLOCK_SRC_CORE_EXEC_CANCEL_HPP
#define COROLOCK_SRC_CORE_EXEC_CANCEL_HPP

#include <boost/asio/cancellation_type.hpp>

namespace corolock::detail {

// True when a cancellation of type `t` also cancels a request that is already written.
bool cancels_written(boost::asio::cancellation_type t);

// Whether a cancellation of type `t` stops an acquisition that waits: every kind does (terminal,
// partial and total), since giving up a wait leaves nothing behind (a grant that arrives after
// it is given back).
inline bool cancels_wait(boost::asio::cancellation_type t) {
    using ct = boost::asio::cancellation_type;
    return (t & (ct::terminal | ct::partial | ct::total)) != ct::none;
}

} // namespace corolock::detail

#endif
