// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// An election's history across processes under SIGKILL, for every backend (issue 29,
// doc/election.md): three campaigner processes take terms, proclaim and resign; the leader of
// the moment is killed every `kill_every` and a new campaigner starts; one more process
// observes. The history must show no two terms at once (a killed leader's term ends at its
// kill), terms increasing in grant order, and the observer's events in (term, version) order,
// each present term one that was granted. Run by zookeeper/zk_election_history.cpp and
// postgres/pg_election_history.cpp, each giving the child's body (its connection and election).
#ifndef COROLOCK_TEST_COMMON_ELECTION_HISTORY_HPP
#define COROLOCK_TEST_COMMON_ELECTION_HISTORY_HPP

#include "common/child_process.hpp"
#include "common/coro_test.hpp"
#include "common/test_config.hpp"
#include <corolock/lock_concepts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <poll.h>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace corolock::test::election_history {

using steady = std::chrono::steady_clock;

enum kind : std::int32_t { began = 1, ended = 2, observed = 3 };

// One step as a process saw it; steady_clock is CLOCK_MONOTONIC, the same in every process.
struct step {
    std::int32_t what = 0;
    std::int32_t pid = 0;
    std::int64_t t_ns = 0;
    std::uint64_t term = 0;
    std::uint64_t version = 0;
    std::int32_t flag = 0; // ended: valid at the end; observed: present | skipped << 1
    std::int32_t pad = 0;
};

inline std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
        .count();
}

inline void put(int fd, const step& s) {
    (void)!::write(fd, &s, sizeof s);
}

// A campaigner's loop until `stop_at`: each term is recorded at its grant and its end.
template <leader_election E>
boost::asio::awaitable<void> campaign(int fd, E& e, steady::time_point stop_at) {
    namespace asio = boost::asio;
    using namespace std::chrono_literals;
    constexpr auto tuple = asio::as_tuple(asio::use_awaitable);
    const auto pid = static_cast<std::int32_t>(::getpid());
    while (steady::now() < stop_at) {
        auto [ec, l] = co_await e.async_campaign_for(3s, std::to_string(pid), tuple);
        if (ec || !l.valid())
            continue;
        put(fd, {began, pid, now_ns(), l.term().value(), 1, 0, 0});
        co_await sleep_for(std::chrono::milliseconds(5 + pid % 20));
        co_await l.async_proclaim("second", tuple);
        co_await sleep_for(5ms);
        put(fd, {ended, pid, now_ns(), l.term().value(), l.version(), l.valid() ? 1 : 0, 0});
        co_await l.async_resign(tuple);
    }
}

// An observer's loop until `stop_at`: every event.
template <leader_election E>
boost::asio::awaitable<void> observe(int fd, E& e, steady::time_point stop_at) {
    namespace asio = boost::asio;
    auto ex = co_await asio::this_coro::executor;
    auto obs = e.observe();
    asio::steady_timer stop(ex, stop_at);
    stop.async_wait([&](error_code) { obs = leader_observer{}; });
    for (;;) {
        auto [ec, ev] = co_await obs.async_next(asio::as_tuple(asio::use_awaitable));
        if (ec)
            break;
        put(fd, {observed, static_cast<std::int32_t>(::getpid()), now_ns(), ev.term.value(),
                 ev.version, (ev.present ? 1 : 0) | (ev.skipped ? 2 : 0), 0});
    }
}

// What a child runs on its io_context: its connection, its election, then campaign() or
// observe() (`observer`) until `stop_at`.
using child_body =
    std::function<boost::asio::awaitable<void>(int fd, bool observer, steady::time_point stop_at)>;

