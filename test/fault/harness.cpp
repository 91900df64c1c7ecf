// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "harness.hpp"

#include "common/test_config.hpp"
#include <corolock/mutex.hpp>
#include <corolock/request.hpp>
#include <corolock/response.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/results_collector.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace corolock::fault {

namespace asio = boost::asio;

namespace {

std::int64_t to_int(std::string_view s) {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    (void)p;
    return ec == std::errc() ? v : 0;
}

std::uint64_t to_uint(std::string_view s) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    (void)p;
    return ec == std::errc() ? v : 0;
}

// A short, tab-free name for an error code in a history line.
std::string code_name(const error_code& ec) {
    if (!ec)
        return "ok";
    if (ec.category() == make_error_code(error::not_owner).category()) {
        switch (static_cast<error>(ec.value())) {
        case error::not_owner:
            return "not_owner";
        case error::lease_lost:
            return "lease_lost";
        case error::acquire_timeout:
            return "acquire_timeout";
        case error::server_timeout:
            return "server_timeout";
        case error::connection_lost:
            return "connection_lost";
        case error::not_connected:
            return "not_connected";
        case error::pong_timeout:
            return "pong_timeout";
        case error::stale_token:
            return "stale_token";
        case error::server_error:
            return "server_error";
        case error::max_hold_reached:
            return "max_hold_reached";
        case error::invalid_argument:
            return "invalid_argument";
        default:
            break;
        }
    }
    if (ec == asio::error::operation_aborted)
        return "operation_aborted";
    return std::string(ec.category().name()) + ":" + std::to_string(ec.value());
}

std::string rel_ms(std::int64_t ns, std::int64_t origin) {
    if (ns == 0)
        return "-";
    std::ostringstream os;
    os << std::fixed << std::setprecision(1) << to_ms(ns - origin);
    return os.str();
}

std::string describe(const section& s, std::int64_t origin) {
    std::ostringstream os;
    os << "w" << s.worker << "/c" << s.coro << " " << s.lock << " token " << s.token << " ["
       << rel_ms(s.enter_ns, origin) << ", " << rel_ms(s.exit_ns, origin) << "] ms " << s.outcome
       << " lost@" << rel_ms(s.lost_ns, origin) << " release=" << s.release << "@"
       << rel_ms(s.release_ns, origin) << " fenced=" << s.fenced << " wrote=" << s.wrote;
    return os.str();
}

} // namespace

// ---- history -----------------------------------------------------------------------------

std::int64_t record::num(const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? 0 : to_int(it->second);
}

std::string record::text(const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
}

std::string format_record(const record& r) {
    std::string out = r.kind;
    for (const auto& [k, v] : r.fields) {
        out += '\t';
        out += k;
        out += '=';
        out += v;
    }
    out += '\n';
    return out;
}

std::optional<record> parse_record(std::string_view line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.remove_suffix(1);
    if (line.empty())
        return std::nullopt;
    record r;
    std::size_t pos = line.find('\t');
    r.kind = std::string(line.substr(0, pos));
    while (pos != std::string_view::npos) {
        const std::size_t start = pos + 1;
        pos = line.find('\t', start);
        const auto field = line.substr(start, pos == std::string_view::npos ? pos : pos - start);
        const auto eq = field.find('=');
        if (eq == std::string_view::npos)
            return std::nullopt;
        r.fields.emplace(std::string(field.substr(0, eq)), std::string(field.substr(eq + 1)));
    }
    return r;
}

record section::to_record() const {
    record r{"cs", {}};
    r.fields["w"] = std::to_string(worker);
    r.fields["c"] = std::to_string(coro);
    r.fields["lock"] = lock;
    r.fields["token"] = std::to_string(token);
    r.fields["enter"] = std::to_string(enter_ns);
    r.fields["exit"] = std::to_string(exit_ns);
    r.fields["released"] = std::to_string(release_ns);
    r.fields["outcome"] = outcome;
    r.fields["lost"] = std::to_string(lost_ns);
    r.fields["release"] = release;
    r.fields["fenced"] = std::to_string(fenced);
    r.fields["wrote"] = wrote ? "1" : "0";
    return r;
}

