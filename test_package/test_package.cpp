// Conan's package test: links corolock and runs without a Redis server. Built with
// COROLOCK_TEST_POSTGRES / COROLOCK_TEST_ZOOKEEPER, it links and runs those components too, still
// without a server.
#include <corolock/corolock.hpp>
#if COROLOCK_TEST_POSTGRES
#include <corolock/postgres/mutex.hpp>
#endif
#if COROLOCK_TEST_ZOOKEEPER
#include <corolock/zookeeper/mutex.hpp>
#endif

#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <cstring>

int main() {
    boost::asio::io_context ioc;
    corolock::connection conn(ioc.get_executor()); // never run: no server is needed
    corolock::mutex m(conn, "");                   // an empty name is invalid

    // Invalid arguments fail before any I/O; the completion is posted to the io_context.
    corolock::error_code acquire_ec;
    m.async_acquire([&](corolock::error_code ec, corolock::lease) { acquire_ec = ec; });
#if COROLOCK_TEST_POSTGRES
    corolock::pg_connection pg(ioc.get_executor()); // never run
    corolock::pg_mutex pm(pg, "");
    corolock::error_code pg_ec;
    pm.async_acquire([&](corolock::error_code ec, corolock::pg_lease) { pg_ec = ec; });
#endif
#if COROLOCK_TEST_ZOOKEEPER
    corolock::zk_connection zk(ioc.get_executor(), {}); // never run
    corolock::zk_mutex zm(zk, "relative/path");         // a path must start with '/'
    corolock::error_code zk_ec;
    zm.async_acquire([&](corolock::error_code ec, corolock::zk_lease) { zk_ec = ec; });
#endif
    ioc.run();

    const corolock::script s("return 1"); // SHA1 through OpenSSL
    std::printf("corolock %d.%d.%d: acquire with an empty name -> %s; sha1 %s\n",
                COROLOCK_VERSION_MAJOR, COROLOCK_VERSION_MINOR, COROLOCK_VERSION_PATCH,
                acquire_ec.message().c_str(), s.sha1().c_str());
    bool ok = acquire_ec == corolock::error::invalid_name &&
              s.sha1() == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
#if COROLOCK_TEST_POSTGRES
    std::printf("corolock::postgres: pg_mutex with an empty name -> %s\n", pg_ec.message().c_str());
    ok = ok && pg_ec == corolock::error::invalid_name;
#endif
#if COROLOCK_TEST_ZOOKEEPER
    std::printf("corolock::zookeeper: zk_mutex on a relative path -> %s\n",
                zk_ec.message().c_str());
    ok = ok && zk_ec == corolock::error::invalid_name;
#endif
    return ok ? 0 : 1;
}
