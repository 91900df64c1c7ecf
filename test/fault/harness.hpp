// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The fault suite's shared harness: worker histories, the fenced resource, the checkers and the
// failure report. Test-only code.
//
// The shape of a scenario:
//   fenced_resource res;                 // its own redis-server, never faulted
//   redis_process locks;                 // the server the faults hit
//   temp_dir dir;  schedule faults;
//   worker_process w("counter", opts.args()); // counter_options: the S1 workload (below)
//   ... faults.note("SIGKILL redis"); locks.kill(); locks.start(); ...
//   auto h = parse_sections(dir.read_all());  // every worker's critical sections
//   check with find_overlaps, check_fencing, check_liveness, orphan_keys and
//   fenced_resource::counter() (lost updates); if current_test_failed(), report_failure(...).
// Scenario files define their own workers with COROLOCK_FAULT_WORKER and worker_io.
//
// A history line is `kind`, then tab-separated `key=value` fields; `cs` lines are critical
// sections (see `section`), any other kind is free-form (a worker's `stats` line, for instance).
// Times are monotonic_ns() (CLOCK_MONOTONIC), which every process on the host shares.
#ifndef COROLOCK_TEST_FAULT_HARNESS_HPP
#define COROLOCK_TEST_FAULT_HARNESS_HPP

#include "common/redis_process.hpp"
#include "worker.hpp"
#include <corolock/config.hpp>
#include <corolock/connection.hpp>
#include <corolock/error.hpp>
#include <corolock/lease.hpp>
#include <corolock/mutex.hpp>
#include <corolock/script.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::fault {

// ---- history -----------------------------------------------------------------------------

// One line of a history: its kind and its fields.
struct record {
    std::string kind;
    std::map<std::string, std::string> fields;

    // The field as a number (0 if missing or not a number).
    std::int64_t num(const std::string& key) const;
    // The field as text ("" if missing).
    std::string text(const std::string& key) const;
};

// Formats one line (with its trailing newline); values must not contain tabs or newlines.
std::string format_record(const record& r);
// Parses one line; nullopt for an empty or malformed one.
std::optional<record> parse_record(std::string_view line);

// One critical section, or one failed acquire (enter_ns == 0).
struct section {
    int worker = 0;   // worker process id given by the scenario
    int coro = 0;     // coroutine within the worker
    std::string lock; // lock name
    std::uint64_t token = 0;
    std::int64_t enter_ns = 0;   // the acquire completed
    std::int64_t exit_ns = 0;    // the body ended, just before the release was called
    std::int64_t release_ns = 0; // the release completed
    std::string outcome;         // ok | lost (told by the time its release completed) | error:..
    std::int64_t lost_ns = 0;    // when async_wait_lost reported the loss (0: never)
    std::string release;         // ok | lease_lost | max_hold_reached | <error> ("" if none)
    int fenced = -1;             // fenced write: 1 accepted, 0 refused (stale), -1 none or error
    bool wrote = false;          // the body wrote the plain counter (see slow_increment)

    bool acquired() const noexcept { return enter_ns != 0; }
    bool lost() const noexcept { return outcome == "lost"; }

    record to_record() const;
    static section from_record(const record& r);
};

// The sections of one lock.
std::vector<section> only_lock(const std::vector<section>& history, const std::string& lock);
// Sections (`cs` lines) of a history text, in order; other lines are skipped.
std::vector<section> parse_sections(std::string_view text);
// All records of a history text.
std::vector<record> parse_records(std::string_view text);

// A worker's history: appends one line per call with a single write(2), so a SIGKILLed worker
// loses nothing it has written. Path "-" means stdout.
class history_writer {
public:
    explicit history_writer(const std::string& path);
    ~history_writer();
    history_writer(const history_writer&) = delete;
    history_writer& operator=(const history_writer&) = delete;
    void write(const record& r);
    void write(const section& s) { write(s.to_record()); }

private:
    int fd_ = -1;
    bool owned_ = false;
};

// A private directory for the workers' history files, removed on destruction (kept, and its
// path printed, if the environment sets COROLOCK_KEEP_FAULT_DIR).
class temp_dir {
public:
    temp_dir();
    ~temp_dir();
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    const std::string& path() const noexcept { return path_; }
    // path()/name
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    // Every file's content, concatenated (histories of all workers).
    std::string read_all() const;

private:
    std::string path_;
};

std::string read_file(const std::string& path);

// ---- faults and reports ------------------------------------------------------------------

