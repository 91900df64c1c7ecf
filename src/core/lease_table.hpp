// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_SRC_DETAIL_LEASE_TABLE_HPP
#define COROLOCK_SRC_DETAIL_LEASE_TABLE_HPP

#include <corolock/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace corolock::detail {

// What a lease's local deadline allows for: the two clocks running at different rates
// (`rate_error` of the lease: 1 % unless a RedLock's drift_factor says otherwise) and the
// reply's trip (2 ms), at most half the lease. Every backend's leases use it.
inline std::chrono::steady_clock::duration drift_for(std::chrono::steady_clock::duration lease,
                                                     double rate_error = 0.01) {
    using duration = std::chrono::steady_clock::duration;
    const auto scaled =
        std::chrono::duration_cast<duration>(std::chrono::duration<double, duration::period>(
            static_cast<double>(lease.count()) * rate_error));
    return std::min<duration>(scaled + std::chrono::milliseconds(2), lease / 2);
}

// One held lease as the watchdog sees it. It lives inside the driver's lease state (intrusive:
// adding and removing costs no allocation once the table has grown) and is changed only through
// a lease_table.
struct lease_watch {
    using clock = std::chrono::steady_clock;
    clock::duration lease{}; // what every renewal asks for
    clock::duration drift{};
    bool watchdog = true;
    int replicas = 0; // each renewal must reach this many replicas (WAIT); 0: not checked
    clock::time_point valid_until{};                           // local end of the lease
    clock::time_point next_renewal = clock::time_point::max(); // watchdog only
    clock::time_point max_hold_at = clock::time_point::max();  // max: no limit
    bool renew_in_flight = false;
    // What its renewals need: a renew script's keys share one cluster slot (0 off a cluster),
    // and a batch's WAIT is as strict as its strictest lease's.
    std::uint16_t cluster_slot = 0;
    clock::duration wait_timeout{}; // WAIT's timeout when replicas > 0
    bool count_connected = false;   // replica_sync::on_shortfall counts the connected replicas
    std::size_t slot = static_cast<std::size_t>(-1); // index in the table; -1: not in one
};

// The watchdog's decisions for every lease held on one connection: when each must be renewed
// (every lease/3 from the last renewal's send time; renewals due within a small window share one
// script call), when each is lost (its local deadline passed without a renewal, its renewal was
// refused, or max_hold was reached). Sans-io: its owner (the lock core, pg_lock_service) passes
// the time in, has the batches sent and feeds the replies back. See doc/design.md, "Watchdog and
// lost leases".
class lease_table {
public:
    using clock = std::chrono::steady_clock;

    struct plan {
        std::vector<std::pair<lease_watch*, error>> losing; // removed from the table already
        std::vector<lease_watch*> due;                      // now renewing (in flight)
        clock::time_point wake_at = clock::time_point::max();
    };

    bool empty() const noexcept { return watched_.empty(); }
    std::size_t size() const noexcept { return watched_.size(); }
    static bool contains(const lease_watch& w) noexcept { return w.slot != npos; }

    // A grant (or an extension) whose script was sent at `sent`.
    void add(lease_watch& w, clock::time_point sent);
    void remove(lease_watch& w) noexcept;
    template <class F>
    void for_each(F f) const {
        for (auto* w : watched_)
            f(*w);
    }
    // The earliest time anything in `w` needs attention.
    static clock::time_point next_event(const lease_watch& w) noexcept;

    // What is lost and what is due at `now`, and when to look again.
    void make_plan(clock::time_point now, plan& out);

    // The renewal of `w`, sent at `sent`, answered at `now`: `renewed` is Redis' answer, `acks`
    // the replicas the WAIT behind it counted (-1: WAIT failed). Returns the loss: lease_lost if
    // the key was gone or taken or the answer came too late, replicas_not_synced if fewer than
    // `w.replicas` acknowledged, else {}.
    error_code on_renewed(lease_watch& w, clock::time_point sent, clock::time_point now,
                          bool renewed,
                          std::int64_t acks = std::numeric_limits<std::int64_t>::max()) noexcept;
    // The renewal's outcome is unknown (an error): try again soon; the deadline decides.
    void on_renew_failed(lease_watch& w, clock::time_point now) noexcept;
    // The connection came up again, perhaps on another server (a Sentinel failover, a restart):
    // every watchdog lease not being renewed is due at `now`, so that one that server does not
    // have is reported lost within a round trip instead of at its next lease/3 tick.
    void renew_all_now(clock::time_point now) noexcept;

private:
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    static void extend(lease_watch& w, clock::time_point sent) noexcept;
    std::vector<lease_watch*> watched_;
};

} // namespace corolock::detail

#endif