section section::from_record(const record& r) {
    section s;
    s.worker = static_cast<int>(r.num("w"));
    s.coro = static_cast<int>(r.num("c"));
    s.lock = r.text("lock");
    s.token = to_uint(r.text("token"));
    s.enter_ns = r.num("enter");
    s.exit_ns = r.num("exit");
    s.release_ns = r.num("released");
    s.outcome = r.text("outcome");
    s.lost_ns = r.num("lost");
    s.release = r.text("release");
    s.fenced = r.fields.count("fenced") ? static_cast<int>(r.num("fenced")) : -1;
    s.wrote = r.num("wrote") == 1;
    return s;
}

std::vector<record> parse_records(std::string_view text) {
    std::vector<record> out;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        const auto line = text.substr(0, nl);
        if (auto r = parse_record(line))
            out.push_back(std::move(*r));
        if (nl == std::string_view::npos)
            break;
        text.remove_prefix(nl + 1);
    }
    return out;
}

std::vector<section> only_lock(const std::vector<section>& history, const std::string& lock) {
    std::vector<section> out;
    for (const auto& s : history)
        if (s.lock == lock)
            out.push_back(s);
    return out;
}

std::vector<section> parse_sections(std::string_view text) {
    std::vector<section> out;
    for (const auto& r : parse_records(text))
        if (r.kind == "cs")
            out.push_back(section::from_record(r));
    return out;
}

history_writer::history_writer(const std::string& path) {
    if (path.empty() || path == "-") {
        fd_ = STDOUT_FILENO;
        return;
    }
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw std::runtime_error("cannot open history file " + path);
    owned_ = true;
}

history_writer::~history_writer() {
    if (owned_)
        ::close(fd_);
}

void history_writer::write(const record& r) {
    const std::string line = format_record(r);
    std::size_t done = 0;
    while (done < line.size()) {
        const auto n = ::write(fd_, line.data() + done, line.size() - done);
        if (n <= 0)
            return;
        done += static_cast<std::size_t>(n);
    }
}

temp_dir::temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "corolock-fault-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
        throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
}

temp_dir::~temp_dir() {
    if (const char* keep = std::getenv("COROLOCK_KEEP_FAULT_DIR"); keep && *keep) {
        std::cerr << "kept " << path_ << "\n";
        return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

std::string temp_dir::read_all() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_))
        names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    std::string all;
    for (const auto& n : names)
        all += read_file(n);
    return all;
}

// ---- faults and reports ------------------------------------------------------------------

std::int64_t schedule::note(const std::string& what) {
    const auto t = monotonic_ns();
    events_.emplace_back(t, what);
    return t;
}

std::string schedule::str() const {
    std::ostringstream os;
    for (const auto& [t, what] : events_)
        os << "  +" << std::fixed << std::setprecision(1) << to_ms(t - start_ns_) << " ms  " << what
           << "\n";
    return os.str();
}

bool current_test_failed() {
    namespace utf = boost::unit_test;
    return !utf::results_collector.results(utf::framework::current_test_case().p_id).passed();
}

void report_failure(const std::string& scenario, std::uint64_t seed, const schedule& faults,
                    const std::vector<section>& history, std::size_t tail) {
    std::vector<section> sorted;
    std::map<std::string, std::size_t> failed;
    for (const auto& s : history) {
        if (s.acquired())
            sorted.push_back(s);
        else
            ++failed[s.outcome];
    }
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const section& a, const section& b) { return a.enter_ns < b.enter_ns; });
    std::ostringstream os;
    os << "==== " << scenario << " failed; seed " << seed
       << " (replay: COROLOCK_FAULT_SEED=" << seed << ")\n";
    os << "fault schedule (ms from start):\n" << faults.str();
    const std::size_t from = sorted.size() > tail ? sorted.size() - tail : 0;
    os << "history: " << sorted.size() << " critical sections, the last " << sorted.size() - from
       << " (ms from start):\n";
    for (std::size_t i = from; i < sorted.size(); ++i)
        os << "  " << describe(sorted[i], faults.start_ns()) << "\n";
    for (const auto& [what, n] : failed)
        os << "failed acquires: " << n << " x " << what << "\n";
    std::cerr << os.str() << std::flush;
}

