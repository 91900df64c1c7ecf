// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// A flash-sale HTTP/1.1 server: Boost.Beast for HTTP, C++20 coroutines, one io_context (run by
// --threads threads) and one corolock::connection shared by every request.
//
//   POST /orders        {"order_id": "o-1", "item": "apple", "qty": 1}
//                       201 sold, 409 duplicate order id, 410 sold out, 503 lock busy or Redis
//                       trouble, 400 bad input, 404 no such item, 413 body too large
//   GET  /stock/<item>  {"item": "apple", "stock": 41}
//   GET  /healthz       200 {"status": "ok", "redis": "connected"}, else 503
//   GET  /metrics       Prometheus text
//
// Each order has a deadline: its arrival plus the server's request budget (--budget-ms), or
// less when the client sends `X-Request-Timeout-Ms` (what is left of its own budget). The wait
// for the item's lock ends at that deadline, so a client that gave up is never served late.
//
// What an order does with corolock is in shop.cpp; this file is the HTTP plumbing. SIGINT or
// SIGTERM stops it gracefully: no new connections, idle ones closed, requests in progress
// answered, then the Redis connection closed and the io_context drained.
//
//   corolock_http_flash_sale [--redis URL] [--listen PORT] [--threads N] [--items a,b]
//                            [--budget-ms MS]
//
// It uses nothing of corolock's source tree: CMakeLists.txt builds it against an installed
// corolock (find_package) as well as inside the tree.
#include "metrics.hpp"
#include "shop.hpp"
#include <corolock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using namespace std::chrono_literals;
using tcp = asio::ip::tcp;
using flash_sale::outcome;

constexpr auto tuple = asio::as_tuple(asio::deferred);

// Bounds on what one client may cost us.
constexpr std::size_t max_header_bytes = 8 * 1024;
constexpr std::size_t max_body_bytes = 4 * 1024;
constexpr auto idle_timeout = 30s;  // to receive a whole request on a kept-alive connection
constexpr auto write_timeout = 10s; // to send a response
constexpr std::int64_t max_units_per_order = 10;
// The client's own budget for a request, in ms (at most the server's --budget-ms).
constexpr std::string_view timeout_header = "X-Request-Timeout-Ms";

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

// ---------------------------------------------------------------------------- requests, answers

// Order ids, item names: 1 to 64 letters, digits and "-_.:".
bool valid_name(std::string_view s) {
    return !s.empty() && s.size() <= 64 &&
           s.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789-_.:") == s.npos;
}

// {"order_id": "...", "item": "...", "qty": 1} (qty optional, 1 to 10). On failure says why.
std::optional<flash_sale::order> parse_order(std::string_view body, std::string& why) {
    boost::system::error_code ec;
    const json::value v = json::parse(body, ec);
    const json::object* obj = ec ? nullptr : v.if_object();
    if (!obj) {
        why = "the body must be a JSON object";
        return std::nullopt;
    }
    const auto text = [&](std::string_view key) -> std::string_view {
        const json::value* f = obj->if_contains(key);
        return f && f->is_string() ? std::string_view(f->get_string()) : std::string_view();
    };
    flash_sale::order o{std::string(text("order_id")), std::string(text("item"))};
    if (!valid_name(o.id) || !valid_name(o.item)) {
        why = "order_id and item must be strings of 1 to 64 letters, digits and -_.:";
        return std::nullopt;
    }
    if (const json::value* q = obj->if_contains("qty")) {
        const std::int64_t* n = q->if_int64();
        if (!n || *n < 1 || *n > max_units_per_order) {
            why = "qty must be a whole number from 1 to " + std::to_string(max_units_per_order);
            return std::nullopt;
        }
        o.qty = *n;
    }
    return o;
}

response answer(http::status status, std::string body,
                std::string_view content_type = "application/json") {
    response res(status, 11);
    res.set(http::field::server, "corolock-http-flash-sale");
    res.set(http::field::content_type, content_type);
    res.body() = std::move(body);
    return res;
}

response answer(http::status status, const json::object& body) {
    return answer(status, json::serialize(body) + "\n");
}

response error_answer(http::status status, std::string_view message) {
    return answer(status, json::object{{"status", "error"}, {"message", message}});
}

