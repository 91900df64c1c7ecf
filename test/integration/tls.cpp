// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// TLS against a real redis-server: certificates are made with the `openssl` CLI in a temporary
// directory, once for the suite, and one server with a plain and a TLS port serves every test.
// Without `openssl` on PATH, or with a redis-server built without TLS, the tests are skipped.
#include "common/coro_test.hpp"
#include "common/redis_process.hpp"
#include "common/test_config.hpp"
#include <corolock/connection.hpp>
#include <corolock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_tls {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using asio::awaitable;
using corolock::connection_config;
using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::request;
using corolock::test::quiet;
using corolock::test::redis_process;
using corolock::test::run_coroutine_test;
using corolock::test::sleep_for;

namespace {

using corolock::test::tuple_deferred;
using clock_type = std::chrono::steady_clock;

long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

std::string describe(const error_code& ec) {
    std::ostringstream os;
    os << ec.category().name() << ':' << ec.value() << " (" << ec.message() << ')';
    return os.str();
}

// ---------------------------------------------------------------- files and the openssl CLI

// A private directory, removed with everything in it when the object goes.
class temp_dir {
public:
    temp_dir() {
        const char* base = std::getenv("TMPDIR");
        std::string pattern =
            std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/corolock-tls-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::system_error(errno, std::generic_category(), "mkdtemp");
        path_ = pattern;
    }
    ~temp_dir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    fs::path path_;
};

std::string find_on_path(const std::string& program) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path != nullptr ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        const auto candidate = (fs::path(dir.empty() ? "." : dir) / program).string();
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return {};
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

void write_all(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush())
        throw std::runtime_error("cannot write " + path);
}

// Runs a program (no shell: paths may hold any character) with its output in `log`; throws
// with that output unless it exits with status 0.
void run_program(std::vector<std::string> args, const std::string& log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int err = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0)
        throw std::system_error(err, std::generic_category(), "spawn " + args[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "waitpid");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::string command;
        for (const auto& a : args)
            command += (command.empty() ? "" : " ") + a;
        throw std::runtime_error(command + " failed (wait status " + std::to_string(status) +
                                 "):\n" + read_all(log));
    }
}

// Our own openssl configuration, so that nothing depends on the system's openssl.cnf.
constexpr const char* openssl_cnf = R"([req]
distinguished_name = dn
prompt = no

[dn]
CN = corolock test

[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1, DNS:localhost
)";

struct key_pair {
    std::string key;
    std::string cert;
};

class cert_maker {
public:
    cert_maker(std::string openssl, const temp_dir& dir)
        : openssl_(std::move(openssl)), dir_(dir), cnf_(dir.file("openssl.cnf")) {
        write_all(cnf_, openssl_cnf);
    }

    // A self-signed CA, valid for one day. P-256 keys: quick to make, everywhere supported.
    key_pair make_ca(const std::string& name) {
        key_pair ca{dir_.file(name + ".key"), dir_.file(name + ".crt")};
        run_program({openssl_,
                     "req",
                     "-x509",
                     "-config",
                     cnf_,
                     "-extensions",
                     "ca",
                     "-newkey",
                     "ec",
                     "-pkeyopt",
                     "ec_paramgen_curve:prime256v1",
                     "-nodes",
                     "-keyout",
                     ca.key,
                     "-out",
                     ca.cert,
                     "-days",
                     "1",
                     "-subj",
                     "/CN=corolock " + name},
                    dir_.file(name + ".log"));
        return ca;
    }

    // A server certificate for 127.0.0.1 and localhost signed by `ca`, valid for one day.
    key_pair make_server(const std::string& name, const key_pair& ca) {
        key_pair srv{dir_.file(name + ".key"), dir_.file(name + ".crt")};
        const auto csr = dir_.file(name + ".csr");
        run_program({openssl_, "req", "-new", "-config", cnf_, "-newkey", "ec", "-pkeyopt",
                     "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", srv.key, "-out", csr,
                     "-subj", "/CN=localhost"},
                    dir_.file(name + "-csr.log"));
        run_program({openssl_, "x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key,
                     "-set_serial", std::to_string(std::random_device{}() | 1u), "-days", "1",
                     "-extfile", cnf_, "-extensions", "server", "-out", srv.cert},
                    dir_.file(name + "-sign.log"));
        return srv;
    }

private:
    std::string openssl_;
    const temp_dir& dir_;
    std::string cnf_;
};