std::uint64_t pick_seed() {
    if (const char* s = std::getenv("COROLOCK_FAULT_SEED"); s && *s)
        return to_uint(s);
    return std::random_device{}();
}

double to_ms(std::int64_t ns) noexcept {
    return static_cast<double>(ns) / 1e6;
}

std::string ms_text(std::int64_t ns) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(1) << to_ms(ns);
    return os.str();
}

// ---- servers and connections -------------------------------------------------------------

connection_config fault_config(std::uint16_t port) {
    using namespace std::chrono_literals;
    connection_config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = std::to_string(port);
    cfg.health_check_interval = 200ms;
    cfg.connect_timeout = 1s;
    cfg.reconnect_wait = 20ms;
    cfg.reconnect_wait_max = 200ms;
    cfg.max_wait_for_connection = 5s;
    return cfg;
}

connection_config sentinel_fault_config(const std::string& sentinel_ports) {
    using namespace std::chrono_literals;
    connection_config cfg = fault_config(0);
    cfg.host.clear();
    cfg.port.clear();
    cfg.max_wait_for_connection = 10s;
    std::istringstream ports(sentinel_ports);
    for (std::string p; std::getline(ports, p, ',');)
        cfg.sentinel.addresses.push_back({"127.0.0.1", p});
    cfg.sentinel.master_name = "m1";
    cfg.sentinel.connect_timeout = 300ms;
    return cfg;
}

worker_io::worker_io(std::uint16_t lock_port, std::uint16_t res_port,
                     std::chrono::steady_clock::duration lock_health_check)
    : locks(
          ioc.get_executor(),
          [&] {
              auto cfg = fault_config(lock_port);
              if (lock_health_check > std::chrono::steady_clock::duration::zero())
                  cfg.health_check_interval = lock_health_check;
              return cfg;
          }(),
          test::quiet()),
      res(
          ioc.get_executor(),
          [&] {
              auto cfg = fault_config(res_port);
              cfg.health_check_interval = std::chrono::steady_clock::duration::zero();
              return cfg;
          }(),
          test::quiet()) {}

bool worker_io::run(std::function<asio::awaitable<void>()> body) {
    locks.async_run(asio::detached);
    res.async_run(asio::detached);
    bool ok = true;
    asio::co_spawn(ioc, body(), [&](std::exception_ptr e) {
        if (e) {
            ok = false;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::cerr << "worker body failed: " << ex.what() << std::endl;
            }
        }
        locks.cancel();
        res.cancel();
    });
    ioc.run();
    return ok;
}

std::vector<std::string> reply_values(std::string_view raw) {
    std::vector<std::string> out;
    while (!raw.empty()) {
        const auto eol = raw.find("\r\n");
        if (eol == std::string_view::npos)
            break;
        const char type = raw[0];
        const auto head = raw.substr(1, eol - 1);
        raw.remove_prefix(eol + 2);
        switch (type) {
        case '+':
        case '-':
        case ':':
            out.emplace_back(head);
            break;
        case '$': {
            const auto len = to_int(head);
            if (len < 0)
                break;
            const auto n = static_cast<std::size_t>(len);
            if (raw.size() < n + 2)
                return out;
            out.emplace_back(raw.substr(0, n));
            raw.remove_prefix(n + 2);
            break;
        }
        default: // '*': the elements follow
            break;
        }
    }
    return out;
}

std::vector<std::string> orphan_keys(const test::redis_process& locks) {
    std::vector<std::string> keys;
    std::string cursor = "0";
    do {
        auto v = reply_values(locks.command({"SCAN", cursor, "COUNT", "1000"}));
        if (v.empty())
            throw std::runtime_error("SCAN: unexpected reply");
        cursor = v[0];
        for (std::size_t i = 1; i < v.size(); ++i)
            if (!std::string_view(v[i]).ends_with(":fence"))
                keys.push_back(v[i]);
    } while (cursor != "0");
    return keys;
}

