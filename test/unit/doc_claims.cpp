// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The claims the docs make about the code, checked against the code (doc/doc_checks.md says how
// to mark them). Every page under doc/ and README.md is read, so a page added later is covered.
#include "core/election_core.hpp"
#include "core/job_core.hpp"
#include "core/latch_scripts.hpp"
#include "core/lock_policy.hpp"
#include "core/lock_scripts.hpp"
#include "core/multiplexer.hpp"
#include "zookeeper/core/zk_lock_recipe.hpp"
#include <corolock/cluster.hpp>
#include <corolock/config.hpp>
#include <corolock/election.hpp>
#include <corolock/error.hpp>
#include <corolock/job.hpp>
#include <corolock/latch.hpp>
#include <corolock/local_mutex.hpp>
#include <corolock/logger.hpp>
#include <corolock/metrics.hpp>
#include <corolock/mutex.hpp>
#include <corolock/postgres/config.hpp>
#include <corolock/redlock.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_doc_claims {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string read(const fs::path& p) {
    std::ifstream in(p);
    BOOST_TEST_REQUIRE(in.good(), "cannot read " << p);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

const fs::path root = fs::path(COROLOCK_DOC_DIR).parent_path();

// Every page a reader sees: README.md, CHANGELOG.md and doc/**/*.md.
std::vector<fs::path> pages() {
    std::vector<fs::path> out{root / "README.md", root / "CHANGELOG.md"};
    for (const auto& e : fs::recursive_directory_iterator(root / "doc"))
        if (e.is_regular_file() && e.path().extension() == ".md")
            out.push_back(e.path());
    return out;
}

std::vector<fs::path> public_headers() {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(root / "include" / "corolock"))
        if (e.is_regular_file() && e.path().extension() == ".hpp" &&
            e.path().string().find("/detail/") == std::string::npos)
            out.push_back(e.path());
    return out;
}

std::string rel(const fs::path& p) {
    return fs::relative(p, root).string();
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        out.push_back(l);
    return out;
}

// The lines of a page with fenced code blocks blanked (a marker shown as an example is no claim).
std::vector<std::string> prose_lines(const std::string& text) {
    auto ls = lines_of(text);
    bool code = false;
    for (auto& l : ls) {
        const auto first = l.find_first_not_of(' ');
        const bool fence = first != std::string::npos && l.compare(first, 3, "```") == 0;
        if (fence || code)
            l.clear();
        if (fence)
            code = !code;
    }
    return ls;
}

// The cells of a table row `| a | b |`, trimmed; empty if the line is no row.
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    if (line.empty() || line.front() != '|')
        return out;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
        if (line[i] == '|' && line[i - 1] != '\\') {
            const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
            out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
            cell.clear();
        } else {
            cell += line[i];
        }
    }
    return out;
}

// The names in an enum's body, in order, read from the header (comments dropped).
std::vector<std::string> enum_names(const std::string& header, const std::string& head) {
    const auto at = header.find(head + " {");
    BOOST_TEST_REQUIRE(at != std::string::npos, "no " << head);
    const auto body = header.substr(at, header.find("};", at) - at);
    std::vector<std::string> out;
    const std::regex value(R"(^\s*([a-z_]+)( = [0-9]+)?,)");
    for (auto l : lines_of(body)) {
        l = l.substr(0, l.find("//"));
        std::smatch m;
        if (std::regex_search(l, m, value))
            out.push_back(m[1]);
    }
    return out;
}

// ---- The values the docs may state, formatted as the docs write them -------------------------