std::uint16_t free_loopback_port() {
    asio::io_context probe;
    asio::ip::tcp::acceptor a(probe, {asio::ip::make_address("127.0.0.1"), 0});
    return a.local_endpoint().port();
}

// What redis-server says when it was built without TLS: the option is unknown.
bool says_tls_unsupported(const std::string& text) {
    return text.find("tls-port") != std::string::npos &&
           text.find("Bad directive") != std::string::npos;
}

// ---------------------------------------------------------------- the suite's environment

struct tls_env {
    temp_dir dir;
    key_pair ca;
    key_pair server;
    key_pair other_ca; // trusted by nobody: its key signs nothing
    std::uint16_t tls_port = 0;
    std::unique_ptr<redis_process> srv;

    connection_config config(std::uint16_t port) const {
        connection_config cfg;
        cfg.host = "127.0.0.1";
        cfg.port = std::to_string(port);
        cfg.use_tls = true;
        cfg.health_check_interval = 200ms;
        cfg.connect_timeout = 5s;
        cfg.reconnect_wait = 20ms;
        cfg.reconnect_wait_max = 200ms;
        return cfg;
    }
};

// Held by the suite fixture. Only a skipped teardown (a crash in a test) leaves it to static
// destruction; then the server is left to redis_process's own exit handler, which runs first.
struct suite_state {
    std::unique_ptr<tls_env> env;
    std::string skip_reason = "the suite fixture did not run";
    ~suite_state() {
        if (env)
            (void)env->srv.release();
    }
} state;

void setup_suite() {
    const auto openssl = find_on_path("openssl");
    if (openssl.empty()) {
        state.skip_reason = "the openssl CLI is not on PATH";
        return;
    }
    if (!redis_process::available()) {
        state.skip_reason = "redis-server is not on PATH";
        return;
    }
    auto env = std::make_unique<tls_env>();
    cert_maker certs(openssl, env->dir);
    env->ca = certs.make_ca("ca");
    env->server = certs.make_server("server", env->ca);
    env->other_ca = certs.make_ca("other-ca");
    // The TLS port is picked here and bound by the server later: another process may take it
    // in between, and then the server exits at startup. Try a few ports.
    for (int attempt = 1;; ++attempt) {
        env->tls_port = free_loopback_port();
        // Started after construction, so that a failed start still removes the server's
        // directory (a constructor that throws leaves no object to clean up).
        env->srv = std::make_unique<redis_process>(
            std::vector<std::string>{"--tls-port", std::to_string(env->tls_port), "--tls-cert-file",
                                     env->server.cert, "--tls-key-file", env->server.key,
                                     "--tls-ca-cert-file", env->ca.cert, "--tls-auth-clients", "no",
                                     // 127.0.0.2 too: an address the certificate does not name
                                     "--bind", "127.0.0.1", "127.0.0.2"},
            redis_process::start_mode::later);
        try {
            env->srv->start();
            break;
        } catch (const std::runtime_error& e) {
            if (says_tls_unsupported(e.what())) {
                state.skip_reason = "redis-server was built without TLS support";
                BOOST_TEST_MESSAGE(state.skip_reason << ":\n" << e.what());
                return;
            }
            if (attempt == 3)
                throw;
            BOOST_TEST_MESSAGE("redis-server with TLS did not start; trying another port:\n"
                               << e.what());
        }
    }
    BOOST_TEST_MESSAGE("redis-server plain port " << env->srv->port() << ", TLS port "
                                                  << env->tls_port);
    state.env = std::move(env);
}

void teardown_suite() {
    state.env.reset();
}

boost::test_tools::assertion_result tls_available(boost::unit_test::test_unit_id) {
    if (state.env)
        return true;
    boost::test_tools::assertion_result r(false);
    r.message() << "skipped: " << state.skip_reason;
    return r;
}

tls_env& env() {
    return *state.env;
}

// ---------------------------------------------------------------- coroutine helpers

// Starts async_run and records how it ended.
struct runner {
    std::atomic<bool> done{false};
    error_code ec;
    clock_type::time_point at;
    void start(corolock::connection& conn) {
        conn.async_run([this](error_code e) {
            ec = e;
            at = clock_type::now();
            done = true;
        });
    }
};

awaitable<bool> wait_until_done(const runner& run, clock_type::duration limit) {
    const auto deadline = clock_type::now() + limit;
    while (!run.done && clock_type::now() < deadline)
        co_await sleep_for(5ms);
    co_return run.done.load();
}

