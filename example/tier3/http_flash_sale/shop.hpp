// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// The flash sale itself: what one order does with corolock. No HTTP in here (see main.cpp).
#ifndef COROLOCK_EXAMPLE_HTTP_FLASH_SALE_SHOP_HPP
#define COROLOCK_EXAMPLE_HTTP_FLASH_SALE_SHOP_HPP

#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flash_sale {

/// What became of an order. main.cpp gives each its HTTP status.
enum class outcome {
    sold,         ///< 201: the units are the buyer's
    duplicate,    ///< 409: an earlier request with this order id sold it, or is selling it
    sold_out,     ///< 410: not enough stock left
    lock_timeout, ///< 503: the item's lock stayed busy until the request's deadline; safe to retry
    not_sold,     ///< 503: Redis failed or refused before the sale; safe to retry
    unknown,      ///< 503: the sale's reply was lost, so it may have happened; the id stays claimed
    bad_request,  ///< 404 for an item not on sale; main.cpp also counts 400 and 413 here
};
inline constexpr int outcome_count = 7;
std::string_view to_string(outcome o) noexcept;

struct order {
    std::string id;
    std::string item;
    std::int64_t qty = 1;
};

struct order_result {
    order_result(outcome what, corolock::error_code ec = {}, std::int64_t stock_left = 0,
                 std::uint64_t token = 0)
        : what(what), ec(ec), stock_left(stock_left), token(token) {}
    outcome what;
    corolock::error_code ec;     ///< why, for not_sold and unknown
    std::int64_t stock_left = 0; ///< when sold
    std::uint64_t token = 0;     ///< when sold: the fencing token the sale ran under
};

/// The items on sale, each with its stock in Redis and one `corolock::mutex` shared by every
/// request of this server (as a class member would be). Safe to use from any thread: the item
/// table is fixed at construction, the mutexes and the connection are thread-safe.
class shop {
public:
    shop(corolock::connection& conn, const std::vector<std::string>& items);

    bool sells(std::string_view item) const { return items_.contains(item); }

    /// Claims the order id, then sells under the item's lock, waiting for the lock until
    /// `deadline` (the request's). Never throws for Redis failures.
    boost::asio::awaitable<order_result> place(const order& o,
                                               std::chrono::steady_clock::time_point deadline);

    /// The units left of an item on sale (0 when its stock key is missing); nullopt when Redis
    /// could not answer.
    boost::asio::awaitable<std::optional<std::int64_t>> stock(std::string_view item);

    /// Where the sale keeps its data (the load test reads them).
    static std::string stock_key(std::string_view item);
    static constexpr std::string_view sold_key = "sale:sold"; // hash: order id -> units sold

private:
    struct item {
        item(corolock::connection& conn, const std::string& name);
        corolock::mutex lock;
        std::string stock_key;
    };
    boost::asio::awaitable<order_result> sell(item& it, const order& o,
                                              std::chrono::steady_clock::time_point deadline);

    corolock::connection& conn_;
    std::map<std::string, item, std::less<>> items_;
};

} // namespace flash_sale

#endif
