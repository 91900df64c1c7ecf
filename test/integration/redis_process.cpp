// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// Tests of the redis-server fixture itself, so that a broken fixture is not mistaken for a
// broken library.
#include "common/redis_process.hpp"

#include "common/coro_test.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <signal.h>
#include <string>
#include <system_error>
#include <unistd.h>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace integration_redis_process {

// The suite is a namespace named redis_process, so the class goes by its full name.
namespace ct = corolock::test;
using namespace std::chrono_literals;

namespace {

// kill(pid, 0) fails with ESRCH only once the process is gone *and* reaped: a zombie still
// counts as existing.
bool process_gone(pid_t pid) {
    return ::kill(pid, 0) == -1 && errno == ESRCH;
}

bool times_out(const std::system_error& e) {
    return e.code() == std::make_error_code(std::errc::timed_out);
}

} // namespace

BOOST_AUTO_TEST_SUITE(redis_process)

BOOST_AUTO_TEST_CASE(start_answers_ping) {
    BOOST_TEST_REQUIRE(ct::redis_process::available());
    ct::redis_process server;
    BOOST_TEST(server.running());
    BOOST_TEST(server.host() == "127.0.0.1");
    BOOST_TEST(server.port() != 0);
    BOOST_TEST(server.port() != 6379);
    BOOST_TEST(server.command({"PING"}) == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(command_returns_raw_replies) {
    ct::redis_process server;
    BOOST_TEST(server.command({"SET", "k", "a value\r\nwith CRLF"}) == "+OK\r\n");
    BOOST_TEST(server.command({"GET", "k"}) == "$18\r\na value\r\nwith CRLF\r\n");
    BOOST_TEST(server.command({"GET", "missing"}) == "$-1\r\n");
    BOOST_TEST(server.command({"RPUSH", "l", "a", "bc"}) == ":2\r\n");
    BOOST_TEST(server.command({"LRANGE", "l", "0", "-1"}) == "*2\r\n$1\r\na\r\n$2\r\nbc\r\n");
    BOOST_TEST(server.command({"NOSUCHCOMMAND"}).starts_with("-ERR"));
    // The fixture enables DEBUG for tests that need a slow server.
    BOOST_TEST(server.command({"DEBUG", "SLEEP", "0"}) == "+OK\r\n");
    BOOST_TEST(server.command({"FLUSHALL"}) == "+OK\r\n");
    BOOST_TEST(server.command({"DBSIZE"}) == ":0\r\n");
}

BOOST_AUTO_TEST_CASE(two_servers_get_different_ports) {
    ct::redis_process a;
    ct::redis_process b;
    BOOST_TEST(a.port() != b.port());
    BOOST_TEST(a.pid() != b.pid());
    BOOST_TEST(a.command({"SET", "only", "a"}) == "+OK\r\n");
    BOOST_TEST(b.command({"EXISTS", "only"}) == ":0\r\n");
}

BOOST_AUTO_TEST_CASE(kill_then_restart_on_same_port) {
    ct::redis_process server;
    auto port = server.port();
    auto first = server.pid();
    BOOST_TEST(server.command({"SET", "k", "v"}) == "+OK\r\n");

    server.kill();
    BOOST_TEST(!server.running());
    BOOST_TEST(server.pid() == -1);
    BOOST_TEST(process_gone(first));
    BOOST_CHECK_THROW(server.command({"PING"}, 500ms), std::system_error);

    server.restart();
    BOOST_TEST(server.running());
    BOOST_TEST(server.port() == port);
    BOOST_TEST(server.pid() != first);
    BOOST_TEST(server.command({"PING"}) == "+PONG\r\n");
    // No persistence: a crash loses everything.
    BOOST_TEST(server.command({"EXISTS", "k"}) == ":0\r\n");

    // restart() of a running server works too.
    auto second = server.pid();
    server.restart();
    BOOST_TEST(process_gone(second));
    BOOST_TEST(server.port() == port);
    BOOST_TEST(server.command({"PING"}) == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(stop_then_start_on_same_port) {
    ct::redis_process server;
    auto port = server.port();
    auto pid = server.pid();
    server.stop();
    BOOST_TEST(!server.running());
    BOOST_TEST(process_gone(pid));
    server.start();
    BOOST_TEST(server.port() == port);
    BOOST_TEST(server.command({"PING"}) == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(deferred_start) {
    ct::redis_process server({}, ct::redis_process::start_mode::later);
    BOOST_TEST(!server.running());
    BOOST_TEST(server.port() == 0);
    server.start();
    BOOST_TEST(server.running());
    BOOST_TEST(server.command({"PING"}) == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(pause_freezes_and_resume_thaws) {
    ct::redis_process server;
    server.pause();
    BOOST_TEST(server.paused());
    BOOST_TEST(server.running());
    // The kernel still accepts the connection; nobody answers.
    auto start = std::chrono::steady_clock::now();
    BOOST_CHECK_EXCEPTION(server.command({"PING"}, 300ms), std::system_error, times_out);
    BOOST_TEST((std::chrono::steady_clock::now() - start < 3s));

    server.resume();
    BOOST_TEST(!server.paused());
    BOOST_TEST(server.command({"PING"}) == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(stop_while_paused) {
    ct::redis_process server;
    auto pid = server.pid();
    server.pause();
    server.stop();
    BOOST_TEST(!server.running());
    BOOST_TEST(process_gone(pid));
}

BOOST_AUTO_TEST_CASE(requirepass_extra_args) {
    ct::redis_process server({"--requirepass", "s3cret"});
    // command() authenticates with the password it saw on the command line.
    BOOST_TEST(server.command({"PING"}) == "+PONG\r\n");

    server.set_command_auth("", "");
    BOOST_TEST(server.command({"GET", "k"}).starts_with("-NOAUTH"));

    server.set_command_auth("", "wrong");
    BOOST_CHECK_THROW(server.command({"PING"}), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(acl_user_and_maxmemory_extra_args) {
    ct::redis_process server({"--user", "alice", "on", ">pw", "~*", "&*", "+@all", "--maxmemory",
                              "10mb", "--maxmemory-policy", "noeviction"});
    BOOST_TEST(server.command({"CONFIG", "GET", "maxmemory"}) ==
               "*2\r\n$9\r\nmaxmemory\r\n$8\r\n10485760\r\n");
    server.set_command_auth("alice", "pw");
    BOOST_TEST(server.command({"ACL", "WHOAMI"}) == "$5\r\nalice\r\n");
}

BOOST_AUTO_TEST_CASE(bad_extra_args_throw) {
    BOOST_CHECK_THROW(ct::redis_process({"--no-such-option", "1"}), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(destructor_reaps_the_process) {
    pid_t pid = -1;
    std::string dir;
    {
        ct::redis_process server;
        pid = server.pid();
        dir = server.dir();
        BOOST_TEST(::kill(pid, 0) == 0);
        BOOST_TEST(std::filesystem::exists(dir));
    }
    BOOST_TEST(process_gone(pid));
    BOOST_TEST(!std::filesystem::exists(dir));
}

BOOST_AUTO_TEST_CASE(destructor_reaps_a_paused_process) {
    pid_t pid = -1;
    {
        ct::redis_process server;
        pid = server.pid();
        server.pause();
    }
    BOOST_TEST(process_gone(pid));
}

// The coroutine runner and the fixture together: a raw Asio client reaches the server.
BOOST_AUTO_TEST_CASE(coroutine_client_reaches_server) {
    ct::redis_process server;
    boost::asio::io_context ioc;
    std::string reply;
    ct::run_coroutine_test(
        ioc,
        [&]() -> boost::asio::awaitable<void> {
            boost::asio::ip::tcp::socket socket(ioc);
            co_await socket.async_connect(
                {boost::asio::ip::make_address(server.host()), server.port()},
                boost::asio::use_awaitable);
            co_await boost::asio::async_write(socket, boost::asio::buffer("PING\r\n", 6),
                                              boost::asio::use_awaitable);
            co_await boost::asio::async_read_until(socket, boost::asio::dynamic_buffer(reply),
                                                   "\r\n", boost::asio::use_awaitable);
        }(),
        10s);
    BOOST_TEST(reply == "+PONG\r\n");
}

// The child processes under every server and worker (common/child_process.hpp).
BOOST_AUTO_TEST_CASE(child_process_reports_exec_failure_and_exit_status) {
    BOOST_CHECK_THROW(ct::child_process({"/nonexistent/program"}), std::system_error);
    ct::child_process sh({ct::find_program("sh"), "-c", "exit 7"});
    BOOST_TEST(sh.wait(10s) == 7);
    BOOST_TEST(!sh.running());
    ct::child_process sleeper({ct::find_program("sleep"), "30"});
    BOOST_TEST(sleeper.wait(50ms) == 128 + SIGKILL); // killed after its limit
}

BOOST_AUTO_TEST_CASE(child_process_pipes_environment_and_pause) {
    ct::child_options options;
    options.env = {"COROLOCK_KIT_PROBE=hello"};
    options.pipe_stdin = true;
    options.pipe_stdout = true;
    // Echoes its environment variable, then each line it reads, until end of input.
    ct::child_process child(
        {ct::find_program("sh"), "-c", "echo $COROLOCK_KIT_PROBE; while read l; do echo $l; done"},
        options);
    BOOST_TEST_REQUIRE(child.pause());
    BOOST_TEST(child.paused());
    child.resume();
    BOOST_TEST(!child.paused());
    BOOST_TEST(::write(child.input_fd(), "line\n", 5) == 5);
    child.close_input();
    std::string out;
    char buf[256];
    for (ssize_t n; (n = ::read(child.output_fd(), buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    BOOST_TEST(out == "hello\nline\n");
    BOOST_TEST(child.wait(10s) == 0);
}

BOOST_AUTO_TEST_CASE(child_process_destructor_and_move_reap) {
    pid_t first = -1, second = -1;
    {
        ct::child_process a({ct::find_program("sleep"), "30"});
        first = a.pid();
        ct::child_process b(std::move(a));
        BOOST_TEST(!a.running());
        BOOST_TEST(b.pid() == first);
        b = ct::child_process({ct::find_program("sleep"), "30"}); // the first is killed here
        second = b.pid();
        BOOST_TEST(process_gone(first));
        BOOST_TEST(b.pause());
    }
    BOOST_TEST(process_gone(second)); // a paused child too
}

BOOST_AUTO_TEST_CASE(run_program_collects_output_status_and_timeout) {
    const auto ok = ct::run_program({"sh", "-c", "echo out; echo err >&2; exit 3"});
    BOOST_TEST(ok.exit_code == 3);
    BOOST_TEST(ok.output == "out\nerr\n");
    BOOST_TEST(ct::run_program({"no-such-program-corolock"}).exit_code == 127);
    BOOST_TEST(ct::run_program({"sleep", "30"}, 100ms).exit_code == 128 + SIGKILL);
}

namespace {

// The first line the child writes: the port corolock_script_redis prints.
std::string first_line(const ct::child_process& child) {
    std::string line;
    char c = 0;
    while (::read(child.output_fd(), &c, 1) == 1 && c != '\n')
        line += c;
    return line;
}

bool answers_ping(const std::string& port) {
    return ct::run_program({"redis-cli", "-p", port, "ping"}, 5s).output == "PONG\n";
}

} // namespace

// The shell scripts' server (tools/common.sh start_redis): its port on the first line, the
// server until SIGTERM, then stopped and reaped, exit 0.
BOOST_AUTO_TEST_CASE(script_redis_serves_until_sigterm) {
    ct::child_options options;
    options.pipe_stdout = true;
    ct::child_process kit({COROLOCK_SCRIPT_REDIS}, options);
    const auto port = first_line(kit);
    BOOST_TEST_REQUIRE(!port.empty());
    BOOST_TEST(port != "6379");
    BOOST_TEST(answers_ping(port));
    kit.signal(SIGTERM);
    BOOST_TEST(kit.wait(10s) == 0);
    BOOST_TEST(!answers_ping(port));
}

// The script that started it SIGKILLed: the kit gets SIGTERM and takes its server along.
BOOST_AUTO_TEST_CASE(script_redis_dies_with_its_script) {
    ct::child_options options;
    options.pipe_stdout = true;
    options.pipe_stdin = true;
    ct::child_process script(
        {ct::find_program("sh"), "-c", std::string(COROLOCK_SCRIPT_REDIS) + " & read x"}, options);
    const auto port = first_line(script);
    BOOST_TEST_REQUIRE(!port.empty());
    BOOST_TEST(answers_ping(port));
    script.kill();
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
        gone = !answers_ping(port);
        if (!gone)
            ::usleep(100 * 1000);
    }
    BOOST_TEST(gone);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace integration_redis_process
