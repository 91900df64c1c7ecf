// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/access.hpp"
#include "core/claim_scripts.hpp"
#include "io/connection_impl.hpp"
#include "io/exec.hpp"
#include "io/owner_id.hpp"
#include <corolock/claim.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <atomic>
#include <utility>

namespace corolock {
namespace detail {

namespace asio = boost::asio;
using claim_handler = asio::any_completion_handler<void(error_code, claim)>;

namespace {

// Deletes a claim nobody will use (its caller was cancelled before the reply came), so that it
// does not block the key for its window.
void give_back_in_background(const std::shared_ptr<connection_impl>& conn, const std::string& key,
                             const std::string& owner) {
    const std::string_view keys[] = {key};
    const std::string_view args[] = {owner};
    // EVAL, not EVALSHA: on a server without the script cached, a NOSCRIPT answer would re-send
    // it behind a retry's SET queued meanwhile, which it would refuse ("taken") before the key
    // is given back: nobody would own it.
    auto req = std::make_shared<request>(detail::make_eval(give_back_script(), keys, args));
    auto resp = std::make_shared<generic_response>();
    start_eval(conn, give_back_script(), req, *resp,
               asio::bind_executor(conn->strand(), [conn, req, resp, key](error_code ec) {
                   bool given_back = false;
                   if (!ec)
                       ec = decode_give_back(*resp, given_back);
                   const auto& log = conn->log();
                   if (ec && log.enabled(logger::level::warning))
                       log.log(logger::level::warning,
                               "claim " + key +
                                   ": cancelled after it was made; giving it back "
                                   "failed (" +
                                   ec.message() + "), it stays for its window");
                   else if (!ec && log.enabled(logger::level::info))
                       log.log(logger::level::info,
                               "claim " + key + ": cancelled after it was made; " +
                                   (given_back ? "given back" : "already gone (expired)"));
               }));
}

// One claim attempt. The reply and a cancellation race on the connection's strand; whichever
// comes first completes the caller. A call cancelled before its reply is an orphan: its SET may
// still run. Until that reply, a new claim of the same key on this connection adopts it instead
// of sending its own SET (which the orphan's would refuse, before the orphan's claim was given
// back: nobody would own the key). The adopter gets the orphan's outcome; an orphan with no live
// adopter gives back what it claimed.
struct claim_call : std::enable_shared_from_this<claim_call> {
    // Boost 1.81's any_completion_handler move assignment recurses forever (it copies `other` as
    // an lvalue into a new wrapper): the handler is only ever move-constructed.
    explicit claim_call(claim_handler h) : handler(std::move(h)) {}

    claim_handler handler;
    std::shared_ptr<connection_impl> conn;
    std::string key;
    std::string owner;
    claim::time_point valid_until;
    request req;
    generic_response resp;
    asio::cancellation_signal inner;
    bool answered = false;                     // strand only
    std::atomic<bool> cancel_requested{false}; // set by the caller's slot, on the caller's side
    bool adopting = false;               // strand only: waits on an orphan, sent no SET itself
    std::shared_ptr<claim_call> adopter; // strand only: takes this orphan's outcome

    // Strand only.
    void start() {
        adopting = false;
        if (auto it = conn->orphan_claims.find(key); it != conn->orphan_claims.end()) {
            auto orphan = std::static_pointer_cast<claim_call>(it->second);
            if (!orphan->adopter || orphan->adopter->answered) {
                orphan->adopter = shared_from_this();
                adopting = true;
                return;
            }
        }
        send();
    }

    void send() {
        start_exec(conn, req, make_adapter(resp),
                   asio::bind_cancellation_slot(
                       inner.slot(),
                       asio::bind_executor(conn->strand(),
                                           [self = shared_from_this()](error_code ec, std::size_t) {
                                               self->on_reply(ec);
                                           })));
    }

    void on_reply(error_code ec) {
        bool claimed = false;
        if (!ec)
            ec = decode_claim(resp, claimed);
        if (!answered) {
            complete(ec, claimed, std::move(owner), valid_until);
            return;
        }
        // An orphan's reply.
        if (auto it = conn->orphan_claims.find(key);
            it != conn->orphan_claims.end() && it->second.get() == this)
            conn->orphan_claims.erase(it);
        auto next = std::move(adopter);
        adopter.reset();
        if (next && !next->answered) {
            if (ec == asio::error::operation_aborted)
                return next->start(); // removed unwritten: the adopter sends its own SET
            return next->complete(ec, claimed, std::move(owner), valid_until);
        }
        if (!ec && claimed)
            give_back_in_background(conn, key, owner);
    }

