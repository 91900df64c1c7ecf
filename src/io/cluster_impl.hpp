// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_CLUSTER_IMPL_HPP
#define COROLOCK_SRC_DETAIL_CLUSTER_IMPL_HPP

#include "core/redirect_policy.hpp"
#include "core/slot_table.hpp"
#include "io/connection_impl.hpp"
#include <corolock/cluster.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <tuple>

namespace corolock::detail {

class cluster_impl : public std::enable_shared_from_this<cluster_impl>,
                     public context_shutdown_hook {
public:
    cluster_impl(boost::asio::any_io_executor ex, boost::asio::ssl::context* tls,
                 cluster_config cfg, logger log);
    void abandon() noexcept override;

    const boost::asio::any_io_executor& executor() const noexcept { return user_ex_; }
    const boost::asio::strand<boost::asio::any_io_executor>& strand() const noexcept {
        return strand_;
    }
    const cluster_config& config() const noexcept { return cfg_; }
    const logger& log() const noexcept { return log_; }

    // --- any thread
    void start_run(boost::asio::any_completion_handler<void(error_code)> handler);
    void stop();
    bool is_connected() const noexcept { return covered_flag_.load(std::memory_order_relaxed); }
    cluster_stats stats() const noexcept;
    // Sends `req` to the master of `slot` (posts to the strand), following redirects; `eval`
    // (may be null) is the EVAL form sent on NOSCRIPT. The replies of the last attempt go to
    // `out`.
    // `try_once`: TRYAGAIN fails with error::try_again instead of waiting (a try-acquire).
    void start_route(std::uint16_t slot, std::shared_ptr<const request> req,
                     std::shared_ptr<const request> eval, response_adapter out,
                     boost::asio::any_completion_handler<void(error_code, std::size_t)> handler,
                     bool try_once = false);

    // --- strand only
    // The connection to a master (opened and started on first use).
    std::shared_ptr<connection_impl> node(const cluster_node& n);
    const slot_table& table() const noexcept { return table_; }
    // Asks for the topology now, or waits for the question in flight.
    boost::asio::awaitable<void> refresh();
    // Starts a refresh in the background unless one ran within `min_gap`.
    void schedule_refresh(std::chrono::steady_clock::duration min_gap);
    bool stopped() const noexcept { return stopped_; }

    // The lock layer's state, as connection_impl::lock_service (any thread); `hook` runs on the
    // strand when the cluster stops.
    template <class Make>
    std::shared_ptr<void> lock_service(Make make) {
        std::lock_guard<std::mutex> g(lock_service_mutex_);
        if (!lock_service_) {
            std::function<void()> reconnect; // a node's reconnection is not reported (yet)
            lock_service_ = make(stop_hook_, reconnect);
        }
        return lock_service_;
    }
    std::shared_ptr<void> existing_lock_service() {
        std::lock_guard<std::mutex> g(lock_service_mutex_);
        return lock_service_;
    }
    // Strand only. The lock layer's subscriptions: SSUBSCRIBE at the master of the channel's
    // slot, moved to the new master when the slot moves or the node goes away; `l` is called on
    // this strand.
    void add_listener(const std::string& channel, std::shared_ptr<push_listener> l);
    void remove_listener(const std::string& channel, const push_listener* l);
    // Strand only: subscribes `channel`'s listeners at its slot's master (after a refresh when
    // the map has none). `moved`: the node dropped the subscription (slot moved, node gone):
    // refresh first (after `delay`), then subscribe again even at the same node.
    void resubscribe(const std::string& channel, bool moved,
                     std::chrono::steady_clock::duration delay = {});
    // Strand only: the node where `relay` is registered answered its SSUBSCRIBE with `text`
    // (MOVED or ASK). MOVED: patch the slot and subscribe at the node it names (as a request
    // follows MOVED); else, or when the last redirect of this subscription was less than
    // try_again_delay ago, wait try_again_delay, refresh and subscribe by the map.
    void follow_subscribe_redirect(const std::string& channel, const push_listener* relay,
                                   std::string_view text);

private:
    boost::asio::awaitable<error_code> run();
    boost::asio::awaitable<error_code> refresh_once();
    void apply(slot_table fresh);
    boost::asio::awaitable<std::tuple<error_code, std::size_t>>
    route(std::uint16_t slot, const request& req, const request* eval, response_adapter out,
          bool try_once);
    // The error text that decides a re-send, or empty when some command of the request may have
    // run (see redirect_policy).
    static std::string redirect_text(const generic_response& resp, std::size_t skip);
    // Whether the reply after the first `skip` ones (the script's) is a NOSCRIPT error.
    static bool first_is_noscript(const generic_response& resp, std::size_t skip);
    // Feeds the replies after the first `skip` to the caller's adapter.
    static error_code replay(const generic_response& resp, std::size_t skip, response_adapter out);

    // Strand only: moves each subscription whose slot the map now gives to another node.
    void follow_owners();
    void subscribe_now(const std::string& channel, bool again);

    struct subscription {
        std::shared_ptr<push_listener> target; // the lock layer's listener
        std::shared_ptr<push_listener> relay;  // registered at the node; posts to our strand
        std::shared_ptr<connection_impl> node; // where `relay` is registered (null: nowhere)
        std::chrono::steady_clock::time_point redirected{}; // its last MOVED/ASK
    };
    std::map<std::string, std::vector<subscription>, std::less<>> subs_;
    std::mutex lock_service_mutex_;
    std::shared_ptr<void> lock_service_;
    std::function<void()> stop_hook_;

    struct node_entry {
        std::shared_ptr<connection_impl> conn;
        unsigned absent = 0; // refreshes in a row that found it owning no slot
    };

    boost::asio::any_io_executor user_ex_;
    boost::asio::strand<boost::asio::any_io_executor> strand_;
    boost::asio::ssl::context* tls_;
    cluster_config cfg_;
    logger log_;

    slot_table table_;
    std::map<std::string, node_entry, std::less<>> nodes_; // by "host:port"
    boost::asio::steady_timer run_timer_;
    boost::asio::steady_timer refresh_done_; // cancelled when a refresh ends: wakes its waiters
    boost::asio::cancellation_signal run_signal_;
    bool running_ = false;
    bool stopped_ = false;
    bool refreshing_ = false;
    std::uint64_t refresh_gen_ = 0;
    std::chrono::steady_clock::time_point last_refresh_{};
    std::minstd_rand rng_;

    std::atomic<bool> covered_flag_{false};
    std::atomic<std::uint64_t> moved_{0}, asks_{0}, retries_{0}, refreshes_{0},
        refresh_failures_{0}, open_nodes_{0};
};

} // namespace corolock::detail

#endif
