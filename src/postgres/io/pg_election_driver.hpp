// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The PostgreSQL election's driver (io/pg_election_driver.cpp): what an election shares between
// its public body (pg_election.cpp), the campaign coroutine and the observers. Decisions and
// statements are in postgres/core/pg_election_sql.hpp (pure).
#ifndef COROLOCK_SRC_POSTGRES_IO_PG_ELECTION_DRIVER_HPP
#define COROLOCK_SRC_POSTGRES_IO_PG_ELECTION_DRIVER_HPP

#include "io/observer_state.hpp"
#include <corolock/postgres/election.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace corolock::detail {

struct pg_election_core {
    pg_election_core(pg_connection& c, std::string n, pg_election_options o);

    pg_connection& conn;
    boost::asio::any_io_executor strand; // the campaigns' and observers' own
    std::string name;
    pg_election_options opts;
    pg_mutex lock;
    std::string invalid; // which field or rule is wrong (empty: valid)
};

// Any thread: runs one campaign (waiting at most `wait` for the lock), its result to `h`.
void spawn_pg_campaign(std::shared_ptr<pg_election_core> core,
                       std::chrono::steady_clock::duration wait, std::string value,
                       boost::asio::any_completion_handler<void(error_code, pg_leadership)> h);
// Any thread: one read of the record and the lock.
void read_pg_leader(std::shared_ptr<pg_election_core> core,
                    boost::asio::any_completion_handler<void(error_code, leader_info)> h);
// Makes an observer of `core` and starts it (LISTEN, then the first read).
std::shared_ptr<observer_state> start_pg_observer(std::shared_ptr<pg_election_core> core);
// A fenced end of `l`'s term (not waited for); `done` when answered.
void end_pg_term(const std::shared_ptr<pg_election_core>& core, pg_lease& l,
                 boost::asio::any_completion_handler<void(error_code)> done);

} // namespace corolock::detail

#endif
