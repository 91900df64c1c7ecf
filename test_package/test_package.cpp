// Conan's package test: links corolock and runs without a Redis server.
#include <corolock/corolock.hpp>

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
    ioc.run();

    const corolock::script s("return 1"); // SHA1 through OpenSSL
    std::printf("corolock %d.%d.%d: acquire with an empty name -> %s; sha1 %s\n",
                COROLOCK_VERSION_MAJOR, COROLOCK_VERSION_MINOR, COROLOCK_VERSION_PATCH,
                acquire_ec.message().c_str(), s.sha1().c_str());
    const bool ok = acquire_ec == corolock::error::invalid_name &&
                    s.sha1() == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    return ok ? 0 : 1;
}
