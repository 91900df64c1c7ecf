// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The scheduled job's driver (io/job_driver.cpp): what a job shares between its public body
// (job.cpp) and the coroutine of one begin. The scripts are in core/job_core.hpp (pure).
#ifndef COROLOCK_SRC_IO_JOB_DRIVER_HPP
#define COROLOCK_SRC_IO_JOB_DRIVER_HPP

#include "io/lock_transport.hpp"
#include <corolock/job.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <memory>
#include <string>

namespace corolock::detail {

struct job_core {
    job_core(lock_transport t, std::string n, job_options o, std::unique_ptr<corolock::mutex> m);

    lock_transport io; // keeps the connection or cluster alive
    std::string name;
    std::string record; // {J}:job
    job_options opts;
    std::unique_ptr<corolock::mutex> lock;
    std::string invalid; // which field or rule is wrong (empty: valid)

    std::string record_ms() const;
};

// Any thread: one begin (the lock, then the record), its result to `h` on its executor.
void spawn_job_begin(std::shared_ptr<job_core> core, std::uint64_t slot,
                     boost::asio::any_completion_handler<void(error_code, job_run)> h);

} // namespace corolock::detail

#endif