// ---- the fenced resource -----------------------------------------------------------------

fenced_resource::fenced_resource(std::string name) : name_(std::move(name)) {}

std::int64_t fenced_resource::counter(std::string_view name) const {
    const std::string key = std::string(name.empty() ? name_ : name) + ":counter";
    auto v = reply_values(srv_.command({"GET", key}));
    return v.empty() ? 0 : to_int(v[0]);
}

std::int64_t fenced_resource::value(std::string_view name) const {
    const std::string key = std::string(name.empty() ? name_ : name) + ":value";
    auto v = reply_values(srv_.command({"GET", key}));
    return v.empty() ? 0 : to_int(v[0]);
}

std::vector<std::uint64_t> fenced_resource::accepted(std::string_view name) const {
    const std::string key = std::string(name.empty() ? name_ : name) + ":log";
    std::vector<std::uint64_t> out;
    for (const auto& t : reply_values(srv_.command({"LRANGE", key, "0", "-1"})))
        out.push_back(to_uint(t));
    return out;
}

const script& fenced_write_script() {
    // Tokens are below 2^53 (seconds-based seeds plus increments), so Lua numbers hold them.
    static const script s(R"lua(
local max = redis.call('GET', KEYS[1])
if max and tonumber(ARGV[1]) <= tonumber(max) then
    return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('INCRBY', KEYS[3], ARGV[2])
return 1
)lua");
    return s;
}

asio::awaitable<int> fenced_write(connection& res, const std::string& name, std::uint64_t token,
                                  std::int64_t payload) {
    const std::string max = name + ":max", log = name + ":log", value = name + ":value";
    const std::string tok = std::to_string(token), pay = std::to_string(payload);
    const std::string_view keys[] = {max, log, value};
    const std::string_view args[] = {tok, pay};
    generic_response resp;
    co_await res.async_eval(fenced_write_script(), keys, args, resp, asio::use_awaitable);
    if (const auto* e = find_error(resp))
        throw boost::system::system_error(make_error_code(error::server_error), e->value);
    if (resp.empty())
        throw boost::system::system_error(make_error_code(error::unexpected_reply));
    co_return resp.front().value == "1" ? 1 : 0;
}

asio::awaitable<bool> slow_increment(connection& res, const std::string& name,
                                     std::chrono::microseconds pause, const lease& holder) {
    const nested_hold hold = holder.hold(); // the caller's lock, not a second acquisition
    const std::string key = name + ":counter";
    request get;
    get.push("GET", key);
    generic_response resp;
    co_await res.async_exec(get, resp, asio::use_awaitable);
    std::int64_t v = 0;
    if (!resp.empty() && resp.front().data_type != resp3::type::null)
        v = to_int(resp.front().value);
    asio::steady_timer t(co_await asio::this_coro::executor, pause);
    co_await t.async_wait(asio::use_awaitable);
    if (!hold.valid())
        co_return false;
    request set;
    set.push("SET", key, v + 1);
    co_await res.async_exec(set, ignore, asio::use_awaitable);
    co_return true;
}

asio::awaitable<int> fenced_increment(connection& res, const std::string& name,
                                      const lease& holder) {
    const nested_hold hold = holder.hold();
    if (!hold.valid())
        co_return -1;
    // A hold proves the lease it was taken from: same acquisition, same token.
    if (hold.token().value() == 0 || hold.token() != holder.token())
        throw std::logic_error("nested hold token " + std::to_string(hold.token().value()) +
                               " differs from its lease's " +
                               std::to_string(holder.token().value()));
    co_return co_await fenced_write(res, name, hold.token().value(), 1);
}

// ---- checkers ----------------------------------------------------------------------------