std::string fmt(std::chrono::nanoseconds d) {
    using std::chrono::nanoseconds;
    if (d == d.zero())
        return "0";
    struct unit {
        nanoseconds size;
        const char* name;
    };
    for (const unit u : {unit{std::chrono::hours(24), " days"}, unit{1h, " h"}, unit{1min, " min"},
                         unit{1s, " s"}, unit{1ms, " ms"}, unit{1us, " µs"}})
        if (d % u.size == d.zero())
            return std::to_string(d / u.size) + u.name;
    return std::to_string(d.count()) + " ns";
}
std::string bytes(std::size_t n) {
    if (n != 0 && n % (1u << 20) == 0)
        return std::to_string(n >> 20) + " MiB";
    if (n != 0 && n % (1u << 10) == 0)
        return std::to_string(n >> 10) + " KiB";
    return std::to_string(n) + " bytes";
}
// A count: 65,536 and more in binary units (16 Mi), as the pages write element counts.
std::string count(std::size_t n) {
    if (n >= 65536 && n % (1u << 20) == 0)
        return std::to_string(n >> 20) + " Mi";
    if (n >= 65536 && n % (1u << 10) == 0)
        return std::to_string(n >> 10) + " Ki";
    return std::to_string(n);
}
std::string flag(bool b) {
    return b ? "`true`" : "`false`";
}
std::string text(const std::string& s) {
    return s.empty() ? "empty" : "`\"" + s + "\"`";
}
std::string see(const std::string& type) {
    return "see `" + type + "`";
}

