// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The execution context's service that abandons its connections and clusters at shutdown.
#include "io/context_shutdown.hpp"

#include <boost/asio/execution_context.hpp>

#include <mutex>
#include <vector>

namespace corolock::detail {

namespace asio = boost::asio;

namespace {

// The connections and clusters of one execution context, abandoned when it shuts down (its
// destructor, after the last run() returned). Created by the first of them, after the reactor
// their timers use, so it shuts down before the reactor and the scheduler destroy their queues.
class shutdown_registry final : public asio::execution_context::service {
public:
    static inline asio::execution_context::id id;

    explicit shutdown_registry(asio::execution_context& ctx) : service(ctx) {}

    void add(std::weak_ptr<context_shutdown_hook> hook) {
        std::lock_guard<std::mutex> g(mutex_);
        // Drop the dead ones once the list has doubled since the last sweep: amortised O(1).
        if (hooks_.size() >= 2 * swept_size_ + 16) {
            std::erase_if(hooks_, [](const auto& h) { return h.expired(); });
            swept_size_ = hooks_.size();
        }
        hooks_.push_back(std::move(hook));
    }

private:
    void shutdown() override {
        std::vector<std::weak_ptr<context_shutdown_hook>> hooks;
        {
            std::lock_guard<std::mutex> g(mutex_);
            hooks.swap(hooks_);
        }
        for (auto& weak : hooks)
            if (auto h = weak.lock())
                h->abandon();
    }

    std::mutex mutex_;
    std::vector<std::weak_ptr<context_shutdown_hook>> hooks_;
    std::size_t swept_size_ = 0;
};

} // namespace

void abandon_at_shutdown(const asio::any_io_executor& ex,
                         std::weak_ptr<context_shutdown_hook> hook) {
    auto& ctx = asio::query(ex, asio::execution::context);
    asio::use_service<shutdown_registry>(ctx).add(std::move(hook));
}

} // namespace corolock::detail
