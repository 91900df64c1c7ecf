// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// What a connection tells the listeners of a pub/sub channel.
#ifndef COROLOCK_SRC_IO_PUSH_LISTENER_HPP
#define COROLOCK_SRC_IO_PUSH_LISTENER_HPP

#include <corolock/error.hpp>

#include <string_view>

namespace corolock::detail {

// Receives pub/sub messages of one channel, on the connection's strand. Must not block.
class push_listener {
public:
    virtual ~push_listener() = default;
    virtual void on_message(std::string_view channel, std::string_view payload) = 0;
    // The connection was re-established and its subscriptions re-issued: messages published
    // while it was down are lost, so state that waits for one should re-check.
    virtual void on_reconnect() {}
    // The connection stopped for good (async_run ended).
    virtual void on_stop() {}
    // Sharded pub/sub: the server unsubscribed the channel by itself (its slot moved to another
    // node). Messages will not come here any more; state that waits for one should re-check.
    virtual void on_slot_moved() { on_reconnect(); }
    // The server refused to subscribe to the channel (error::subscribe_refused; the text is
    // logged). Final for this listener: the connection does not retry it, not even after a
    // reconnect, until every listener of the channel is gone. Messages will not come, so state
    // that waits for one must rely on its own timer.
    virtual void on_subscribe_failed(error_code /*ec*/) {}
    // Sharded pub/sub: the node answered the subscription with a redirect (`text`, e.g.
    // "MOVED 3999 127.0.0.1:7002"): it does not serve the channel's slot (any more). Not a
    // refusal: nothing is subscribed here and the connection does not send it again (as for a
    // refusal, until every listener of the channel is gone), so the listener's owner must
    // subscribe where the slot is now (the cluster's relay does). A listener that cannot go
    // elsewhere (a `subscription` on a node connection) takes it as a refusal: the default.
    virtual void on_subscribe_redirected(std::string_view /*text*/) {
        on_subscribe_failed(error::subscribe_refused);
    }
};

} // namespace corolock::detail

#endif