    // The caller's outcome (this call's own reply, or an adopted orphan's). A claim is posted
    // to the caller's executor, and the caller may leave before it runs: a cancellation that
    // comes meanwhile (the timer of `co_await (async_claim(...) || timer)` won the race) turns it
    // into `operation_aborted` and the claim is given back, for nobody would do its work.
    void complete(error_code ec, bool claimed, std::string claim_owner, claim::time_point until) {
        answered = true;
        if (ec || !claimed)
            return deliver(std::move(handler), conn->executor(), ec, claim{});
        auto c = access::construct<claim>(conn, key, claim_owner, until);
        deliver_on(
            handler_executor(handler, conn->executor()),
            [self = shared_from_this(), c = std::move(c)]() mutable {
                asio::get_associated_cancellation_slot(self->handler).clear();
                if (!self->cancel_requested.load(std::memory_order_acquire))
                    return std::move(self->handler)(error_code(), std::move(c));
                asio::post(self->conn->strand(),
                           [conn = self->conn, key = c.key(), owner = c.owner()] {
                               give_back_in_background(conn, key, owner);
                           });
                std::move(self->handler)(error_code(asio::error::operation_aborted), claim{});
            },
            conn->executor());
    }

    void on_cancel() {
        if (answered)
            return;
        answered = true;
        // Unwritten: the SET is removed and never sent. Written: its reply is still read; until
        // then this call is an orphan that a retry of the key adopts. An adopter (waiting on
        // another orphan, sending nothing itself) just stops.
        inner.emit(asio::cancellation_type::total);
        if (!adopting) // an adopter sent nothing: no reply will ever come for it
            conn->orphan_claims.insert_or_assign(key, shared_from_this());
        deliver(std::move(handler), conn->executor(), error_code(asio::error::operation_aborted),
                claim{});
    }
};

} // namespace

void async_claim_impl(connection& conn, std::string key,
                      std::chrono::steady_clock::duration retention, claim_handler handler) {
    auto impl = detail::access::impl(conn).shared_from_this();
    if (auto ec = validate_claim(key, retention)) {
        deliver(std::move(handler), impl->executor(), ec, claim{});
        return;
    }
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto call = std::make_shared<claim_call>(std::move(handler));
    call->conn = impl;
    call->owner = std::string(view(random_owner_id()));
    call->valid_until = std::chrono::steady_clock::now() + retention;
    call->req = make_claim_request(key, call->owner, retention_ms(retention));
    call->key = std::move(key);
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<claim_call>(call), impl](asio::cancellation_type t) {
            if ((t & asio::cancellation_type::terminal) == asio::cancellation_type::none)
                return;
            if (auto c = weak.lock())
                c->cancel_requested.store(true, std::memory_order_release);
            asio::post(impl->strand(), [weak] {
                if (auto c = weak.lock())
                    c->on_cancel();
            });
        });
    asio::post(impl->strand(), [call = std::move(call)] { call->start(); });
}

} // namespace detail

claim::claim(std::shared_ptr<detail::connection_impl> conn, std::string key, std::string owner,
             time_point valid_until) noexcept
    : conn_(std::move(conn)), key_(std::move(key)), owner_(std::move(owner)),
      valid_until_(valid_until) {}

claim::claim(claim&& other) noexcept
    : conn_(std::move(other.conn_)), key_(std::move(other.key_)), owner_(std::move(other.owner_)),
      valid_until_(std::exchange(other.valid_until_, {})) {
    other.key_.clear();
    other.owner_.clear();
}

claim& claim::operator=(claim&& other) noexcept {
    if (this != &other) {
        conn_ = std::move(other.conn_);
        key_ = std::move(other.key_);
        owner_ = std::move(other.owner_);
        valid_until_ = std::exchange(other.valid_until_, {});
        other.key_.clear();
        other.owner_.clear();
    }
    return *this;
}

claim::~claim() = default;

void claim::give_back_impl(boost::asio::any_completion_handler<void(error_code)> handler) {
    namespace asio = boost::asio;
    // Consumed from here on, whatever the outcome.
    auto conn = std::move(conn_);
    const std::string key = std::exchange(key_, {});
    const std::string owner = std::exchange(owner_, {});
    valid_until_ = {};
    if (!conn) {
        // No connection to fall back on (an empty claim): the system executor only hops off
        // the initiating call.
        detail::deliver(std::move(handler), asio::system_executor(), error_code(error::not_owner));
        return;
    }
    const std::string_view keys[] = {key};
    const std::string_view args[] = {owner};
    const auto& sc = detail::give_back_script();
    auto req = std::make_shared<request>(detail::make_evalsha(sc, keys, args));
    auto resp = std::make_shared<generic_response>();
    auto ex = asio::get_associated_executor(handler, conn->executor());
    auto slot = asio::get_associated_cancellation_slot(handler);
    detail::start_eval(conn, sc, req, *resp,
                       asio::bind_cancellation_slot(
                           slot, asio::bind_executor(ex, [req, resp, h = std::move(handler)](
                                                             error_code ec) mutable {
                               bool given_back = false;
                               if (!ec)
                                   ec = detail::decode_give_back(*resp, given_back);
                               if (!ec && !given_back)
                                   ec = error::not_owner;
                               std::move(h)(ec);
                           })));
}

} // namespace corolock
