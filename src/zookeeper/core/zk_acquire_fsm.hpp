// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// One ZooKeeper lock acquisition's decisions (the recipe: create a sequential node, list the
// children, watch the one predecessor, list again), pure: the driver (io/zk_lock_op.cpp) sends
// what an action says, feeds the reply back with the reply's meaning (zk_rc) and switches over
// the next action. A cancel or a deadline is fed as on_stop, whatever the machine waits for.
#ifndef COROLOCK_SRC_CORE_ZK_ACQUIRE_FSM_HPP
#define COROLOCK_SRC_CORE_ZK_ACQUIRE_FSM_HPP

#include "zookeeper/core/zk_lock_recipe.hpp"
#include <corolock/error.hpp>

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

namespace corolock::detail {

// What a reply's code means to an acquisition (the driver maps the C client's codes).
enum class zk_rc {
    ok,
    no_node,      // the path (or a parent) does not exist
    node_exists,  // creating a parent that is there already
    unknown,      // the connection dropped before the reply: the outcome is unknown
    closing,      // the connection is being stopped
    session_gone, // the session expired (its nodes with it)
    other,        // refused (an ACL, a bad path): the raw code says why
};
std::ostream& operator<<(std::ostream& os, zk_rc r);

struct zk_acquire_action {
    enum class kind {
        create_node,    // create our ephemeral sequential node (`path`: its prefix)
        create_parent,  // create `path`, persistent (node_exists is fine)
        list,           // list the children of the lock path
        watch,          // exists-watch `path`: the predecessor, or our own node found again
        wait_wake,      // wait for that watch to fire (then on_fired)
        wait_reconnect, // wait until the session is connected (then on_reconnected)
        grant,          // complete with the lease of node(): it holds
        finish,         // complete with `ec` (none: an empty lease, held by another) and no lease;
                        // delete our node first if `drop_node`
        refuse,         // the server refused `request` on `path` with `raw_rc`: delete our node,
                        // log why, complete with zk_error(raw_rc)
        abandon,        // stopped (`ec`): delete our node, look for one a lost create may have
                        // made, complete with `ec`
    } what = kind::list;
    std::string path;
    error_code ec;
    bool drop_node = false;
    const char* request = "";
    int raw_rc = 0;
    bool found_own = false;    // watch: our node, found by owner id after a lost create reply
    bool root_missing = false; // refuse: the topmost parent had no parent (the chroot is missing)

    // Whether the acquisition completes with it (else it sends or waits).
    bool ends() const noexcept {
        return what == kind::grant || what == kind::finish || what == kind::refuse ||
               what == kind::abandon;
    }
};
std::ostream& operator<<(std::ostream& os, zk_acquire_action::kind k);

class zk_acquire_fsm {
public:
    // `owner`: the acquisition's id (its nodes' prefix); `once`: a try or a zero wait (one
    // attempt: held means done, an unknown outcome means connection_lost); `zero_wait`: a
    // held lock then ends with acquire_timeout rather than an empty lease.
    zk_acquire_fsm(std::string lock_path, zk_node_kind kind, std::string owner, bool once,
                   bool zero_wait);

    zk_acquire_action start() { return next(); }
    // Replies to the action last returned.
    zk_acquire_action on_created(zk_rc rc, std::string_view created_path, std::int64_t czxid,
                                 unsigned session, int raw_rc);
    zk_acquire_action on_parent_created(zk_rc rc, int raw_rc);
    zk_acquire_action on_listed(zk_rc rc, std::span<const std::string> children, unsigned session,
                                int raw_rc);
    zk_acquire_action on_watched(zk_rc rc, std::int64_t czxid);
    zk_acquire_action on_fired();
    zk_acquire_action on_reconnected(bool connected);
    // A cancel or the deadline (zk_stop_waiting's error) while waiting for anything.
    zk_acquire_action on_stop(error_code why);

    // Our node (child name; empty: none), its czxid and session.
    const std::string& node() const noexcept { return node_; }
    std::int64_t czxid() const noexcept { return czxid_; }
    unsigned session() const noexcept { return session_; }
    // A create's reply was lost: our node may exist in `unknown_session()`.
    bool created_unknown() const noexcept { return created_unknown_; }
    unsigned unknown_session() const noexcept { return unknown_session_; }
    const std::string& prefix() const noexcept { return prefix_; }
    std::string full(std::string_view child) const;
    // The driver deleted our node (drop_node): forget it.
    void node_dropped() noexcept { node_.clear(); }
    void lost_create_handled() noexcept { created_unknown_ = false; }

private:
    enum class phase {
        top,
        creating,
        parents,
        listing,
        finding,       // listing after a lost create reply
        watching_own,  // exists on our node found again
        watching_pred, // exists-watch on the predecessor
        waiting,       // the predecessor's watch set
        reconnecting,  // then the top, or finding
        done,
    };
    zk_acquire_action next();
    zk_acquire_action reconnect();
    zk_acquire_action end(zk_acquire_action a);
    zk_acquire_action parent_step();

    std::string path_;
    std::string owner_;
    std::string prefix_;
    bool once_;
    bool zero_wait_;
    phase phase_ = phase::top;
    std::string node_;
    std::int64_t czxid_ = 0;
    unsigned session_ = 0;
    bool created_unknown_ = false;
    unsigned unknown_session_ = 0;
    std::size_t parent_at_ = 0; // the '/' ending the parent being created (npos: the path)
    bool find_after_reconnect_ = false;
};

} // namespace corolock::detail

#endif