// The fault schedule: what the scenario did and when, relative to its start.
class schedule {
public:
    schedule() : start_ns_(monotonic_ns()) {}
    std::int64_t start_ns() const noexcept { return start_ns_; }
    // Records `what` now and returns the time (monotonic_ns).
    std::int64_t note(const std::string& what);
    // One line per event: "+1234.5 ms  what".
    std::string str() const;

private:
    std::int64_t start_ns_;
    std::vector<std::pair<std::int64_t, std::string>> events_;
};

// Whether the running Boost.Test case has failed so far.
bool current_test_failed();

// Prints (to stderr) the seed, the fault schedule, the last `tail` critical sections of the
// history in enter order (times relative to the schedule's start) and the failed acquires by
// outcome. Call it when current_test_failed().
void report_failure(const std::string& scenario, std::uint64_t seed, const schedule& faults,
                    const std::vector<section>& history, std::size_t tail = 60);

// A seed for a scenario's randomness: COROLOCK_FAULT_SEED if set, else random.
std::uint64_t pick_seed();

double to_ms(std::int64_t ns) noexcept;
// Nanoseconds as milliseconds with one decimal, for messages: "881.1".
std::string ms_text(std::int64_t ns);

// ---- servers and connections -------------------------------------------------------------

// A connection to 127.0.0.1:port tuned for fault tests: faults are noticed and repaired within
// a few hundred milliseconds (health check 200 ms, reconnect 20..200 ms, connect timeout 1 s).
connection_config fault_config(std::uint16_t port);
// The same through Sentinel: `sentinel_ports` comma-separated (127.0.0.1), master `m1`, a
// Sentinel answer within 300 ms, requests waiting up to 10 s for the master (a failover).
connection_config sentinel_fault_config(const std::string& sentinel_ports);

// A worker's I/O: one io_context (run by the worker's thread), a connection to the lock server
// and one to the resource server. The resource connection has no health check: that server is
// never faulted, and a paused worker keeps the connection when resumed.
struct worker_io {
    // `lock_health_check` replaces fault_config's interval on the lock connection (zero: keep
    // it), for scenarios with no faults whose load delays a PONG past 200 ms.
    worker_io(std::uint16_t lock_port, std::uint16_t res_port,
              std::chrono::steady_clock::duration lock_health_check = {});
    boost::asio::io_context ioc;
    connection locks;
    connection res;
    // Starts both connections, runs `body` and stops them; returns once the io_context has
    // drained (so nothing, not even a watchdog, is left behind). An exception from the body is
    // printed to stderr and gives false.
    bool run(std::function<boost::asio::awaitable<void>()> body);
};

// The raw-RESP2 replies of redis_process::command: every string or integer in `raw`, in order
// (nested arrays are flattened; nulls are skipped).
std::vector<std::string> reply_values(std::string_view raw);

// Keys left on the lock server that are not fence keys (`...:fence`, kept by design): locks
// that nobody released and whose lease has not run out. Uses SCAN.
std::vector<std::string> orphan_keys(const test::redis_process& locks);

// ---- the fenced resource -----------------------------------------------------------------

// A resource on its own redis-server that is never faulted. A writer presents its fencing
// token; `fenced_write` accepts only a token greater than every token accepted before (keys
// `<name>:max`, `<name>:log` (accepted tokens, in order), `<name>:value` (sum of payloads)).
// Workers also keep a plain counter there (`<name>:counter`, a non-atomic GET then SET), for
// lost updates.
class fenced_resource {
public:
    explicit fenced_resource(std::string name = "res");
    test::redis_process& server() noexcept { return srv_; }
    std::uint16_t port() const noexcept { return srv_.port(); }
    const std::string& name() const noexcept { return name_; }

    // For `name` (default: this resource's name; one server can hold several resources):
    std::int64_t counter(std::string_view name = {}) const; // <name>:counter (0 if missing)
    std::int64_t value(std::string_view name = {}) const;   // <name>:value
    std::vector<std::uint64_t> accepted(std::string_view name = {}) const; // <name>:log

private:
    test::redis_process srv_;
    std::string name_;
};

// The script, for workers: KEYS = <name>:max, <name>:log, <name>:value; ARGV = token, payload.
const script& fenced_write_script();

// From a worker, through its connection to the resource server: 1 accepted, 0 refused (a
// token not above the last accepted one). Throws system_error on an error.
boost::asio::awaitable<int> fenced_write(connection& res, const std::string& name,
                                         std::uint64_t token, std::int64_t payload);
// The non-atomic increment of <name>:counter: GET, a pause of `pause`, SET. Code called from a
// critical section, as an application nests it: it takes a nested hold of the caller's lease
// (no round trip) instead of acquiring again, and does not write once the hold is no longer
// valid (reported lost or past its local deadline): returns whether it wrote.
boost::asio::awaitable<bool> slow_increment(connection& res, const std::string& name,
                                            std::chrono::microseconds pause, const lease& holder);
