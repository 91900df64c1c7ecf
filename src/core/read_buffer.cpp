// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/read_buffer.hpp"

#include <algorithm>

namespace corolock::detail {

namespace asio = boost::asio;

asio::mutable_buffer read_buffer::prepare(std::size_t min_free) {
    if (pos_ > 0) {
        std::copy(data_.begin() + static_cast<std::ptrdiff_t>(pos_),
                  data_.begin() + static_cast<std::ptrdiff_t>(end_), data_.begin());
        end_ -= pos_;
        pos_ = 0;
    }
    if (data_.size() - end_ < min_free)
        data_.resize(std::max(end_ + min_free, data_.size() * 2));
    return asio::buffer(data_.data() + end_, data_.size() - end_);
}

} // namespace corolock::detail