ssl::context trusting(const std::string& ca_cert) {
    ssl::context ctx(ssl::context::tls_client);
    ctx.load_verify_file(ca_cert);
    ctx.set_verify_mode(ssl::verify_peer);
    return ctx;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls, *boost::unit_test::fixture(&setup_suite, &teardown_suite))

BOOST_AUTO_TEST_CASE(verified_connection_carries_large_values_and_pipelines,
                     *boost::unit_test::precondition(tls_available)) {
    auto ctx = trusting(env().ca.cert);
    auto cfg = env().config(env().tls_port);
    cfg.client_name = "corolock-tls";
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), ctx, cfg, quiet());
    runner run;
    std::string client_info;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);

            // Larger than a TLS record (16 KiB): the value spans several of them both ways.
            std::string big(64 * 1024, '\0');
            for (std::size_t i = 0; i < big.size(); ++i)
                big[i] = static_cast<char>(i * 13 + 5);
            request req;
            req.push("DEL", "tls:counter");
            req.push("SET", "tls:big", big);
            req.push("GET", "tls:big");
            req.push("CLIENT", "INFO");
            generic_response resp;
            co_await conn.async_exec(req, resp);
            BOOST_REQUIRE_EQUAL(resp.size(), 4u);
            BOOST_TEST(resp[1].value == "OK");
            BOOST_TEST(resp[2].value.size() == big.size());
            BOOST_TEST((resp[2].value == big));
            client_info = resp[3].value;

            // 100 coroutines x 10 INCRs, all in flight together.
            std::vector<long long> replies;
            int failures = 0;
            auto worker = [&]() -> awaitable<void> {
                request incr;
                incr.push("INCR", "tls:counter");
                for (int i = 0; i < 10; ++i) {
                    generic_response r;
                    auto [ec, n] = co_await conn.async_exec(incr, r, tuple_deferred);
                    if (ec || r.size() != 1)
                        ++failures;
                    else
                        replies.push_back(std::stoll(r[0].value));
                }
            };
            const auto before = conn.stats();
            std::vector<decltype(asio::co_spawn(ioc, worker(), asio::deferred))> ops;
            for (int id = 0; id < 100; ++id)
                ops.push_back(asio::co_spawn(ioc, worker(), asio::deferred));
            co_await asio::experimental::make_parallel_group(std::move(ops))
                .async_wait(asio::experimental::wait_for_all(), asio::deferred);
            const auto after = conn.stats();
            BOOST_TEST(failures == 0);
            BOOST_REQUIRE_EQUAL(replies.size(), 1000u);
            const std::set<long long> distinct(replies.begin(), replies.end());
            BOOST_TEST(distinct.size() == 1000u);
            BOOST_TEST(*distinct.begin() == 1);
            BOOST_TEST(*distinct.rbegin() == 1000);
            const auto commands = after.commands - before.commands;
            const auto writes = after.writes - before.writes;
            BOOST_TEST_MESSAGE("1000 INCRs over TLS in " << writes << " writes");
            BOOST_TEST(commands == 1000u);
            BOOST_TEST(writes * 10 < commands); // pipelined: many commands per TLS write

            request get;
            get.push("GET", "tls:counter");
            generic_response total;
            co_await conn.async_exec(get, total);
            BOOST_TEST(total.at(0).value == "1000");
            BOOST_TEST(conn.is_connected());
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(run.done);
    BOOST_TEST(run.ec == asio::error::operation_aborted);
    BOOST_TEST(conn.stats().connects == 1u);

    // The server saw this client on its TLS port, and no other client under our name.
    const auto tls_laddr = "laddr=127.0.0.1:" + std::to_string(env().tls_port) + " ";
    BOOST_TEST_MESSAGE("CLIENT INFO: " << client_info);
    BOOST_TEST(client_info.find(tls_laddr) != std::string::npos);
    BOOST_TEST(client_info.find("name=corolock-tls ") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(client_list_on_plain_port_shows_tls_client,
                     *boost::unit_test::precondition(tls_available)) {
    auto ctx = trusting(env().ca.cert);
    auto cfg = env().config(env().tls_port);
    cfg.client_name = "corolock-tls-listed";
    // The connection checks the name itself (here the IP SAN); a context that asks for it too
    // changes nothing.
    ctx.set_verify_callback(ssl::host_name_verification(cfg.host));
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), ctx, cfg, quiet());
    runner run;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            request ping;
            ping.push("PING");
            co_await conn.async_exec(ping, corolock::ignore);
            // Asked over the plain port, by another client: our line must be on the TLS port.
            const auto list = env().srv->command({"CLIENT", "LIST"});
            std::istringstream lines(list);
            std::string ours;
            for (std::string line; std::getline(lines, line);)
                if (line.find("name=corolock-tls-listed ") != std::string::npos)
                    ours = line;
            BOOST_TEST_MESSAGE("CLIENT LIST line: " << ours);
            BOOST_TEST(ours.find("laddr=127.0.0.1:" + std::to_string(env().tls_port) + " ") !=
                       std::string::npos);
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(run.ec == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(untrusted_server_certificate_fails_the_handshake,
                     *boost::unit_test::precondition(tls_available)) {
    auto ctx = trusting(env().other_ca.cert);
    auto cfg = env().config(env().tls_port);
    cfg.reconnect_wait = 0s; // async_run ends with the first failure
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), ctx, cfg, quiet());
    runner run;
    error_code exec_ec;
    const auto t0 = clock_type::now();
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            request ping;
            ping.push("PING");
            // Queued before the connection fails: it must fail when async_run ends.
            auto [ec, n] = co_await conn.async_exec(ping, corolock::ignore, tuple_deferred);
            exec_ec = ec;
            BOOST_TEST(co_await wait_until_done(run, 10s));
        }(),
        30s);
    BOOST_REQUIRE(run.done);
    BOOST_TEST_MESSAGE("async_run: " << describe(run.ec) << " after " << ms(run.at - t0)
                                     << " ms; exec: " << describe(exec_ec));
    BOOST_TEST(run.ec.failed());
    BOOST_TEST(run.ec != error::connect_timeout); // refused at once, not timed out
    BOOST_TEST((run.ec.category() == asio::error::get_ssl_category()));
    BOOST_TEST(run.ec == corolock::condition::connection_failure);
    BOOST_TEST(ERR_GET_REASON(static_cast<unsigned long>(run.ec.value())) ==
               SSL_R_CERTIFICATE_VERIFY_FAILED);
    BOOST_TEST(ms(run.at - t0) < 2000);
    BOOST_TEST(exec_ec == error::not_connected);
    BOOST_TEST(conn.stats().connects == 0u);
    BOOST_TEST(!conn.is_connected());
}

