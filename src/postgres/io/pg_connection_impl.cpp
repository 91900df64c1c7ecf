// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "postgres/io/pg_connection_impl.hpp"

#include "io/deliver.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <charconv>
#include <libpq-fe.h>
#include <string_view>

namespace corolock::detail {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::string libpq_message(const PGconn* c) {
    std::string m = c != nullptr ? PQerrorMessage(c) : "out of memory";
    while (!m.empty() && (m.back() == '\n' || m.back() == ' '))
        m.pop_back();
    return m;
}

// `"name"` with embedded quotes doubled: a channel as an SQL identifier.
std::string quote_identifier(std::string_view name) {
    std::string out(1, '"');
    for (char c : name) {
        if (c == '"')
            out += '"';
        out += c;
    }
    out += '"';
    return out;
}

std::uint64_t affected_from_tag(std::string_view tag) noexcept {
    // The count is the tag's last word, when it is a number: "INSERT 0 3", "UPDATE 2".
    const auto sp = tag.rfind(' ');
    if (sp == std::string_view::npos)
        return 0;
    std::uint64_t n = 0;
    const auto digits = tag.substr(sp + 1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    return ec == std::errc() && p == digits.data() + digits.size() ? n : 0;
}

// How long a new session waits for its predecessor to exit: below two health check intervals, so
// that the wait itself never drops the session (the connect timeout when the check is off).
std::chrono::steady_clock::duration terminate_wait(const pg_config& cfg) noexcept {
    if (cfg.health_check_interval > std::chrono::steady_clock::duration::zero())
        return cfg.health_check_interval;
    if (cfg.connect_timeout > std::chrono::steady_clock::duration::zero())
        return cfg.connect_timeout;
    return 5s;
}

std::string pid_text(const std::optional<pg_backend>& b) {
    return b ? "pid " + std::to_string(b->pid) : std::string("pid unknown");
}

} // namespace

pg_connection_impl::pg_connection_impl(executor_type ex, pg_config cfg, logger log)
    : ex_(ex), strand_(asio::make_strand(ex)), cfg_(std::move(cfg)), log_(std::move(log)),
      sd_(strand_), retry_timer_(strand_), connect_timer_(strand_), health_timer_(strand_),
      expiry_timer_(strand_), sessions_(terminate_wait(cfg_)), rng_(std::random_device{}()) {}

pg_connection_impl::~pg_connection_impl() {
    if (sd_.is_open())
        sd_.release();
    if (conn_ != nullptr)
        PQfinish(conn_);
}

pg_connection_stats pg_connection_impl::stats() const noexcept {
    pg_connection_stats s;
    s.statements = statements_.load(std::memory_order_relaxed);
    s.results = results_.load(std::memory_order_relaxed);
    s.notifications = notifications_.load(std::memory_order_relaxed);
    s.connects = connects_.load(std::memory_order_relaxed);
    return s;
}

void pg_connection_impl::run(asio::any_completion_handler<void(error_code)> h) {
    if (running_ || stopped_) {
        deliver(std::move(h), ex_,
                stopped_ ? error_code(asio::error::operation_aborted)
                         : error_code(error::operation_in_progress));
        return;
    }
    running_ = true;
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected()) {
        slot.assign([w = weak_from_this()](asio::cancellation_type_t t) {
            if ((t & asio::cancellation_type::terminal) == asio::cancellation_type::none)
                return;
            if (auto self = w.lock())
                asio::post(self->strand_, [self] { self->stop(); });
        });
    }
    run_handler_.emplace(std::move(h));
    asio::co_spawn(strand_, run_loop(), asio::detached);
}

void pg_connection_impl::stop() {
    if (user_stopped_)
        return;
    user_stopped_ = true;
    stopped_ = true;
    retry_timer_.cancel();
    drop(asio::error::operation_aborted);
    if (!running_)
        finish_all();
}

