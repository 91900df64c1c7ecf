// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#include "core/lock_scripts.hpp"

#include "common/wire.hpp"
#include <corolock/mutex.hpp>
#include <corolock/resp3/parser.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// This file's names, kept apart from the other test files of a unity build (test/CMakeLists.txt).
namespace unit_lock_scripts {

using corolock::error;
using corolock::error_code;
using corolock::generic_response;
using corolock::detail::acquire_reply;
using corolock::detail::derived_key;
using corolock::resp3::node;
using corolock::resp3::type;
using corolock::test::wire;
using namespace std::string_literals;

namespace {

// ---- Redis Cluster key slots (cluster spec): CRC16/XMODEM of the hash tag, or of the whole key
// when it has none, modulo 16384. A tag is the text between the first '{' and the first '}'
// after it, and only counts when it is not empty.

std::uint16_t crc16_xmodem(std::string_view data) {
    std::uint16_t crc = 0;
    for (unsigned char c : data) {
        crc ^= static_cast<std::uint16_t>(c << 8);
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                 : static_cast<std::uint16_t>(crc << 1);
    }
    return crc;
}

unsigned key_slot(std::string_view key) {
    const auto open = key.find('{');
    if (open != std::string_view::npos) {
        const auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close != open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return crc16_xmodem(key) & 16383u;
}

// True when the name carries a hash tag by the cluster rule above.
bool has_tag(std::string_view name) {
    const auto open = name.find('{');
    if (open == std::string_view::npos)
        return false;
    const auto close = name.find('}', open + 1);
    return close != std::string_view::npos && close != open + 1;
}

node leaf(type t, std::string value, std::size_t depth = 0) {
    return {t, 1, depth, std::move(value)};
}
node aggregate(type t, std::size_t size, std::size_t depth = 0) {
    return {t, size, depth, {}};
}

bool is_lower_hex(std::string_view s) {
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

} // namespace

BOOST_AUTO_TEST_SUITE(lock_scripts)

// ---------------------------------------------------------------------------------------------
// derived_key

BOOST_AUTO_TEST_CASE(slot_function_matches_redis) {
    // CRC16/XMODEM check value, and slots reported by CLUSTER KEYSLOT on a redis-server 7.0.
    BOOST_TEST(crc16_xmodem("123456789") == 0x31C3);
    BOOST_TEST(key_slot("123456789") == 12739u);
    BOOST_TEST(key_slot("foo") == 12182u);
    BOOST_TEST(key_slot("somekey") == 11058u);
    BOOST_TEST(key_slot("a}b") == 7866u);
    BOOST_TEST(key_slot("{}x") == 10595u);
    BOOST_TEST(key_slot("}{x}") == 16287u);
    BOOST_TEST(key_slot("{user1000}.following") == key_slot("{user1000}.followers"));
    BOOST_TEST(key_slot("{user1000}.following") == key_slot("user1000"));
}

BOOST_AUTO_TEST_CASE(plain_names_become_the_tag) {
    BOOST_TEST(derived_key("orders", "fence") == "{orders}:fence");
    BOOST_TEST(derived_key("lock:basic", "released") == "{lock:basic}:released");
    BOOST_TEST(derived_key("x", "") == "{x}:");
    // An opening brace with no closing one after it is no tag.
    BOOST_TEST(derived_key("a{b", "fence") == "{a{b}:fence");
    BOOST_TEST(derived_key("{", "fence") == "{{}:fence");
}

BOOST_AUTO_TEST_CASE(tagged_names_keep_their_tag) {
    BOOST_TEST(derived_key("{user42}:cart", "fence") == "{user42}:cart:fence");
    BOOST_TEST(derived_key("a{b}c", "released") == "a{b}c:released");
    BOOST_TEST(derived_key("{a}", "fence") == "{a}:fence");
    // Only the first '{' opens a tag: the tag is "{a" here.
    BOOST_TEST(derived_key("{{a}}", "fence") == "{{a}}:fence");
    // A '}' before the first '{' does not matter.
    BOOST_TEST(derived_key("}{x}", "fence") == "}{x}:fence");
    BOOST_TEST(derived_key("a}b{c}d", "fence") == "a}b{c}d:fence");
}

BOOST_AUTO_TEST_CASE(empty_tag_counts_as_no_tag) {
    BOOST_TEST(derived_key("{}", "fence") == "{{}}:fence");
    BOOST_TEST(derived_key("{}x", "fence") == "{{}x}:fence");
    // Redis takes the first '{' and the first '}' after it: "{}" here, so "{x}" is no tag either.
    BOOST_TEST(derived_key("{}{x}", "fence") == "{{}{x}}:fence");
}

BOOST_AUTO_TEST_CASE(binary_names_are_kept_byte_for_byte) {
    const std::string name("a\0b\xff", 4);
    const std::string key = derived_key(name, "fence");
    BOOST_TEST(key.size() == name.size() + 2 + 6);
    BOOST_TEST(key == "{"s + name + "}:fence");
    const std::string tagged("\0{t\0}\0"s);
    BOOST_TEST(derived_key(tagged, "released") == tagged + ":released");
    BOOST_TEST(key_slot(derived_key(tagged, "released")) == key_slot(tagged));
}

BOOST_AUTO_TEST_CASE(derived_keys_share_the_slot_of_names_without_a_stray_brace) {
    // Names from an alphabet rich in braces, NUL and ':'; every name that has a tag or no '}'
    // at all must give a fence key and a channel in its own slot.
    std::mt19937 rng(20260101);
    const std::string alphabet("{}{}:ab\0\xff"s);
    std::uniform_int_distribution<std::size_t> len(1, 12), pick(0, alphabet.size() - 1);
    int tagged = 0, plain = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string name;
        for (std::size_t n = len(rng); n > 0; --n)
            name.push_back(alphabet[pick(rng)]);
        const bool reserved = name.ends_with(":fence") || name.ends_with(":released");
        BOOST_TEST(corolock::detail::lockable_name(name) ==
                   (has_tag(name) ? !reserved : name.find('}') == std::string::npos));
        if (!corolock::detail::lockable_name(name))
            continue; // refused: see untagged_names_with_a_closing_brace_are_refused
        (has_tag(name) ? tagged : plain)++;
        const auto slot = key_slot(name);
        BOOST_TEST(key_slot(derived_key(name, "fence")) == slot, "name of " << name.size());
        BOOST_TEST(key_slot(derived_key(name, "released")) == slot, "name of " << name.size());
    }
    BOOST_TEST_MESSAGE(tagged << " tagged and " << plain << " plain names checked");
    BOOST_TEST(tagged > 1000);
    BOOST_TEST(plain > 1000);

    // Ordinary names.
    for (int i = 0; i < 2000; ++i) {
        const std::string name = "lock:order:" + std::to_string(i);
        BOOST_TEST(key_slot(derived_key(name, "fence")) == key_slot(name));
        const std::string tagged_name =
            "{tenant" + std::to_string(i % 37) + "}:lock:" + std::to_string(i);
        BOOST_TEST(key_slot(derived_key(tagged_name, "released")) == key_slot(tagged_name));
    }
}

// KNOWN BUG in derived_key: a name with no hash tag that contains '}' is wrapped as
// "{name}:suffix", but Redis ends the wrapper's tag at the name's own first '}', so the fence
// key and the channel land in another slot than the name (CROSSSLOT in a cluster). The slots
// below were checked with CLUSTER KEYSLOT. Remove the decorator when derived_key is fixed.
BOOST_AUTO_TEST_CASE(untagged_names_with_a_closing_brace_are_refused) {
    // Wrapping such a name in braces would end the tag at its own '}' (another slot), so the
    // lock refuses it (error::invalid_name) rather than spread its keys over two slots.
    for (std::string_view name : {"a}b", "}x", "{}x", "a}b{c", "{}{x}"}) {
        BOOST_TEST_CONTEXT("name " << name) {
            BOOST_TEST(!corolock::detail::lockable_name(name));
        }
    }
    BOOST_TEST(!corolock::detail::lockable_name(""));
    for (std::string_view name : {"a", "a{b", "{x}y}", "order:{42}:z}", "stock:42"}) {
        BOOST_TEST_CONTEXT("name " << name) {
            BOOST_TEST(corolock::detail::lockable_name(name));
            BOOST_TEST(key_slot(derived_key(name, "fence")) == key_slot(name));
        }
    }
}

// A lock named like another lock's derived key ('{t}:fence' is the fence key of lock '{t}')
// broke that lock with a "wrong type" error: such names are refused. Untagged names never
// collide (every derived key has a tag, and an untagged name has no '}').
BOOST_AUTO_TEST_CASE(names_of_derived_keys_are_refused) {
    for (std::string_view base : {"{t}", "x", "{a}b", "order:{42}"}) {
        for (std::string_view suffix : {"fence", "released"}) {
            const auto key = derived_key(base, suffix);
            BOOST_TEST_CONTEXT("derived key " << key) {
                BOOST_TEST(!corolock::detail::lockable_name(key));
            }
        }
    }
    for (std::string_view name : {"lock:fence", "x:released", "{t}:fencer", "{t}:fence:x"}) {
        BOOST_TEST_CONTEXT("name " << name) {
            BOOST_TEST(corolock::detail::lockable_name(name));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// decode_acquire

BOOST_AUTO_TEST_CASE(acquire_granted) {
    acquire_reply r;
    BOOST_TEST(!corolock::detail::decode_acquire(wire("*2\r\n:1\r\n:42\r\n"), r));
    BOOST_TEST(r.acquired);
    BOOST_TEST(r.token == 42u);

    acquire_reply timed;
    BOOST_TEST(!corolock::detail::decode_acquire(wire("*2\r\n:1\r\n:1767225600123456\r\n"), timed));
    BOOST_TEST(timed.acquired);
    BOOST_TEST(timed.token == 1767225600123456u); // the server's TIME in microseconds
}

BOOST_AUTO_TEST_CASE(acquire_without_tokens) {
    // A semaphore's grant carries no token (0); a reader's, the last write token (any value).
    acquire_reply r;
    BOOST_TEST(!corolock::detail::decode_acquire(wire("*2\r\n:1\r\n:0\r\n"), r, false));
    BOOST_TEST(r.acquired);
    BOOST_TEST(r.token == 0u);
    BOOST_TEST(!corolock::detail::decode_acquire(wire("*2\r\n:1\r\n:42\r\n"), r, false));
    BOOST_TEST(r.token == 42u);
    BOOST_TEST(corolock::detail::decode_acquire(wire("*2\r\n:1\r\n:-1\r\n"), r, false) ==
               error::unexpected_reply);
    BOOST_TEST(corolock::detail::decode_acquire(wire("*2\r\n:1\r\n:0\r\n"), r) ==
               error::unexpected_reply);
    acquire_reply busy;
    BOOST_TEST(!corolock::detail::decode_acquire(wire("*2\r\n:0\r\n:250\r\n"), busy, false));
    BOOST_TEST(busy.holder_ttl == 250); // until the earliest live permit's deadline
    BOOST_TEST(corolock::detail::decode_acquire(
                   wire("-LIMIT_MISMATCH corolock: the semaphore has the limit 5\r\n"), r, false) ==
               error::limit_mismatch);
}

BOOST_AUTO_TEST_CASE(release_messages_say_how_many_may_retry) {
    using corolock::detail::release_credits;
    BOOST_TEST(release_credits("released") == 1u);
    BOOST_TEST(release_credits("") == 1u); // a reconnect
    BOOST_TEST(release_credits("permits 3") == 3u);
    BOOST_TEST(release_credits("all") == static_cast<std::size_t>(-1)); // a writer's release
    BOOST_TEST(release_credits("permits 1000000000") == 1000000000u);
    for (std::string_view bad : {"permits ", "permits 0", "permits -1", "permits 3x", "permits x",
                                 "permits 99999999999999999999999", "PERMITS 3"})
        BOOST_TEST(release_credits(bad) == 1u, bad); // anything unknown: one retry
}

BOOST_AUTO_TEST_CASE(forced_messages_name_an_owner) {
    using corolock::detail::forced_owner;
    BOOST_TEST(forced_owner("forced 0123abcd") == "0123abcd");
    for (std::string_view other : {"released", "", "all", "permits 3", "head 0123abcd", "forced",
                                   "FORCED 0123abcd", "0123abcd"})
        BOOST_TEST(forced_owner(other).empty(), other); // a waiters' message, or nothing
    BOOST_TEST(forced_owner("forced ").empty());
}

BOOST_AUTO_TEST_CASE(pair_replies) {
    std::int64_t a = 0, b = 0;
    BOOST_TEST(!corolock::detail::decode_pair(wire("*2\r\n:5\r\n:2\r\n"), a, b));
    BOOST_TEST(a == 5);
    BOOST_TEST(b == 2);
    for (std::string_view bad :
         {"*1\r\n:5\r\n", "*3\r\n:5\r\n:2\r\n:1\r\n", "*2\r\n$1\r\n5\r\n:2\r\n", ":5\r\n"})
        BOOST_TEST(corolock::detail::decode_pair(wire(bad), a, b) == error::unexpected_reply, bad);
    BOOST_TEST(corolock::detail::decode_pair(wire("-WRONGTYPE x\r\n"), a, b) == error::wrong_type);
}

BOOST_AUTO_TEST_CASE(guarded_source_checks_the_member_first) {
    const std::string body = "return redis.call('DECR', KEYS[1])";
    const std::string src = corolock::detail::make_guarded_source(body);
    const auto check = src.find("score < now");
    BOOST_TEST(check != std::string::npos);
    BOOST_TEST(src.find("'TIME'") < check); // the server's clock decides
    BOOST_TEST(check < src.find(body));
    BOOST_TEST(src.find("unpack(KEYS, 2)") != std::string::npos);
    BOOST_TEST(src.find("unpack(ARGV, 2)") != std::string::npos);
    const corolock::fenced_script f(body);
    BOOST_TEST(f.guarded().source() == src);
    BOOST_TEST(f.guarded().sha1() != f.wrapped().sha1());
}

BOOST_AUTO_TEST_CASE(acquire_held_by_another) {
    acquire_reply r;
    BOOST_TEST(!corolock::detail::decode_acquire(wire("*2\r\n:0\r\n:1234\r\n"), r));
    BOOST_TEST(!r.acquired);
    BOOST_TEST(r.holder_ttl == 1234);
    // PTTL may answer -1 (no TTL) or -2 (gone meanwhile): passed on, the caller decides.
    acquire_reply no_ttl;
    BOOST_TEST(!corolock::detail::decode_acquire(wire("*2\r\n:0\r\n:-1\r\n"), no_ttl));
    BOOST_TEST(!no_ttl.acquired);
    BOOST_TEST(no_ttl.holder_ttl == -1);
}

BOOST_AUTO_TEST_CASE(acquire_error_replies) {
    acquire_reply r;
    const auto wrong_type = corolock::detail::decode_acquire(
        wire("-WRONGTYPE the key at the lock name is not a corolock lock\r\n"), r);
    BOOST_TEST(wrong_type == error::wrong_type);
    BOOST_TEST(wrong_type == corolock::condition::server_failure);
    BOOST_TEST(corolock::detail::decode_acquire(wire("!13\r\nWRONGTYPE xyz\r\n"), r) ==
               error::wrong_type);
    BOOST_TEST(corolock::detail::decode_acquire(wire("-STALE_TOKEN corolock: x\r\n"), r) ==
               error::stale_token);
    // Only corolock's own marker means a stale token.
    BOOST_TEST(corolock::detail::decode_acquire(wire("-STALE fencing token\r\n"), r) ==
               error::server_error);
    BOOST_TEST(corolock::detail::decode_acquire(wire("-ERR Error running script\r\n"), r) ==
               error::server_error);
    BOOST_TEST(corolock::detail::decode_acquire(wire("-NOSCRIPT No matching script\r\n"), r) ==
               error::server_error);
    // The prefix must start the text.
    BOOST_TEST(corolock::detail::decode_acquire(wire("-ERR WRONGTYPE inside\r\n"), r) ==
               error::server_error);
    // An error anywhere in the reply wins over its shape.
    BOOST_TEST(corolock::detail::decode_acquire(wire("*3\r\n:1\r\n-WRONGTYPE x\r\n:1\r\n"), r) ==
               error::wrong_type);
}

BOOST_AUTO_TEST_CASE(acquire_malformed_replies) {
    const char* bad[] = {
        "",                             // nothing
        ":1\r\n",                       // not an array
        "_\r\n",                        // null
        "*0\r\n",                       // empty
        "*1\r\n:1\r\n",                 // too short
        "*2\r\n:2\r\n:42\r\n",          // flag neither 0 nor 1
        "*2\r\n:-1\r\n:42\r\n",         // negative flag
        "*3\r\n:1\r\n:42\r\n:1\r\n",    // extra element (the old nested-count shape)
        "*3\r\n:0\r\n:5\r\n:1\r\n",     // refused with a third element
        "*2\r\n:1\r\n:-42\r\n",         // negative token
        "*2\r\n:1\r\n:0\r\n",           // token 0 (never issued)
        "*2\r\n$1\r\n1\r\n:42\r\n",     // flag as a string
        "*2\r\n:1\r\n$2\r\n42\r\n",     // token as a string
        "*2\r\n:0\r\n$4\r\n1234\r\n",   // TTL as a string
        "*2\r\n#t\r\n:42\r\n",          // boolean flag
        "*2\r\n:1\r\n,42\r\n",          // double token
        "*2\r\n:1\r\n(42\r\n",          // big number token
        "*2\r\n:0\r\n_\r\n",            // null TTL
        "~2\r\n:1\r\n:42\r\n",          // a set
        ">2\r\n:1\r\n:42\r\n",          // a push
        "*2\r\n:1\r\n*1\r\n:42\r\n",    // nested aggregate
        "*2\r\n:1\r\n:42\r\n:1\r\n",    // a second reply after a good one
        "*2\r\n:0\r\n:1234\r\n+OK\r\n", // a second reply after a refusal
    };
    for (const char* text : bad) {
        BOOST_TEST_CONTEXT("reply " << std::string_view(text).size() << " bytes: " << text) {
            acquire_reply r;
            BOOST_TEST(corolock::detail::decode_acquire(wire(text), r) == error::unexpected_reply);
            BOOST_TEST(corolock::detail::decode_acquire(wire(text), r) ==
                       corolock::condition::protocol_violation);
        }
    }
}

BOOST_AUTO_TEST_CASE(acquire_numbers_must_be_whole_numbers) {
    // Nodes the parser would refuse, to check the decoder on its own.
    for (std::string token :
         {"", "12a", " 12", "12 ", "+12", "0x10", "1e3", "-1", "18446744073709551616"}) {
        BOOST_TEST_CONTEXT("token text '" << token << "'") {
            const generic_response resp{aggregate(type::array, 2), leaf(type::number, "1", 1),
                                        leaf(type::number, token, 1)};
            acquire_reply r;
            BOOST_TEST(corolock::detail::decode_acquire(resp, r) == error::unexpected_reply);
        }
    }
    // Declared size and node count disagree.
    const generic_response short_array{aggregate(type::array, 3), leaf(type::number, "0", 1),
                                       leaf(type::number, "5", 1)};
    // A huge declared array is refused by its header, before any element is read.
    const generic_response huge{aggregate(type::array, 1u << 20), leaf(type::number, "1", 1),
                                leaf(type::number, "5", 1)};
    acquire_reply r;
    BOOST_TEST(corolock::detail::decode_acquire(huge, r) == error::unexpected_reply);
    BOOST_TEST(corolock::detail::decode_acquire(short_array, r) == error::unexpected_reply);
}

// ---------------------------------------------------------------------------------------------
// decode_release, decode_integer

BOOST_AUTO_TEST_CASE(release_replies) {
    bool released = false, published = false;
    BOOST_TEST(!corolock::detail::decode_release(wire(":1\r\n"), released, published));
    BOOST_TEST(released);
    BOOST_TEST(published);
    // Released, and no message: nobody waited (a mutex), or the PUBLISH was refused.
    BOOST_TEST(!corolock::detail::decode_release(wire(":2\r\n"), released, published));
    BOOST_TEST(released);
    BOOST_TEST(!published);
    BOOST_TEST(!corolock::detail::decode_release(wire(":0\r\n"), released, published));
    BOOST_TEST(!released);
    BOOST_TEST(!published);

    BOOST_TEST(corolock::detail::decode_release(wire("-WRONGTYPE not a lock\r\n"), released,
                                                published) == error::wrong_type);
    BOOST_TEST(corolock::detail::decode_release(wire("-ERR oom\r\n"), released, published) ==
               error::server_error);

    for (const char* text : {"", ":-1\r\n", ":3\r\n", "+OK\r\n", "$1\r\n0\r\n", "_\r\n", ",0\r\n",
                             "#f\r\n", "*1\r\n:0\r\n", ":0\r\n:0\r\n", "(0\r\n"}) {
        BOOST_TEST_CONTEXT("reply " << text) {
            BOOST_TEST(corolock::detail::decode_release(wire(text), released, published) ==
                       error::unexpected_reply);
        }
    }
}

BOOST_AUTO_TEST_CASE(integer_replies) {
    std::int64_t v = 0;
    BOOST_TEST(!corolock::detail::decode_integer(wire(":1\r\n"), v));
    BOOST_TEST(v == 1);
    BOOST_TEST(!corolock::detail::decode_integer(wire(":-2\r\n"), v)); // PTTL of a missing key
    BOOST_TEST(v == -2);
    BOOST_TEST(!corolock::detail::decode_integer(wire(":9223372036854775807\r\n"), v));
    BOOST_TEST(v == INT64_MAX);

    BOOST_TEST(corolock::detail::decode_integer(wire("-WRONGTYPE x\r\n"), v) == error::wrong_type);
    BOOST_TEST(corolock::detail::decode_integer(wire("-STALE_TOKEN x\r\n"), v) ==
               error::stale_token);
    BOOST_TEST(corolock::detail::decode_integer(wire("-BUSY script\r\n"), v) ==
               error::server_error);

    for (const char* text : {"", "_\r\n", "$1\r\n7\r\n", "+7\r\n", ",7\r\n", "(7\r\n", "*0\r\n",
                             "*1\r\n:7\r\n", ":7\r\n:8\r\n"}) {
        BOOST_TEST_CONTEXT("reply " << text) {
            BOOST_TEST(corolock::detail::decode_integer(wire(text), v) == error::unexpected_reply);
        }
    }
    // Nodes the parser would refuse, to check the decoder on its own.
    for (std::string text : {"7x", "", "9223372036854775808", "-9223372036854775809", "0x7"}) {
        BOOST_TEST_CONTEXT("number text '" << text << "'") {
            BOOST_TEST(corolock::detail::decode_integer({leaf(type::number, text)}, v) ==
                       error::unexpected_reply);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// decode_renew

BOOST_AUTO_TEST_CASE(renew_replies) {
    std::vector<bool> out{true, true, true, true, true};
    BOOST_TEST(!corolock::detail::decode_renew(wire("*3\r\n:1\r\n:0\r\n:1\r\n"), out));
    BOOST_TEST((out == std::vector<bool>{true, false, true}));
    BOOST_TEST(!corolock::detail::decode_renew(wire("*0\r\n"), out));
    BOOST_TEST(out.empty());

    // A full batch of 100.
    std::string batch = "*100\r\n";
    for (int i = 0; i < 100; ++i)
        batch += i % 3 ? ":1\r\n" : ":0\r\n";
    BOOST_TEST(!corolock::detail::decode_renew(wire(batch), out));
    BOOST_REQUIRE_EQUAL(out.size(), 100u);
    for (int i = 0; i < 100; ++i)
        BOOST_TEST(bool(out[i]) == (i % 3 != 0));
}

BOOST_AUTO_TEST_CASE(renew_error_and_malformed_replies) {
    std::vector<bool> out;
    BOOST_TEST(corolock::detail::decode_renew(wire("-WRONGTYPE x\r\n"), out) == error::wrong_type);
    BOOST_TEST(corolock::detail::decode_renew(wire("-ERR Error running script\r\n"), out) ==
               error::server_error);
    BOOST_TEST(corolock::detail::decode_renew(wire("*2\r\n:1\r\n-ERR x\r\n"), out) ==
               error::server_error);

    for (const char* text :
         {"", ":1\r\n", "_\r\n", "*1\r\n:2\r\n", "*1\r\n:-1\r\n", "*1\r\n$1\r\n1\r\n",
          "*1\r\n#t\r\n", "*1\r\n_\r\n", "*2\r\n:1\r\n*1\r\n:1\r\n", "~1\r\n:1\r\n",
          "%1\r\n:1\r\n:1\r\n", "*1\r\n:1\r\n:1\r\n", "*0\r\n*0\r\n"}) {
        BOOST_TEST_CONTEXT("reply " << text) {
            BOOST_TEST(corolock::detail::decode_renew(wire(text), out) == error::unexpected_reply);
        }
    }
    // Declared size larger than the nodes present.
    const generic_response truncated{aggregate(type::array, 2), leaf(type::number, "1", 1)};
    BOOST_TEST(corolock::detail::decode_renew(truncated, out) == error::unexpected_reply);
}

// ---------------------------------------------------------------------------------------------
// Scripts

BOOST_AUTO_TEST_CASE(fenced_source_wraps_the_body) {
    const std::string body = "local v = redis.call('DECRBY', KEYS[1], ARGV[1])\nreturn v";
    const std::string src = corolock::detail::make_fenced_source(body);
    BOOST_TEST(src.find(body) != std::string::npos);
    // The guard: no newer token in the fence key (KEYS[2]) than the caller's (ARGV[1]); with
    // the fence key expired, the lock key (KEYS[1]) must still record the caller's token.
    const auto guard = src.find("tonumber(last) > tonumber(ARGV[1])");
    BOOST_TEST(guard != std::string::npos);
    BOOST_TEST(src.find("redis.call('HGET', KEYS[1], 'token') ~= ARGV[1]") != std::string::npos);
    const auto stale = src.find("STALE_TOKEN");
    BOOST_TEST(stale != std::string::npos);
    BOOST_TEST(guard < stale);
    BOOST_TEST(stale < src.find(body)); // checked before the body can run
    // The body sees the caller's own keys and arguments.
    BOOST_TEST(src.find("unpack(KEYS, 3)") != std::string::npos);
    BOOST_TEST(src.find("unpack(ARGV, 2)") != std::string::npos);
    // A trailing comment in the body does not swallow the wrapper's closing code.
    const std::string commented = corolock::detail::make_fenced_source("return 1 -- done");
    BOOST_TEST(commented.find("-- done\n") != std::string::npos);

    // fenced_script uses it; different bodies give different scripts.
    const corolock::fenced_script f(body), g("return 2");
    BOOST_TEST(f.wrapped().source() == src);
    BOOST_TEST(f.wrapped().sha1() != g.wrapped().sha1());
}

BOOST_AUTO_TEST_CASE(script_digests) {
    const corolock::script* all[] = {&corolock::detail::acquire_script(),
                                     &corolock::detail::release_script(),
                                     &corolock::detail::renew_script(),
                                     &corolock::detail::force_unlock_script(),
                                     &corolock::detail::semaphore_acquire_script(),
                                     &corolock::detail::semaphore_release_script(),
                                     &corolock::detail::semaphore_usage_script(),
                                     &corolock::detail::semaphore_set_limit_script(),
                                     &corolock::detail::read_acquire_script(),
                                     &corolock::detail::write_acquire_script(),
                                     &corolock::detail::read_release_script(),
                                     &corolock::detail::write_release_script(),
                                     &corolock::detail::downgrade_script(),
                                     &corolock::detail::try_upgrade_script(),
                                     &corolock::detail::fair_acquire_script(),
                                     &corolock::detail::fair_release_script()};
    std::set<std::string> digests;
    for (const auto* s : all) {
        BOOST_TEST(s->sha1().size() == 40u);
        BOOST_TEST(is_lower_hex(s->sha1()), s->sha1());
        BOOST_TEST(!s->source().empty());
        digests.insert(s->sha1());
    }
    BOOST_TEST(digests.size() == std::size(all));
    // One object each, built once.
    BOOST_TEST(&corolock::detail::acquire_script() == all[0]);
    // The digest is SHA1 of the source, as SCRIPT LOAD computes it.
    BOOST_TEST(corolock::script("return 1").sha1() == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

BOOST_AUTO_TEST_CASE(scripts_refuse_foreign_keys_and_publish_releases) {
    // What the decoders above rely on: the scripts answer WRONGTYPE for a key that is not a
    // corolock lock, and the frees publish on the channel they are given.
    const auto& acquire = corolock::detail::acquire_script().source();
    const auto& release = corolock::detail::release_script().source();
    const auto& force = corolock::detail::force_unlock_script().source();
    BOOST_TEST(acquire.find("WRONGTYPE") != std::string::npos);
    BOOST_TEST(release.find("WRONGTYPE") != std::string::npos);
    BOOST_TEST(acquire.find("'TIME'") != std::string::npos); // tokens follow the server clock
    BOOST_TEST(acquire.find("if last and last >= token then\n    token = last + 1") !=
               std::string::npos);
    BOOST_TEST(acquire.find("'SET', KEYS[2], text, 'PX', ARGV[3], 'GET'") != std::string::npos);
    // Only a waiting attempt marks the holder's hash, so that its release publishes; a try
    // leaves the hash as it was.
    BOOST_TEST(acquire.find("if ARGV[4] == 'wait' then redis.pcall('HSET', KEYS[1], 'w', '1')") !=
               std::string::npos);
    BOOST_TEST(release.find("if not held[2] then return 2 end") != std::string::npos);
    // pcall: a PUBLISH refused by an ACL must not fail a release that has already deleted. On
    // a cluster (flag 'S') the frees publish with SPUBLISH, where the waiters listen.
    BOOST_TEST(release.find("redis.pcall(ARGV[3] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[2], "
                            "'released')") != std::string::npos);
    BOOST_TEST(force.find("redis.pcall(ARGV[2] == 'S' and 'SPUBLISH' or 'PUBLISH', ARGV[1], "
                          "'released')") != std::string::npos);
    // Without a forced channel (a cluster) the deleted owner goes on the release channel, in
    // the name's slot, ahead of "released" (forced_owner reads it back).
    const auto forced = force.find("redis.pcall(ARGV[2] == 'S' and 'SPUBLISH' or 'PUBLISH', "
                                   "ARGV[1], 'forced ' .. owner)");
    BOOST_TEST(forced != std::string::npos);
    BOOST_TEST(forced < force.find("ARGV[1], 'released')"));
    BOOST_TEST(force.find("redis.pcall('PUBLISH', ARGV[3], owner)") <
               force.find("ARGV[1], 'released')"));
}

BOOST_AUTO_TEST_CASE(wait_reply) {
    using corolock::detail::take_wait_reply;
    auto r = wire("*2\r\n:1\r\n:7\r\n:2\r\n");
    BOOST_TEST(take_wait_reply(r) == 2);
    BOOST_TEST(r.size() == 3u); // the script's reply is left
    r = wire("*2\r\n:1\r\n:7\r\n-UNBLOCKED force unblock\r\n");
    BOOST_TEST(take_wait_reply(r) == -1);
    BOOST_TEST(r.size() == 3u);
    r = wire("*2\r\n:1\r\n:7\r\n");
    BOOST_TEST(take_wait_reply(r) == -1); // no WAIT reply: left alone, the decoder refuses it
    BOOST_TEST(r.size() == 3u);
    corolock::request req;
    corolock::detail::add_wait(req, "", "100");
    BOOST_TEST(req.size() == 0u);
    corolock::detail::add_wait(req, "1", "100");
    BOOST_TEST(req.payload() == "*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$3\r\n100\r\n");
}

// replica_sync::shortfall::count_connected: ROLE follows WAIT; a master with fewer replicas than
// asked needs every one it has.
BOOST_AUTO_TEST_CASE(wait_reply_counting_connected_replicas) {
    using corolock::detail::take_wait_reply;
    const std::string script = "*2\r\n:1\r\n:7\r\n";
    const std::string no_replica = "*3\r\n$6\r\nmaster\r\n:100\r\n*0\r\n";
    const std::string one_replica =
        "*3\r\n$6\r\nmaster\r\n:100\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n$4\r\n7002\r\n$3\r\n100\r\n";
    // No replica: WAIT 2 counted 0, which is all there is.
    auto r = wire(script + ":0\r\n" + no_replica);
    BOOST_TEST(take_wait_reply(r, true, 2) == 2);
    BOOST_TEST(r.size() == 3u); // the script's reply is left
    // Refusing (no ROLE asked): 0 stays 0.
    r = wire(script + ":0\r\n");
    BOOST_TEST(take_wait_reply(r, false, 2) == 0);
    // One replica: it must have acknowledged.
    r = wire(script + ":1\r\n" + one_replica);
    BOOST_TEST(take_wait_reply(r, true, 2) == 2);
    r = wire(script + ":0\r\n" + one_replica);
    BOOST_TEST(take_wait_reply(r, true, 2) == 0);
    BOOST_TEST(r.size() == 3u);
    // As many replicas as asked: WAIT's count, as when refusing.
    r = wire(script + ":0\r\n" + one_replica);
    BOOST_TEST(take_wait_reply(r, true, 1) == 0);
    // ROLE refused or not a master's: WAIT's count alone.
    r = wire(script + ":0\r\n-NOPERM no ROLE\r\n");
    BOOST_TEST(take_wait_reply(r, true, 1) == 0);
    r = wire(script + ":0\r\n*2\r\n$5\r\nslave\r\n:1\r\n");
    BOOST_TEST(take_wait_reply(r, true, 1) == 0);
    r = wire(script + "-UNBLOCKED force unblock\r\n" + no_replica);
    BOOST_TEST(take_wait_reply(r, true, 1) == -1);
    corolock::request req;
    corolock::detail::add_wait(req, "1", "100", true);
    BOOST_TEST(req.payload() == "*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$3\r\n100\r\n*1\r\n$4\r\nROLE\r\n");
}

// The refusal says which rule a name breaks (the review's "a}b" was reported as "empty").
BOOST_AUTO_TEST_CASE(name_problem_names_the_rule) {
    using corolock::detail::name_problem;
    BOOST_TEST(name_problem("") == "empty");
    for (std::string_view name : {"a}b", "{}x", "}"})
        BOOST_TEST(name_problem(name).starts_with("not hash-tagged but contains '}'"), name);
    for (std::string_view suffix : corolock::detail::reserved_suffixes) {
        const std::string name = "{t}" + std::string(suffix);
        BOOST_TEST(name_problem(name).starts_with("hash-tagged and ends in a reserved suffix"));
        BOOST_TEST(name_problem(name).find(suffix) != std::string_view::npos); // listed
    }
    for (std::string_view ok : {"a", "{t}", "{t}:x", "lock:sku:42", "a{b}c}"})
        BOOST_TEST(name_problem(ok).empty(), ok);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace unit_lock_scripts
