// A user's program: takes a lock on the Redis server at 127.0.0.1:<argv[1]>, then releases it.
// Built by test/consumer/run.sh against every way of consuming corolock.
#include <corolock/corolock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/version.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace asio = boost::asio;

static_assert(COROLOCK_VERSION == COROLOCK_VERSION_MAJOR * 100000 + COROLOCK_VERSION_MINOR * 100 +
                                      COROLOCK_VERSION_PATCH);

#if BOOST_VERSION < 108700 // Boost 1.87 removed io_service
#include <boost/asio/io_service.hpp>
// corolock must not impose BOOST_ASIO_NO_DEPRECATED on its users: the old names still compile.
[[maybe_unused]] static void uses_a_deprecated_name(asio::io_service& s) {
    s.poll();
}
#endif

static asio::awaitable<void> lock_once(corolock::connection& conn, corolock::mutex& m, int& rc) {
    auto l = co_await m.async_acquire_for(std::chrono::seconds(5));
    std::printf("corolock %d.%d.%d: held %s with fencing token %llu\n", COROLOCK_VERSION_MAJOR,
                COROLOCK_VERSION_MINOR, COROLOCK_VERSION_PATCH, m.name().c_str(),
                static_cast<unsigned long long>(l.token().value()));
    if (l.valid() && l.token().value() > 0)
        rc = 0;
    co_await l.async_release();
    conn.cancel();
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: consumer PORT\n");
        return 2;
    }
    asio::io_context ioc;
    corolock::connection_config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = argv[1];
    corolock::connection conn(ioc.get_executor(), cfg);
    corolock::mutex m(conn, "consumer:lock");
    conn.async_run(asio::detached);
    int rc = 1;
    asio::co_spawn(ioc, lock_once(conn, m, rc), [&](std::exception_ptr e) {
        conn.cancel();
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::fprintf(stderr, "consumer: %s\n", x.what());
            }
        }
    });
    ioc.run();
    return rc;
}