void pg_connection_impl::finish_all() {
    stopped_ = true;
    expiry_timer_.cancel();
    const error_code queued_ec = user_stopped_ ? error_code(asio::error::operation_aborted)
                                               : error_code(error::not_connected);
    for (auto& st : queue_.take_all())
        finish(st, st->done ? error_code() : queued_ec);
    for (auto& [channel, list] : listeners_) {
        for (auto& w : list) {
            auto l = w.lock();
            if (!l)
                continue;
            l->failed = asio::error::operation_aborted;
            if (!l->waiting)
                continue;
            auto h = std::move(*l->waiting);
            l->waiting.reset();
            deliver(std::move(h), ex_, error_code(asio::error::operation_aborted));
        }
    }
}

void pg_connection_impl::drop(error_code why) {
    if (!drop_reason_)
        drop_reason_ = why;
    connect_timer_.cancel();
    health_timer_.cancel();
    if (sd_.is_open())
        sd_.cancel();
}

asio::awaitable<void> pg_connection_impl::run_loop() {
    auto self = shared_from_this(); // lives as long as the loop
    backoff wait(cfg_.reconnect_wait, cfg_.reconnect_wait_max);
    error_code last;
    while (!stopped_) {
        drop_reason_.reset();
        error_code ec = co_await connect_once();
        if (!ec && !stopped_) {
            wait.reset();
            ec = co_await session();
        }
        close_connection(ec);
        last = ec;
        if (stopped_ || cfg_.reconnect_wait <= clock::duration::zero())
            break;
        const auto pause = wait.next(rng_);
        if (log_.enabled(logger::level::warning))
            log_.log(logger::level::warning,
                     "postgres: connection ended (" + ec.message() + "); reconnecting in " +
                         std::to_string(
                             std::chrono::duration_cast<std::chrono::milliseconds>(pause).count()) +
                         " ms");
        retry_timer_.expires_after(pause);
        error_code ignored;
        co_await retry_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    running_ = false;
    finish_all();
    if (run_handler_) {
        auto h = std::move(*run_handler_);
        run_handler_.reset();
        const error_code result = user_stopped_ ? error_code(asio::error::operation_aborted) : last;
        deliver(std::move(h), ex_, result);
    }
}

void pg_connection_impl::reassign_socket() {
    // libpq may open another socket while connecting (another host, a TLS retry): the descriptor
    // is taken afresh after every step. libpq owns it: release, never close.
    if (sd_.is_open())
        sd_.release();
    const int fd = conn_ != nullptr ? PQsocket(conn_) : -1;
    if (fd >= 0) {
        error_code ec;
        sd_.assign(fd, ec);
        if (ec)
            drop(error::connection_lost);
    }
}

asio::awaitable<error_code> pg_connection_impl::connect_once() {
    conn_ = PQconnectStart(cfg_.conninfo.c_str());
    if (conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD) {
        if (log_.enabled(logger::level::warning))
            log_.log(logger::level::warning, "postgres: connect failed: " + libpq_message(conn_));
        co_return error::not_connected;
    }
    const auto session = ++session_;
    if (cfg_.connect_timeout > clock::duration::zero()) {
        connect_timer_.expires_after(cfg_.connect_timeout);
        connect_timer_.async_wait([this, w = weak_from_this(), session](error_code ec) {
            auto self = w.lock();
            if (!ec && self && session_ == session && !connected_.load())
                drop(error::connect_timeout);
        });
    }
    auto poll = PGRES_POLLING_WRITING;
    for (;;) {
        reassign_socket();
        if (drop_reason_)
            co_return *drop_reason_;
        if (!sd_.is_open())
            co_return error::not_connected;
        error_code ec;
        const auto what = poll == PGRES_POLLING_READING
                              ? asio::posix::stream_descriptor::wait_read
                              : asio::posix::stream_descriptor::wait_write;
        co_await sd_.async_wait(what, asio::redirect_error(asio::use_awaitable, ec));
        if (drop_reason_)
            co_return *drop_reason_;
        if (ec)
            co_return error::not_connected;
        poll = PQconnectPoll(conn_);
        if (poll == PGRES_POLLING_OK)
            break;
        if (poll == PGRES_POLLING_FAILED) {
            if (log_.enabled(logger::level::warning))
                log_.log(logger::level::warning,
                         "postgres: connect failed: " + libpq_message(conn_));
            co_return error::not_connected;
        }
    }
    connect_timer_.cancel();
    reassign_socket();
    // The server's notices (`relation ... already exists, skipping`) go to the logger, not
    // to stderr as libpq would print them.
    PQsetNoticeProcessor(
        conn_,
        [](void* arg, const char* message) {
            const auto& log = static_cast<pg_connection_impl*>(arg)->log_;
            if (log.enabled(logger::level::debug)) {
                std::string m = message;
                while (!m.empty() && m.back() == '\n')
                    m.pop_back();
                log.log(logger::level::debug, "postgres: server notice: " + m);
            }
        },
        this);
    if (PQsetnonblocking(conn_, 1) != 0 || PQenterPipelineMode(conn_) != 1) {
        if (log_.enabled(logger::level::warning))
            log_.log(logger::level::warning,
                     "postgres: cannot enter pipeline mode: " + libpq_message(conn_));
        co_return error::not_connected;
    }
    co_return error_code();
}

asio::awaitable<error_code> pg_connection_impl::session() {
    connected_.store(true);
    connects_.fetch_add(1, std::memory_order_relaxed);
    expiry_timer_.cancel();
    if (log_.enabled(logger::level::info))
        log_.log(logger::level::info, "postgres: connected");
    // LISTEN again before anything queued meanwhile: a lock waiter's attempt must not run
    // before its wake-up channel is heard.
    for (auto it = listeners_.rbegin(); it != listeners_.rend(); ++it)
        listen_statement(it->first, true, true);
    open_session(sessions_.on_connected()); // before them; the rest waits for its answer
    probe_in_flight_ = false;
    arm_health();
    if (on_connected)
        on_connected();
    send_queued();
    while (!drop_reason_) {
        error_code ec;
        if (flush_pending_) {
            // Waiting to write while reading too: a server blocked on its own output reads
            // nothing until we read.
            auto [order, e1, e2] =
                co_await asio::experimental::make_parallel_group(
                    sd_.async_wait(asio::posix::stream_descriptor::wait_read, asio::deferred),
                    sd_.async_wait(asio::posix::stream_descriptor::wait_write, asio::deferred))
                    .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
            ec = order[0] == 0 ? e1 : e2;
        } else {
            waiting_read_only_ = true;
            co_await sd_.async_wait(asio::posix::stream_descriptor::wait_read,
                                    asio::redirect_error(asio::use_awaitable, ec));
            waiting_read_only_ = false;
        }
        if (drop_reason_)
            break;
        if (ec == asio::error::operation_aborted)
            continue; // woken to wait for writing too
        if (ec) {
            drop(error::connection_lost);
            break;
        }
        if (PQconsumeInput(conn_) != 1) {
            if (log_.enabled(logger::level::warning))
                log_.log(logger::level::warning,
                         "postgres: connection lost: " + libpq_message(conn_));
            drop(error::connection_lost);
            break;
        }
        read_results();
        deliver_notifications();
        if (!drop_reason_ && PQstatus(conn_) == CONNECTION_BAD)
            drop(error::connection_lost);
        if (!drop_reason_ && flush_pending_)
            flush();
    }
    co_return *drop_reason_;
}

void pg_connection_impl::close_connection(error_code why) {
    const bool was_connected = connected_.exchange(false);
    ++session_;
    connect_timer_.cancel();
    health_timer_.cancel();
    flush_pending_ = false;
    if (sd_.is_open())
        sd_.release();
    if (conn_ != nullptr)
        PQfinish(conn_);
    conn_ = nullptr;
    const auto ended = sessions_.on_disconnect(queue_.in_flight());
    if (!user_stopped_ && ended == pg_session_fsm::ended::identity_unknown &&
        log_.enabled(logger::level::warning))
        log_.log(logger::level::warning,
                 "postgres: the session's identity is unknown, so the next one cannot end it: "
                 "statements it had in flight may still run after the next session's");
    // Sent statements: their outcome is unknown; they are never sent again.
    const error_code lost = user_stopped_ ? error_code(asio::error::operation_aborted)
                                          : error_code(error::connection_lost);
    for (auto& st : queue_.on_disconnect())
        finish(st, lost);
    if (was_connected && log_.enabled(logger::level::warning) && !user_stopped_)
        log_.log(logger::level::warning, "postgres: disconnected: " + why.message());
    arm_expiry();
}

void pg_connection_impl::submit(std::shared_ptr<pg_statement> st) {
    if (stopped_) {
        finish(st, user_stopped_ ? error_code(asio::error::operation_aborted)
                                 : error_code(error::not_connected));
        return;
    }
    st->results.assign(st->queries.size(), pg_result());
    st->id = queue_.push(st, clock::now());
    if (connected_.load()) {
        send_queued();
    } else {
        arm_expiry();
    }
}

void pg_connection_impl::send_queued() {
    if (sessions_.may_send())
        send(SIZE_MAX);
}

void pg_connection_impl::send(std::size_t max) {
    if (conn_ == nullptr || !connected_.load() || queue_.queued() == 0)
        return;
    bool ok = true;
    queue_.send_queued(
        [&](const std::shared_ptr<pg_statement>& st) {
            for (const auto& q : st->queries) {
                std::vector<const char*> values;
                values.reserve(q.params.size());
                for (const auto& p : q.params)
                    values.push_back(p ? p->c_str() : nullptr);
                if (PQsendQueryParams(conn_, q.sql.c_str(), static_cast<int>(values.size()),
                                      nullptr, values.data(), nullptr, nullptr, 0) != 1) {
                    ok = false;
                    return false;
                }
            }
            statements_.fetch_add(1, std::memory_order_relaxed);
            if (PQpipelineSync(conn_) != 1) {
                ok = false;
                return false;
            }
            return true;
        },
        max);
    if (!ok) {
        if (log_.enabled(logger::level::warning))
            log_.log(logger::level::warning, "postgres: send failed: " + libpq_message(conn_));
        drop(error::connection_lost);
        return;
    }
    flush();
}

void pg_connection_impl::flush() {
    const int r = PQflush(conn_);
    if (r < 0) {
        drop(error::connection_lost);
        return;
    }
    const bool was = flush_pending_;
    flush_pending_ = r == 1;
    if (flush_pending_ && !was && waiting_read_only_)
        sd_.cancel(); // the session waits for reading only: make it wait for writing too
}

void pg_connection_impl::read_results() {
    int nulls = 0;
    while (!drop_reason_ && queue_.in_flight() > 0 && PQisBusy(conn_) == 0) {
        PGresult* r = PQgetResult(conn_);
        if (r == nullptr) {
            // Between two queries' results; twice in a row means nothing more is ready.
            if (++nulls > 1)
                break;
            continue;
        }
        nulls = 0;
        activity_ = true;
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            auto [m, st] = queue_.on_sync();
            if (m == pg_statement_queue<std::shared_ptr<pg_statement>>::match::unexpected) {
                drop(error::unexpected_reply);
                break;
            }
            if (st) {
                results_.fetch_add(1, std::memory_order_relaxed);
                finish(*st, statement_error(**st));
            }
            continue;
        }
        auto [m, st] = queue_.on_result();
        if (m == pg_statement_queue<std::shared_ptr<pg_statement>>::match::unexpected) {
            PQclear(r);
            drop(error::unexpected_reply);
            break;
        }
        if (st != nullptr)
            store(r, **st);
        const auto status = PQresultStatus(r);
        PQclear(r);
        if (status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH) {
            // The protocol is now in COPY: this connection cannot carry it on.
            drop(error::unexpected_reply);
            break;
        }
    }
}