BOOST_AUTO_TEST_CASE(tls_to_a_plain_text_port_fails_without_hanging,
                     *boost::unit_test::precondition(tls_available)) {
    auto ctx = trusting(env().ca.cert);
    auto cfg = env().config(env().srv->port());
    cfg.reconnect_wait = 0s;
    // Redis may wait for the rest of a "command" that never comes: the connect timeout bounds
    // the handshake then.
    cfg.connect_timeout = 2s;
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), ctx, cfg, quiet());
    runner run;
    error_code exec_ec;
    const auto t0 = clock_type::now();
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            request ping;
            ping.push("PING");
            auto [ec, n] = co_await conn.async_exec(ping, corolock::ignore, tuple_deferred);
            exec_ec = ec;
            BOOST_TEST(co_await wait_until_done(run, 10s));
        }(),
        30s);
    BOOST_REQUIRE(run.done);
    BOOST_TEST_MESSAGE("async_run: " << describe(run.ec) << " after " << ms(run.at - t0)
                                     << " ms; exec: " << describe(exec_ec));
    // Not "connect timed out": the cause, TCP connected and the handshake unanswered (issue 28).
    BOOST_TEST(run.ec == error::tls_no_answer, describe(run.ec));
    BOOST_TEST(ms(run.at - t0) < 4000); // at worst the connect timeout
    BOOST_TEST(exec_ec == error::not_connected);
    BOOST_TEST(conn.stats().connects == 0u);
    // The server is unharmed.
    BOOST_TEST(env().srv->command({"PING"}) == "+PONG\r\n");
}

// An acquire over TLS to a plain-text port, its wait shorter than connect_timeout (5 s): it
// ends with that cause, not server_timeout ("slow, stalled or unreachable").
BOOST_AUTO_TEST_CASE(an_acquire_over_tls_to_a_plain_text_port_says_so,
                     *boost::unit_test::precondition(tls_available)) {
    auto ctx = trusting(env().ca.cert);
    auto cfg = env().config(env().srv->port());
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), ctx, cfg, quiet());
    conn.async_run(asio::detached);
    error_code got;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            corolock::mutex m(conn, "lock:tls-plain");
            auto [ec, l] = co_await m.async_acquire_for(2s, tuple_deferred);
            got = ec;
            BOOST_TEST(!l.owns());
            conn.cancel();
        }(),
        30s);
    BOOST_TEST(got == error::tls_no_answer, describe(got));
}

