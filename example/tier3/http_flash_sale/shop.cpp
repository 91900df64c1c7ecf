// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "shop.hpp"

#include <corolock/claim.hpp>
#include <corolock/lease.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>

#include <charconv>
#include <chrono>
#include <tuple>

namespace flash_sale {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr auto tuple = asio::as_tuple(asio::deferred);

// How long a sold order id stays taken: repeats within it (a client's retry, a double click, a
// load balancer's replay) are answered 409 without touching the stock.
constexpr auto claim_retention = 10min;

corolock::mutex_options lock_options() {
    corolock::mutex_options o;
    o.lease = 2s; // renewed by the watchdog if a sale ever takes that long; freed soon if we crash
    return o;
}

// KEYS[1] = the item's stock, KEYS[2] = the sold orders (hash); ARGV[1] = order id, ARGV[2] =
// units. Returns the units left, or -1 when there are not enough. As a fenced script it runs only
// while the caller's lease is the newest holder of the item's lock: a holder that stalled past
// its lease is refused (stale_token) instead of selling next to the new holder.
const corolock::fenced_script& sell_script() {
    static const corolock::fenced_script s(R"lua(
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
local qty = tonumber(ARGV[2])
if stock < qty then return -1 end
redis.call('HINCRBY', KEYS[2], ARGV[1], qty)
return redis.call('DECRBY', KEYS[1], qty)
)lua");
    return s;
}

std::optional<std::int64_t> to_int(std::string_view text) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size())
        return std::nullopt;
    return v;
}

// After these errors the command surely did not run: lock_lost (a fenced write refused, or not
// sent because the lease was known lost), not_executed (refused by the server), not_connected
// (never written). After any other (connection_lost above all) it may have run.
bool surely_not_run(const corolock::error_code& ec) {
    return ec == corolock::condition::lock_lost || ec == corolock::condition::not_executed ||
           ec == corolock::error::not_connected;
}

} // namespace

std::string_view to_string(outcome o) noexcept {
    constexpr std::string_view names[outcome_count] = {
        "sold", "duplicate", "sold_out", "lock_timeout", "not_sold", "unknown", "bad_request"};
    return names[static_cast<int>(o)];
}

std::string shop::stock_key(std::string_view item) {
    return "sale:stock:" + std::string(item);
}

shop::item::item(corolock::connection& conn, const std::string& name)
    : lock(conn, "sale:lock:" + name, lock_options()), stock_key(shop::stock_key(name)) {}

shop::shop(corolock::connection& conn, const std::vector<std::string>& items) : conn_(conn) {
    for (const auto& name : items)
        items_.try_emplace(name, conn, name);
}

asio::awaitable<order_result> shop::place(const order& o,
                                          std::chrono::steady_clock::time_point deadline) {
    const auto it = items_.find(o.item);
    if (it == items_.end())
        co_return outcome::bad_request;

    // 1. Idempotency: the first request of an order id goes on, every repeat is a duplicate.
    auto [ec, claim] =
        co_await corolock::async_claim(conn_, "sale:order:" + o.id, claim_retention, tuple);
    if (ec) // after connection_lost the id may stay claimed, by nobody who knows it, for the window
        co_return order_result(surely_not_run(ec) ? outcome::not_sold : outcome::unknown, ec);
    if (!claim)
        co_return outcome::duplicate;

    order_result r = co_await sell(it->second, o, deadline);
    // The claim is kept when the order was sold (repeats are duplicates), and when the sale may
    // have happened (a retry must not sell twice). Otherwise the order did not happen: give the
    // id back so that a retry can go on. If that fails the id simply stays taken for the window.
    if (r.what != outcome::sold && r.what != outcome::unknown)
        co_await claim.async_give_back(tuple);
    co_return r;
}

asio::awaitable<order_result> shop::sell(item& it, const order& o,
                                         std::chrono::steady_clock::time_point deadline) {
    // 2. One sale of an item at a time, across every server that sells it, waiting no longer
    // than the request may take. (The library counts the wait and the outcome:
    // corolock_acquire_wait_seconds, corolock_acquires_total.)
    if (deadline <= std::chrono::steady_clock::now())
        co_return outcome::lock_timeout; // the budget went on the claim: no time to wait
    auto [ec, lease] = co_await it.lock.async_acquire_until(deadline, tuple);
    if (ec == corolock::error::acquire_timeout)
        co_return outcome::lock_timeout;
    if (ec)
        co_return order_result(outcome::not_sold, ec);

    // 3. The stock decrement, fenced by this lease's token.
    const std::string qty = std::to_string(o.qty);
    const std::string_view keys[] = {it.stock_key, sold_key};
    const std::string_view args[] = {o.id, qty};
    corolock::generic_response resp;
    auto [fec] = co_await lease.async_fenced_eval(sell_script(), keys, args, resp, tuple);
    // The lease releases the lock as it goes out of scope, without waiting for Redis.
    if (fec)
        co_return order_result(surely_not_run(fec) ? outcome::not_sold : outcome::unknown, fec);
    const auto left = resp.empty() ? std::nullopt : to_int(resp[0].value);
    if (!left) // not a number: the script ran, but what it did is not known
        co_return order_result(outcome::unknown, corolock::error::unexpected_reply);
    if (*left < 0)
        co_return outcome::sold_out;
    co_return order_result(outcome::sold, {}, *left, lease.token().value());
}

asio::awaitable<std::optional<std::int64_t>> shop::stock(std::string_view item) {
    corolock::request req;
    req.push("GET", stock_key(item));
    corolock::generic_response resp;
    auto [ec, n] = co_await conn_.async_exec(req, resp, tuple);
    if (ec || resp.empty() || corolock::find_error(resp))
        co_return std::nullopt;
    if (resp[0].data_type == corolock::resp3::type::null)
        co_return 0;
    co_return to_int(resp[0].value);
}

} // namespace flash_sale
