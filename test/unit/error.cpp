// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include <corolock/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <sstream>
#include <string_view>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_error {

using corolock::classify_server_error;
using corolock::condition;
using corolock::error_code;
// The suite is named `error`, like the file: the enum keeps its qualified name.
namespace cl = corolock;

namespace {

// Every code that proves the command never ran, with a real Redis text for it.
struct refusal {
    std::string_view text;
    cl::error code;
};
constexpr refusal refusals[] = {
    {"MOVED 3999 127.0.0.1:6381", cl::error::moved},
    {"ASK 3999 127.0.0.1:6381", cl::error::ask},
    {"TRYAGAIN Multiple keys request during rehashing of slot", cl::error::try_again},
    {"CLUSTERDOWN The cluster is down", cl::error::cluster_down},
    {"READONLY You can't write against a read only replica.", cl::error::readonly},
    {"LOADING Redis is loading the dataset in memory", cl::error::loading},
    {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
     cl::error::master_down},
    {"NOREPLICAS Not enough good replicas to write.", cl::error::no_replicas},
};

} // namespace

BOOST_AUTO_TEST_SUITE(error)

BOOST_AUTO_TEST_CASE(classifier_maps_each_refusal) {
    for (const auto& r : refusals) {
        BOOST_TEST_CONTEXT(r.text) {
            const auto ec = classify_server_error(r.text);
            BOOST_TEST(ec == r.code);
            BOOST_TEST(ec == condition::not_executed);
            BOOST_TEST(ec == condition::server_failure);
            BOOST_TEST(ec != condition::connection_failure);
        }
    }
}

BOOST_AUTO_TEST_CASE(classifier_needs_the_whole_first_word) {
    BOOST_TEST(classify_server_error("MOVED") == cl::error::moved); // no text after the code
    BOOST_TEST(classify_server_error("ASKING is a command") == cl::error::server_error);
    BOOST_TEST(classify_server_error("moved 1 a:1") ==
               cl::error::server_error); // codes are upper case
    BOOST_TEST(classify_server_error(" MOVED 1 a:1") == cl::error::server_error);
    BOOST_TEST(classify_server_error("") == cl::error::server_error);
    BOOST_TEST(classify_server_error("ERR unknown command 'MOVED'") == cl::error::server_error);
}

BOOST_AUTO_TEST_CASE(classifier_keeps_wrongtype_and_generic_errors) {
    BOOST_TEST(classify_server_error("WRONGTYPE Operation against a key holding the wrong kind") ==
               cl::error::wrong_type);
    BOOST_TEST(classify_server_error("ERR syntax error") == cl::error::server_error);
    BOOST_TEST(classify_server_error("NOPERM this user has no permissions") ==
               cl::error::server_error);
    BOOST_TEST(classify_server_error("BUSY Redis is busy running a script") ==
               cl::error::server_error);
}

BOOST_AUTO_TEST_CASE(outcome_unknown_is_never_not_executed) {
    // Written, then the connection dropped: the command may have run; never re-send it.
    BOOST_TEST(error_code(cl::error::connection_lost) != condition::not_executed);
    BOOST_TEST(error_code(cl::error::connection_lost) == condition::connection_failure);
    BOOST_TEST(error_code(cl::error::pong_timeout) != condition::not_executed);
    BOOST_TEST(error_code(boost::asio::error::connection_reset) != condition::not_executed);
    BOOST_TEST(error_code(boost::asio::error::operation_aborted) != condition::not_executed);
    for (auto e :
         {cl::error::server_error, cl::error::wrong_type, cl::error::auth_failed,
          cl::error::subscribe_refused, cl::error::not_connected, cl::error::message_too_large,
          cl::error::unexpected_reply, cl::error::invalid_argument, cl::error::lease_lost}) {
        BOOST_TEST_CONTEXT(e) {
            BOOST_TEST(error_code(e) != condition::not_executed);
        }
    }
}