// Connects with `ctx` and `cfg` (no reconnect) and returns how async_run ended, and whether a
// PING was answered; `lines` gets the connection's log.
struct tls_attempt {
    error_code run_ec;
    bool pinged = false;
};
tls_attempt attempt_tls(ssl::context& ctx, connection_config cfg, corolock::logger log) {
    cfg.reconnect_wait = 0s; // async_run ends with the first failure
    asio::io_context ioc;
    corolock::connection conn(ioc.get_executor(), ctx, cfg, std::move(log));
    runner run;
    tls_attempt out;
    run_coroutine_test(
        ioc,
        [&]() -> awaitable<void> {
            run.start(conn);
            request ping;
            ping.push("PING");
            auto [ec, n] = co_await conn.async_exec(ping, corolock::ignore, tuple_deferred);
            out.pinged = !ec;
            conn.cancel();
            BOOST_TEST(co_await wait_until_done(run, 10s));
        }(),
        30s);
    out.run_ec = run.ec;
    return out;
}

bool verify_failed(const error_code& ec) {
    return ec.category() == asio::error::get_ssl_category() &&
           ERR_GET_REASON(static_cast<unsigned long>(ec.value())) ==
               SSL_R_CERTIFICATE_VERIFY_FAILED;
}

// Asio's default context verifies nothing (verify_none) and trusts no CA: the connection still
// verifies the server, so a certificate from a CA nobody loaded is refused (the review's
// "anyone who answers" hole: the handshake used to complete).
BOOST_AUTO_TEST_CASE(a_context_that_verifies_nothing_still_refuses_an_untrusted_server,
                     *boost::unit_test::precondition(tls_available)) {
    ssl::context ctx(ssl::context::tls_client);
    const auto r = attempt_tls(ctx, env().config(env().tls_port), quiet());
    BOOST_TEST_MESSAGE("async_run: " << describe(r.run_ec));
    BOOST_TEST(!r.pinged);
    BOOST_TEST(verify_failed(r.run_ec));
}

// A certificate from a trusted CA, but for another host: the server answers on 127.0.0.2 too,
// which its certificate (IP:127.0.0.1, DNS:localhost) does not name. Refused, with a context
// that trusts the CA and leaves the verify mode at Asio's default.
BOOST_AUTO_TEST_CASE(a_certificate_for_another_host_is_refused,
                     *boost::unit_test::precondition(tls_available)) {
    ssl::context ctx(ssl::context::tls_client);
    ctx.load_verify_file(env().ca.cert);
    auto cfg = env().config(env().tls_port);
    cfg.host = "127.0.0.2";
    const auto r = attempt_tls(ctx, cfg, quiet());
    BOOST_TEST_MESSAGE("async_run: " << describe(r.run_ec));
    BOOST_TEST(!r.pinged);
    BOOST_TEST(verify_failed(r.run_ec));
    // The same CA and address the certificate names: accepted (the refusal was the name's).
    cfg.host = "127.0.0.1";
    BOOST_TEST(attempt_tls(ctx, cfg, quiet()).pinged);
}

// The opt-out: any certificate is accepted, and every connect says so in the log.
BOOST_AUTO_TEST_CASE(not_verifying_the_server_is_an_explicit_logged_choice,
                     *boost::unit_test::precondition(tls_available)) {
    ssl::context ctx(ssl::context::tls_client);
    auto cfg = env().config(env().tls_port);
    cfg.tls_verify_server = false;
    auto lines = std::make_shared<std::vector<std::string>>();
    corolock::logger log{
        corolock::logger::level::warning,
        [lines](corolock::logger::level, std::string_view m) { lines->emplace_back(m); }};
    const auto r = attempt_tls(ctx, cfg, log);
    BOOST_TEST(r.pinged);
    const auto warned = std::count_if(lines->begin(), lines->end(), [](const std::string& l) {
        return l.find("TLS without verifying the server") != std::string::npos;
    });
    BOOST_TEST(warned == 1);
    // The same from a URL.
    corolock::connection_config from_url = env().config(env().tls_port);
    BOOST_TEST(!corolock::parse_connection_url(
        "rediss://127.0.0.1:" + std::to_string(env().tls_port) + "?ssl_cert_reqs=none", from_url));
    BOOST_TEST(attempt_tls(ctx, from_url, quiet()).pinged);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_tls
