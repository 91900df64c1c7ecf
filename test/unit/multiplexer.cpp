// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/multiplexer.hpp"

#include <corolock/request.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_multiplexer {

using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::request;
using corolock::detail::exec_entry;
using corolock::detail::multiplexer;
namespace resp3 = corolock::resp3;

namespace {

// Records its completion instead of calling a handler.
class recorder final : public exec_entry {
public:
    recorder(const request& req, generic_response& resp, clock::time_point t = clock::now())
        : exec_entry(req, corolock::detail::make_adapter(resp), t) {}
    // With a bound of its own on the nodes of each reply.
    recorder(const request& req, generic_response& resp, std::size_t max_nodes)
        : exec_entry(req, corolock::detail::make_adapter(resp, max_nodes), clock::now()) {}

    int calls = 0;
    error_code ec;
    std::size_t bytes = 0;

private:
    void on_complete(error_code e, std::size_t n) override {
        ++calls;
        ec = e;
        bytes = n;
    }
};

resp3::node_view simple(std::string_view v) {
    return {resp3::type::simple_string, 1, 0, v};
}

struct fixture {
    multiplexer mpx;
    request get_a, get_b, sub;
    generic_response ra, rb, rs;
    fixture() {
        get_a.push("GET", "a");
        get_b.push("GET", "b");
        get_b.push("GET", "c");
        sub.push("SUBSCRIBE", "chan");
    }
    std::shared_ptr<recorder> make(const request& r, generic_response& resp) {
        return std::make_shared<recorder>(r, resp);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(multiplexer_suite)

BOOST_FIXTURE_TEST_CASE(coalesces_waiting_requests_into_one_write, fixture) {
    auto a = make(get_a, ra), b = make(get_b, rb);
    mpx.add(a);
    mpx.add(b);
    std::size_t commands = 0;
    auto buf = mpx.prepare_write(commands);
    BOOST_TEST(commands == 3u);
    BOOST_TEST(buf == std::string(get_a.payload()) + std::string(get_b.payload()));
    BOOST_TEST(!mpx.has_waiting());
    BOOST_TEST(mpx.in_flight() == 2u);
}

// A request goes out at once when nothing is in flight, or when a batch of
// eager_write_requests waits behind pending replies; between the two it waits for the writer.
BOOST_FIXTURE_TEST_CASE(writes_at_once_when_idle_or_when_a_batch_waits, fixture) {
    BOOST_TEST(!mpx.write_at_once()); // nothing to write
    std::vector<generic_response> resps(multiplexer::eager_write_requests + 1);
    mpx.add(make(get_a, resps[0]));
    BOOST_TEST(mpx.write_at_once()); // idle pipeline: the lone request leaves now
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    mpx.commit_write();
    for (std::size_t i = 1; i < multiplexer::eager_write_requests; ++i) {
        mpx.add(make(get_a, resps[i]));
        BOOST_TEST(!mpx.write_at_once()); // behind a pending reply: the writer's
    }
    mpx.add(make(get_a, resps[multiplexer::eager_write_requests]));
    BOOST_TEST(mpx.waiting() == multiplexer::eager_write_requests);
    BOOST_TEST(mpx.write_at_once()); // a full batch leaves now
}

// The in-flight queue reuses and compacts its storage (reusing_fifo): FIFO order holds across
// hundreds of requests written in batches and answered while others are written, the completed
// request is handed back, and a lost connection fails exactly those still in flight.
BOOST_FIXTURE_TEST_CASE(in_flight_order_holds_across_many_batches, fixture) {
    constexpr int n = 300;
    std::vector<generic_response> resps(n);
    std::vector<std::shared_ptr<recorder>> es;
    for (int i = 0; i < n; ++i)
        es.push_back(make(get_a, resps[static_cast<std::size_t>(i)]));
    int written = 0, answered = 0;
    std::size_t commands = 0;
    while (answered < 250) {
        for (int k = 0; k < 7 && written < n; ++k)
            mpx.add(es[static_cast<std::size_t>(written++)]);
        mpx.prepare_write(commands);
        mpx.commit_write();
        for (int k = 0; k < 5 && answered < written && answered < 250; ++k) {
            const auto v = std::to_string(answered);
            BOOST_TEST(!mpx.on_node(simple(v)));
            const auto done = mpx.on_reply_end(4);
            BOOST_TEST(done == es[static_cast<std::size_t>(answered)]);
            BOOST_REQUIRE(resps[static_cast<std::size_t>(answered)].size() == 1u);
            BOOST_TEST(resps[static_cast<std::size_t>(answered)][0].value == v);
            ++answered;
        }
    }
    BOOST_TEST(mpx.in_flight() == static_cast<std::size_t>(written - answered));
    mpx.on_connection_lost(error::connection_lost);
    for (int i = 0; i < written; ++i) {
        BOOST_TEST(es[static_cast<std::size_t>(i)]->calls == 1);
        BOOST_TEST((es[static_cast<std::size_t>(i)]->ec == error::connection_lost) == (i >= 250));
    }
    BOOST_TEST(mpx.in_flight() == 0u);
}

BOOST_FIXTURE_TEST_CASE(replies_match_in_fifo_order, fixture) {
    auto a = make(get_a, ra), b = make(get_b, rb);
    mpx.add(a);
    mpx.add(b);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    mpx.commit_write();
    BOOST_TEST(!mpx.on_node(simple("A")));
    mpx.on_reply_end(4);
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(b->calls == 0);
    BOOST_TEST(!mpx.on_node(simple("B")));
    mpx.on_reply_end(4);
    BOOST_TEST(b->calls == 0); // two commands, one reply so far
    BOOST_TEST(!mpx.on_node(simple("C")));
    mpx.on_reply_end(4);
    BOOST_TEST(b->calls == 1);
    BOOST_TEST(b->bytes == 8u);
    BOOST_REQUIRE(ra.size() == 1u);
    BOOST_TEST(ra[0].value == "A");
    BOOST_REQUIRE(rb.size() == 2u);
    BOOST_TEST(rb[1].value == "C");
}

BOOST_FIXTURE_TEST_CASE(unsolicited_reply_is_an_error, fixture) {
    BOOST_TEST(mpx.on_node(simple("X")) == error::unexpected_reply);
}

BOOST_FIXTURE_TEST_CASE(subscription_waits_for_its_guard_pong, fixture) {
    BOOST_TEST(sub.expected_responses() == 1u);
    BOOST_TEST(sub.payload().ends_with("*1\r\n$4\r\nPING\r\n"));
    auto s = make(sub, rs), a = make(get_a, ra);
    mpx.add(s);
    mpx.add(a);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    mpx.commit_write();
    BOOST_TEST(s->calls == 0);
    BOOST_TEST(mpx.in_flight() == 2u);
    BOOST_TEST(!mpx.on_node(simple("PONG")));
    mpx.on_reply_end(7);
    BOOST_TEST(s->calls == 1);
    BOOST_TEST(!s->ec);
    BOOST_TEST(!mpx.on_node(simple("A")));
    mpx.on_reply_end(4);
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(ra.at(0).value == "A");
}

namespace {
// Feeds one top-level reply of one node.
void reply(multiplexer& mpx, resp3::type t, std::string_view v) {
    BOOST_TEST(!mpx.on_node({t, 1, 0, v}));
    mpx.on_reply_end(v.size() + 3);
}
} // namespace

BOOST_FIXTURE_TEST_CASE(refused_subscription_never_shifts_replies, fixture) {
    // GET a | SUBSCRIBE chan + PING, GET z | GET b, GET c
    request mixed;
    mixed.push("SUBSCRIBE", "chan");
    mixed.push("GET", "z");
    generic_response rm;
    auto a = make(get_a, ra), m = make(mixed, rm), b = make(get_b, rb);
    mpx.add(a);
    mpx.add(m);
    mpx.add(b);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    mpx.commit_write();
    reply(mpx, resp3::type::simple_string, "A");
    reply(mpx, resp3::type::simple_error, "NOPERM no channel rights");
    BOOST_TEST(m->calls == 0);
    reply(mpx, resp3::type::simple_string, "PONG"); // the guard's: dropped
    reply(mpx, resp3::type::blob_string, "Z");
    BOOST_TEST(m->calls == 1);
    BOOST_TEST(!m->ec); // a generic_response keeps error replies as nodes
    BOOST_REQUIRE(rm.size() == 2u);
    BOOST_TEST(rm[0].value == "NOPERM no channel rights");
    BOOST_TEST(rm[1].value == "Z");
    reply(mpx, resp3::type::simple_string, "B");
    reply(mpx, resp3::type::simple_string, "C");
    BOOST_TEST(b->calls == 1);
    BOOST_REQUIRE(rb.size() == 2u);
    BOOST_TEST(rb[0].value == "B");
    BOOST_TEST(rb[1].value == "C");
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(ra.at(0).value == "A");
}

BOOST_FIXTURE_TEST_CASE(refused_subscription_with_ignore_fails_clearly, fixture) {
    struct ign final : exec_entry {
        explicit ign(const request& r)
            : exec_entry(r, corolock::detail::make_adapter(corolock::ignore), clock::now()) {}
        error_code ec;
        std::string refusal;
        int calls = 0;
        void on_subscribe_refused(std::string_view t) override { refusal = t; }
        void on_complete(error_code e, std::size_t) override {
            ec = e;
            ++calls;
        }
    };
    request two;
    two.push("SUBSCRIBE", "x", "y");
    two.push("UNSUBSCRIBE", "w");
    auto e = std::make_shared<ign>(two), a = std::make_shared<ign>(get_a);
    mpx.add(e);
    mpx.add(a);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    reply(mpx, resp3::type::simple_error, "NOPERM x");
    reply(mpx, resp3::type::simple_string, "PONG");
    reply(mpx, resp3::type::simple_string, "PONG"); // UNSUBSCRIBE accepted
    BOOST_TEST(e->calls == 1);
    BOOST_TEST(e->ec == error::subscribe_refused);
    BOOST_TEST(e->refusal == "NOPERM x");
    reply(mpx, resp3::type::simple_string, "A");
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(!a->ec);
}

BOOST_FIXTURE_TEST_CASE(cancelled_subscription_still_absorbs_refusal_and_pong, fixture) {
    auto s = make(sub, rs), a = make(get_a, ra);
    mpx.add(s);
    mpx.add(a);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    BOOST_TEST(mpx.cancel(s));
    reply(mpx, resp3::type::simple_error, "NOPERM");
    reply(mpx, resp3::type::simple_string, "PONG");
    BOOST_TEST(a->calls == 0);
    reply(mpx, resp3::type::simple_string, "A");
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(ra.at(0).value == "A");
    BOOST_TEST(rs.empty());
}

BOOST_AUTO_TEST_CASE(reply_with_too_many_nodes_fails_and_keeps_step) {
    multiplexer mpx(100);
    request big, after;
    big.push("LRANGE", "l", 0, -1);
    after.push("GET", "a");
    generic_response rbig, rafter;
    auto e = std::make_shared<recorder>(big, rbig), f = std::make_shared<recorder>(after, rafter);
    mpx.add(e);
    mpx.add(f);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    BOOST_TEST(!mpx.on_node({resp3::type::array, 1000, 0, {}}));
    for (int i = 0; i < 1000; ++i)
        BOOST_TEST(!mpx.on_node({resp3::type::number, 1, 1, "1"}));
    mpx.on_reply_end(4000);
    BOOST_TEST(e->calls == 1);
    BOOST_TEST(e->ec == error::message_too_large);
    BOOST_TEST(rbig.size() == 100u); // bounded: nothing past the limit was kept
    reply(mpx, resp3::type::simple_string, "A");
    BOOST_TEST(f->calls == 1);
    BOOST_TEST(!f->ec);
    BOOST_TEST(rafter.at(0).value == "A");
}

// A response whose shape is known (a lock script's) bounds its nodes tighter than the
// connection: a hostile 1,000-element reply keeps 8 nodes, not the connection's 100.
BOOST_AUTO_TEST_CASE(a_response_bounds_its_own_nodes) {
    multiplexer mpx(100);
    request req;
    req.push("EVALSHA", "sha", 0);
    generic_response resp;
    auto e = std::make_shared<recorder>(req, resp, std::size_t(8));
    mpx.add(e);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    BOOST_TEST(!mpx.on_node({resp3::type::array, 1000, 0, {}}));
    for (int i = 0; i < 1000; ++i)
        BOOST_TEST(!mpx.on_node({resp3::type::number, 1, 1, "1"}));
    mpx.on_reply_end(4000);
    BOOST_TEST(e->ec == error::message_too_large);
    BOOST_TEST(resp.size() == 8u);
}

BOOST_AUTO_TEST_CASE(node_limit_is_per_reply_and_ignores_ignore) {
    multiplexer mpx(3);
    request two;
    two.push("GET", "a");
    two.push("GET", "b");
    generic_response resp;
    auto e = std::make_shared<recorder>(two, resp);
    mpx.add(e);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    for (int r = 0; r < 2; ++r) {
        BOOST_TEST(!mpx.on_node({resp3::type::array, 2, 0, {}}));
        BOOST_TEST(!mpx.on_node({resp3::type::number, 1, 1, "1"}));
        BOOST_TEST(!mpx.on_node({resp3::type::number, 1, 1, "2"}));
        mpx.on_reply_end(12);
    }
    BOOST_TEST(!e->ec);
    BOOST_TEST(resp.size() == 6u);
}

BOOST_FIXTURE_TEST_CASE(cancel_waiting_removes_it, fixture) {
    auto a = make(get_a, ra), b = make(get_b, rb);
    mpx.add(a);
    mpx.add(b);
    BOOST_TEST(mpx.cancel(a));
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(a->ec == boost::asio::error::operation_aborted);
    std::size_t commands = 0;
    BOOST_TEST(mpx.prepare_write(commands) == get_b.payload());
    BOOST_TEST(!mpx.cancel(a)); // already completed
}

BOOST_FIXTURE_TEST_CASE(cancel_written_drops_its_reply_and_keeps_order, fixture) {
    auto a = make(get_a, ra), b = make(get_b, rb);
    mpx.add(a);
    mpx.add(b);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    mpx.commit_write();
    BOOST_TEST(mpx.cancel(a));
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(!mpx.on_node(simple("A"))); // a's reply: dropped
    mpx.on_reply_end(4);
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(ra.empty());
    BOOST_TEST(!mpx.on_node(simple("B")));
    mpx.on_reply_end(4);
    BOOST_TEST(!mpx.on_node(simple("C")));
    mpx.on_reply_end(4);
    BOOST_TEST(b->calls == 1);
    BOOST_REQUIRE(rb.size() == 2u);
    BOOST_TEST(rb[0].value == "B");
}

BOOST_FIXTURE_TEST_CASE(connection_loss_fails_written_keeps_waiting, fixture) {
    auto a = make(get_a, ra), b = make(get_b, rb);
    mpx.add(a);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    mpx.commit_write();
    mpx.add(b);
    mpx.on_connection_lost(error::connection_lost);
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(a->ec == error::connection_lost);
    BOOST_TEST(b->calls == 0);
    BOOST_TEST(mpx.waiting() == 1u);
    BOOST_TEST(mpx.in_flight() == 0u);
}

BOOST_FIXTURE_TEST_CASE(waiting_requests_expire, fixture) {
    const auto t0 = exec_entry::clock::now();
    auto a = std::make_shared<recorder>(get_a, ra, t0);
    auto b = std::make_shared<recorder>(get_b, rb, t0 + std::chrono::seconds(10));
    mpx.add(a);
    mpx.add(b);
    BOOST_TEST((mpx.oldest_waiting() == t0));
    mpx.fail_waiting_before(t0 + std::chrono::seconds(1), error::not_connected);
    BOOST_TEST(a->calls == 1);
    BOOST_TEST(a->ec == error::not_connected);
    BOOST_TEST(b->calls == 0);
    mpx.fail_all(boost::asio::error::operation_aborted);
    BOOST_TEST(b->ec == boost::asio::error::operation_aborted);
}

BOOST_FIXTURE_TEST_CASE(add_front_goes_first, fixture) {
    auto a = make(get_a, ra), s = make(sub, rs);
    mpx.add(a);
    mpx.add_front(s);
    std::size_t commands = 0;
    BOOST_TEST(mpx.prepare_write(commands) ==
               std::string(sub.payload()) + std::string(get_a.payload()));
}

BOOST_FIXTURE_TEST_CASE(ignore_turns_error_reply_into_server_error, fixture) {
    struct ign final : exec_entry {
        explicit ign(const request& r)
            : exec_entry(r.payload(), r.size(), r.expected_responses(),
                         corolock::detail::make_adapter(corolock::ignore), clock::now()) {}
        error_code ec;
        void on_complete(error_code e, std::size_t) override { ec = e; }
    };
    auto e = std::make_shared<ign>(get_a);
    mpx.add(e);
    std::size_t commands = 0;
    mpx.prepare_write(commands);
    BOOST_TEST(!mpx.on_node({resp3::type::simple_error, 1, 0, "ERR boom"}));
    mpx.on_reply_end(11);
    BOOST_TEST(e->ec == error::server_error);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_multiplexer
