// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The latch's driver (io/latch_impl.cpp): what one latch shares between its public body
// (latch.cpp) and the calls that perform core/latch_core's actions.
#ifndef COROLOCK_SRC_IO_LATCH_IMPL_HPP
#define COROLOCK_SRC_IO_LATCH_IMPL_HPP

#include "core/handler_list.hpp"
#include "core/latch_core.hpp"
#include "core/latch_scripts.hpp"
#include "io/lock_transport.hpp"
#include "io/push_listener.hpp"
#include <corolock/latch.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

namespace corolock::detail {

struct latch_impl : std::enable_shared_from_this<latch_impl> {
    using wait_handler = boost::asio::any_completion_handler<void(error_code)>;

    latch_impl(lock_transport t, std::string n, latch_options o);

    class listener;

    const lock_transport io;
    const std::string name;
    const latch_options opts;
    const error_code invalid;
    latch_keys keys;
    std::string retention_ms;
    std::atomic<std::uint64_t> next_id{0};

    // Strand only from here on.
    latch_core core;
    handler_list<wait_handler> waiting;
    boost::asio::steady_timer timer;
    std::shared_ptr<push_listener> sub;

    template <class F>
    void run(F event) {
        latch_actions out;
        event(core, std::chrono::steady_clock::now(), out);
        for (const auto& a : out)
            perform(a);
    }

    void perform(const latch_action& a);
    void send_read(std::uint64_t seq);
    void log(logger::level level, const std::string& what) const {
        if (io.log().enabled(level))
            io.log().log(level, "corolock: latch '" + name + "': " + what);
    }
};

} // namespace corolock::detail

#endif