response order_answer(const flash_sale::order& o, const flash_sale::order_result& r) {
    json::object body{{"status", flash_sale::to_string(r.what)}, {"order_id", o.id}};
    switch (r.what) {
    case outcome::sold:
        body["item"] = o.item;
        body["qty"] = o.qty;
        body["stock_left"] = r.stock_left;
        body["fencing_token"] = r.token;
        return answer(http::status::created, body);
    case outcome::duplicate:
        body["message"] = "this order id was already placed";
        return answer(http::status::conflict, body);
    case outcome::sold_out:
        body["message"] = "not enough stock left";
        return answer(http::status::gone, body);
    case outcome::lock_timeout:
    case outcome::not_sold:
        body["message"] =
            r.what == outcome::lock_timeout
                ? "the item was busy until the request's deadline; nothing was sold, retry later"
                : r.ec.message() + "; nothing was sold, retry later";
        break;
    case outcome::unknown:
        body["message"] = r.ec.message() +
                          "; the order may have been placed: look it up before placing a new one";
        break;
    case outcome::bad_request: // the only one the shop gives: an item that is not on sale
        body["message"] = "no such item on sale";
        return answer(http::status::not_found, body);
    }
    auto res = answer(http::status::service_unavailable, body);
    res.set(http::field::retry_after, "1");
    return res;
}

// ------------------------------------------------------------------------------------- server

class server {
public:
    server(asio::io_context& ioc, const tcp::endpoint& listen, corolock::connection& conn,
           flash_sale::shop& shop, flash_sale::metrics& metrics, std::chrono::milliseconds budget)
        : ioc_(ioc), acceptor_(asio::make_strand(ioc), listen), conn_(conn), shop_(shop),
          metrics_(metrics), budget_(budget) {}

    tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }

    void start() {
        asio::co_spawn(acceptor_.get_executor(), accept_loop(), [](std::exception_ptr e) {
            if (e)
                std::cerr << "http_flash_sale: the accept loop failed\n";
        });
    }

    // Graceful stop: no new connections; connections waiting for a request are closed; the others
    // close after their answer. The last one to go closes the Redis connection.
    void stop() {
        std::lock_guard<std::mutex> g(sessions_mutex_);
        if (stopping_.exchange(true))
            return;
        std::cout << "stopping: " << sessions_.size() << " connections open" << std::endl;
        asio::post(acceptor_.get_executor(), [this] { acceptor_.close(); });
        for (const auto& s : sessions_)
            asio::post(s->stream.get_executor(), [s] {
                if (s->reading)
                    s->stream.cancel();
            });
        if (sessions_.empty())
            conn_.cancel();
    }