namespace {

// Pairs (a, b) of one lock's acquired sections with a.enter < b.enter < a.exit that `counts`
// (after `keep` chose the sections to look at).
template <class Keep, class Counts>
overlap_result overlaps_where(const std::vector<section>& history, Keep keep, Counts counts) {
    overlap_result r;
    std::map<std::string, std::vector<const section*>> by_lock;
    std::int64_t origin = 0;
    for (const auto& s : history) {
        if (!s.acquired() || !keep(s))
            continue;
        by_lock[s.lock].push_back(&s);
        origin = origin == 0 ? s.enter_ns : std::min(origin, s.enter_ns);
    }
    for (auto& [lock, v] : by_lock) {
        std::sort(v.begin(), v.end(),
                  [](const section* a, const section* b) { return a->enter_ns < b->enter_ns; });
        r.sections += v.size();
        for (std::size_t j = 1; j < v.size(); ++j)
            for (std::size_t i = 0; i < j; ++i)
                if (v[i]->exit_ns > v[j]->enter_ns && counts(*v[i], *v[j])) {
                    ++r.overlaps;
                    if (r.examples.size() < 5)
                        r.examples.push_back(describe(*v[i], origin) + "  overlaps  " +
                                             describe(*v[j], origin));
                }
    }
    return r;
}

} // namespace

overlap_result find_overlaps(const std::vector<section>& history, bool skip_lost) {
    return overlaps_where(
        history, [skip_lost](const section& s) { return !skip_lost || !s.lost(); },
        [](const section&, const section&) { return true; });
}

overlap_result find_unreported_overlaps(const std::vector<section>& history) {
    return overlaps_where(
        history, [](const section&) { return true; },
        [](const section& a, const section& b) {
            return a.lost_ns == 0 || a.lost_ns >= b.enter_ns;
        });
}

fencing_result check_fencing(const std::vector<section>& history,
                             const std::vector<std::uint64_t>& log) {
    fencing_result r;
    r.accepted = log.size();
    for (std::size_t i = 1; i < log.size(); ++i)
        if (log[i] <= log[i - 1])
            r.problems.push_back("the resource accepted token " + std::to_string(log[i]) +
                                 " after " + std::to_string(log[i - 1]));
    const std::set<std::uint64_t> in_log(log.begin(), log.end());
    std::map<std::string, std::set<std::uint64_t>> issued;
    std::map<std::string, std::vector<const section*>> kept; // never reported lost
    std::set<std::uint64_t> all_tokens;
    for (const auto& s : history) {
        if (!s.acquired())
            continue;
        ++r.tokens_checked;
        all_tokens.insert(s.token);
        if (!issued[s.lock].insert(s.token).second)
            r.problems.push_back("token " + std::to_string(s.token) + " of " + s.lock +
                                 " handed out twice");
        if (s.fenced == 1 && !in_log.count(s.token))
            r.problems.push_back("accepted write of token " + std::to_string(s.token) +
                                 " missing from the resource's log");
        if (s.fenced == 0) {
            ++r.refused;
            if (!s.lost())
                r.problems.push_back("write of token " + std::to_string(s.token) +
                                     " refused, but its holder was never told it lost the lease");
        }
        if (!s.lost())
            kept[s.lock].push_back(&s);
    }
    for (auto t : log)
        if (!all_tokens.count(t))
            r.problems.push_back("the resource accepted token " + std::to_string(t) +
                                 " that no critical section held");
    for (auto& [lock, v] : kept) {
        std::sort(v.begin(), v.end(),
                  [](const section* a, const section* b) { return a->enter_ns < b->enter_ns; });
        for (std::size_t i = 1; i < v.size(); ++i)
            if (v[i]->token <= v[i - 1]->token)
                r.problems.push_back("token " + std::to_string(v[i]->token) + " of " + lock +
                                     " entered after token " + std::to_string(v[i - 1]->token));
    }
    return r;
}

std::vector<std::string> check_liveness(const std::vector<section>& history, int workers,
                                        std::size_t min_ok) {
    std::map<int, std::size_t> ok;
    for (const auto& s : history)
        if (s.outcome == "ok")
            ++ok[s.worker];
    std::vector<std::string> problems;
    for (int w = 0; w < workers; ++w)
        if (ok[w] < min_ok)
            problems.push_back("worker " + std::to_string(w) + " completed " +
                               std::to_string(ok[w]) + " sections (want at least " +
                               std::to_string(min_ok) + ")");
    return problems;
}

