// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "pg_test.hpp"

#include <libpq-fe.h>
#include <stdexcept>

namespace corolock::test {

raw_session::raw_session(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
        const std::string why = PQerrorMessage(conn_);
        PQfinish(conn_);
        throw std::runtime_error("raw_session: " + why);
    }
}

raw_session::~raw_session() {
    PQfinish(conn_);
}

std::string raw_session::exec(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    const auto status = PQresultStatus(r);
    std::string out;
    if (status == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0)
        out = PQgetvalue(r, 0, 0);
    const std::string why = PQresultErrorMessage(r);
    PQclear(r);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
        throw std::runtime_error("raw_session: " + sql + ": " + why);
    return out;
}

} // namespace corolock::test