// Forks the observer and three campaigners (from this thread, before any other starts), kills
// whoever leads every `kill_every` until 2 s before the end, starts a new campaigner each time,
// and checks the history. `min_terms`: how many terms a healthy run has at least.
inline void run_and_check(const child_body& body, steady::duration run_for,
                          steady::duration kill_every, std::size_t min_terms) {
    const auto stop_at = steady::now() + run_for;
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    start_gate gate;
    std::set<pid_t> campaigners;
    auto spawn = [&](bool observer) {
        const pid_t pid = ::fork();
        BOOST_REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(fds[0]);
            gate.wait();
            int status = 0;
            {
                boost::asio::io_context ioc;
                boost::asio::co_spawn(ioc, body(fds[1], observer, stop_at),
                                      [&](std::exception_ptr e) { status = e ? 3 : 0; });
                ioc.run();
            }
            ::_exit(status);
        }
        return pid;
    };
    const pid_t watcher = spawn(true);
    for (int i = 0; i < 3; ++i)
        campaigners.insert(spawn(false));
    gate.open(4);

    std::vector<step> history;
    std::map<pid_t, std::uint64_t> leading; // began, not ended
    int kills = 0;
    auto next_kill = steady::now() + kill_every;
    while (steady::now() < stop_at + std::chrono::seconds(1)) {
        pollfd p{fds[0], POLLIN, 0};
        if (::poll(&p, 1, 20) > 0) {
            step s;
            if (::read(fds[0], &s, sizeof s) == static_cast<ssize_t>(sizeof s)) {
                history.push_back(s);
                if (s.what == began)
                    leading[s.pid] = s.term;
                else if (s.what == ended)
                    leading.erase(s.pid);
            }
        }
        if (steady::now() >= next_kill && steady::now() < stop_at - std::chrono::seconds(2) &&
            !leading.empty()) {
            const auto [pid, term] = *leading.begin();
            ::kill(pid, SIGKILL);
            // Its term ends here: a dead process writes nothing more.
            history.push_back({ended, pid, now_ns(), term, 0, 1, 0});
            leading.erase(pid);
            ::waitpid(pid, nullptr, 0);
            campaigners.erase(pid);
            ++kills;
            campaigners.insert(spawn(false));
            gate.open(1);
            next_kill = steady::now() + kill_every;
        }
    }
    ::close(fds[1]);
    step s;
    while (::read(fds[0], &s, sizeof s) == static_cast<ssize_t>(sizeof s))
        history.push_back(s);
    ::close(fds[0]);
    std::vector<pid_t> all(campaigners.begin(), campaigners.end());
    all.push_back(watcher);
    BOOST_TEST(reap_children(all) == 0u);

    // Terms: each began with its end (a killed one's at its kill), in grant order.
    struct term_span {
        std::int64_t in = 0, out = 0;
        std::uint64_t term = 0;
        bool valid = true;
    };
    std::map<std::uint64_t, term_span> spans;
    std::vector<step> seen;
    for (const auto& h : history) {
        if (h.what == began) {
            spans[h.term].in = h.t_ns;
            spans[h.term].term = h.term;
        } else if (h.what == ended) {
            auto& sp = spans[h.term];
            if (sp.out == 0 || h.t_ns < sp.out)
                sp.out = h.t_ns;
            sp.valid = sp.valid && h.flag == 1;
        } else {
            seen.push_back(h);
        }
    }
    std::vector<term_span> order;
    for (const auto& [t, sp] : spans)
        order.push_back(sp);
    std::sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.in < b.in; });
    int overlaps = 0, out_of_order = 0, unended = 0, invalid = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
        unended += order[i].out == 0 && i + 1 < order.size() ? 1 : 0;
        invalid += order[i].valid ? 0 : 1;
        if (i == 0)
            continue;
        overlaps += order[i].in < order[i - 1].out ? 1 : 0;
        out_of_order += order[i].term <= order[i - 1].term ? 1 : 0;
    }
    // The observer: (term, version) never goes back; every present term was granted.
    int observer_back = 0, unknown_terms = 0, presents = 0;
    std::pair<std::uint64_t, std::uint64_t> last{0, 0};
    for (const auto& o : seen) {
        const bool present = (o.flag & 1) != 0;
        presents += present ? 1 : 0;
        const std::pair<std::uint64_t, std::uint64_t> at{o.term, present ? o.version : ~0ull};
        observer_back += at < last ? 1 : 0;
        last = std::max(last, at);
        unknown_terms += present && spans.count(o.term) == 0 ? 1 : 0;
    }
    BOOST_TEST_MESSAGE("terms " << order.size() << ", kills " << kills << ", observed "
                                << seen.size());
    BOOST_TEST(order.size() >= min_terms);
    BOOST_TEST(kills >= 3);
    BOOST_TEST(overlaps == 0);
    BOOST_TEST(out_of_order == 0);
    BOOST_TEST(unended == 0);
    BOOST_TEST(invalid == 0);
    BOOST_TEST(observer_back == 0);
    BOOST_TEST(unknown_terms == 0);
    BOOST_TEST(presents >= 10);
}

} // namespace corolock::test::election_history

#endif