// "struct.field" -> the default as a doc writes it. A struct whose fields are all here can have
// a `<!-- defaults: struct -->` table; any entry can be stated inline (`30 s<!-- = key -->`).
std::map<std::string, std::string> registry() {
    std::map<std::string, std::string> r;
    const corolock::connection_config c;
    r["connection_config.host"] = text(c.host);
    r["connection_config.port"] = text(c.port);
    r["connection_config.unix_socket"] = text(c.unix_socket);
    r["connection_config.use_tls"] = flag(c.use_tls);
    r["connection_config.tls_verify_server"] = flag(c.tls_verify_server);
    r["connection_config.username"] = text(c.username);
    r["connection_config.password"] = text(c.password);
    r["connection_config.database"] = std::to_string(c.database);
    r["connection_config.client_name"] = text(c.client_name);
    r["connection_config.connect_timeout"] = fmt(c.connect_timeout);
    r["connection_config.health_check_interval"] = fmt(c.health_check_interval);
    r["connection_config.reconnect_wait"] = fmt(c.reconnect_wait);
    r["connection_config.reconnect_wait_max"] = fmt(c.reconnect_wait_max);
    r["connection_config.max_wait_for_connection"] = fmt(c.max_wait_for_connection);
    r["connection_config.allow_blocking_commands"] = flag(c.allow_blocking_commands);
    r["connection_config.max_read_size"] = bytes(c.max_read_size);
    r["connection_config.max_reply_nodes"] = count(c.max_reply_nodes);
    r["connection_config.limits"] = see("resp3::parser_limits");
    r["connection_config.push_buffer_size"] = count(c.push_buffer_size);
    r["connection_config.sentinel"] = see("sentinel_config");

    const corolock::resp3::parser_limits pl;
    r["parser_limits.max_depth"] = count(pl.max_depth);
    r["parser_limits.max_depth_cap"] = count(pl.max_depth_cap);
    r["parser_limits.max_bulk_length"] = bytes(pl.max_bulk_length);
    r["parser_limits.max_aggregate_size"] = count(pl.max_aggregate_size);

    const corolock::sentinel_config s;
    r["sentinel_config.connect_timeout"] = fmt(s.connect_timeout);
    r["sentinel_config.request_timeout"] = fmt(s.request_timeout);
    r["sentinel_config.follow_switch_master"] = flag(s.follow_switch_master);
    r["sentinel_config.failover_hold"] = fmt(s.failover_hold);

    const corolock::mutex_options m;
    r["mutex_options.lease"] = fmt(m.lease);
    r["mutex_options.watchdog"] = flag(m.watchdog);
    r["mutex_options.max_hold"] = fmt(m.max_hold);
    r["mutex_options.retry_base"] = fmt(m.retry_base);
    r["mutex_options.retry_max"] = fmt(m.retry_max);
    r["mutex_options.fence_retention"] = fmt(m.fence_retention);
    r["mutex_options.replica_sync"] = see("replica_sync");
    r["mutex_options.try_timeout"] = fmt(m.try_timeout);
    // The watchdog's period and the lease + retention a fence key lives.
    r["mutex_options.renew_period"] = fmt(m.lease / 3);
    r["mutex_options.fence_ttl"] = fmt(m.lease + m.fence_retention);
    // How long a waiter's record (intent, reservation, place) outlives its last attempt.
    r["mutex_options.waiting_record_ttl"] = fmt(corolock::detail::waiting_record_ttl(m.retry_max));

    const corolock::election_options eo;
    r["election_options.lock_delay"] = fmt(eo.lock_delay);
    r["limits.max_lock_delay"] = fmt(corolock::detail::max_lock_delay);
    const corolock::job_options jo;
    r["job_options.record_retention"] = fmt(jo.record_retention);
    r["job_options.at_least_for"] = fmt(jo.at_least_for);
    r["limits.max_job_duration"] = fmt(corolock::detail::max_job_duration);

    // PostgreSQL (postgres/config.hpp holds plain settings: no libpq, no link to
    // corolock::postgres).
    const corolock::pg_xact_options px;
    r["pg_xact_options.attempt_wait"] = fmt(px.attempt_wait);
    r["pg_xact_options.retry_base"] = fmt(px.retry_base);
    r["pg_xact_options.retry_max"] = fmt(px.retry_max);
    const corolock::pg_mutex_options pm;
    r["pg_mutex_options.retry_max"] = fmt(pm.retry_max);

    // ZooKeeper (the recipe's pure core: no C client, no link to corolock::zookeeper).
    r["zk_lock_path.max_length"] = bytes(corolock::detail::max_lock_path);

    const corolock::replica_sync rs;
    r["replica_sync.replicas"] = std::to_string(rs.replicas);
    r["replica_sync.timeout"] = fmt(rs.timeout);
    r["replica_sync.on_shortfall"] =
        rs.on_shortfall == corolock::replica_sync::shortfall::refuse ? "`refuse`" : "?";

    const corolock::cluster_config cc;
    r["cluster_config.refresh_interval"] = fmt(cc.refresh_interval);
    r["cluster_config.refresh_timeout"] = fmt(cc.refresh_timeout);
    r["cluster_config.max_redirects"] = count(cc.max_redirects);
    r["cluster_config.try_again_delay"] = fmt(cc.try_again_delay);

    const corolock::latch_options lo;
    r["latch_options.retention"] = fmt(lo.retention);
    r["latch_options.retry_base"] = fmt(lo.retry_base);
    r["latch_options.retry_max"] = fmt(lo.retry_max);

    const corolock::redlock_options ro;
    r["redlock_options.lease"] = fmt(ro.lease);
    r["redlock_options.watchdog"] = flag(ro.watchdog);
    r["redlock_options.retry_base"] = fmt(ro.retry_base);
    r["redlock_options.retry_max"] = fmt(ro.retry_max);
    r["redlock_options.max_hold"] = fmt(ro.max_hold);

    const corolock::local_mutex_options lm;
    r["local_mutex_options.lease"] = fmt(lm.lease);

    // The bounds the options are checked against.
    r["limits.min_lease"] = fmt(corolock::detail::min_lease);
    r["limits.max_option_duration"] = fmt(corolock::detail::max_option_duration);
    r["limits.max_renew_batch"] = count(corolock::detail::max_renew_batch);
    r["limits.eager_write_requests"] = count(corolock::detail::multiplexer::eager_write_requests);

    // The buckets of the metrics' histograms.
    r["histogram.first_bound"] = fmt(corolock::duration_histogram::bounds.front());
    r["histogram.last_bound"] = fmt(corolock::duration_histogram::bounds.back());

    // Per-name series and the event hook (metrics.md), a lease per call (usage.md).
    const corolock::lock_metrics_options lmo;
    r["lock_metrics_options.max_named_locks"] = count(lmo.max_named_locks);
    r["lock_metrics_options.overflow_name"] = text(lmo.overflow_name);
    r["lock_metrics_options.on_event"] = lmo.on_event ? "set" : "empty";
    const corolock::acquire_options ao;
    r["acquire_options.lease"] = fmt(ao.lease);
    r["acquire_options.wait"] =
        ao.wait == std::chrono::steady_clock::duration::max() ? "no limit" : fmt(ao.wait);
    // What a connection URL leaves out (usage.md): read back from the parser.
    corolock::connection_config from_url;
    BOOST_TEST_REQUIRE(!corolock::parse_connection_url("redis://h", from_url));
    r["url.default_port"] = from_url.port;
    r["url.default_database"] = std::to_string(from_url.database);

    r["logger.lvl"] = "`warning`";
    BOOST_TEST_REQUIRE((corolock::logger{}.lvl == corolock::logger::level::warning));

    // tuning.md's rule of thumb: a lease should outlast three times the time a dead connection
    // takes to be noticed (two health-check intervals) and replaced (the longest reconnect wait).
    r["tuning.lease_rule_of_thumb"] = fmt(3 * (2 * c.health_check_interval + c.reconnect_wait_max));
    return r;
}