history_counts count(const std::vector<section>& history) {
    history_counts c;
    for (const auto& s : history) {
        if (!s.acquired()) {
            ++c.failed_acquires;
            continue;
        }
        ++c.acquired;
        if (s.outcome == "ok")
            ++c.ok;
        else if (s.outcome == "lost")
            ++c.lost;
        else
            ++c.errors;
        if (s.release == "ok")
            ++c.released_ok;
        else if (s.release == "lease_lost" || s.release == "max_hold_reached")
            ++c.released_lost;
        else
            ++c.released_other;
    }
    return c;
}

// ---- the counter worker ------------------------------------------------------------------

std::map<std::string, std::string> parse_args(const std::vector<std::string>& args) {
    std::map<std::string, std::string> m;
    for (const auto& a : args) {
        const auto eq = a.find('=');
        if (eq != std::string::npos)
            m[a.substr(0, eq)] = a.substr(eq + 1);
    }
    return m;
}

std::vector<std::string> counter_options::args() const {
    return {"worker=" + std::to_string(worker),
            "lock_port=" + std::to_string(lock_port),
            "res_port=" + std::to_string(res_port),
            "lock=" + lock,
            "resource=" + resource,
            "history=" + history,
            "coros=" + std::to_string(coros),
            "iterations=" + std::to_string(iterations),
            "until_ns=" + std::to_string(until_ns),
            "lease_ms=" + std::to_string(lease.count()),
            "acquire_wait_ms=" + std::to_string(acquire_wait.count()),
            "pause_us=" + std::to_string(pause.count()),
            "seed=" + std::to_string(seed)};
}

counter_options counter_options::parse(const std::vector<std::string>& args) {
    auto m = parse_args(args);
    counter_options o;
    auto num = [&](const char* k, std::int64_t def) {
        auto it = m.find(k);
        return it == m.end() ? def : to_int(it->second);
    };
    o.worker = static_cast<int>(num("worker", 0));
    o.lock_port = static_cast<std::uint16_t>(num("lock_port", 0));
    o.res_port = static_cast<std::uint16_t>(num("res_port", 0));
    if (m.count("lock"))
        o.lock = m["lock"];
    if (m.count("resource"))
        o.resource = m["resource"];
    o.history = m.count("history") ? m["history"] : "-";
    o.coros = static_cast<int>(num("coros", o.coros));
    o.iterations = static_cast<int>(num("iterations", o.iterations));
    o.until_ns = num("until_ns", 0);
    o.lease = std::chrono::milliseconds(num("lease_ms", o.lease.count()));
    o.acquire_wait = std::chrono::milliseconds(num("acquire_wait_ms", o.acquire_wait.count()));
    o.pause = std::chrono::microseconds(num("pause_us", o.pause.count()));
    o.seed = static_cast<std::uint64_t>(num("seed", 1));
    return o;
}

