// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The one door (include/corolock/detail/access.hpp) from corolock's own layers and tests to the
// private parts of the public classes. Templates only, so that it names no backend: each member
// works on any class that befriends `access` and has the part it names.
#ifndef COROLOCK_SRC_CORE_ACCESS_HPP
#define COROLOCK_SRC_CORE_ACCESS_HPP

#include <corolock/detail/access.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace corolock::detail {

struct access {
    // A public object made from its insides, by its private constructor (a lease from its
    // state, a claim from its key and owner).
    template <class T, class... Args>
    static T construct(Args&&... args) {
        return T(std::forward<Args>(args)...);
    }

    // The implementation object behind a handle (`connection`, `cluster`), and its owning
    // pointer (`pg_connection`).
    template <class T>
    static auto& impl(T& handle) noexcept {
        return *handle.impl_;
    }
    template <class T>
    static const auto& impl_ptr(const T& handle) noexcept {
        return handle.impl_;
    }

    // A lease's state (`lease`).
    template <class L>
    static auto state(const L& lease) noexcept {
        return lease.state();
    }

    // A request's parts, for the builders of src/core/script_request.hpp.
    template <class R>
    static std::string& payload(R& r) noexcept {
        return r.payload_;
    }
    template <class R>
    static void set_counts(R& r, std::size_t commands, std::size_t expected) noexcept {
        r.commands_ = commands;
        r.expected_ = expected;
    }
    template <class R>
    static auto& guards(R& r) noexcept {
        return r.guards_;
    }

    // A query result's parts, written by the PostgreSQL driver (`pg_result`).
    template <class R>
    static R& reset(R& r) noexcept {
        r.clear();
        return r;
    }
    template <class R>
    static auto& values(R& r) noexcept {
        return r.values_;
    }
    template <class R>
    static auto& nulls(R& r) noexcept {
        return r.nulls_;
    }
    template <class R>
    static void shape(R& r, std::size_t rows, std::size_t columns) noexcept {
        r.rows_ = rows;
        r.columns_ = columns;
    }
    template <class R>
    static void status(R& r, std::string status, std::uint64_t affected) {
        r.status_ = std::move(status);
        r.affected_ = affected;
    }
    template <class R>
    static void failure(R& r, std::string sqlstate, std::string message) {
        r.sqlstate_ = std::move(sqlstate);
        r.error_message_ = std::move(message);
    }
};

} // namespace corolock::detail

#endif