BOOST_AUTO_TEST_CASE(success_is_no_failure) {
    // A default error_code is the system category's 0: not a socket failure.
    for (auto c : {condition::connection_failure, condition::server_failure, condition::lock_lost,
                   condition::not_executed}) {
        BOOST_TEST_CONTEXT(c) {
            BOOST_TEST(error_code() != c);
        }
    }
    BOOST_TEST(error_code(boost::asio::error::connection_reset) == condition::connection_failure);
}

BOOST_AUTO_TEST_CASE(server_group_is_server_failure) {
    for (auto e : {cl::error::server_error, cl::error::auth_failed, cl::error::wrong_type,
                   cl::error::subscribe_refused}) {
        BOOST_TEST_CONTEXT(e) {
            BOOST_TEST(error_code(e) == condition::server_failure);
            BOOST_TEST(error_code(e) != condition::connection_failure);
        }
    }
    // The groups around the new codes kept their conditions.
    BOOST_TEST(error_code(cl::error::not_connected) == condition::connection_failure);
    BOOST_TEST(error_code(cl::error::unexpected_reply) == condition::protocol_violation);
    BOOST_TEST(error_code(cl::error::invalid_name) == condition::invalid_argument);
}

BOOST_AUTO_TEST_CASE(synchronizer_errors_have_their_conditions) {
    for (auto e : {cl::error::limit_mismatch, cl::error::target_mismatch, cl::error::no_latch}) {
        BOOST_TEST_CONTEXT(e) {
            BOOST_TEST(error_code(e) == condition::invalid_argument);
            BOOST_TEST(error_code(e).message() != "unknown corolock error");
        }
    }
    BOOST_TEST(error_code(cl::error::stale_generation) == condition::lock_lost);
    BOOST_TEST(error_code(cl::error::stale_generation).message() != "unknown corolock error");
}

BOOST_AUTO_TEST_CASE(messages_and_printing) {
    for (const auto& r : refusals) {
        std::ostringstream os;
        os << r.code;
        BOOST_TEST(os.str() != "unknown corolock error");
        BOOST_TEST(error_code(r.code).message() == os.str());
    }
    std::ostringstream os;
    os << cl::error::subscribe_refused << '|' << condition::not_executed;
    BOOST_TEST(os.str().find("subscription") != std::string::npos);
    BOOST_TEST(os.str().find("before running it") != std::string::npos);
    BOOST_TEST(std::string(corolock::condition_category().name()) == "corolock.condition");
}

// wrong_type can come from a derived key (a lock named {t} after {t}:fence was used as a
// name elsewhere): the text must not blame the lock's name alone.
BOOST_AUTO_TEST_CASE(messages_name_the_real_cause) {
    const auto wrong = error_code(cl::error::wrong_type).message();
    BOOST_TEST(wrong.find("derived") != std::string::npos);
    BOOST_TEST(wrong.find(":fence") != std::string::npos);
    // Short, and no backend's rules (a PostgreSQL name got the Redis and ZooKeeper text): the
    // log names the rule (test/integration/misuse.cpp, an_invalid_argument_names_its_field).
    const auto name = error_code(cl::error::invalid_name).message();
    BOOST_TEST(name.size() < 80u);
    BOOST_TEST(name.find("ZooKeeper") == std::string::npos);
    BOOST_TEST(name.find("Redis") == std::string::npos);
    BOOST_TEST(name.find("log") != std::string::npos);
    BOOST_TEST(error_code(cl::error::invalid_lease).message().find("100 ms") != std::string::npos);
    BOOST_TEST(error_code(cl::error::invalid_url) == condition::invalid_argument);
    // TLS to a plain-text port said only "connect timed out" (issue 28).
    const error_code tls(cl::error::tls_no_answer);
    BOOST_TEST(tls == condition::connection_failure);
    BOOST_TEST(tls.message().find("TLS port") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_error
