// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The latch's awaiter decisions, fed events in racy orders: no server, no sleeps.
#include "core/latch_core.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_latch_core {

using corolock::error;
using corolock::error_code;
namespace d = corolock::detail;
using kind = d::latch_action::kind;
using namespace std::chrono_literals;

namespace {

const error_code aborted(boost::asio::error::operation_aborted);
constexpr auto forever = d::latch_core::time_point::max();

struct fixture {
    d::latch_core core{100ms, 1s, 42};
    d::latch_core::time_point now{std::chrono::hours(1)};
    d::latch_actions out;

    d::latch_actions take() {
        auto r = std::move(out);
        out.clear();
        return r;
    }
    static std::size_t count(const d::latch_actions& a, kind k) {
        return static_cast<std::size_t>(
            std::count_if(a.begin(), a.end(), [k](const auto& x) { return x.what == k; }));
    }
    // The ids completed with `ec`, in order, as "1 2 3" (prints well in a failure).
    static std::string completed(const d::latch_actions& a, error_code ec = {}) {
        std::set<std::uint64_t> ids;
        for (const auto& x : a)
            if (x.what == kind::complete && x.ec == ec)
                ids.insert(x.id);
        std::string out;
        for (auto id : ids)
            out += (out.empty() ? "" : " ") + std::to_string(id);
        return out;
    }
    static std::size_t completions(const d::latch_actions& a, error_code ec = {}) {
        return static_cast<std::size_t>(std::count_if(a.begin(), a.end(), [&](const auto& x) {
            return x.what == kind::complete && x.ec == ec;
        }));
    }
    static std::uint64_t read_seq(const d::latch_actions& a) {
        for (const auto& x : a)
            if (x.what == kind::read)
                return x.id;
        return 0;
    }
    static d::latch_snapshot closed(std::uint64_t gen, std::uint64_t remaining = 2,
                                    std::uint64_t prev = 0) {
        return {false, remaining, gen, prev};
    }
    static d::latch_snapshot opened(std::uint64_t gen) { return {true, 0, gen, 0}; }
    // Adds `n` awaiters (ids 1..n) and answers the first read with `s`.
    void waiting(std::uint64_t n, const d::latch_snapshot& s) {
        for (std::uint64_t id = 1; id <= n; ++id)
            core.add(id, forever, now, out);
        const auto seq = read_seq(out);
        BOOST_REQUIRE(seq != 0);
        take();
        core.on_read(seq, {}, s, now, out);
        if (core.reading()) { // awaiters that joined behind the first read
            const auto again = read_seq(out);
            take();
            core.on_read(again, {}, s, now, out);
        }
        take();
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(latch_core)

BOOST_FIXTURE_TEST_CASE(subscribes_before_the_first_read, fixture) {
    core.add(1, forever, now, out);
    BOOST_REQUIRE(out.size() >= 2u);
    BOOST_TEST(out[0].what == kind::subscribe);
    BOOST_TEST(out[1].what == kind::read);
    BOOST_TEST(count(out, kind::arm_timer) == 0u); // no timer while the read is on the wire
}

BOOST_FIXTURE_TEST_CASE(an_open_latch_completes_at_once, fixture) {
    core.add(1, forever, now, out);
    const auto seq = read_seq(take());
    core.on_read(seq, {}, opened(7), now, out);
    const auto a = take();
    BOOST_TEST(completed(a) == "1");
    BOOST_TEST(count(a, kind::unsubscribe) == 1u);
    BOOST_TEST(core.waiters() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_missing_latch_is_no_latch, fixture) {
    core.add(1, forever, now, out);
    const auto seq = read_seq(take());
    core.on_read(seq, error::no_latch, {}, now, out);
    BOOST_TEST(completed(take(), error::no_latch) == "1");
}

BOOST_FIXTURE_TEST_CASE(every_awaiter_is_woken_by_one_message, fixture) {
    waiting(50, closed(7));
    BOOST_TEST(core.waiters() == 50u);
    core.on_message("open 7", now, out);
    const auto a = take();
    BOOST_TEST(completions(a) == 50u);
    BOOST_TEST(count(a, kind::unsubscribe) == 1u);
    BOOST_TEST(core.waiters() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_message_of_another_generation_is_ignored, fixture) {
    waiting(3, closed(7));
    core.on_message("open 6", now, out);
    core.on_message("open 8", now, out);
    core.on_message("open 7x", now, out);
    core.on_message("open ", now, out);
    auto a = take();
    BOOST_TEST((completions(a) == 0u));
    BOOST_TEST(count(a, kind::read) == 0u);
    BOOST_TEST(core.waiters() == 3u);
}

BOOST_FIXTURE_TEST_CASE(a_message_without_payload_reads_again, fixture) {
    // A cluster's relay passes no payload; a mutex on the name publishes "released".
    waiting(3, closed(7));
    core.on_message("", now, out);
    auto a = take();
    BOOST_TEST((completions(a) == 0u));
    const auto seq = read_seq(a);
    BOOST_REQUIRE(seq != 0u);
    core.on_message("released", now, out); // one read at a time
    BOOST_TEST(read_seq(take()) == 0u);
    core.on_read(seq, {}, opened(7), now, out);
    BOOST_TEST(completions(take()) == 3u);
}

BOOST_FIXTURE_TEST_CASE(a_message_before_the_first_read_leaves_it_to_the_read, fixture) {
    // The message may be of an earlier round (the subscription was there already).
    core.add(1, forever, now, out);
    const auto seq = read_seq(take());
    core.on_message("open 6", now, out);
    BOOST_TEST((completions(take()) == 0u));
    core.on_read(seq, {}, closed(7), now, out);
    BOOST_TEST((completions(take()) == 0u));
    core.on_message("open 7", now, out);
    BOOST_TEST(completed(take()) == "1");
}

BOOST_FIXTURE_TEST_CASE(a_late_joiner_waits_for_the_next_read, fixture) {
    core.add(1, forever, now, out);
    const auto first = read_seq(take());
    core.add(2, forever, now, out); // the first read may have run before it began
    BOOST_TEST(read_seq(out) == 0u);
    take();
    core.on_read(first, error::no_latch, {}, now, out);
    auto a = take();
    BOOST_TEST(completed(a, error::no_latch) == "1");
    const auto second = read_seq(a);
    BOOST_TEST(second == first + 1);
    core.on_read(second, {}, opened(9), now, out);
    BOOST_TEST(completed(take()) == "2");
}

BOOST_FIXTURE_TEST_CASE(cancel_in_every_position, fixture) {
    // Before its first read's reply.
    core.add(1, forever, now, out);
    const auto seq = read_seq(take());
    core.add(2, forever, now, out);
    core.add(3, forever, now, out);
    take();
    core.cancel(2, now, out);
    auto a = take();
    BOOST_TEST(completed(a, aborted) == "2");
    BOOST_TEST(count(a, kind::unsubscribe) == 0u);
    core.on_read(seq, {}, closed(7), now, out);
    const auto again = read_seq(take());
    BOOST_REQUIRE(again != 0u); // for 3
    core.on_read(again, {}, closed(7), now, out);
    take();
    // While waiting for the open: the others go on.
    core.add(4, forever, now, out);
    const auto s4 = read_seq(take());
    core.on_read(s4, {}, closed(7), now, out);
    take();
    core.cancel(3, now, out);
    BOOST_TEST(completed(take(), aborted) == "3");
    // Twice, and after completion: nothing.
    core.cancel(3, now, out);
    BOOST_TEST(take().empty());
    core.on_message("open 7", now, out);
    a = take();
    BOOST_TEST(completed(a) == "1 4");
    core.cancel(1, now, out);
    BOOST_TEST(take().empty());
    // The last one cancelled: unsubscribed, timer off.
    core.add(5, forever, now, out);
    take();
    core.cancel(5, now, out);
    a = take();
    BOOST_TEST(completed(a, aborted) == "5");
    BOOST_TEST(count(a, kind::unsubscribe) == 1u);
    BOOST_TEST(!core.subscribed());
}

BOOST_FIXTURE_TEST_CASE(the_timer_reads_again_with_back_off, fixture) {
    waiting(2, closed(7));
    core.on_timer(now, out);
    BOOST_TEST(read_seq(take()) == 0u); // too early (the real timer fires at its time)
    // The fallback read is armed within the back-off (second step: [base, 2 base]).
    core.add(3, forever, now, out);
    auto seq = read_seq(take());
    core.on_read(seq, {}, closed(7), now, out);
    auto a = take();
    BOOST_REQUIRE(count(a, kind::arm_timer) == 1u);
    auto at =
        std::find_if(a.begin(), a.end(), [](auto& x) { return x.what == kind::arm_timer; })->at;
    BOOST_TEST((at - now >= 50ms && at - now <= 200ms));
    std::chrono::steady_clock::duration last = at - now;
    // No message comes: the reads back off, capped at 1 s.
    for (int i = 0; i < 8; ++i) {
        now = at;
        core.on_timer(now, out);
        seq = read_seq(take());
        BOOST_REQUIRE(seq != 0u);
        core.on_read(seq, {}, closed(7), now, out);
        a = take();
        BOOST_REQUIRE(count(a, kind::arm_timer) == 1u);
        at =
            std::find_if(a.begin(), a.end(), [](auto& x) { return x.what == kind::arm_timer; })->at;
        BOOST_TEST((at - now <= std::chrono::steady_clock::duration(1s)));
        last = at - now;
    }
    BOOST_TEST((last >= std::chrono::steady_clock::duration(500ms)));
    // The fallback read finds it open: everyone completes.
    now = at;
    core.on_timer(now, out);
    seq = read_seq(take());
    core.on_read(seq, {}, opened(7), now, out);
    BOOST_TEST(completions(take()) == 3u);
}

BOOST_FIXTURE_TEST_CASE(connection_errors_are_ridden_out, fixture) {
    core.add(1, forever, now, out);
    auto seq = read_seq(take());
    core.on_read(seq, error::connection_lost, {}, now, out);
    auto a = take();
    BOOST_TEST((completions(a) == 0u));
    BOOST_TEST((completions(a, error::connection_lost) == 0u));
    BOOST_TEST(count(a, kind::arm_timer) == 1u);
    now += 1s;
    core.on_timer(now, out);
    seq = read_seq(take());
    BOOST_REQUIRE(seq != 0u);
    core.on_read(seq, error::try_again, {}, now, out);
    BOOST_TEST((completions(take(), error::try_again) == 0u));
    now += 1s;
    core.on_timer(now, out);
    seq = read_seq(take());
    core.on_read(seq, {}, opened(7), now, out);
    BOOST_TEST(completed(take()) == "1");
}

BOOST_FIXTURE_TEST_CASE(other_errors_end_the_awaiters, fixture) {
    waiting(2, closed(7));
    now += 1s;
    core.on_timer(now, out);
    const auto seq = read_seq(take());
    core.on_read(seq, error::wrong_type, {}, now, out);
    BOOST_TEST(completions(take(), error::wrong_type) == 2u);
}

BOOST_FIXTURE_TEST_CASE(a_reconnect_reads_again, fixture) {
    waiting(2, closed(7));
    core.on_reconnect(now, out);
    const auto seq = read_seq(take());
    BOOST_REQUIRE(seq != 0u);
    // The open was published while the connection was down: the read sees it.
    core.on_read(seq, {}, opened(7), now, out);
    BOOST_TEST(completions(take()) == 2u);
    // Without awaiters a reconnect does nothing.
    core.on_reconnect(now, out);
    BOOST_TEST(take().empty());
}

BOOST_FIXTURE_TEST_CASE(a_reconnect_during_a_read_reads_once_more, fixture) {
    core.add(1, forever, now, out);
    const auto seq = read_seq(take());
    core.on_reconnect(now, out);
    BOOST_TEST(read_seq(take()) == 0u); // one read at a time
    core.on_read(seq, {}, closed(7), now, out);
    BOOST_TEST(read_seq(take()) == seq + 1);
}

BOOST_FIXTURE_TEST_CASE(the_next_round_after_an_unseen_open, fixture) {
    waiting(2, closed(7));
    // The open message was lost and a new round began: the read shows round 8 after 7.
    now += 1s;
    core.on_timer(now, out);
    auto seq = read_seq(take());
    core.on_read(seq, {}, closed(8, 3, 7), now, out);
    BOOST_TEST(completions(take()) == 2u);
    // A round that replaced an expired one (prev 0) never opened: stale_generation.
    waiting(1, closed(9));
    now += 1s;
    core.on_timer(now, out);
    seq = read_seq(take());
    core.on_read(seq, {}, closed(11, 3, 0), now, out);
    BOOST_TEST(completed(take(), error::stale_generation) == "1");
}

BOOST_FIXTURE_TEST_CASE(deadlines, fixture) {
    core.add(1, now + 300ms, now, out);
    core.add(2, forever, now, out);
    auto seq = read_seq(take());
    core.on_read(seq, {}, closed(7), now, out);
    auto a = take();
    const auto again = read_seq(a); // for 2
    core.on_read(again, {}, closed(7), now, out);
    a = take();
    // The timer is armed at the earlier of the fallback read and the deadline.
    now += 300ms;
    core.on_timer(now, out);
    a = take();
    BOOST_TEST(completed(a, error::acquire_timeout) == "1");
    BOOST_TEST(core.waiters() == 1u);
    // A deadline already past when it begins (wait_for(0), a try): it still gets its read.
    const auto on_wire = read_seq(a);
    BOOST_REQUIRE(on_wire != 0u); // the fallback read for 2
    core.add(3, now - 1s, now, out);
    a = take();
    BOOST_TEST(count(a, kind::arm_timer) == 0u); // the read on the wire decides first
    core.on_timer(now, out);
    BOOST_TEST((completions(take(), error::acquire_timeout) == 0u));
    core.on_read(on_wire, {}, closed(7), now, out); // ran before 3 began: another read for it
    a = take();
    BOOST_TEST((completions(a, error::acquire_timeout) == 0u));
    const auto for3 = read_seq(a);
    BOOST_REQUIRE(for3 != 0u);
    core.on_read(for3, {}, closed(7), now, out);
    BOOST_TEST(completed(take(), error::acquire_timeout) == "3");
    // The same try on an open latch succeeds.
    now += 2s;
    core.on_timer(now, out);
    const auto next = read_seq(take());
    BOOST_REQUIRE(next != 0u);
    core.add(4, now, now, out);
    take();
    core.on_read(next, {}, opened(7), now, out);
    a = take();
    BOOST_TEST(completed(a) == "2");
    core.on_read(read_seq(a), {}, opened(7), now, out);
    BOOST_TEST(completed(take()) == "4");
    // A deadline whose read failed (connection lost) ends it.
    core.add(5, now + 100ms, now, out);
    const auto lost = read_seq(take());
    now += 200ms;
    core.on_read(lost, error::connection_lost, {}, now, out);
    BOOST_TEST(completed(take(), error::acquire_timeout) == "5");
}

BOOST_FIXTURE_TEST_CASE(cancel_all_ends_everyone, fixture) {
    waiting(3, closed(7));
    core.cancel_all(aborted, out);
    const auto a = take();
    BOOST_TEST(completions(a, aborted) == 3u);
    BOOST_TEST(count(a, kind::unsubscribe) == 1u);
    BOOST_TEST(count(a, kind::cancel_timer) == 1u);
    // A late reply of a read nobody waits for is ignored.
    core.on_read(99, {}, opened(7), now, out);
    BOOST_TEST(take().empty());
}

BOOST_AUTO_TEST_SUITE_END()

// Random interleavings of awaits, cancellations, the open, its message, read replies, timer
// expiries and reconnects (which lose messages in flight), against a model of the server. The
// invariants: one read at a time; subscribed exactly while someone waits; each await completes
// once; success only once the latch is open; and once it is open, every await completes with
// success without any further event than reads, messages and timers.
BOOST_AUTO_TEST_SUITE(latch_core_model)

BOOST_AUTO_TEST_CASE(random_interleavings_keep_the_invariants) {
    for (std::uint32_t seed = 1; seed <= 300; ++seed) {
        BOOST_TEST_CONTEXT("seed " << seed) {
            std::minstd_rand rng(seed);
            d::latch_core core(10ms, 80ms, seed);
            auto now = d::latch_core::time_point(std::chrono::hours(1));
            bool open = false, subscribed = false;
            std::uint64_t in_flight = 0, next_id = 1;
            std::set<std::uint64_t> live, cancelled;
            std::vector<std::string> messages; // published, not yet delivered
            auto armed = d::latch_core::time_point::max();
            bool violated = false;
            auto note = [&](bool ok, const char* what) {
                if (!ok && !violated) {
                    violated = true;
                    BOOST_ERROR(what);
                }
            };
            d::latch_actions out;
            auto perform = [&] {
                for (const auto& a : out) {
                    switch (a.what) {
                    case kind::subscribe:
                        subscribed = true;
                        break;
                    case kind::unsubscribe:
                        subscribed = false;
                        break;
                    case kind::read:
                        note(in_flight == 0, "two reads at once");
                        in_flight = a.id;
                        break;
                    case kind::arm_timer:
                        note(a.at - now <= std::chrono::steady_clock::duration(80ms),
                             "a fallback read later than retry_max");
                        armed = a.at;
                        break;
                    case kind::cancel_timer:
                        armed = d::latch_core::time_point::max();
                        break;
                    case kind::complete:
                        note(live.erase(a.id) == 1, "completed twice, or unknown");
                        if (cancelled.count(a.id))
                            note(a.ec == aborted, "a cancelled await completed otherwise");
                        else
                            note(!a.ec && open, "success before the open, or an error");
                        break;
                    }
                }
                out.clear();
                note(subscribed == !live.empty(), "subscribed while nobody waits, or not");
                note(core.waiters() == live.size(), "waiter count");
            };
            auto reply = [&] {
                // Socket order: messages published before the read ran come first.
                for (auto& m : messages) {
                    core.on_message(m, now, out);
                    perform();
                }
                messages.clear();
                const auto seq = std::exchange(in_flight, 0);
                core.on_read(seq, {}, {open, open ? 0u : 1u, 7, 0}, now, out);
                perform();
            };
            for (int step = 0; step < 60 && !violated; ++step) {
                switch (rng() % 8) {
                case 0:
                case 1:
                    live.insert(next_id);
                    core.add(next_id++, d::latch_core::time_point::max(), now, out);
                    break;
                case 2:
                    if (!live.empty()) {
                        auto it = live.begin();
                        std::advance(it, static_cast<long>(rng() % live.size()));
                        cancelled.insert(*it);
                        core.cancel(*it, now, out);
                    }
                    break;
                case 3:
                    if (!open && rng() % 3 == 0) {
                        open = true;
                        if (subscribed)
                            messages.push_back("open 7");
                    }
                    break;
                case 4:
                    if (!messages.empty()) {
                        core.on_message(messages.front(), now, out);
                        messages.erase(messages.begin());
                    }
                    break;
                case 5:
                    if (in_flight != 0) {
                        perform();
                        reply();
                    }
                    break;
                case 6:
                    if (armed != d::latch_core::time_point::max()) {
                        now = std::max(now, armed);
                        armed = d::latch_core::time_point::max();
                        core.on_timer(now, out);
                    }
                    break;
                case 7:
                    messages.clear(); // lost with the connection
                    if (in_flight != 0 && rng() % 2 == 0) {
                        const auto seq = std::exchange(in_flight, 0);
                        core.on_read(seq, error::connection_lost, {}, now, out);
                        perform();
                    }
                    core.on_reconnect(now, out);
                    break;
                }
                perform();
            }
            // The latch opens (if it had not); no other event than the machinery's own.
            if (!open) {
                open = true;
                if (subscribed)
                    messages.push_back("open 7");
            }
            for (int step = 0; step < 1000 && !live.empty() && !violated; ++step) {
                if (in_flight != 0) {
                    reply();
                } else if (!messages.empty()) {
                    core.on_message(messages.front(), now, out);
                    messages.erase(messages.begin());
                } else {
                    note(armed != d::latch_core::time_point::max(), "waiters and no timer");
                    now = std::max(now, armed);
                    armed = d::latch_core::time_point::max();
                    core.on_timer(now, out);
                }
                perform();
            }
            BOOST_TEST(live.empty());
            BOOST_TEST(!violated);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_latch_core
