// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "zookeeper/io/zk_session.hpp"

#include "io/deliver.hpp"
#include "zookeeper/io/zk_grant.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <variant>
#include <zookeeper/zookeeper.h>

namespace corolock::detail {

namespace asio = boost::asio;

bool zk_session_gone(int rc) noexcept {
    return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE || rc == ZSESSIONMOVED;
}

bool zk_outcome_unknown(int rc) noexcept {
    return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

error_code zk_error(int rc) noexcept {
    if (rc == ZOK)
        return {};
    if (zk_outcome_unknown(rc) || zk_session_gone(rc))
        return error::connection_lost;
    if (rc == ZAUTHFAILED || rc == ZNOAUTH)
        return error::auth_failed;
    if (rc == ZBADARGUMENTS)
        return error::invalid_argument;
    return error::server_error;
}

namespace {

// One request in the C client: what its completion needs, freed by the completion (the C client
// calls each completion exactly once, with ZCLOSING when the handle is closed first).
struct zk_call {
    std::weak_ptr<zk_session> owner;
    zk_session::callback cb;
    unsigned session = 0;
    // multi: the ops' strings and results live until the completion.
    std::vector<zk_op> ops;
    std::vector<zoo_op_t> zops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::string> path_buffers;

    void done(zk_reply r) {
        // Completed by zookeeper_close in the session's destructor: nobody is left to tell.
        auto s = owner.lock();
        if (!s)
            return;
        // Closed to open a new session after an expiry: the request's session is gone.
        if (r.rc == ZCLOSING && s->renewing())
            r.rc = ZSESSIONEXPIRED;
        r.session = session;
        asio::post(s->strand(),
                   [cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
    }
};

void on_string_stat(int rc, const char* value, const Stat* stat, const void* data) {
    std::unique_ptr<zk_call> c(static_cast<zk_call*>(const_cast<void*>(data)));
    zk_reply r;
    r.rc = rc;
    if (rc == ZOK && value != nullptr)
        r.path = value;
    if (rc == ZOK && stat != nullptr)
        r.czxid = stat->czxid;
    c->done(std::move(r));
}

void on_stat(int rc, const Stat* stat, const void* data) {
    std::unique_ptr<zk_call> c(static_cast<zk_call*>(const_cast<void*>(data)));
    zk_reply r;
    r.rc = rc;
    if (rc == ZOK && stat != nullptr)
        r.czxid = stat->czxid;
    c->done(std::move(r));
}

void on_void(int rc, const void* data) {
    std::unique_ptr<zk_call> c(static_cast<zk_call*>(const_cast<void*>(data)));
    zk_reply r;
    r.rc = rc;
    for (std::size_t i = 0; i < c->results.size(); ++i) {
        const int err = c->results[i].err;
        if (err != ZOK && err != ZRUNTIMEINCONSISTENCY) {
            r.failed_op = static_cast<int>(i);
            break;
        }
    }
    c->done(std::move(r));
}

void on_string(int rc, const char*, const void* data) {
    std::unique_ptr<zk_call> c(static_cast<zk_call*>(const_cast<void*>(data)));
    zk_reply r;
    r.rc = rc;
    c->done(std::move(r));
}

void on_strings(int rc, const String_vector* strings, const void* data) {
    std::unique_ptr<zk_call> c(static_cast<zk_call*>(const_cast<void*>(data)));
    zk_reply r;
    r.rc = rc;
    if (rc == ZOK && strings != nullptr)
        for (int i = 0; i < strings->count; ++i)
            r.children.emplace_back(strings->data[i]);
    c->done(std::move(r));
}

void on_data(int rc, const char* value, int len, const Stat* stat, const void* data) {
    std::unique_ptr<zk_call> c(static_cast<zk_call*>(const_cast<void*>(data)));
    zk_reply r;
    r.rc = rc;
    if (rc == ZOK && value != nullptr && len > 0)
        r.data.assign(value, static_cast<std::size_t>(len));
    if (rc == ZOK && stat != nullptr)
        r.czxid = stat->czxid;
    c->done(std::move(r));
}

zk_session* session_of(zhandle_t* zh) {
    return static_cast<zk_session*>(const_cast<void*>(zoo_get_context(zh)));
}

void session_watcher(zhandle_t* zh, int type, int state, const char*, void*) {
    if (type == ZOO_SESSION_EVENT)
        session_of(zh)->on_session_event(state);
}

void node_watcher(zhandle_t* zh, int type, int state, const char*, void* ctx) {
    session_of(zh)->on_watch_event(reinterpret_cast<std::uintptr_t>(ctx), type, state);
}

ACL_vector* acl_for(const zk_config& c) {
    return c.digest_user.empty() ? &ZOO_OPEN_ACL_UNSAFE : &ZOO_CREATOR_ALL_ACL;
}

} // namespace

zk_session::zk_session(asio::any_io_executor ex, zk_config config)
    : ex_(ex), strand_(asio::make_strand(ex)), config_(std::move(config)),
      fsm_(config_.loss_margin), sd_(strand_), timer_(strand_), kick_(strand_),
      suspension_(strand_) {
    // The C client logs to stderr by default; corolock's logger says what matters.
    static std::once_flag quiet;
    std::call_once(quiet, [] { zoo_set_debug_level(static_cast<ZooLogLevel>(0)); });
}

zk_session::~zk_session() {
    close_handle();
}

void zk_session::log(logger::level l, const std::string& msg) const {
    if (config_.log.enabled(l))
        config_.log.log(l, msg);
}

void zk_session::publish() {
    state_ = fsm_.state();
    valid_until_ = fsm_.valid_until().time_since_epoch().count();
    sessions_ = fsm_.sessions();
    timeout_ms_ = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(fsm_.session_timeout()).count());
}

void zk_session::run(asio::any_completion_handler<void(error_code)> h) {
    error_code ec;
    if (running_ || stopped_)
        ec = error::operation_in_progress;
    else if (config_.hosts.empty() || (!config_.chroot.empty() && (config_.chroot.front() != '/' ||
                                                                   config_.chroot.back() == '/')))
        ec = error::invalid_argument;
    if (ec) {
        deliver(std::move(h), ex_, ec);
        return;
    }
    running_ = true;
    run_handler_.add(0, std::move(h));
    asio::co_spawn(
        strand_, [self = shared_from_this()] { return self->pump(); }, asio::detached);
}

void zk_session::stop() {
    if (stopping_)
        return;
    stopping_ = true;
    if (!running_) {
        stopped_ = true;
        apply(fsm_.on_event(zk_session_event::close, clock::now()));
        return;
    }
    kick();
}

void zk_session::open_handle() {
    const auto hosts = config_.hosts + config_.chroot;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(config_.session_timeout).count();
    fsm_.on_open(clock::now());
    zh_ = zookeeper_init(hosts.c_str(), session_watcher, static_cast<int>(ms), nullptr, this, 0);
    if (zh_ == nullptr)
        return;
    // By default the C client resolves the host list again at every zookeeper_interest (a
    // netlink dump per loop, a third of a cycle's time): once a minute is enough, and a lost
    // connection resolves anew anyway.
    zoo_set_servers_resolution_delay(zh_, 60'000);
    if (!config_.digest_user.empty()) {
        const auto cred = config_.digest_user + ":" + config_.digest_password;
        zoo_add_auth(zh_, "digest", cred.data(), static_cast<int>(cred.size()), nullptr, nullptr);
    }
}

void zk_session::close_handle() {
    if (sd_.is_open())
        sd_.release(); // the descriptor belongs to the C client
    fd_ = -1;
    if (zh_ != nullptr) {
        auto* zh = std::exchange(zh_, nullptr);
        zookeeper_close(zh); // completes what is pending with ZCLOSING
    }
}

asio::awaitable<int> zk_session::wait_events(int interest) {
    using namespace asio::experimental::awaitable_operators;
    auto on = [](auto op, int event) -> asio::awaitable<int> {
        auto [ec] = co_await std::move(op);
        co_return ec ? 0 : event;
    };
    auto read = [&] {
        return on(sd_.async_wait(asio::posix::descriptor_base::wait_read,
                                 asio::as_tuple(asio::use_awaitable)),
                  ZOOKEEPER_READ);
    };
    auto write = [&] {
        return on(sd_.async_wait(asio::posix::descriptor_base::wait_write,
                                 asio::as_tuple(asio::use_awaitable)),
                  ZOOKEEPER_WRITE);
    };
    auto timeout = [&] { return on(timer_.async_wait(asio::as_tuple(asio::use_awaitable)), 0); };
    auto kicked = [&] { return on(kick_.async_wait(asio::as_tuple(asio::use_awaitable)), 0); };
    auto pick = [](const auto& v) { return std::visit([](int e) { return e; }, v); };
    const bool r = (interest & ZOOKEEPER_READ) != 0 && fd_ >= 0;
    const bool w = (interest & ZOOKEEPER_WRITE) != 0 && fd_ >= 0;
    if (r && w)
        co_return pick(co_await (read() || write() || timeout() || kicked()));
    if (r)
        co_return pick(co_await (read() || timeout() || kicked()));
    if (w)
        co_return pick(co_await (write() || timeout() || kicked()));
    co_return pick(co_await (timeout() || kicked()));
}

void zk_session::kick() {
    kick_.cancel();
}

asio::awaitable<void> zk_session::pump() {
    auto self = shared_from_this();
    bool auth_failed = false;
    while (!stopping_) {
        kick_.expires_at(asio::steady_timer::time_point::max());
        if (zh_ == nullptr) {
            open_handle();
            if (zh_ == nullptr) {
                log(logger::level::error, "zookeeper: cannot open a handle for " + config_.hosts);
                run_result_ = error::invalid_argument;
                break;
            }
        }
        // Queued before zookeeper_interest, so that the interest includes writing it.
        if (zoo_state(zh_) == ZOO_CONNECTED_STATE && fsm_.sync_due() <= clock::now())
            send_sync();
        int fd = -1;
        int interest = 0;
        timeval tv{};
        const int rc = zookeeper_interest(zh_, &fd, &interest, &tv);
        const int st = zoo_state(zh_);
        if (rc == ZINVALIDSTATE || st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE) {
            if (st == ZOO_AUTH_FAILED_STATE) {
                auth_failed = true;
                break;
            }
            // Expired: the watcher said so (or will not: a handle that never connected);
            // the next session starts on a fresh handle.
            if (fsm_.state() != zk_session_state::expired)
                apply(fsm_.on_event(zk_session_event::expired, clock::now()));
            renewing_ = true;
            close_handle();
            renewing_ = false;
            continue;
        }
        // A new socket can reuse the old one's number: re-register while not connected. After
        // an error (the socket closed, a timeout) there is no descriptor to wait on.
        if (rc != ZOK)
            fd = -1;
        // While its socket connects, the C client primes the session on WRITE only. A READ
        // then (a spurious wake-up) makes libzookeeper 3.8 allocate an input buffer that the
        // priming overwrites: a leak per connect (check_events, prime_connection). Wait for
        // the connect alone.
        if (st == ZOO_CONNECTING_STATE)
            interest &= ~ZOOKEEPER_READ;
        if (fd != fd_ || st != ZOO_CONNECTED_STATE) {
            if (sd_.is_open())
                sd_.release();
            fd_ = -1;
            error_code ec;
            if (fd >= 0)
                sd_.assign(fd, ec);
            if (fd >= 0 && !ec)
                fd_ = fd;
            else if (ec)
                log(logger::level::error,
                    "zookeeper: cannot wait on the client's socket: " + ec.message());
        }
        auto wait = std::chrono::milliseconds(std::int64_t(tv.tv_sec) * 1000 + tv.tv_usec / 1000);
        if (rc != ZOK || fd_ < 0)
            wait = std::clamp(wait, std::chrono::milliseconds(1), std::chrono::milliseconds(50));
        // The next sync may be due before the C client needs to run again.
        if (const auto due = fsm_.sync_due(); due != clock::time_point::max())
            wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(
                                      std::max(due - clock::now(), clock::duration::zero())));
        timer_.expires_after(std::max(wait, std::chrono::milliseconds(0)));
        if (st != ZOO_CONNECTED_STATE && config_.log.enabled(logger::level::debug)) {
            std::ostringstream os;
            os << "zookeeper: pump rc " << rc << " state " << st << " fd " << fd << " interest "
               << interest << " wait " << wait.count() << " ms";
            log(logger::level::debug, os.str());
        }
        const int events = co_await wait_events(interest);
        if (stopping_)
            break;
        zookeeper_process(zh_, events);
        publish();
    }
    if (auth_failed) {
        log(logger::level::error, "zookeeper: digest credentials refused");
        run_result_ = error::auth_failed;
    } else if (!run_result_) {
        run_result_ = asio::error::operation_aborted;
    }
    stopped_ = true;
    stopping_ = true;
    close_handle();
    apply(fsm_.on_event(zk_session_event::close, clock::now()));
    auto run_handlers = run_handler_.take_all();
    for (auto& [key, h] : run_handlers)
        deliver(std::move(h), ex_, run_result_);
}

void zk_session::on_session_event(int state) {
    const auto now = clock::now();
    zk_session_action a = zk_session_action::none;
    if (state == ZOO_CONNECTED_STATE) {
        a = fsm_.on_event(zk_session_event::connected, now,
                          std::chrono::milliseconds(zoo_recv_timeout(zh_)));
        std::ostringstream os;
        os << "zookeeper: session connected (timeout " << zoo_recv_timeout(zh_) << " ms)";
        log(logger::level::info, os.str());
    } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
        a = fsm_.on_event(zk_session_event::disconnected, now);
        log(logger::level::warning, "zookeeper: server lost, session suspended");
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        a = fsm_.on_event(zk_session_event::expired, now);
        log(logger::level::warning, "zookeeper: session expired");
    } else if (state == ZOO_AUTH_FAILED_STATE) {
        a = fsm_.on_event(zk_session_event::auth_failed, now);
    }
    apply(a);
    if (fsm_.state() == zk_session_state::connected)
        flush_queue();
}

void zk_session::apply(zk_session_action a) {
    publish();
    switch (a) {
    case zk_session_action::none:
        break;
    case zk_session_action::arm_timer:
        suspension_.expires_at(fsm_.deadline());
        suspension_.async_wait([self = shared_from_this()](error_code ec) {
            if (!ec)
                self->apply(self->fsm_.on_event(zk_session_event::timer, clock::now()));
        });
        break;
    case zk_session_action::drop_leases:
        log(logger::level::warning,
            fsm_.state() == zk_session_state::suspended
                ? "zookeeper: suspended past the leases' validity: reported lost"
                : "zookeeper: no sync answered through the leader within the leases' validity "
                  "(the server may have lost the leader): reported lost");
        lose_grants(error::lease_lost);
        break;
    case zk_session_action::expire_and_renew:
    case zk_session_action::fail_all: {
        suspension_.cancel();
        lose_grants(error::lease_lost);
        const int rc = a == zk_session_action::fail_all ? ZCLOSING : ZSESSIONEXPIRED;
        auto queued = std::move(queue_);
        for (auto& p : queued) {
            zk_reply r;
            r.rc = rc;
            r.session = p.session;
            asio::post(strand_, [cb = std::move(p.cb), r]() mutable { cb(r); });
        }
        auto watches = std::move(watches_);
        for (auto& [id, fn] : watches)
            asio::post(strand_, [fn = std::move(fn)] { fn(true); });
        if (a == zk_session_action::fail_all) {
            auto waiters = std::move(connect_waiters_);
            for (auto& w : waiters)
                asio::post(strand_, [w = std::move(w)] { w(false); });
            if (!stopping_) {
                stopping_ = true;
                kick();
            }
        }
        break;
    }
    }
}

void zk_session::flush_queue() {
    auto waiters = std::move(connect_waiters_);
    for (auto& w : waiters)
        asio::post(strand_, [w = std::move(w)] { w(true); });
    auto queued = std::move(queue_);
    for (auto& p : queued)
        p.issue();
    kick();
}

void zk_session::when_connected(std::function<void(bool)> cb) {
    if (stopped_ || stopping_)
        return asio::post(strand_, [cb = std::move(cb)] { cb(false); });
    if (fsm_.state() == zk_session_state::connected)
        return asio::post(strand_, [cb = std::move(cb)] { cb(true); });
    connect_waiters_.push_back(std::move(cb));
}

std::uint64_t zk_session::submit(callback cb, std::function<int(zhandle_t*, void*)> send) {
    last_queued_ = 0;
    auto issue = [this, cb, send]() mutable {
        auto* c = new zk_call{weak_from_this(), std::move(cb), fsm_.sessions(), {}, {}, {}, {}};
        const int rc = send(zh_, c);
        if (rc != ZOK) {
            zk_reply r;
            r.rc = rc;
            std::unique_ptr<zk_call>(c)->done(std::move(r));
        }
    };
    if (stopped_ || stopping_) {
        zk_reply r;
        r.rc = ZCLOSING;
        asio::post(strand_, [cb = std::move(cb), r]() mutable { cb(r); });
        return 0;
    }
    if (zh_ != nullptr && fsm_.state() == zk_session_state::connected) {
        issue();
        kick();
        return 0;
    }
    const auto id = ++next_request_;
    last_queued_ = id;
    queue_.push_back(pending{id, fsm_.sessions(), std::move(issue), cb});
    return id;
}

bool zk_session::withdraw(std::uint64_t request) {
    if (request == 0)
        return false;
    // A list of std::function: erasing in the middle moves no completion handler.
    return std::erase_if(queue_, [request](const pending& p) { return p.id == request; }) > 0;
}

std::uint64_t zk_session::create(std::string path, bool ephemeral_sequential, callback cb) {
    const auto* acl = acl_for(config_);
    return submit(std::move(cb), [path = std::move(path), ephemeral_sequential, acl](zhandle_t* zh,
                                                                                     void* c) {
        return zoo_acreate2(zh, path.c_str(), nullptr, -1, acl,
                            ephemeral_sequential ? ZOO_EPHEMERAL_SEQUENTIAL : 0, on_string_stat, c);
    });
}

void zk_session::remove(std::string path, callback cb) {
    submit(std::move(cb), [path = std::move(path)](zhandle_t* zh, void* c) {
        return zoo_adelete(zh, path.c_str(), -1, on_void, c);
    });
}

std::uint64_t zk_session::get_children(std::string path, callback cb) {
    return submit(std::move(cb), [path = std::move(path)](zhandle_t* zh, void* c) {
        return zoo_aget_children(zh, path.c_str(), 0, on_strings, c);
    });
}

void zk_session::get(std::string path, callback cb) {
    submit(std::move(cb), [path = std::move(path)](zhandle_t* zh, void* c) {
        return zoo_aget(zh, path.c_str(), 0, on_data, c);
    });
}

std::uint64_t zk_session::watch(std::string path, std::function<void(bool)> on_event, callback cb) {
    const auto id = ++next_watch_;
    watches_.emplace(id, std::move(on_event));
    submit(std::move(cb), [path = std::move(path), id](zhandle_t* zh, void* c) {
        return zoo_awexists(zh, path.c_str(), node_watcher,
                            reinterpret_cast<void*>(static_cast<std::uintptr_t>(id)), on_stat, c);
    });
    return id;
}

void zk_session::unwatch(std::uint64_t id) {
    watches_.erase(id); // the C client's watch stays until it fires, then finds nothing
}

void zk_session::on_watch_event(std::uint64_t id, int type, int state) {
    // Watchers also get every session event: only an expiry ends the watch.
    if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE)
        return;
    auto it = watches_.find(id);
    if (it == watches_.end())
        return;
    auto fn = std::move(it->second);
    watches_.erase(it);
    const bool deleted = type == ZOO_DELETED_EVENT || type == ZOO_SESSION_EVENT;
    asio::post(strand_, [fn = std::move(fn), deleted] { fn(deleted); });
}

void zk_session::multi(std::vector<zk_op> ops, callback cb) {
    const auto* acl = acl_for(config_);
    submit(std::move(cb), [ops = std::move(ops), acl](zhandle_t* zh, void* data) {
        auto* c = static_cast<zk_call*>(data);
        c->ops = ops;
        c->zops.resize(c->ops.size());
        c->results.resize(c->ops.size());
        c->path_buffers.resize(c->ops.size());
        for (std::size_t i = 0; i < c->ops.size(); ++i) {
            const auto& o = c->ops[i];
            const auto len = static_cast<int>(o.data.size());
            switch (o.what) {
            case zk_op::kind::check:
                zoo_check_op_init(&c->zops[i], o.path.c_str(), -1);
                break;
            case zk_op::kind::set:
                zoo_set_op_init(&c->zops[i], o.path.c_str(), o.data.data(), len, -1, nullptr);
                break;
            case zk_op::kind::create:
                c->path_buffers[i].resize(o.path.size() + 16);
                zoo_create_op_init(&c->zops[i], o.path.c_str(), o.data.data(), len, acl, 0,
                                   c->path_buffers[i].data(),
                                   static_cast<int>(c->path_buffers[i].size()));
                break;
            }
        }
        return zoo_amulti(zh, static_cast<int>(c->zops.size()), c->zops.data(), c->results.data(),
                          on_void, c);
    });
}

void zk_session::remove_eventually(std::string path, unsigned session, std::function<void(bool)> cb,
                                   bool retried) {
    auto self = shared_from_this();
    remove(path, [self, path, session, retried, cb = std::move(cb)](zk_reply r) mutable {
        if (r.rc == ZOK)
            return cb(true);
        if (r.rc == ZNONODE)
            return cb(retried); // after an unknown outcome, ours may have been the delete
        if (zk_outcome_unknown(r.rc) && self->fsm_.sessions() == session && !self->stopping_)
            return self->remove_eventually(std::move(path), session, std::move(cb), true);
        if (!zk_session_gone(r.rc) && !zk_outcome_unknown(r.rc))
            self->log(logger::level::error,
                      "zookeeper: delete " + path + " refused: " + zerror(r.rc));
        cb(false);
    });
}

void zk_session::cancel_ops(std::uint64_t mutex) {
    std::vector<std::function<void()>> cancels;
    for (auto& [id, op] : ops_)
        if (op.first == mutex)
            cancels.push_back(op.second);
    for (auto& c : cancels)
        c();
}

void zk_session::add_grant(const std::shared_ptr<zk_grant>& g) {
    std::erase_if(grants_, [](const auto& w) { return w.expired(); });
    grants_.push_back(g);
    // Granted while the leader's view is not proven (the leases were just given up): lost at once.
    if (!(clock::now() < fsm_.valid_until()))
        asio::post(strand_, [g] { g->lose(error::lease_lost); });
}

void zk_session::send_sync() {
    const auto n = fsm_.on_sync_sent(clock::now());
    auto self = shared_from_this();
    submit(
        [self, n](zk_reply r) {
            const auto a = self->fsm_.on_sync_reply(n, clock::now(), r.rc == ZOK);
            if (self->config_.log.enabled(logger::level::debug)) {
                std::ostringstream os;
                os << "zookeeper: sync " << n << " answered (" << zerror(r.rc) << "): leases valid "
                   << std::chrono::duration_cast<std::chrono::milliseconds>(
                          self->fsm_.valid_until() - clock::now())
                          .count()
                   << " ms more";
                self->log(logger::level::debug, os.str());
            }
            self->apply(a);
            self->kick(); // the pump waits on the C client's timeout: the next sync is due sooner
        },
        [](zhandle_t* zh, void* c) { return zoo_async(zh, "/", on_string, c); });
}

void zk_session::lose_grants(error_code why) {
    auto grants = std::move(grants_);
    grants_.clear();
    for (auto& w : grants)
        if (auto g = w.lock())
            g->lose(why);
}

} // namespace corolock::detail
