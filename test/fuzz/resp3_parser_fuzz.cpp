// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
//
// Differential fuzzing of the RESP3 parser: the input, read as a stream of messages, must give
// the same nodes, message boundaries and final error whether it arrives at once, byte by byte
// or in a few pieces; every node must respect the limits; and every message, serialised again,
// must parse back to the same nodes.
#include <corolock/resp3/parser.hpp>
#include <corolock/resp3/serializer.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace resp3 = corolock::resp3;

struct outcome {
    // Nodes of every message; a message's end is marked by a node of depth SIZE_MAX.
    std::vector<resp3::node> nodes;
    corolock::error_code ec;
    std::size_t position = 0; // bytes consumed by the stream

    friend bool operator==(const outcome&, const outcome&) = default;
};

constexpr std::size_t end_of_message = static_cast<std::size_t>(-1);

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "resp3 fuzz: %s\n", what);
    std::abort();
}

void check_node(const resp3::node_view& v, std::string_view buffer,
                const resp3::parser_limits& limits) {
    if (!v.value.empty() && (v.value.data() < buffer.data() ||
                             v.value.data() + v.value.size() > buffer.data() + buffer.size()))
        fail("node value outside the buffer");
    if (v.depth > limits.max_depth)
        fail("node deeper than max_depth");
    if (resp3::is_aggregate(v.data_type)) {
        if (v.aggregate_size > limits.max_aggregate_size || !v.value.empty())
            fail("bad aggregate node");
    } else if (v.aggregate_size != 1) {
        fail("scalar with aggregate_size != 1");
    } else if (v.value.size() > limits.max_bulk_length &&
               (v.data_type == resp3::type::simple_string ||
                v.data_type == resp3::type::simple_error ||
                v.data_type == resp3::type::blob_string || v.data_type == resp3::type::blob_error ||
                v.data_type == resp3::type::verbatim_string)) {
        fail("string longer than max_bulk_length");
    } else if (v.value.size() > 64 * 1024) {
        fail("line longer than 64 KiB");
    }
}

// Parses the stream, handing the parser the bytes that have arrived when `arrived(n)` is true
// for n bytes. `copy` puts each call's bytes in a buffer of exactly that size, so that the
// sanitizer sees any read past what the parser was given.
template <class Arrived>
outcome parse_stream(std::string_view input, const resp3::parser_limits& limits, bool copy,
                     Arrived arrived) {
    outcome out;
    resp3::parser p(limits);
    std::size_t base = 0; // first byte of the current message
    for (std::size_t avail = 0; avail <= input.size(); ++avail) {
        if (avail != input.size() && !arrived(avail))
            continue;
        for (;;) {
            std::string_view buffer = input.substr(base, avail - base);
            std::unique_ptr<char[]> owned;
            if (copy) {
                owned.reset(new char[buffer.size()]);
                std::memcpy(owned.get(), buffer.data(), buffer.size());
                buffer = std::string_view(owned.get(), buffer.size());
            }
            const auto v = p.consume(buffer, out.ec);
            if (p.consumed() > buffer.size())
                fail("consumed past the buffer");
            if (!v)
                break;
            check_node(*v, buffer, limits);
            out.nodes.push_back({v->data_type, v->aggregate_size, v->depth, std::string(v->value)});
            if (p.done()) {
                out.nodes.push_back({resp3::type::null, 0, end_of_message, {}});
                base += p.consumed();
                p.reset();
            }
        }
        if (out.ec)
            break;
    }
    out.position = base + p.consumed();
    return out;
}

// Writes the nodes of one message back to the wire.
std::string serialise(const std::vector<resp3::node>& nodes, std::size_t first, std::size_t last) {
    std::string wire;
    for (std::size_t i = first; i < last; ++i) {
        const auto& n = nodes[i];
        if (resp3::is_aggregate(n.data_type))
            resp3::add_header(wire, n.data_type, n.aggregate_size);
        else if (n.data_type == resp3::type::blob_string)
            resp3::add_blob(wire, n.value);
        else
            resp3::add_value(wire, n.data_type, n.value);
    }
    return wire;
}

void check_round_trip(const outcome& out, const resp3::parser_limits& limits) {
    std::size_t first = 0;
    for (std::size_t i = 0; i < out.nodes.size(); ++i) {
        if (out.nodes[i].depth != end_of_message)
            continue;
        const std::string wire = serialise(out.nodes, first, i);
        const auto again = parse_stream(wire, limits, false, [](std::size_t) { return false; });
        if (again.ec || again.position != wire.size() ||
            !std::equal(again.nodes.begin(), again.nodes.end(), out.nodes.begin() + first,
                        out.nodes.begin() + i + 1))
            fail("serialised message does not parse back to the same nodes");
        first = i + 1;
    }
}

void run(std::string_view input, const resp3::parser_limits& limits) {
    // libFuzzer's buffer has exactly the input's size, so at once is also checked for overreads.
    const auto whole = parse_stream(input, limits, false, [](std::size_t) { return false; });
    const auto bytes = parse_stream(input, limits, false, [](std::size_t) { return true; });
    if (!(bytes == whole))
        fail("byte-by-byte parse differs from parse at once");

    // A few cuts chosen from the input itself, each piece in a buffer of its exact size.
    std::size_t h = 14695981039346656037u;
    for (char c : input)
        h = (h ^ static_cast<unsigned char>(c)) * 1099511628211u;
    const std::size_t n = input.size() + 1;
    const std::size_t cuts[] = {h % n, (h >> 16) % n, (h >> 32) % n, n / 2};
    const auto pieces = parse_stream(input, limits, true, [&](std::size_t avail) {
        for (std::size_t c : cuts)
            if (c == avail)
                return true;
        return false;
    });
    if (!(pieces == whole))
        fail("parse in pieces differs from parse at once");

    check_round_trip(whole, limits);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    run(input, resp3::parser_limits{});
    resp3::parser_limits small;
    small.max_depth = 3;
    small.max_bulk_length = 16;
    small.max_aggregate_size = 4;
    run(input, small);
    return 0;
}
