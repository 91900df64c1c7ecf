// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// How corolock completes a caller's handler: posted (never dispatched) to the handler's own
// executor, with work held on it, using the concrete executor type where it can (no allocation).
#ifndef COROLOCK_SRC_IO_DELIVER_HPP
#define COROLOCK_SRC_IO_DELIVER_HPP

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>

#include <type_traits>
#include <utility>

namespace corolock::detail {

using io_executor = boost::asio::io_context::executor_type;
using io_strand = boost::asio::strand<io_executor>;

// The common executors of a completion handler, seen through a type-erased one: a handler's
// executor reaches corolock as an any_completion_executor, and every copy of it that changes a
// property (a post, work tracking) allocates. When it is an io_context's executor or a strand of
// one, `f(concrete)` runs with the concrete executor and returns true; else nothing runs.
template <class Executor, class F>
bool with_concrete(const Executor& ex, F&& f) {
    namespace execution = boost::asio::execution;
    using tracked = decltype(boost::asio::prefer(std::declval<io_executor>(),
                                                 execution::outstanding_work.tracked));
    using tracked_strand = decltype(boost::asio::prefer(std::declval<io_strand>(),
                                                        execution::outstanding_work.tracked));
    if (auto* io = ex.template target<io_executor>())
        return f(*io), true;
    if (auto* io = ex.template target<tracked>())
        return f(*io), true;
    if (auto* st = ex.template target<io_strand>())
        return f(*st), true;
    if (auto* st = ex.template target<tracked_strand>())
        return f(*st), true;
    return false;
}

// The executor of `handler` (else `fallback`), as an any_completion_executor. Asking an erased
// handler converts the fallback too: a concrete one costs no allocation.
template <class Handler>
boost::asio::any_completion_executor
handler_executor(const Handler& handler, const boost::asio::any_io_executor& fallback) {
    boost::asio::any_completion_executor ex;
    if (!with_concrete(fallback, [&](const auto& c) {
            ex = boost::asio::get_associated_executor(handler, c);
        }))
        ex = boost::asio::get_associated_executor(handler, fallback);
    return ex;
}

// Outstanding work on `ex`, held while an operation is pending so that its io_context does not
// run out of work. Concrete where possible (see with_concrete): no allocation.
inline boost::asio::any_completion_executor
tracked_work(const boost::asio::any_completion_executor& ex) {
    namespace execution = boost::asio::execution;
    boost::asio::any_completion_executor out;
    if (!with_concrete(ex, [&](const auto& c) {
            out = boost::asio::prefer(c, execution::outstanding_work.tracked);
        }))
        out = boost::asio::prefer(ex, execution::outstanding_work.tracked);
    return out;
}

// Completes `handler` with `args` on `ex` (its associated executor, from handler_executor),
// clearing its cancellation slot first. Always a post, never a dispatch: callers run on the
// connection's strand, and a dispatch onto an executor whose thread is the strand's (an
// io_context run by this thread) would run user code inside the strand, where a busy handler
// stalls every reply. The executor of an erased handler (any_completion_executor) cannot be
// required never-blocking, so the post goes to `fallback` (or the system executor if that cannot
// either), whose work dispatcher then dispatches to the handler's executor, holding work on it
// meanwhile; an io_context's executor or a strand of one is posted to directly.
template <class Handler, class Executor, class... Args>
void deliver_on(const boost::asio::any_completion_executor& ex, Handler&& handler,
                const Executor& fallback, Args... args) {
    auto fn = [h = std::forward<Handler>(handler), ... args = std::move(args)]() mutable {
        boost::asio::get_associated_cancellation_slot(h).clear();
        std::move(h)(std::move(args)...);
    };
    if (with_concrete(ex, [&](const auto& c) { boost::asio::post(c, std::move(fn)); }))
        return;
    auto bound = boost::asio::bind_executor(ex, std::move(fn));
    if constexpr (boost::asio::can_require<Executor,
                                           boost::asio::execution::blocking_t::never_t>::value)
        boost::asio::post(fallback, std::move(bound));
    else
        boost::asio::post(boost::asio::system_executor(), std::move(bound));
}

// deliver_on the handler's own executor (else `fallback`'s).
template <class Handler, class Executor, class... Args>
void deliver(Handler&& handler, const Executor& fallback, Args... args) {
    if constexpr (std::is_convertible_v<Executor, boost::asio::any_io_executor>) {
        auto ex = handler_executor(handler, fallback);
        deliver_on(ex, std::forward<Handler>(handler), fallback, std::move(args)...);
    } else {
        auto ex = boost::asio::get_associated_executor(handler, fallback);
        deliver_on(ex, std::forward<Handler>(handler), fallback, std::move(args)...);
    }
}

// Runs `f` on `strand` (a connection's): at once, in the caller, when the strand is idle and this
// thread runs its io_context (asio::dispatch); queued behind the strand's work otherwise. Never
// inline from inside the strand itself (posted then): strand code is not re-entrant. A post from
// the io_context's own thread cost a queued invoker and the reactor poll of a new handler chain
// for every acquire and release. `f` never runs user code: completions are posted (deliver_on).
template <class F>
void enter_strand(const boost::asio::any_io_executor& strand, F&& f) {
    if (const auto* st = strand.target<io_strand>(); st && !st->running_in_this_thread())
        return boost::asio::dispatch(*st, std::forward<F>(f));
    boost::asio::post(strand, std::forward<F>(f));
}

} // namespace corolock::detail

#endif