private:
    // One client connection, on its own strand: its coroutine and stop()'s cancel never overlap.
    struct session {
        explicit session(tcp::socket socket) : stream(std::move(socket)) {}
        beast::tcp_stream stream;
        bool reading = false; // waiting for a request: stop() may close it
    };

    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, socket] = co_await acceptor_.async_accept(asio::make_strand(ioc_), tuple);
            if (!acceptor_.is_open())
                co_return;
            if (ec) { // the client gave up already, or we are out of descriptors for now
                asio::steady_timer pause(acceptor_.get_executor(), 10ms);
                co_await pause.async_wait(tuple);
                continue;
            }
            auto s = std::make_shared<session>(std::move(socket));
            {
                std::lock_guard<std::mutex> g(sessions_mutex_);
                if (stopping_)
                    co_return;
                sessions_.insert(s);
            }
            asio::co_spawn(s->stream.get_executor(), serve(s), [this, s](std::exception_ptr e) {
                if (e)
                    std::cerr << "http_flash_sale: a connection failed\n";
                std::lock_guard<std::mutex> g(sessions_mutex_);
                sessions_.erase(s);
                if (stopping_ && sessions_.empty())
                    conn_.cancel(); // Redis was needed until the last answer
            });
        }
    }

    // Reads requests and answers them, one at a time, while the client keeps the connection.
    asio::awaitable<void> serve(std::shared_ptr<session> s) {
        beast::flat_buffer buffer(max_header_bytes + max_body_bytes);
        for (;;) {
            http::request_parser<http::string_body> parser;
            parser.header_limit(max_header_bytes);
            parser.body_limit(max_body_bytes);
            if (stopping_)
                break;
            s->reading = true;
            s->stream.expires_after(idle_timeout);
            auto [ec, n] = co_await http::async_read(s->stream, buffer, parser, tuple);
            s->reading = false;

            std::optional<response> res;
            bool keep_alive = false;
            if (!ec) {
                keep_alive = parser.get().keep_alive();
                try {
                    res = co_await route(parser.get());
                } catch (const std::exception& e) {
                    res = error_answer(http::status::internal_server_error, e.what());
                }
            } else if ((res = refusal(ec))) {
                metrics_.count(outcome::bad_request);
            }
            if (!res)
                break; // the client closed, timed out, or stop() closed an idle connection
            res->keep_alive(keep_alive && !stopping_);
            res->prepare_payload();
            s->stream.expires_after(write_timeout);
            auto [wec, wn] = co_await http::async_write(s->stream, *res, tuple);
            if (wec || !res->keep_alive())
                break;
        }
        beast::error_code ignored;
        s->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }

    // The answer to a request that could not be read, if it deserves one.
    static std::optional<response> refusal(const beast::error_code& ec) {
        if (ec == http::error::body_limit || ec == http::error::header_limit ||
            ec == http::error::buffer_overflow)
            return error_answer(http::status::payload_too_large, "request too large");
        const bool malformed =
            ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
            ec != http::error::end_of_stream && ec != http::error::partial_message;
        if (malformed)
            return error_answer(http::status::bad_request, "malformed HTTP request");
        return std::nullopt; // closed, timed out, or closed by stop(): nobody to answer
    }

    asio::awaitable<response> route(const request& req) {
        const std::string_view target = req.target();
        const bool get = req.method() == http::verb::get;
        if (target == "/orders") {
            if (req.method() != http::verb::post)
                co_return not_allowed("POST");
            co_return co_await post_order(req);
        }
        if (target.starts_with("/stock/")) {
            if (!get)
                co_return not_allowed("GET");
            co_return co_await get_stock(target.substr(7));
        }
        if (target == "/healthz") {
            if (!get)
                co_return not_allowed("GET");
            co_return health();
        }
        if (target == "/metrics") {
            if (!get)
                co_return not_allowed("GET");
            co_return answer(http::status::ok, metrics_.prometheus(conn_),
                             "text/plain; version=0.0.4");
        }
        co_return error_answer(http::status::not_found, "no such resource");
    }

    asio::awaitable<response> post_order(const request& req) {
        const auto deadline = request_deadline(req);
        std::string why;
        const auto order = parse_order(req.body(), why);
        if (!order || !deadline) {
            metrics_.count(outcome::bad_request);
            co_return error_answer(http::status::bad_request,
                                   deadline ? why
                                            : std::string(timeout_header) +
                                                  " must be a whole number of milliseconds");
        }
        const flash_sale::order_result r = co_await shop_.place(*order, *deadline);
        metrics_.count(r.what);
        co_return order_answer(*order, r);
    }

    asio::awaitable<response> get_stock(std::string_view item) {
        if (!shop_.sells(item))
            co_return error_answer(http::status::not_found, "no such item on sale");
        const auto units = co_await shop_.stock(item);
        if (!units)
            co_return error_answer(http::status::service_unavailable, "Redis did not answer");
        co_return answer(http::status::ok, json::object{{"item", item}, {"stock", *units}});
    }

    // When the request must be answered: now plus the server's budget, or plus the client's own
    // (X-Request-Timeout-Ms) when that is smaller. nullopt when the header is malformed.
    std::optional<std::chrono::steady_clock::time_point>
    request_deadline(const request& req) const {
        auto budget = budget_;
        if (const auto h = req.find(timeout_header); h != req.end()) {
            const std::string_view text = h->value();
            std::int64_t ms = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
            if (ec != std::errc{} || end != text.data() + text.size() || ms < 0)
                return std::nullopt;
            budget = std::min(budget, std::chrono::milliseconds(ms));
        }
        return std::chrono::steady_clock::now() + budget;
    }

    // Readiness: 200 while Redis is connected and the server is not stopping, else 503 (a load
    // balancer then sends the requests elsewhere).
    response health() const {
        const bool redis_up = conn_.is_connected();
        const bool ready = redis_up && !stopping_;
        return answer(
            ready ? http::status::ok : http::status::service_unavailable,
            json::object{{"status", ready ? "ok" : (stopping_ ? "stopping" : "unavailable")},
                         {"redis", redis_up ? "connected" : "disconnected"}});
    }

    static response not_allowed(std::string_view allowed) {
        auto res = error_answer(http::status::method_not_allowed, "method not allowed");
        res.set(http::field::allow, allowed);
        return res;
    }

    asio::io_context& ioc_;
    tcp::acceptor acceptor_;
    corolock::connection& conn_;
    flash_sale::shop& shop_;
    flash_sale::metrics& metrics_;
    const std::chrono::milliseconds budget_; // a request's time, arrival to answer
    std::mutex sessions_mutex_;              // guards sessions_ and the writes of stopping_
    std::set<std::shared_ptr<session>> sessions_;
    std::atomic<bool> stopping_{false};
};

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    for (std::size_t at = 0; at <= list.size();) {
        const auto comma = std::min(list.find(',', at), list.size());
        out.push_back(list.substr(at, comma - at));
        at = comma + 1;
    }
    return out;
}