// The fenced write of a critical section, nested the same way: a hold of `holder`, checked
// valid, whose token (the lease's) is presented. -1 when the hold was no longer valid (nothing
// sent), else as fenced_write.
boost::asio::awaitable<int> fenced_increment(connection& res, const std::string& name,
                                             const lease& holder);

// ---- checkers ----------------------------------------------------------------------------

struct overlap_result {
    std::size_t sections = 0;          // acquired sections checked
    std::size_t overlaps = 0;          // pairs (a, b) of one lock with a.enter < b.enter < a.exit
    std::vector<std::string> examples; // the first few, readable
};
// Overlapping critical sections per lock; with `skip_lost`, only among sections whose lease was
// never reported lost.
overlap_result find_overlaps(const std::vector<section>& history, bool skip_lost);
// Overlapping critical sections per lock whose earlier holder had not been told of its loss
// (async_wait_lost) before the later one entered: the overlaps nobody could act on.
overlap_result find_unreported_overlaps(const std::vector<section>& history);

struct fencing_result {
    std::size_t tokens_checked = 0; // tokens of acquired sections
    std::size_t accepted = 0;       // entries of the resource's log
    std::size_t refused = 0;        // writes refused as stale
    std::vector<std::string> problems;
};
// The resource's log strictly increases and holds exactly the tokens of the accepted writes;
// tokens handed out never repeat per lock and increase in enter order among sections never
// reported lost; a write is refused only from a section that was told its lease was lost.
fencing_result check_fencing(const std::vector<section>& history,
                             const std::vector<std::uint64_t>& log);

// Problems with liveness: each worker in [0, workers) completed at least `min_ok` sections
// with outcome ok.
std::vector<std::string> check_liveness(const std::vector<section>& history, int workers,
                                        std::size_t min_ok);

// Figures of a history, for BOOST_TEST_MESSAGE.
struct history_counts {
    std::size_t acquired = 0, ok = 0, lost = 0, failed_acquires = 0, errors = 0;
    // Releases that answered: ok, lease_lost or max_hold_reached (lost before or found lost at
    // the release), anything else.
    std::size_t released_ok = 0, released_lost = 0, released_other = 0;
};
history_counts count(const std::vector<section>& history);

// ---- the counter worker (registered as "counter") ----------------------------------------

// `coros` coroutines share the worker's one mutex handle on `lock` (watchdog lease `lease`), as
// the request handlers of a server share a `std::mutex`. Each repeats until `iterations`
// sections are done (0: no limit) or monotonic time `until_ns` passes: acquire a lease (waiting
// at most `acquire_wait`), slow_increment (a random pause of up to `pause`), then
// fenced_increment (the lease's token, payload 1), both through nested holds of the lease and
// skipped once it is no longer valid (a well-behaved holder), and release the lease. Each
// section or failed acquire is one `cs` line in `history`; a last `stats` line gives the
// worker's lock_stats, connects, the leases the library still watches (`held`) and its waiting
// acquires (`waiting`), both 0 once every coroutine is done. Exit status 0, or 1 when something
// unexpected happened (an error outside the lock, a lease or waiter left behind, a hang).
struct counter_options {
    int worker = 0;
    std::uint16_t lock_port = 0;
    std::uint16_t res_port = 0;
    std::string lock = "lock:counter";
    std::string resource = "res";
    std::string history;
    int coros = 16;
    int iterations = 50;
    std::int64_t until_ns = 0; // 0: now + 60 s
    std::chrono::milliseconds lease{1000};
    std::chrono::milliseconds acquire_wait{10000};
    std::chrono::microseconds pause{2000};
    std::uint64_t seed = 1;

    std::vector<std::string> args() const;
    static counter_options parse(const std::vector<std::string>& args);
};

// The counter worker's state, for workers of other scenarios that run its loop on locks of
// their own (several names, a cluster).
struct counter_context {
    counter_options o;
    std::int64_t until_ns = 0;
    connection& res;
    history_writer& out;
    int unexpected = 0; // errors outside the lock
};
// One coroutine of the counter worker (its loop, as described above) on `m`, a handle on
// `cx.o.lock`; `coro` names it in the history.
boost::asio::awaitable<void> counter_loop(counter_context& cx, mutex& m, int coro);

// `key=value` worker arguments as a map.
std::map<std::string, std::string> parse_args(const std::vector<std::string>& args);

} // namespace corolock::fault

#endif
