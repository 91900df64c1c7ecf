// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Pub/sub on a connection: listeners per channel, the SUBSCRIBE and UNSUBSCRIBE they cause,
// refusals and redirects of those, and the dispatch of each message push to its listeners.
#include "io/connection_impl.hpp"

#include <algorithm>

namespace corolock::detail {

namespace asio = boost::asio;

namespace {

// A SUBSCRIBE or UNSUBSCRIBE the connection sends for its listeners. Nobody waits for it, but a
// refusal is reported to the connection (on the strand, from the multiplexer).
struct owned_request {
    request req;
};
class subscribe_op final : owned_request, public exec_entry {
public:
    subscribe_op(request r, std::string command, std::vector<std::string> channels,
                 std::weak_ptr<connection_impl> conn)
        : owned_request{std::move(r)}, exec_entry(req, {}, clock::now()),
          command_(std::move(command)), channels_(std::move(channels)), conn_(std::move(conn)) {}

private:
    void on_subscribe_refused(std::string_view text) override { refusal_ = text; }
    void on_complete(error_code, std::size_t) override {
        if (refusal_.empty())
            return;
        if (auto c = conn_.lock())
            c->on_subscribe_refused(command_, channels_, refusal_);
    }

    std::string command_;
    std::vector<std::string> channels_;
    std::weak_ptr<connection_impl> conn_;
    std::string refusal_;
};

} // namespace

void connection_impl::on_push_complete() {
    pushes_.fetch_add(1, std::memory_order_relaxed);
    auto nodes = std::move(push_nodes_);
    push_nodes_.clear();
    // message/smessage: [push 3] kind channel payload
    if (nodes.size() != 4 || nodes[0].aggregate_size != 3)
        return;
    const std::string& kind = nodes[1].value;
    const bool moved = sharded_pubsub_ && kind == "sunsubscribe";
    if (kind != "message" && kind != "smessage" && !moved)
        return;
    if (moved) {
        if (auto own = own_unsubscribes_.find(nodes[2].value); own != own_unsubscribes_.end()) {
            if (--own->second == 0)
                own_unsubscribes_.erase(own);
            return; // the confirmation of ours
        }
    }
    auto it = listeners_.find(nodes[2].value);
    if (it == listeners_.end())
        return;
    if (moved) {
        // Not ours: the server's (slot moved).
        log_.log(logger::level::info,
                 "sharded channel unsubscribed by the server (slot moved): " + nodes[2].value);
        for (auto& l : std::vector(it->second))
            l->on_slot_moved();
        return;
    }
    auto targets = it->second; // a listener may unsubscribe while being told
    for (auto& l : targets)
        l->on_message(nodes[2].value, nodes[3].value);
}

void connection_impl::queue_subscribe(std::string_view command,
                                      const std::vector<std::string>& channels, bool front) {
    request req;
    req.push_range(command, channels);
    auto e = std::make_shared<subscribe_op>(std::move(req), std::string(command), channels,
                                            weak_from_this());
    if (front)
        mpx_.add_front(std::move(e));
    else
        add_entry(std::move(e));
}

bool connection_impl::is_redirect(std::string_view refusal) const noexcept {
    // A cluster node that does not serve the channel's slot: the subscription belongs elsewhere.
    const auto kind = classify_server_error(refusal);
    return sharded_pubsub_ && (kind == error::moved || kind == error::ask);
}

void connection_impl::tell_refused(push_listener& l, std::string_view refusal) {
    if (is_redirect(refusal))
        l.on_subscribe_redirected(refusal);
    else
        l.on_subscribe_failed(error::subscribe_refused);
}

void connection_impl::on_subscribe_refused(std::string_view command,
                                           const std::vector<std::string>& channels,
                                           std::string_view text) {
    // A redirect is routine while slots move (the listener's owner follows it); a refusal is not.
    const auto level = is_redirect(text) ? logger::level::info : logger::level::error;
    if (log_.enabled(level)) {
        std::string line = (level == logger::level::info ? "subscription redirected: "
                                                         : "subscription refused: ") +
                           std::string(command);
        for (const auto& c : channels)
            line += " " + c;
        line += ": " + std::string(text);
        log_.log(level, line);
    }
    if (command != subscribe_command())
        return; // a refused UNSUBSCRIBE leaves nobody waiting
    for (const auto& channel : channels) {
        auto it = listeners_.find(channel);
        if (it == listeners_.end())
            continue; // every listener left meanwhile
        refused_.insert_or_assign(channel, std::string(text));
        for (auto& l : std::vector(it->second)) // a listener may leave while being told
            tell_refused(*l, text);
    }
}

void connection_impl::add_listener(const std::string& channel, std::shared_ptr<push_listener> l) {
    auto& ls = listeners_[channel];
    ls.push_back(l);
    if (ls.size() == 1)
        queue_subscribe(subscribe_command(), {channel}, false);
    else if (auto r = refused_.find(channel); r != refused_.end())
        tell_refused(*l, r->second);
}

void connection_impl::remove_listener(const std::string& channel, const push_listener* l) {
    auto it = listeners_.find(channel);
    if (it == listeners_.end())
        return;
    auto& ls = it->second;
    ls.erase(std::remove_if(ls.begin(), ls.end(), [l](const auto& p) { return p.get() == l; }),
             ls.end());
    if (ls.empty()) {
        listeners_.erase(it);
        // A refused channel was never subscribed; a later listener may try it again.
        if (refused_.erase(channel) == 0) {
            queue_subscribe(unsubscribe_command(), {channel}, false);
            if (sharded_pubsub_)
                ++own_unsubscribes_[channel];
        }
    }
}

} // namespace corolock::detail
