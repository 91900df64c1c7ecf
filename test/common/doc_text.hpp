// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
// A doc page as one line (its line breaks made spaces), for the tests that check what the docs
// state against the code. COROLOCK_DOC_DIR is set by test/CMakeLists.txt.
#ifndef COROLOCK_TEST_COMMON_DOC_TEXT_HPP
#define COROLOCK_TEST_COMMON_DOC_TEXT_HPP

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace corolock::test {

// doc/<file>, each line break replaced by a space; throws when the page cannot be read.
inline std::string doc_text(const std::string& file) {
    std::ifstream in(std::string(COROLOCK_DOC_DIR) + "/" + file);
    if (!in)
        throw std::runtime_error("cannot read doc/" + file);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string text = buf.str();
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
}

} // namespace corolock::test

#endif
