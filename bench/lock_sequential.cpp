// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Sequential acquire + release loops, each coroutine on its own name, over one connection:
//   - uncontended, awaited release, at 1, 50 and 256 coroutines, with a fixed lease and with the
//     default options (watchdog), each run beside redis-benchmark running the same scripts
//     (lock_reference.cpp); printed as median [min-max] of the runs, with client CPU, posts,
//     handlers and system calls per cycle (io_events.hpp);
//   - release by dropping the lease against awaiting it, 1 and 50 coroutines.
#include "lock.hpp"
#include <corolock/lease.hpp>

#include <iomanip>
#include <iostream>

namespace corolock::bench {

corolock::mutex_options fixed_options() {
    corolock::mutex_options mo;
    mo.lease = fixed_lease;
    mo.watchdog = false;
    return mo;
}

const char* to_string(release_mode m) {
    switch (m) {
    case release_mode::await:
        return "await async_release";
    case release_mode::drop:
        return "drop the lease";
    case release_mode::cheapest:
        return "the cheapest safe cycle";
    }
    return "?";
}

std::vector<const loop_result*> lock_figures::runs(const std::vector<loop_result>& v, int k,
                                                   bool watchdog, release_mode mode) const {
    std::vector<const loop_result*> out;
    for (const auto& u : v)
        if (u.coroutines == k && u.watchdog == watchdog && u.mode == mode)
            out.push_back(&u);
    return out;
}

const loop_result* lock_figures::find(const std::vector<loop_result>& v, int k, bool watchdog,
                                      release_mode mode) const {
    const auto all = runs(v, k, watchdog, mode);
    return all.empty() ? nullptr : all.front();
}

const depth_reference* lock_figures::ref_for(int depth, int run) const {
    for (const auto& r : refs)
        if (r.depth == depth && r.run == run)
            return &r;
    return nullptr;
}

double lock_figures::limit_for(int depth, int run) const {
    const auto* r = ref_for(depth, run);
    return r ? r->limit() : missing;
}

namespace {

asio::awaitable<void> cycle_worker(corolock::mutex& m, release_mode mode, crew& c,
                                   std::uint64_t& cycles) {
    while (!c.stop) {
        auto [ec, l] = co_await m.async_acquire(tuple_deferred);
        if (ec) {
            c.note(ec, "acquire");
            co_await sleep_for(10ms); // a broken connection fails fast: do not spin on it
            continue;
        }
        if (mode == release_mode::await) {
            auto [ec2] = co_await l.async_release(tuple_deferred);
            if (ec2) {
                c.note(ec2, "release");
                co_await sleep_for(10ms);
                continue;
            }
        } else {
            // The destructor sends the owner-checked release without waiting; the next acquire
            // is queued behind it on the same connection.
            l = corolock::lease{};
        }
        ++cycles;
    }
}

const corolock::script& compare_and_delete() {
    static const corolock::script s(
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
        "return 0");
    return s;
}

// The reference of the server's work: the cheapest cycle that is still safe (an owner per
// acquisition, a TTL, an owner-checked release), on the same connection as corolock's loops.
asio::awaitable<void> cheapest_worker(corolock::connection& conn, std::string name, crew& c,
                                      std::uint64_t& cycles) {
    corolock::generic_response resp;
    for (std::uint64_t n = 0; !c.stop; ++n) {
        const std::string owner = name + ":" + std::to_string(n);
        corolock::request set;
        set.push("SET", name, owner, "NX", "PX", "10000");
        auto [ec, n_] = co_await conn.async_exec(set, resp, tuple_deferred);
        const std::string_view key = name, arg = owner;
        if (!ec)
            std::tie(ec) = co_await conn.async_eval(compare_and_delete(), std::span(&key, 1),
                                                    std::span(&arg, 1), resp, tuple_deferred);
        if (ec) {
            c.note(ec, "cheapest cycle");
            co_await sleep_for(10ms);
            continue;
        }
        ++cycles;
    }
}

// What a perfect client could reach, from the reference measured in the same run: the
// dropped loop pays one acquire round trip per cycle, the awaited loop an acquire and a release.
double drop_speedup_bound(const depth_reference& r) {
    return (1.0 / r.acquire.rps + 1.0 / r.release.rps) / (1.0 / r.acquire.rps);
}

// The figures printed per run of an uncontended loop, paired with its own reference.
double rate(const loop_result& r, const depth_reference*) {
    return r.cycles_per_s();
}
double ratio(const loop_result& r, const depth_reference* ref) {
    return ref ? r.cycles_per_s() / ref->limit() : missing;
}
double limit(const loop_result&, const depth_reference* ref) {
    return ref ? ref->limit() : missing;
}
double cpu(const loop_result& r, const depth_reference*) {
    return r.cpu_us_per_cycle();
}
double ref_cpu(const loop_result&, const depth_reference* ref) {
    return ref ? ref->client_cpu_us_per_cycle() : missing;
}

std::size_t index_of(int k) {
    for (std::size_t i = 0; i < std::size(uncontended_counts); ++i)
        if (uncontended_counts[i] == k)
            return i;
    return 0;
}

const loop_result* cheapest_for(const lock_figures& f, int k, int run) {
    for (const auto& c : f.cheapest)
        if (c.coroutines == k && c.run == run)
            return &c;
    return nullptr;
}

// Per run of a fixed-lease loop: its server CPU per cycle over the cheapest safe cycle's.
spread server_work(const lock_figures& f, int k) {
    std::vector<double> v;
    for (const auto* r : f.runs(f.uncontended, k, false, release_mode::await))
        if (const auto* c = cheapest_for(f, k, r->run))
            v.push_back(r->server_cpu_us_per_cycle() / c->server_cpu_us_per_cycle());
    return spread_of(std::move(v));
}

spread of_cheapest(const lock_figures& f, int k, double (*g)(const loop_result&)) {
    std::vector<double> v;
    for (const auto& c : f.cheapest)
        if (c.coroutines == k)
            v.push_back(g(c));
    return spread_of(std::move(v));
}

double server_us(const loop_result& r) {
    return r.server_cpu_us_per_cycle();
}
double busy(const loop_result& r) {
    return r.elapsed_s > 0 ? r.server_cpu_s / r.elapsed_s : missing;
}
// cycles/s over what the server's CPU per cycle allows.
double bound_share(const loop_result& r) {
    return r.cycles_per_s() * r.server_cpu_us_per_cycle() / 1e6;
}

void print_server_work(std::ostream& os, const lock_figures& f) {
    if (f.cheapest.empty())
        return;
    os << "  server CPU us per cycle, median [min-max] of the runs: corolock (fixed lease) "
          "against the cheapest safe cycle\n"
          "  (SET NX PX + Lua compare-and-delete, same connection, same run); the server's busy "
          "share; cycles/s over 1 / server CPU per cycle\n"
       << "  coroutines  corolock us      cheapest us      work ratio            busy "
          "corolock/cheapest  of the bound\n";
    for (const int k : uncontended_counts) {
        const auto runs = f.runs(f.uncontended, k, false, release_mode::await);
        if (runs.empty())
            continue;
        const auto mine = f.over_runs(
            k, false, [](const loop_result& r, const depth_reference*) { return server_us(r); });
        const auto mine_busy = f.over_runs(
            k, false, [](const loop_result& r, const depth_reference*) { return busy(r); });
        const auto share = f.over_runs(
            k, false, [](const loop_result& r, const depth_reference*) { return bound_share(r); });
        os << "  " << std::setw(10) << k << "  " << std::setw(15) << show_spread(mine, 2) << "  "
           << std::setw(15) << show_spread(of_cheapest(f, k, server_us), 2) << "  " << std::setw(20)
           << show_spread(server_work(f, k), 3) << "  " << std::setw(4) << show(mine_busy.median, 2)
           << " / " << show(of_cheapest(f, k, busy).median, 2) << "       " << show_spread(share, 3)
           << "\n";
    }
    for (const int k : uncontended_counts)
        if (!f.runs(f.uncontended, k, false, release_mode::await).empty())
            os << "  server work at " << std::setw(3) << k << " over the cheapest (median) "
               << against(server_work(f, k).median, 3, "<=", target_server_work) << "\n";
    for (const int k : {50, 256})
        if (!f.runs(f.uncontended, k, false, release_mode::await).empty())
            os << "  cycles/s at " << std::setw(3) << k
               << " over 1 / server CPU per cycle (median) "
               << against(f.over_runs(k, false,
                                      [](const loop_result& r, const depth_reference*) {
                                          return bound_share(r);
                                      })
                              .median,
                          3, ">=", target_server_bound)
               << "\n";
}

} // namespace

asio::awaitable<loop_result> run_loop(corolock::connection& conn, const io_event_counter& counter,
                                      int coroutines, bool watchdog, release_mode mode,
                                      double seconds, int run) {
    auto ex = co_await asio::this_coro::executor;
    crew c;
    std::uint64_t cycles = 0;
    const auto mo = watchdog ? corolock::mutex_options{} : fixed_options();
    const std::string prefix = std::string("bench:u:") + (watchdog ? "w:" : "f:") +
                               (mode == release_mode::await ? "a:" : "d:");
    std::vector<std::unique_ptr<corolock::mutex>> mutexes;
    for (int i = 0; i < coroutines; ++i) {
        if (mode == release_mode::cheapest) {
            c.spawn(ex, cheapest_worker(conn, "bench:c:" + std::to_string(i), c, cycles));
            continue;
        }
        mutexes.push_back(std::make_unique<corolock::mutex>(conn, prefix + std::to_string(i), mo));
        c.spawn(ex, cycle_worker(*mutexes.back(), mode, c, cycles));
    }

    co_await sleep_for(lock_warmup);
    co_await reset_server_stats(conn);
    const auto server0 = co_await read_server_stats(conn);
    const auto st0 = conn.stats();
    const auto cycles0 = cycles;
    const auto errors0 = c.errors;
    const auto ev0 = counter.read();
    const auto cpu0 = process_cpu_us();
    const auto t0 = clock_type::now();
    co_await sleep_for(seconds_of(seconds));
    const auto t1 = clock_type::now();
    const auto cpu1 = process_cpu_us();
    const auto ev1 = counter.read();
    const auto cycles1 = cycles;
    const auto errors1 = c.errors;
    const auto st1 = conn.stats();
    loop_result r;
    r.server = co_await read_server_stats(conn);
    {
        // System calls: a window of their own (see syscall_counter), a quarter of the timed one.
        const syscall_counter sc;
        const auto s0 = sc.read();
        const auto k0 = cycles;
        co_await sleep_for(seconds_of(seconds / 4));
        r.syscalls = sc.read() - s0;
        r.syscall_cycles = cycles - k0;
    }
    co_await c.finish();

    r.coroutines = coroutines;
    r.run = run;
    r.events = ev1 - ev0;
    r.watchdog = watchdog;
    r.mode = mode;
    r.cycles = cycles1 - cycles0;
    r.errors = errors1 - errors0;
    r.elapsed_s = seconds_between(t0, t1);
    r.cpu_us = cpu1 - cpu0;
    r.commands = st1.commands - st0.commands;
    r.writes = st1.writes - st0.writes;
    r.pushes = st1.pushes - st0.pushes;
    r.server_cpu_s = r.server.cpu_s - server0.cpu_s;
    r.first_error = c.first_error;
    co_return r;
}

void print_uncontended(std::ostream& os, const lock_figures& f, std::uint64_t& errors) {
    std::size_t runs = 0;
    for (const auto& u : f.uncontended)
        runs = std::max<std::size_t>(runs, std::size_t(u.run) + 1);
    os << "\n1. uncontended acquire + awaited release, each coroutine its own name; " << runs
       << " run(s) of each, each run followed by its reference:\n"
       << "   median [min-max] of the runs; the ratio is taken per run against that run's "
          "limit\n"
       << "  coroutines  lease     cycles/s                 reference limit          "
          "ratio\n";
    for (const int k : uncontended_counts) {
        for (const bool wd : {false, true}) {
            if (f.runs(f.uncontended, k, wd, release_mode::await).empty())
                continue;
            os << "  " << std::setw(10) << k << "  " << std::setw(8) << (wd ? "watchdog" : "fixed")
               << "  " << std::setw(23) << show_spread(f.over_runs(k, wd, rate), 0) << "  "
               << std::setw(23) << show_spread(f.over_runs(k, wd, limit), 0) << "  "
               << show_spread(f.over_runs(k, wd, ratio), 3) << "\n";
        }
    }
    for (const int k : uncontended_counts)
        if (!f.runs(f.uncontended, k, false, release_mode::await).empty())
            os << "  ratio at " << std::setw(3) << k << ", fixed lease (median)   "
               << against(f.over_runs(k, false, ratio).median, 3, ">=", target_ratio[index_of(k)])
               << "\n";
    print_server_work(os, f);
    if (!f.runs(f.uncontended, 1, false, release_mode::await).empty())
        os << "  client CPU us per cycle at 1, fixed lease (median) "
           << against(f.over_runs(1, false, cpu).median, 1, "<=", target_client_cpu_us_1) << "\n";

    os << "  per cycle, median [min-max] of the runs: client CPU us (getrusage, whole process) "
          "[redis-benchmark's CPU us for the same two scripts]\n";
    for (const int k : uncontended_counts)
        for (const bool wd : {false, true})
            if (!f.runs(f.uncontended, k, wd, release_mode::await).empty())
                os << "  " << std::setw(10) << k << "  " << std::setw(8)
                   << (wd ? "watchdog" : "fixed") << "  " << std::setw(20)
                   << show_spread(f.over_runs(k, wd, cpu), 1) << "  ["
                   << show_spread(f.over_runs(k, wd, ref_cpu), 1) << "]\n";

    os << "  per cycle, median of the runs: posts (io_context + strand), dispatches, timer waits, "
          "socket ops, handlers run, send/recv attempts,\n"
          "  system calls, wake-ups (voluntary context switches) of the io_context's thread; "
          "commands, pushes, commands per write; server CPU us [reference]\n";
    auto med = [&](int k, bool wd, auto field) {
        return f
            .over_runs(k, wd,
                       [&](const loop_result& r, const depth_reference*) {
                           return field(r.events_per_cycle());
                       })
            .median;
    };
    for (const int k : uncontended_counts) {
        for (const bool wd : {false, true}) {
            if (f.runs(f.uncontended, k, wd, release_mode::await).empty())
                continue;
            const auto server =
                f.over_runs(k, wd, [](const loop_result& r, const depth_reference*) {
                    return r.server_cpu_us_per_cycle();
                });
            const auto ref_server =
                f.over_runs(k, wd, [](const loop_result&, const depth_reference* ref) {
                    return ref ? ref->acquire.server_cpu_us + ref->release.server_cpu_us : missing;
                });
            const auto per = [&](auto field) {
                return f
                    .over_runs(
                        k, wd,
                        [&](const loop_result& r, const depth_reference*) { return field(r); })
                    .median;
            };
            os << "  " << std::setw(10) << k << "  " << std::setw(8) << (wd ? "watchdog" : "fixed")
               << "  posts " << show(med(k, wd, [](const io_events& e) { return e.posts(); }), 2)
               << " (" << show(med(k, wd, [](const io_events& e) { return e.io_posts; }), 2)
               << " + " << show(med(k, wd, [](const io_events& e) { return e.strand_posts; }), 2)
               << "), dispatches "
               << show(med(k, wd, [](const io_events& e) { return e.dispatches; }), 2)
               << ", timer waits "
               << show(med(k, wd, [](const io_events& e) { return e.timer_waits; }), 2)
               << ", socket ops "
               << show(med(k, wd, [](const io_events& e) { return e.socket_ops; }), 2)
               << ", handlers "
               << show(med(k, wd, [](const io_events& e) { return e.handlers; }), 2)
               << ", send/recv "
               << show(med(k, wd, [](const io_events& e) { return e.io_attempts; }), 2) << "\n  "
               << std::setw(20) << ""
               << "  syscalls "
               << show(med(k, wd, [](const io_events& e) { return e.syscalls; }), 2)
               << ", wake-ups " << show(med(k, wd, [](const io_events& e) { return e.wakeups; }), 2)
               << "; commands "
               << show(per([](const loop_result& r) { return r.per_cycle(r.commands); }), 2)
               << ", pushes "
               << show(per([](const loop_result& r) { return r.per_cycle(r.pushes); }), 2)
               << ", per write "
               << show(per([](const loop_result& r) { return r.commands_per_write(); }), 1)
               << "; server CPU us " << show(server.median, 2) << " [" << show(ref_server.median, 2)
               << "]\n";
        }
    }
    if (!f.events_note.empty())
        os << "  note: " << f.events_note << "\n";
    for (const auto& u : f.uncontended) {
        errors += u.errors;
        if (!u.first_error.empty())
            os << "  first error (" << u.coroutines << ", " << (u.watchdog ? "watchdog" : "fixed")
               << ", run " << u.run + 1 << "): " << u.first_error << "\n";
    }
    os << "  reference: redis-benchmark -c 1 -P <coroutines> -r 100000 EVALSHA <script> "
          "(same scripts and arguments, same server); limit = 1/(1/acquire + 1/release)\n";
    for (const auto& r : f.refs)
        os << "    -P " << std::setw(3) << r.depth << " run " << r.run + 1 << ": acquire "
           << show(r.acquire.rps, 0) << "/s (server " << show(r.acquire.server.usec_per_call, 2)
           << " us/call, CPU " << show(r.acquire.server_cpu_us, 2) << " us/req), release "
           << show(r.release.rps, 0) << "/s (server " << show(r.release.server.usec_per_call, 2)
           << " us/call, CPU " << show(r.release.server_cpu_us, 2) << " us/req), "
           << r.acquire.requests << " requests each" << (r.note.empty() ? "" : "; note: " + r.note)
           << "\n";
    if (!f.ref_note.empty())
        os << "  note: " << f.ref_note << "\n";
}

void json_uncontended(json_line& j, const lock_figures& f) {
    for (const int k : uncontended_counts) {
        const std::string p = "uncontended_" + std::to_string(k);
        const auto put = [&](const std::string& key, const spread& s) {
            j.num(key, s.median).num(key + "_min", s.min).num(key + "_max", s.max);
        };
        const auto field = [&](bool wd, auto g) {
            return f.over_runs(
                k, wd, [&](const loop_result& r, const depth_reference* ref) { return g(r, ref); });
        };
        const auto ev = [&](bool wd, auto g) {
            return field(wd, [&](const loop_result& r,
                                 const depth_reference*) { return g(r.events_per_cycle()); })
                .median;
        };
        put(p + "_cycles_per_s", f.over_runs(k, false, rate));
        put(p + "_ratio", f.over_runs(k, false, ratio));
        put(p + "_watchdog_cycles_per_s", f.over_runs(k, true, rate));
        put(p + "_watchdog_ratio", f.over_runs(k, true, ratio));
        put(p + "_reference_limit", f.over_runs(k, false, limit));
        put(p + "_client_cpu_us_per_cycle", f.over_runs(k, false, cpu));
        put(p + "_watchdog_client_cpu_us_per_cycle", f.over_runs(k, true, cpu));
        put(p + "_reference_client_cpu_us_per_cycle", f.over_runs(k, false, ref_cpu));
        for (const bool wd : {false, true}) {
            const std::string q = p + (wd ? "_watchdog" : "");
            j.num(q + "_posts_per_cycle", ev(wd, [](const io_events& e) { return e.posts(); }))
                .num(q + "_handlers_per_cycle",
                     ev(wd, [](const io_events& e) { return e.handlers; }))
                .num(q + "_timer_waits_per_cycle",
                     ev(wd, [](const io_events& e) { return e.timer_waits; }))
                .num(q + "_syscalls_per_cycle",
                     ev(wd, [](const io_events& e) { return e.syscalls; }))
                .num(q + "_wakeups_per_cycle",
                     ev(wd, [](const io_events& e) { return e.wakeups; }));
        }
        j.num(p + "_reference_acquire_rps",
              field(false, [](const loop_result&,
                              const depth_reference* r) { return r ? r->acquire.rps : missing; })
                  .median)
            .num(p + "_reference_release_rps",
                 field(false, [](const loop_result&,
                                 const depth_reference* r) { return r ? r->release.rps : missing; })
                     .median)
            .num(p + "_server_us_per_script",
                 field(false, [](const loop_result& r,
                                 const depth_reference*) { return r.server.usec_per_call; })
                     .median)
            .num(p + "_server_cpu_us_per_cycle",
                 field(false, [](const loop_result& r,
                                 const depth_reference*) { return r.server_cpu_us_per_cycle(); })
                     .median)
            .num(p + "_commands_per_cycle",
                 field(false, [](const loop_result& r,
                                 const depth_reference*) { return r.per_cycle(r.commands); })
                     .median)
            .num(p + "_pushes_per_cycle",
                 field(false, [](const loop_result& r,
                                 const depth_reference*) { return r.per_cycle(r.pushes); })
                     .median)
            .num(p + "_commands_per_write",
                 field(false, [](const loop_result& r, const depth_reference*) {
                     return r.commands_per_write();
                 }).median);
        double errs = 0;
        for (const auto* r : f.runs(f.uncontended, k, false, release_mode::await))
            errs += double(r->errors);
        for (const auto* r : f.runs(f.uncontended, k, true, release_mode::await))
            errs += double(r->errors);
        j.num(p + "_errors", errs);
        put(p + "_server_work_ratio", server_work(f, k));
        put(p + "_cheapest_server_cpu_us_per_cycle", of_cheapest(f, k, server_us));
        put(p + "_cheapest_cycles_per_s",
            of_cheapest(f, k, [](const loop_result& r) { return r.cycles_per_s(); }));
        put(p + "_server_busy",
            f.over_runs(k, false,
                        [](const loop_result& r, const depth_reference*) { return busy(r); }));
        put(p + "_server_bound_share",
            f.over_runs(k, false, [](const loop_result& r, const depth_reference*) {
                return bound_share(r);
            }));
    }
}

void print_drop(std::ostream& os, const lock_figures& f, std::uint64_t& errors) {
    os << "\n2. sequential acquire + release, default options (watchdog), each coroutine "
          "its own name:\n"
          "   release by dropping the lease (no await) against awaiting async_release\n"
       << "  coroutines  awaited cycles/s  dropped cycles/s  speedup  client CPU us/cycle "
          "awaited/dropped  commands/write awaited/dropped\n";
    for (const int k : drop_counts) {
        const auto* aw = f.find(f.drop, k, true, release_mode::await);
        const auto* dr = f.find(f.drop, k, true, release_mode::drop);
        if (!aw || !dr)
            continue;
        os << "  " << std::setw(10) << k << "  " << std::setw(16) << show(aw->cycles_per_s(), 0)
           << "  " << std::setw(16) << show(dr->cycles_per_s(), 0) << "  " << std::setw(7)
           << show(dr->cycles_per_s() / aw->cycles_per_s(), 2) << "  " << std::setw(18)
           << (show(aw->cpu_us_per_cycle(), 2) + " / " + show(dr->cpu_us_per_cycle(), 2)) << "  "
           << std::setw(16)
           << (show(aw->commands_per_write(), 1) + " / " + show(dr->commands_per_write(), 1))
           << "\n";
    }
    const auto* aw1 = f.find(f.drop, 1, true, release_mode::await);
    const auto* dr1 = f.find(f.drop, 1, true, release_mode::drop);
    os << "  speedup at 1 coroutine      "
       << against(aw1 && dr1 ? dr1->cycles_per_s() / aw1->cycles_per_s() : missing, 2,
                  ">=", target_drop_speedup_1)
       << "\n";
    // A dropped-lease cycle still waits for one acquire round trip: when the server's acquire
    // costs more than its release, even a perfect client stays under 2.
    if (const auto* r = f.ref_for(1))
        os << "  bound from the reference at -P 1 (acquire + release round trip over the "
              "acquire's alone) "
           << show(drop_speedup_bound(*r), 2) << "; speedup / bound "
           << show(aw1 && dr1 ? dr1->cycles_per_s() / aw1->cycles_per_s() / drop_speedup_bound(*r)
                              : missing,
                   2)
           << "\n";
    for (const auto& u : f.drop) {
        errors += u.errors;
        if (!u.first_error.empty())
            os << "  first error (" << u.coroutines << ", " << to_string(u.mode)
               << "): " << u.first_error << "\n";
    }
}

void json_drop(json_line& j, const lock_figures& f) {
    for (const int k : drop_counts) {
        const std::string p = "release_" + std::to_string(k);
        const auto* aw = f.find(f.drop, k, true, release_mode::await);
        const auto* dr = f.find(f.drop, k, true, release_mode::drop);
        const double a = aw ? aw->cycles_per_s() : missing;
        const double d = dr ? dr->cycles_per_s() : missing;
        j.num(p + "_awaited_cycles_per_s", a)
            .num(p + "_dropped_cycles_per_s", d)
            .num(p + "_drop_speedup", d / a)
            .num(p + "_drop_speedup_bound",
                 f.ref_for(1) ? drop_speedup_bound(*f.ref_for(1)) : missing)
            .num(p + "_awaited_client_cpu_us_per_cycle", aw ? aw->cpu_us_per_cycle() : missing)
            .num(p + "_dropped_client_cpu_us_per_cycle", dr ? dr->cpu_us_per_cycle() : missing);
    }
}

} // namespace corolock::bench
