// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "zookeeper/core/zk_acquire_fsm.hpp"

#include <ostream>

namespace corolock::detail {

std::ostream& operator<<(std::ostream& os, zk_rc r) {
    switch (r) {
    case zk_rc::ok:
        return os << "ok";
    case zk_rc::no_node:
        return os << "no_node";
    case zk_rc::node_exists:
        return os << "node_exists";
    case zk_rc::unknown:
        return os << "unknown";
    case zk_rc::closing:
        return os << "closing";
    case zk_rc::session_gone:
        return os << "session_gone";
    case zk_rc::other:
        return os << "other";
    }
    return os << "zk_rc(" << static_cast<int>(r) << ")";
}

std::ostream& operator<<(std::ostream& os, zk_acquire_action::kind k) {
    using a = zk_acquire_action::kind;
    switch (k) {
    case a::create_node:
        return os << "create_node";
    case a::create_parent:
        return os << "create_parent";
    case a::list:
        return os << "list";
    case a::watch:
        return os << "watch";
    case a::wait_wake:
        return os << "wait_wake";
    case a::wait_reconnect:
        return os << "wait_reconnect";
    case a::grant:
        return os << "grant";
    case a::finish:
        return os << "finish";
    case a::refuse:
        return os << "refuse";
    case a::abandon:
        return os << "abandon";
    }
    return os << "zk_acquire_action(" << static_cast<int>(k) << ")";
}

namespace {
using kind = zk_acquire_action::kind;

zk_acquire_action act(kind k, std::string path = {}) {
    zk_acquire_action a;
    a.what = k;
    a.path = std::move(path);
    return a;
}
} // namespace

zk_acquire_fsm::zk_acquire_fsm(std::string lock_path, zk_node_kind kind, std::string owner,
                               bool once, bool zero_wait)
    : path_(std::move(lock_path)), owner_(std::move(owner)),
      prefix_(path_ + "/" + node_prefix(owner_, kind)), once_(once), zero_wait_(zero_wait) {}

std::string zk_acquire_fsm::full(std::string_view child) const {
    std::string out = path_;
    out += '/';
    out += child;
    return out;
}

zk_acquire_action zk_acquire_fsm::end(zk_acquire_action a) {
    phase_ = phase::done;
    return a;
}

// The loop's top: find a node a lost create may have made, create ours, or list.
zk_acquire_action zk_acquire_fsm::next() {
    if (node_.empty() && created_unknown_) {
        find_after_reconnect_ = true;
        return reconnect();
    }
    if (node_.empty()) {
        phase_ = phase::creating;
        return act(kind::create_node, prefix_);
    }
    phase_ = phase::listing;
    return act(kind::list, path_);
}

// After an unknown outcome: one attempt reports it at once; a wait waits for the connection.
zk_acquire_action zk_acquire_fsm::reconnect() {
    if (once_) {
        auto a = act(kind::abandon);
        a.ec = error::connection_lost;
        return end(std::move(a));
    }
    phase_ = phase::reconnecting;
    return act(kind::wait_reconnect);
}

zk_acquire_action zk_acquire_fsm::parent_step() {
    phase_ = phase::parents;
    return act(kind::create_parent,
               parent_at_ == std::string::npos ? path_ : path_.substr(0, parent_at_));
}

zk_acquire_action zk_acquire_fsm::on_created(zk_rc rc, std::string_view created_path,
                                             std::int64_t czxid, unsigned session, int raw_rc) {
    switch (rc) {
    case zk_rc::ok: {
        const auto slash = created_path.rfind('/');
        node_ = std::string(slash == std::string_view::npos ? created_path
                                                            : created_path.substr(slash + 1));
        czxid_ = czxid;
        session_ = session;
        return next();
    }
    case zk_rc::no_node:
        parent_at_ = path_.find('/', 1);
        return parent_step();
    case zk_rc::unknown:
        created_unknown_ = true;
        unknown_session_ = session;
        return next();
    case zk_rc::closing: {
        auto a = act(kind::finish);
        a.ec = error::connection_lost;
        return end(std::move(a));
    }
    case zk_rc::session_gone:
        return next(); // a new session: create again
    case zk_rc::node_exists:
    case zk_rc::other:
        break;
    }
    auto a = act(kind::refuse, prefix_);
    a.request = "create";
    a.raw_rc = raw_rc;
    return end(std::move(a));
}

zk_acquire_action zk_acquire_fsm::on_parent_created(zk_rc rc, int raw_rc) {
    switch (rc) {
    case zk_rc::ok:
    case zk_rc::node_exists:
        if (parent_at_ == std::string::npos)
            return next(); // the lock path exists: create our node again
        parent_at_ = path_.find('/', parent_at_ + 1);
        return parent_step();
    case zk_rc::unknown:
        return reconnect();
    case zk_rc::closing:
    case zk_rc::session_gone:
        return next();
    case zk_rc::no_node:
    case zk_rc::other:
        break;
    }
    auto a = act(kind::refuse, path_);
    a.request = "create (parents of)";
    a.raw_rc = raw_rc;
    // The topmost parent's own parent is the root, which always exists unless a chroot that
    // does not exist is the root.
    a.root_missing = rc == zk_rc::no_node && parent_at_ == path_.find('/', 1);
    return end(std::move(a));
}

zk_acquire_action zk_acquire_fsm::on_listed(zk_rc rc, std::span<const std::string> children,
                                            unsigned session, int raw_rc) {
    if (phase_ == phase::finding) {
        // After a lost create reply: our node, if it exists, carries our owner id.
        if (rc == zk_rc::unknown)
            return next(); // still unknown: after the next reconnect
        created_unknown_ = false;
        if (rc == zk_rc::ok) {
            if (auto own = find_own(children, owner_)) {
                node_ = *own;
                session_ = session;
                phase_ = phase::watching_own;
                auto a = act(kind::watch, full(node_));
                a.found_own = true;
                return a;
            }
        }
        return next();
    }
    if (rc == zk_rc::unknown)
        return reconnect();
    if (rc == zk_rc::closing) {
        auto a = act(kind::finish);
        a.ec = error::connection_lost;
        return end(std::move(a));
    }
    if (session != session_ || rc == zk_rc::session_gone) {
        node_.clear(); // its session is gone, and the node with it
        return next();
    }
    if (rc != zk_rc::ok) {
        auto a = act(kind::refuse, path_);
        a.request = "list";
        a.raw_rc = raw_rc;
        return end(std::move(a));
    }
    const auto d = decide(children, node_);
    switch (d.what) {
    case zk_lock_decision::verdict::gone:
        node_.clear();
        return next();
    case zk_lock_decision::verdict::holds:
        return end(act(kind::grant));
    case zk_lock_decision::verdict::wait:
        break;
    }
    if (once_) {
        // One attempt: held by another. A try gives an empty lease; a zero wait, a timeout (as
        // any bounded wait that found the lock held).
        auto a = act(kind::finish);
        a.ec = zero_wait_ ? error_code(error::acquire_timeout) : error_code();
        a.drop_node = true;
        return end(std::move(a));
    }
    phase_ = phase::watching_pred; // only the predecessor: no herd
    return act(kind::watch, full(d.predecessor));
}

zk_acquire_action zk_acquire_fsm::on_watched(zk_rc rc, std::int64_t czxid) {
    if (phase_ == phase::watching_own) {
        czxid_ = czxid;
        if (rc == zk_rc::unknown) {
            // Our node was listed; whether it still is, is unknown again: look for it after the
            // reconnect rather than make another (which would wait behind this one for good).
            node_.clear();
            created_unknown_ = true;
            unknown_session_ = session_;
        } else if (rc != zk_rc::ok) {
            node_.clear(); // gone (no node, the session): create again
        }
        return next();
    }
    if (rc == zk_rc::ok) {
        phase_ = phase::waiting;
        return act(kind::wait_wake);
    }
    if (rc == zk_rc::unknown)
        return reconnect();
    return next(); // the predecessor is gone already (no_node), or the session: list again
}

zk_acquire_action zk_acquire_fsm::on_fired() {
    return next();
}

zk_acquire_action zk_acquire_fsm::on_reconnected(bool connected) {
    if (!connected) {
        auto a = act(kind::abandon);
        a.ec = error::connection_lost;
        return end(std::move(a));
    }
    if (find_after_reconnect_) {
        find_after_reconnect_ = false;
        phase_ = phase::finding;
        return act(kind::list, path_);
    }
    return next();
}

zk_acquire_action zk_acquire_fsm::on_stop(error_code why) {
    auto a = act(kind::abandon);
    a.ec = why;
    return end(std::move(a));
}

} // namespace corolock::detail
