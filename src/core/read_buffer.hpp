// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// The connection's read buffer: plain memory, grown on demand, compacted before each read.
#ifndef COROLOCK_SRC_CORE_READ_BUFFER_HPP
#define COROLOCK_SRC_CORE_READ_BUFFER_HPP

#include <boost/asio/buffer.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

namespace corolock::detail {

// A growable byte buffer: [0, pos_) consumed, [pos_, end_) unread, [end_, size) free.
class read_buffer {
public:
    std::string_view unread() const noexcept { return {data_.data() + pos_, end_ - pos_}; }
    void consume(std::size_t n) noexcept { pos_ += n; }
    // Free space for the next read, moving unread bytes to the front first.
    boost::asio::mutable_buffer prepare(std::size_t min_free);
    void commit(std::size_t n) noexcept { end_ += n; }
    void clear() noexcept { pos_ = end_ = 0; }

private:
    std::vector<char> data_;
    std::size_t pos_ = 0;
    std::size_t end_ = 0;
};

} // namespace corolock::detail

#endif
