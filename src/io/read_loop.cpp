// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The reader: bytes into the parser, each message routed to the head request or, a push, to
// the pub/sub dispatch.
#include "io/connection_impl.hpp"

namespace corolock::detail {

namespace asio = boost::asio;
using asio::awaitable;

awaitable<error_code> connection_impl::reader() {
    for (;;) {
        if (auto ec = process_input())
            co_return ec;
        auto [ec, n] = co_await stream_.read_some(rbuf_.prepare(64 * 1024));
        if (ec)
            co_return ec;
        rbuf_.commit(n);
        bytes_read_.fetch_add(n, std::memory_order_relaxed);
    }
}

error_code connection_impl::process_input() {
    for (;;) {
        error_code ec;
        auto n = parser_.consume(rbuf_.unread(), ec);
        if (ec)
            return ec;
        if (!n)
            return rbuf_.unread().size() > cfg_.max_read_size ? error::message_too_large
                                                              : error_code{};
        if (n->depth == 0) {
            // An attribute annotates the value that follows it; corolock has no use for it.
            in_attribute_ = n->data_type == resp3::type::attribute;
            if (!in_attribute_)
                route_ = n->data_type == resp3::type::push ? route::push : route::reply;
            if (route_ == route::reply && resp3::is_error(n->data_type) && uses_sentinel() &&
                demoted_reply(n->value))
                demoted_ = true;
        }
        if (!in_attribute_) {
            // A message has 4 nodes; keeping one more tells a longer push apart, and bounds the
            // memory a hostile push can take.
            if (route_ == route::push && push_nodes_.size() < 5)
                push_nodes_.push_back(
                    {n->data_type, n->aggregate_size, n->depth, std::string(n->value)});
            else if (auto e = mpx_.on_node(*n))
                return e;
        }
        if (parser_.done()) {
            const auto bytes = parser_.consumed();
            rbuf_.consume(bytes);
            parser_.reset();
            if (route_ == route::push) {
                on_push_complete();
            } else {
                replies_.fetch_add(1, std::memory_order_relaxed);
                in_reply_end_ = true;
                const auto completed = mpx_.on_reply_end(bytes); // alive till c->run() ends
                in_reply_end_ = false;
                if (auto* c = std::exchange(continuation_, nullptr))
                    c->run();
            }
            route_ = route::none;
            if (demoted_) {
                // Not a writable master any more: that request failed (not executed); the ones
                // written behind it may have run, so the connection is dropped, not kept.
                demoted_ = false;
                log_.log(logger::level::warning,
                         "sentinel: the master refused a write (READONLY/MASTERDOWN); resolving "
                         "again");
                return error::readonly;
            }
        }
    }
}

} // namespace corolock::detail
