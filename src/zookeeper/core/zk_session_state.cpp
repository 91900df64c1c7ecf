// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The session state's printer: pure, so that the unit binary, which tests the session machine
// without the ZooKeeper client, prints states with it.
#include <corolock/zookeeper/connection.hpp>

#include <ostream>

namespace corolock {

std::ostream& operator<<(std::ostream& os, zk_session_state s) {
    switch (s) {
    case zk_session_state::connecting:
        return os << "connecting";
    case zk_session_state::connected:
        return os << "connected";
    case zk_session_state::suspended:
        return os << "suspended";
    case zk_session_state::expired:
        return os << "expired";
    case zk_session_state::closed:
        return os << "closed";
    }
    return os << "zk_session_state(" << static_cast<int>(s) << ")";
}

} // namespace corolock