// The data members of `struct name` in the public headers (depth one, no functions, no
// statics), to require a row for each in its defaults table.
std::vector<std::string> struct_fields(const std::string& name) {
    for (const auto& h : public_headers()) {
        const auto src = read(h);
        const std::regex head("(^|\\n)struct (COROLOCK_DECL )?" + name + " \\{\\n");
        std::smatch m;
        if (!std::regex_search(src, m, head))
            continue;
        std::vector<std::string> out;
        const std::regex field(R"(^    [A-Za-z_:<>, ]+[ &*]([a-z_]+)( = [^;]*|\{\})?;)");
        int depth = 1;
        for (const auto& l : lines_of(src.substr(m.position() + m.length()))) {
            if (depth == 1 && l.find('(') == std::string::npos &&
                l.find("static") == std::string::npos && l.find("using") == std::string::npos) {
                std::smatch f;
                if (std::regex_search(l, f, field))
                    out.push_back(f[1]);
            }
            for (char ch : l.substr(0, l.find("//")))
                depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
            if (depth <= 0)
                break;
        }
        return out;
    }
    BOOST_TEST_FAIL("no struct " << name << " in include/corolock/");
    return {};
}

std::vector<std::string> code_spans(const std::string& cell) {
    std::vector<std::string> out;
    const std::regex span("`([^`]+)`");
    for (std::sregex_iterator it(cell.begin(), cell.end(), span), end; it != end; ++it)
        out.push_back((*it)[1]);
    return out;
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
    std::vector<std::string> out;
    std::size_t at = 0;
    for (auto next = s.find(sep); next != std::string::npos; next = s.find(sep, at)) {
        out.push_back(s.substr(at, next - at));
        at = next + sep.size();
    }
    out.push_back(s.substr(at));
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(doc_claims)

// doc/errors.md: a row for every corolock::error, no row for anything else, and each row's
// condition column lists exactly the conditions its code compares equal to.
BOOST_AUTO_TEST_CASE(error_table_rows_and_conditions_are_the_code_s) {
    const auto header = read(root / "include/corolock/error.hpp");
    const auto errors = enum_names(header, "enum class error");
    const auto conditions = enum_names(header, "enum class condition");
    BOOST_TEST_REQUIRE(errors.size() > 10u);
    BOOST_TEST_REQUIRE(conditions.size() >= 5u);
    // The parse saw every value: the one after the last is unknown to the category.
    BOOST_TEST(corolock::make_error_code(static_cast<corolock::error>(errors.size() + 1))
                   .message()
                   .find("unknown") != std::string::npos);
    BOOST_TEST(corolock::make_error_code(static_cast<corolock::error>(errors.size()))
                   .message()
                   .find("unknown") == std::string::npos);

    std::map<std::string, std::string> rows;
    for (const auto& l : prose_lines(read(root / "doc/errors.md"))) {
        const auto c = cells(l);
        if (c.size() >= 4 && c[0].size() > 2 && c[0].front() == '`')
            rows[c[0].substr(1, c[0].size() - 2)] = c[1];
    }
    for (std::size_t i = 0; i < errors.size(); ++i) {
        const auto& name = errors[i];
        const auto row = rows.find(name);
        if (row == rows.end()) {
            BOOST_ERROR("doc/errors.md: no row for error::" << name);
            continue;
        }
        const auto listed = code_spans(row->second);
        const auto ec = corolock::make_error_code(static_cast<corolock::error>(i + 1));
        for (std::size_t k = 0; k < conditions.size(); ++k) {
            const bool equal = ec == static_cast<corolock::condition>(k + 1);
            const bool said =
                std::find(listed.begin(), listed.end(), conditions[k]) != listed.end();
            BOOST_TEST(equal == said, "doc/errors.md: error::" << name
                                                               << (equal ? " is " : " is not ")
                                                               << "condition::" << conditions[k]);
        }
        for (const auto& cond : listed)
            BOOST_TEST((std::find(conditions.begin(), conditions.end(), cond) != conditions.end()),
                       "doc/errors.md: no condition::" << cond);
        rows.erase(row);
    }
    for (const auto& [name, unused] : rows)
        BOOST_ERROR("doc/errors.md: a row for error::" << name << ", which does not exist");
}

// `error::x` and `condition::x` anywhere in the pages or the public headers name real values.
BOOST_AUTO_TEST_CASE(error_and_condition_names_exist) {
    const auto header = read(root / "include/corolock/error.hpp");
    const std::map<std::string, std::vector<std::string>> enums = {
        {"error::", enum_names(header, "enum class error")},
        {"condition::", enum_names(header, "enum class condition")}};
    auto files = pages();
    for (const auto& h : public_headers())
        files.push_back(h);
    std::size_t checked = 0;
    for (const auto& f : files) {
        const auto src = read(f);
        for (const auto& [prefix, names] : enums) {
            for (auto at = src.find(prefix); at != std::string::npos;
                 at = src.find(prefix, at + 1)) {
                // Another library's enum (asio::error::, system::errc) is not ours.
                const auto before = src.substr(at >= 10 ? at - 10 : 0, at >= 10 ? 10 : at);
                if (at > 0 &&
                    (std::isalnum(static_cast<unsigned char>(src[at - 1])) || src[at - 1] == '_'))
                    continue;
                if (before.ends_with("::") && !before.ends_with("corolock::"))
                    continue;
                std::size_t end = at + prefix.size();
                while (end < src.size() &&
                       (std::islower(static_cast<unsigned char>(src[end])) || src[end] == '_'))
                    ++end;
                const auto name = src.substr(at + prefix.size(), end - at - prefix.size());
                if (name.empty())
                    continue;
                ++checked;
                BOOST_TEST((std::find(names.begin(), names.end(), name) != names.end()),
                           rel(f) << ": " << prefix << name << " does not exist");
            }
        }
    }
    BOOST_TEST(checked > 20u);
}

// `<!-- defaults: S -->` above a table: a row for every data member of struct S, and each row's
// default (second column) is the code's. `value<!-- = S.field -->` inline: the text before the
// marker ends with the code's value.
BOOST_AUTO_TEST_CASE(stated_defaults_are_the_code_s) {
    const auto reg = registry();
    const std::regex table_marker(R"(<!-- defaults: ([a-z_]+) -->)");
    const std::regex inline_marker(R"(<!-- = ([a-z_.]+) -->)");
    std::size_t tables = 0, inlines = 0;
    for (const auto& page : pages()) {
        const auto ls = prose_lines(read(page));
        for (std::size_t i = 0; i < ls.size(); ++i) {
            std::smatch m;
            if (std::regex_search(ls[i], m, table_marker)) {
                ++tables;
                const std::string s = m[1];
                std::set<std::string> rows;
                // The header row, the separator, then the body up to the first non-row line.
                for (std::size_t j = i + 3; j < ls.size() && !cells(ls[j]).empty(); ++j) {
                    const auto c = cells(ls[j]);
                    const auto fields = code_spans(c[0]);
                    const auto values = split(c.size() > 1 ? c[1] : "", ", ");
                    BOOST_TEST(fields.size() == values.size(),
                               rel(page) << ":" << j + 1 << ": as many defaults as fields");
                    for (std::size_t k = 0; k < fields.size() && k < values.size(); ++k) {
                        rows.insert(fields[k]);
                        const auto it = reg.find(s + "." + fields[k]);
                        if (it == reg.end()) {
                            BOOST_ERROR(rel(page) << ":" << j + 1 << ": " << s << "." << fields[k]
                                                  << " is not in doc_claims.cpp's registry");
                            continue;
                        }
                        BOOST_TEST(values[k] == it->second, rel(page) << ":" << j + 1 << ": " << s
                                                                      << "." << fields[k] << " is "
                                                                      << it->second);
                    }
                }
                for (const auto& f : struct_fields(s))
                    BOOST_TEST(rows.count(f) == 1u,
                               rel(page) << ":" << i + 1 << ": no row for " << s << "::" << f);
            }
            for (std::sregex_iterator it(ls[i].begin(), ls[i].end(), inline_marker), end; it != end;
                 ++it) {
                ++inlines;
                const std::string key = (*it)[1];
                const auto r = reg.find(key);
                if (r == reg.end()) {
                    BOOST_ERROR(rel(page) << ":" << i + 1 << ": " << key
                                          << " is not in doc_claims.cpp's registry");
                    continue;
                }
                const auto before = ls[i].substr(0, static_cast<std::size_t>(it->position()));
                BOOST_TEST(before.ends_with(r->second),
                           rel(page) << ":" << i + 1 << ": " << key << " is " << r->second);
            }
        }
    }
    BOOST_TEST(tables >= 2u);
    BOOST_TEST(inlines >= 10u);
}

// doc/packaging.md's table of the Conan recipe's options (below `<!-- conan-options -->`): a row
// for every entry of the recipe's `default_options`, each with the recipe's default.
BOOST_AUTO_TEST_CASE(conan_option_defaults_are_the_recipe_s) {
    const auto recipe = read(root / "conanfile.py");
    const auto from = recipe.find("default_options = {");
    BOOST_TEST_REQUIRE(from != std::string::npos, "conanfile.py: no default_options");
    const auto body = recipe.substr(from, recipe.find('}', from) - from);
    std::map<std::string, std::string> defaults;
    const std::regex entry(R"re("(\w+)": (True|False))re");
    for (std::sregex_iterator it(body.begin(), body.end(), entry), end; it != end; ++it)
        defaults[(*it)[1]] = "`" + std::string((*it)[2]) + "`";
    BOOST_TEST(defaults.count("with_postgres") == 1u);
    BOOST_TEST(defaults.count("with_zookeeper") == 1u);
    const auto page = root / "doc" / "packaging.md";
    const auto ls = prose_lines(read(page));
    std::set<std::string> rows;
    for (std::size_t i = 0; i < ls.size(); ++i) {
        if (ls[i].find("<!-- conan-options -->") == std::string::npos)
            continue;
        for (std::size_t j = i + 3; j < ls.size() && !cells(ls[j]).empty(); ++j) {
            const auto c = cells(ls[j]);
            const auto names = code_spans(c[0]);
            BOOST_TEST_REQUIRE(names.size() == 1u, rel(page) << ":" << j + 1 << ": one option");
            rows.insert(names[0]);
            const auto it = defaults.find(names[0]);
            if (it == defaults.end()) {
                BOOST_ERROR(rel(page) << ":" << j + 1 << ": the recipe has no option " << names[0]);
                continue;
            }
            BOOST_TEST((c.size() > 1 ? c[1] : "") == it->second,
                       rel(page) << ":" << j + 1 << ": " << names[0] << " is " << it->second);
        }
    }
    for (const auto& [name, value] : defaults)
        BOOST_TEST(rows.count(name) == 1u, rel(page) << ": no row for the option " << name);
}

// A prose line that states a default with a figure carries a marker, so it is checked above.
BOOST_AUTO_TEST_CASE(every_stated_default_is_marked) {
    const std::regex figure(R"((^|[^\w.])[0-9][0-9.,]* ?(µs|ms|s|min|h|days|KiB|MiB|GiB)\b)");
    const std::regex table_marker(R"(<!-- defaults: )");
    for (const auto& page : pages()) {
        const auto ls = prose_lines(read(page));
        bool in_defaults_table = false;
        for (std::size_t i = 0; i < ls.size(); ++i) {
            if (std::regex_search(ls[i], table_marker))
                in_defaults_table = true;
            else if (cells(ls[i]).empty())
                in_defaults_table = false;
            if (in_defaults_table || ls[i].find("default") == std::string::npos ||
                ls[i].find("<!-- = ") != std::string::npos)
                continue;
            BOOST_TEST(!std::regex_search(ls[i], figure),
                       rel(page) << ":" << i + 1
                                 << ": a default with a figure and no `<!-- = key -->` marker: "
                                 << ls[i]);
        }
    }
}

// doc/keys.md's derived names and name rules are the code's (key naming in src/core/); the keys
// a held mutex really leaves in Redis are checked by doc_commands against a server.
BOOST_AUTO_TEST_CASE(key_patterns_are_the_code_s) {
    using corolock::detail::derived_key;
    using corolock::detail::lockable_name;
    const auto keys = read(root / "doc/keys.md");
    std::size_t derived = 0;
    const std::regex untagged(R"(`\{N\}:([a-z]+)`)");
    for (std::sregex_iterator it(keys.begin(), keys.end(), untagged), end; it != end; ++it) {
        ++derived;
        BOOST_TEST(derived_key("N", (*it)[1].str()) == "{N}:" + (*it)[1].str());
    }
    BOOST_TEST(derived >= 10u);
    // "if N contains a hash tag ..., the derived names are `N:fence` and `N:released`"
    BOOST_TEST(keys.find("the derived names are `N:fence`") != std::string::npos);
    BOOST_TEST(derived_key("order:{42}", "fence") == "order:{42}:fence");
    BOOST_TEST(derived_key("order:{42}", "released") == "order:{42}:released");
    // The names refused, as the page lists them.
    BOOST_TEST(!lockable_name(""));
    BOOST_TEST(!lockable_name("a}b"));
    BOOST_TEST(!lockable_name("{t}:fence"));
    BOOST_TEST(!lockable_name("{t}:released"));
    BOOST_TEST(lockable_name("lock:report"));
    for (const auto suffix : corolock::detail::reserved_suffixes)
        BOOST_TEST(keys.find("`" + std::string(suffix) + "`") != std::string::npos,
                   "doc/keys.md names the reserved suffix " << suffix);
    // The latch's table: `N`, `{N}:d`, `{N}:released`; a tagged name ending in `:d` is refused.
    const auto latch = corolock::detail::make_latch_keys("N");
    BOOST_TEST(latch.done == "{N}:d");
    BOOST_TEST(latch.channel == "{N}:released");
    BOOST_TEST(!corolock::detail::latch_name("{t}:d"));
    BOOST_TEST(keys.find("may not end in `:d`") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_doc_claims
