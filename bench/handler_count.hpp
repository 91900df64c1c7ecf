// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Asio's custom handler tracking, used as a counter: with COROLOCK_BENCH_HANDLER_COUNTS (on in
// the `bench` preset), every target of the tree is compiled with
// BOOST_ASIO_CUSTOM_HANDLER_TRACKING naming this header, so the library's own posts, timer
// waits and socket operations are counted where Asio creates and runs them. The cost is one
// relaxed load and store per event (no lock prefix, no allocation, no layout change: the
// INHERIT macros are empty). Other threads (the bench's helper threads) may lose an increment;
// the figures are read on the io_context's one thread around windows in which only it runs.
// A library built without it counts nothing (`enabled` is false) and the bench prints n/a.
#ifndef COROLOCK_BENCH_HANDLER_COUNT_HPP
#define COROLOCK_BENCH_HANDLER_COUNT_HPP

#include <atomic>
#include <cstdint>

namespace corolock_bench_handlers {

enum kind : unsigned {
    io_post,     // io_context executor: post, defer and execute (a queued handler)
    io_dispatch, // io_context executor: dispatch (runs inline when on the thread)
    strand_post, // strand: post, defer and execute
    strand_dispatch,
    timer_wait, // steady_timer::async_wait
    socket_op,  // async_send / async_receive / connect / wait on a socket
    other_op,   // anything else Asio creates (resolver, signal set, ...)
    invoked,    // handlers run (by the scheduler, a strand, an immediate completion)
    reactor_op, // non-blocking send/recv attempts (one syscall each)
    kinds
};

struct table {
    std::atomic<std::uint64_t> n[kinds];
};

inline table& counters() noexcept {
    static table t{};
    return t;
}

inline void bump(kind k) noexcept {
    auto& c = counters().n[k];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

inline std::uint64_t read(kind k) noexcept {
    return counters().n[k].load(std::memory_order_relaxed);
}

inline bool is(const char* a, const char* b) noexcept {
    while (*a && *a == *b)
        ++a, ++b;
    return *a == *b;
}

template <class Context, class Op, class Object, class Native>
inline void on_creation(Context&, Op&, const char* object_type, Object*, Native,
                        const char* op_name) noexcept {
    const bool dispatch = is(op_name, "dispatch");
    if (is(object_type, "io_context"))
        bump(dispatch ? io_dispatch : io_post);
    else if (is(object_type, "strand_executor") || is(object_type, "strand"))
        bump(dispatch ? strand_dispatch : strand_post);
    else if (is(object_type, "deadline_timer"))
        bump(timer_wait);
    else if (is(object_type, "socket"))
        bump(socket_op);
    else
        bump(other_op);
}

template <class... Args>
inline void on_reactor_op(const Args&...) noexcept {
    bump(reactor_op);
}

} // namespace corolock_bench_handlers

#define BOOST_ASIO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_ALSO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_HANDLER_TRACKING_INIT (void)0
#define BOOST_ASIO_HANDLER_LOCATION(args) (void)0
#define BOOST_ASIO_HANDLER_CREATION(args) ::corolock_bench_handlers::on_creation args
#define BOOST_ASIO_HANDLER_COMPLETION(args) (void)0
#define BOOST_ASIO_HANDLER_INVOCATION_BEGIN(args)                                                  \
    ::corolock_bench_handlers::bump(::corolock_bench_handlers::invoked)
#define BOOST_ASIO_HANDLER_INVOCATION_END (void)0
#define BOOST_ASIO_HANDLER_OPERATION(args) (void)0
#define BOOST_ASIO_HANDLER_REACTOR_REGISTRATION(args) (void)0
#define BOOST_ASIO_HANDLER_REACTOR_DEREGISTRATION(args) (void)0
#define BOOST_ASIO_HANDLER_REACTOR_READ_EVENT 1
#define BOOST_ASIO_HANDLER_REACTOR_WRITE_EVENT 2
#define BOOST_ASIO_HANDLER_REACTOR_ERROR_EVENT 4
#define BOOST_ASIO_HANDLER_REACTOR_EVENTS(args) (void)0
#define BOOST_ASIO_HANDLER_REACTOR_OPERATION(args) ::corolock_bench_handlers::on_reactor_op args

#endif