void pg_connection_impl::store(::pg_result* r, pg_statement& st) {
    // The next query of the statement without a result yet takes this one.
    std::size_t i = 0;
    while (i < st.results.size() &&
           (!st.results[i].command_status().empty() || !st.results[i].error_message().empty()))
        ++i;
    if (i == st.results.size())
        return; // more results than queries (none expected): ignored
    auto& out = st.results[i];
    switch (PQresultStatus(r)) {
    case PGRES_TUPLES_OK:
    case PGRES_SINGLE_TUPLE:
    case PGRES_COMMAND_OK:
    case PGRES_EMPTY_QUERY: {
        const int rows = PQntuples(r), cols = PQnfields(r);
        auto& values = access::values(out);
        auto& nulls = access::nulls(out);
        values.clear();
        nulls.clear();
        values.reserve(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
        nulls.reserve(values.capacity());
        for (int row = 0; row < rows; ++row)
            for (int col = 0; col < cols; ++col) {
                const bool null = PQgetisnull(r, row, col) != 0;
                nulls.push_back(null);
                values.emplace_back(null ? "" : PQgetvalue(r, row, col),
                                    null ? 0 : static_cast<std::size_t>(PQgetlength(r, row, col)));
            }
        access::shape(out, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
        std::string tag = PQcmdStatus(r);
        if (tag.empty())
            tag = "EMPTY";
        const auto affected = affected_from_tag(tag);
        access::status(out, std::move(tag), affected);
        break;
    }
    case PGRES_PIPELINE_ABORTED:
        access::failure(out, "", "not run: an earlier query of the statement failed");
        break;
    case PGRES_COPY_IN:
    case PGRES_COPY_OUT:
    case PGRES_COPY_BOTH:
        access::failure(out, "", "COPY is not supported on a corolock connection");
        break;
    default: {
        const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        std::string msg = PQresultErrorMessage(r);
        while (!msg.empty() && msg.back() == '\n')
            msg.pop_back();
        if (msg.empty())
            msg = PQresStatus(PQresultStatus(r));
        access::failure(out, state != nullptr ? state : "", std::move(msg));
        break;
    }
    }
}

error_code pg_connection_impl::statement_error(const pg_statement& st) noexcept {
    for (const auto& r : st.results) {
        if (r.error_message().empty()) {
            if (r.command_status().empty())
                return error::unexpected_reply; // no answer to this query at all
            continue;
        }
        const auto& state = r.sqlstate();
        if (state == "25006")
            return error::readonly;
        if (state == "CL001")
            return error::stale_token;
        if (state.empty() && r.error_message().find("COPY") != std::string::npos)
            return error::unexpected_reply;
        return error::server_error;
    }
    return {};
}

void pg_connection_impl::finish(const std::shared_ptr<pg_statement>& st, error_code ec) {
    if (st->done)
        return;
    st->done = true;
    st->complete(ec);
}

void pg_connection_impl::cancel_statement(const std::shared_ptr<pg_statement>& st,
                                          asio::cancellation_type_t t) {
    if (st->done)
        return;
    using queue_type = pg_statement_queue<std::shared_ptr<pg_statement>>;
    const auto state = queue_.state_of(st->id);
    if (!state)
        return;
    if (*state == queue_type::state::sent &&
        (t & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) ==
            asio::cancellation_type::none)
        return; // total: a statement handed to libpq cannot be taken back
    auto [what, item] = queue_.cancel(st->id);
    if (item)
        finish(*item, asio::error::operation_aborted);
}

void pg_connection_impl::deliver_notifications() {
    while (PGnotify* n = PQnotifies(conn_)) {
        pg_notification msg{n->relname, n->extra != nullptr ? n->extra : "", n->be_pid};
        PQfreemem(n);
        notifications_.fetch_add(1, std::memory_order_relaxed);
        auto it = listeners_.find(msg.channel);
        if (it == listeners_.end())
            continue;
        for (auto& w : it->second) {
            auto l = w.lock();
            if (!l)
                continue;
            if (l->sink) {
                l->sink(msg);
            } else if (l->waiting) {
                *l->out = msg;
                auto h = std::move(*l->waiting);
                l->waiting.reset();
                deliver(std::move(h), ex_, error_code());
            } else {
                if (l->buffer.size() >= std::max<std::size_t>(cfg_.notify_buffer_size, 1)) {
                    l->buffer.pop_front();
                    l->dropped.fetch_add(1, std::memory_order_relaxed);
                }
                l->buffer.push_back(msg);
            }
        }
    }
}

void pg_connection_impl::open_session(const pg_session_fsm::opening& o) {
    std::vector<pg_query> qs;
    qs.push_back(pg_query{std::string(pg_session_sql::identity), {}});
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(o.wait).count();
    if (o.predecessor) {
        // After the identity, which its failure must not skip; the session's only statement,
        // so the terminate's wait holds everything else back in the server as well.
        qs.push_back(pg_query{
            std::string(pg_session_sql::terminate),
            {std::to_string(o.predecessor->pid), o.predecessor->started, std::to_string(wait_ms)}});
        if (log_.enabled(logger::level::info))
            log_.log(logger::level::info, "postgres: ending the previous session (" +
                                              pid_text(o.predecessor) +
                                              "), which had statements in flight, first");
    }
    auto st = make_statement(std::move(qs), [this, session = session_, pred = o.predecessor,
                                             wait_ms](error_code, pg_statement& s) {
        if (session != session_)
            return; // dropped meanwhile: the predecessor is still to end
        std::optional<pg_backend> self;
        const auto& id = s.results[0];
        if (id.error_message().empty() && id.rows() == 1 && id.columns() == 2)
            self = pg_session_sql::decode_identity(id.value(0, 0), id.value(0, 1));
        if (!self && log_.enabled(logger::level::warning))
            log_.log(logger::level::warning,
                     "postgres: cannot read the session's identity (" +
                         (id.error_message().empty() ? std::string("no row") : id.error_message()) +
                         "): if it drops with statements in flight, the next session cannot end "
                         "it first");
        auto how = pg_session_fsm::ending::none;
        std::string why;
        if (s.results.size() > 1) {
            const auto& t = s.results[1];
            why = t.error_message();
            how = pg_session_sql::decode_terminate(!why.empty() || t.command_status().empty(),
                                                   t.rows(), t.rows() == 1 ? t.value(0, 0) : "");
        }
        const auto ending = sessions_.on_opened(std::move(self), how);
        const std::string risk = "; statements it still had may run after this session's (a lock "
                                 "attempt undone meanwhile then keeps its row until its lease "
                                 "ends)";
        switch (ending) {
        case pg_session_fsm::ending::none:
            break;
        case pg_session_fsm::ending::terminated:
            if (log_.enabled(logger::level::info))
                log_.log(logger::level::info,
                         "postgres: ended the previous session (" + pid_text(pred) +
                             ") before this one ran anything: none of its statements runs after "
                             "this session's");
            break;
        case pg_session_fsm::ending::already_gone:
            if (log_.enabled(logger::level::info))
                log_.log(logger::level::info,
                         "postgres: the previous session (" + pid_text(pred) + ") had ended");
            break;
        case pg_session_fsm::ending::still_running:
            if (log_.enabled(logger::level::warning))
                log_.log(logger::level::warning, "postgres: the previous session (" +
                                                     pid_text(pred) + ") did not end within " +
                                                     std::to_string(wait_ms) + " ms" + risk);
            break;
        case pg_session_fsm::ending::failed:
            if (log_.enabled(logger::level::warning))
                log_.log(logger::level::warning,
                         "postgres: cannot end the previous session (" + pid_text(pred) +
                             "): " + (why.empty() ? "no answer" : why) + risk);
            break;
        }
        send_queued();
    });
    st->results.assign(st->queries.size(), pg_result());
    st->id = queue_.push(st, clock::now(), true);
    send(1);
}

void pg_connection_impl::listen_statement(const std::string& channel, bool listen, bool front) {
    pg_query q{std::string(listen ? "LISTEN " : "UNLISTEN ") + quote_identifier(channel), {}};
    std::vector<pg_query> qs;
    qs.push_back(std::move(q));
    auto st =
        make_statement(std::move(qs), [this, channel, listen](error_code ec, pg_statement& s) {
            if (ec && ec != asio::error::operation_aborted && log_.enabled(logger::level::warning))
                log_.log(logger::level::warning,
                         std::string("postgres: ") + (listen ? "LISTEN " : "UNLISTEN ") + channel +
                             " failed: " + ec.message() +
                             (s.results.empty() ? "" : " " + s.results[0].error_message()));
        });
    if (front) {
        st->results.assign(1, pg_result());
        st->id = queue_.push(st, clock::now(), true);
    } else {
        submit(st);
    }
}

void pg_connection_impl::add_listener(const std::shared_ptr<pg_listener_state>& l) {
    if (stopped_) {
        l->failed = asio::error::operation_aborted;
        return;
    }
    if (l->channel.empty() || l->channel.size() > 63 ||
        l->channel.find('\0') != std::string::npos) {
        l->failed = error::invalid_argument;
        return;
    }
    auto& list = listeners_[l->channel];
    bool live = false;
    for (auto& w : list)
        live = live || !w.expired();
    list.push_back(l);
    if (!live)
        listen_statement(l->channel, true, false);
}

void pg_connection_impl::remove_listener(pg_listener_state* l) {
    auto it = listeners_.find(l->channel);
    if (it == listeners_.end())
        return;
    auto& list = it->second;
    std::erase_if(list, [l](const std::weak_ptr<pg_listener_state>& w) {
        auto p = w.lock();
        return !p || p.get() == l;
    });
    if (list.empty()) {
        const std::string channel = it->first;
        listeners_.erase(it);
        if (!stopped_)
            listen_statement(channel, false, false);
    }
}

void pg_connection_impl::receive(const std::shared_ptr<pg_listener_state>& l, pg_notification& out,
                                 pg_listener_state::handler_type h) {
    if (!l->buffer.empty()) {
        out = std::move(l->buffer.front());
        l->buffer.pop_front();
        deliver(std::move(h), ex_, error_code());
        return;
    }
    if (l->failed || l->waiting) {
        const error_code ec = l->failed ? l->failed : error_code(error::operation_in_progress);
        deliver(std::move(h), ex_, ec);
        return;
    }
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected()) {
        slot.assign([w = std::weak_ptr<pg_listener_state>(l),
                     self = weak_from_this()](asio::cancellation_type_t) {
            auto impl = self.lock();
            if (!impl)
                return;
            asio::post(impl->strand_, [w, impl] {
                auto l = w.lock();
                if (!l || !l->waiting)
                    return;
                auto h = std::move(*l->waiting);
                l->waiting.reset();
                deliver(std::move(h), impl->ex_, error_code(asio::error::operation_aborted));
            });
        });
    }
    l->out = &out;
    l->waiting.emplace(std::move(h));
}

void pg_connection_impl::arm_expiry() {
    if (stopped_ || connected_.load() || cfg_.max_wait_for_connection <= clock::duration::zero())
        return;
    const auto at = queue_.next_expiry(cfg_.max_wait_for_connection);
    if (at == clock::time_point::max())
        return;
    expiry_timer_.expires_at(at);
    expiry_timer_.async_wait([this, w = weak_from_this()](error_code ec) {
        auto self = w.lock();
        if (ec || !self || connected_.load())
            return;
        for (auto& st : queue_.expire(clock::now(), cfg_.max_wait_for_connection))
            finish(st, error::not_connected);
        arm_expiry();
    });
}

void pg_connection_impl::arm_health() {
    if (cfg_.health_check_interval <= clock::duration::zero())
        return;
    activity_ = false;
    health_timer_.expires_after(cfg_.health_check_interval);
    health_timer_.async_wait([this, w = weak_from_this(), session = session_](error_code ec) {
        auto self = w.lock();
        if (ec || !self || session != session_ || !connected_.load())
            return;
        if (probe_in_flight_ && !activity_) {
            if (log_.enabled(logger::level::warning))
                log_.log(logger::level::warning,
                         "postgres: no answer within the health check interval; reconnecting");
            drop(error::pong_timeout);
            return;
        }
        if (!probe_in_flight_) {
            probe_in_flight_ = true;
            std::vector<pg_query> qs;
            qs.push_back(pg_query{"SELECT 1", {}});
            submit(make_statement(std::move(qs), [this, session](error_code, pg_statement&) {
                if (session == session_)
                    probe_in_flight_ = false;
            }));
        }
        arm_health();
    });
}

} // namespace corolock::detail