asio::awaitable<void> counter_loop(counter_context& cx, mutex& m, int coro) {
    using std::chrono::nanoseconds;
    std::mt19937_64 rng(cx.o.seed * 1'000'003u + static_cast<std::uint64_t>(cx.o.worker) * 1000u +
                        static_cast<std::uint64_t>(coro));
    std::uniform_int_distribution<std::int64_t> pause_us(0, cx.o.pause.count());
    int done = 0;
    while (cx.o.iterations == 0 || done < cx.o.iterations) {
        const auto now = monotonic_ns();
        if (now >= cx.until_ns)
            break;
        const auto wait = std::min<std::chrono::steady_clock::duration>(
            cx.o.acquire_wait, nanoseconds(cx.until_ns - now));
        section s;
        s.worker = cx.o.worker;
        s.coro = coro;
        s.lock = cx.o.lock;
        auto [ec, l] = co_await m.async_acquire_for(wait, asio::as_tuple(asio::deferred));
        if (ec || !l) {
            s.outcome = "error:acquire:" + (ec ? code_name(ec) : std::string("empty_lease"));
            s.release_ns = monotonic_ns();
            cx.out.write(s);
            if (!ec || (ec != error::acquire_timeout && ec != error::server_timeout &&
                        !is_connection_error(ec)))
                ++cx.unexpected;
            continue;
        }
        s.token = l.token().value();
        s.enter_ns = monotonic_ns();
        // This lease's own loss watch: it ends with operation_aborted at the release.
        auto lost_at = std::make_shared<std::int64_t>(0);
        l.async_wait_lost([lost_at](error_code lost) {
            if (lost && lost != asio::error::operation_aborted)
                *lost_at = monotonic_ns();
        });
        std::string body_error;
        try {
            s.wrote = co_await slow_increment(cx.res, cx.o.resource,
                                              std::chrono::microseconds(pause_us(rng)), l);
            if (s.wrote)
                s.fenced = co_await fenced_increment(cx.res, cx.o.resource, l);
        } catch (const std::exception& e) {
            const auto* se = dynamic_cast<const boost::system::system_error*>(&e);
            body_error = se ? code_name(se->code()) : std::string("exception");
            std::cerr << "worker " << cx.o.worker << " coroutine " << coro
                      << ": critical section failed: " << e.what() << std::endl;
        }
        s.exit_ns = monotonic_ns();
        const bool lost_before_release = l.lost();
        auto [rec] = co_await l.async_release(asio::as_tuple(asio::deferred));
        s.release_ns = monotonic_ns();
        s.release = code_name(rec);
        s.lost_ns = *lost_at;
        if (l.owns()) { // async_release consumes the lease
            s.outcome = "error:lease_kept_after_release";
            ++cx.unexpected;
        } else if (!body_error.empty()) {
            s.outcome = "error:" + body_error; // the resource is never faulted: unexpected
            ++cx.unexpected;
        } else if (s.lost_ns != 0 || lost_before_release || rec == condition::lock_lost) {
            s.outcome = "lost";
        } else {
            s.outcome = "ok";
        }
        cx.out.write(s);
        ++done;
    }
}

COROLOCK_FAULT_WORKER(counter) {
    const auto o = counter_options::parse(args);
    worker_io io(o.lock_port, o.res_port);
    history_writer out(o.history);
    counter_context cx{o, o.until_ns ? o.until_ns : monotonic_ns() + 60'000'000'000, io.res, out};
    std::uint64_t held = 0, waiting = 0;
    const bool ok = io.run([&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        mutex_options opts;
        opts.lease = o.lease;
        mutex m(io.locks, o.lock, opts); // one handle per lock name, shared by every coroutine
        std::vector<decltype(asio::co_spawn(ex, counter_loop(cx, m, 0), asio::deferred))> loops;
        for (int c = 0; c < o.coros; ++c)
            loops.push_back(asio::co_spawn(ex, counter_loop(cx, m, c), asio::deferred));
        auto [order, errors] = co_await asio::experimental::make_parallel_group(std::move(loops))
                                   .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        (void)order;
        for (const auto& e : errors)
            if (e)
                ++cx.unexpected;
        const auto st = get_lock_stats(io.locks);
        held = st.leases_held;
        waiting = st.waiters;
        record r{"stats", {}};
        r.fields["w"] = std::to_string(o.worker);
        r.fields["attempts"] = std::to_string(st.attempts);
        r.fields["renewals"] = std::to_string(st.renewals);
        r.fields["leases_lost"] = std::to_string(st.leases_lost);
        r.fields["pubsub_wakeups"] = std::to_string(st.pubsub_wakeups);
        r.fields["timer_wakeups"] = std::to_string(st.timer_wakeups);
        r.fields["connects"] = std::to_string(io.locks.stats().connects);
        r.fields["held"] = std::to_string(held);
        r.fields["waiting"] = std::to_string(waiting);
        r.fields["unexpected"] = std::to_string(cx.unexpected);
        out.write(r);
    });
    return ok && cx.unexpected == 0 && held == 0 && waiting == 0 ? 0 : 1;
}

} // namespace corolock::fault