// The command line. The Redis server is a connection URL (corolock::connection_config::from_url:
// redis://, rediss://, unix://, user, password, database), else $COROLOCK_REDIS_URL.
struct options {
    std::string redis = "redis://127.0.0.1:6379";
    unsigned short listen = 8080;
    int threads = 1;
    std::vector<std::string> items = split("apple,banana,cherry,durian");
    std::chrono::milliseconds budget{2000};
};

constexpr std::string_view usage =
    "usage: corolock_http_flash_sale [--redis URL] [--listen PORT] [--threads N] [--items a,b]\n"
    "                                [--budget-ms MS]\n"
    "  --redis      the Redis server (else $COROLOCK_REDIS_URL, else redis://127.0.0.1:6379)\n"
    "  --listen     HTTP port on 127.0.0.1 (0: any free port), else 8080\n"
    "  --threads    threads running the io_context (1 to 64), else 1\n"
    "  --items      the items on sale, comma-separated\n"
    "  --budget-ms  a request's time from arrival to answer (1 to 600000), else 2000\n";

// A whole number in [low, high], or nullopt.
std::optional<long> number(std::string_view text, long low, long high) {
    long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || v < low || v > high)
        return std::nullopt;
    return v;
}

std::optional<options> parse_options(int argc, char** argv) {
    options o;
    if (const char* url = std::getenv("COROLOCK_REDIS_URL"); url && *url)
        o.redis = url;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view name = argv[i], value = argv[i + 1];
        if (name == "--redis") {
            o.redis = value;
        } else if (name == "--listen") {
            const auto v = number(value, 0, 65535);
            if (!v)
                return std::nullopt;
            o.listen = static_cast<unsigned short>(*v);
        } else if (name == "--threads") {
            const auto v = number(value, 1, 64);
            if (!v)
                return std::nullopt;
            o.threads = static_cast<int>(*v);
        } else if (name == "--items") {
            o.items = split(std::string(value));
            if (!std::all_of(o.items.begin(), o.items.end(), valid_name))
                return std::nullopt;
        } else if (name == "--budget-ms") {
            const auto v = number(value, 1, 600000);
            if (!v)
                return std::nullopt;
            o.budget = std::chrono::milliseconds(*v);
        } else {
            return std::nullopt;
        }
    }
    if (argc % 2 == 0) // an option without its value
        return std::nullopt;
    return o;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
        std::cout << usage;
        return 0;
    }
    const auto opts = parse_options(argc, argv);
    if (!opts) {
        std::cerr << "http_flash_sale: bad arguments\n" << usage;
        return 2;
    }

    try {
        auto cfg = corolock::connection_config::from_url(opts->redis);
        cfg.client_name = "corolock-http-flash-sale";
        asio::io_context ioc(opts->threads);
        corolock::connection conn(ioc, cfg);
        conn.async_run(asio::detached);
        flash_sale::metrics metrics;
        flash_sale::shop shop(conn, opts->items);
        server srv(ioc, {asio::ip::make_address("127.0.0.1"), opts->listen}, conn, shop, metrics,
                   opts->budget);
        srv.start();
        asio::signal_set signals(ioc, SIGINT, SIGTERM);
        signals.async_wait([&](boost::system::error_code ec, int) {
            if (!ec)
                srv.stop();
        });
        std::cout << "listening on http://" << srv.local_endpoint() << " (Redis " << cfg.host << ":"
                  << cfg.port << ", " << opts->threads << " thread(s), " << opts->items.size()
                  << " items, request budget " << opts->budget.count() << " ms)" << std::endl;

        std::vector<std::jthread> pool;
        for (int i = 1; i < opts->threads; ++i)
            pool.emplace_back([&ioc] { ioc.run(); });
        ioc.run();
        pool.clear(); // joins
        std::cout << "stopped; orders: " << metrics.orders_line() << std::endl;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "http_flash_sale: " << e.what() << "\n";
        return 1;
    }
}
