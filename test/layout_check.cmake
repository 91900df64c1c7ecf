# The folders of src/ say what a file may touch (doc/design.md, "Layers"): a file in a core/
# folder (src/core/, and each backend's src/postgres/core/, src/zookeeper/core/) is pure. It may not include an I/O driver (io/...), a socket, timer, executor or TLS header,
# nor read a clock or a random source of its own. Run as
# `cmake -DROOT=<source dir> -P test/layout_check.cmake`.
# A thin public body (a file directly in src/, src/postgres/ or src/zookeeper/) holds no driver:
# no `co_spawn` and no `steady_timer`; the coroutines and timers live in an io/ folder.
# Every core/ folder under src/, at any depth, so that a new backend's is checked too.
file(GLOB_RECURSE sources RELATIVE ${ROOT} ${ROOT}/src/*.hpp ${ROOT}/src/*.cpp)
set(pure "")
set(cores "")
foreach(f IN LISTS sources)
    if(f MATCHES "^(src/(.*/)?core)/")
        list(APPEND pure ${f})
        list(APPEND cores ${CMAKE_MATCH_1})
    endif()
endforeach()
list(REMOVE_DUPLICATES cores)
set(forbidden
    "#include \"([a-z_]+/)?io/"
    "#include <boost/asio/(steady_timer|system_timer|io_context|strand|post|dispatch|co_spawn|ip/|local/|ssl|any_io_executor|awaitable)"
    "#include <openssl/"
    "random_device"
    "RAND_bytes"
    "clock::now\\("
    "system_clock")
set(count 0)
set(bad 0)
foreach(f IN LISTS pure)
    math(EXPR count "${count} + 1")
    file(READ ${ROOT}/${f} text)
    foreach(pattern IN LISTS forbidden)
        string(REGEX MATCH "${pattern}" hit "${text}")
        if(hit)
            message("${f}: '${hit}' does not belong in a pure core (a core/ folder)")
            math(EXPR bad "${bad} + 1")
        endif()
    endforeach()
endforeach()
# The thin public bodies: the files directly in src/ and in each backend's top folder.
set(thin "")
foreach(f IN LISTS sources)
    if(f MATCHES "^src/(postgres/|zookeeper/)?[^/]+\\.cpp$")
        list(APPEND thin ${f})
    endif()
endforeach()
set(driver_words "co_spawn" "steady_timer")
set(nthin 0)
foreach(f IN LISTS thin)
    math(EXPR nthin "${nthin} + 1")
    file(READ ${ROOT}/${f} text)
    foreach(word IN LISTS driver_words)
        string(FIND "${text}" "${word}" at)
        if(NOT at EQUAL -1)
            message("${f}: '${word}' does not belong in a thin public body (drivers live in io/)")
            math(EXPR bad "${bad} + 1")
        endif()
    endforeach()
endforeach()
message("checked ${nthin} thin public bodies (src/*.cpp, src/postgres/*.cpp, src/zookeeper/*.cpp)")
list(LENGTH cores ncores)
message("checked ${count} files in ${ncores} core/ folders (${cores}), ${bad} violations")
# Today: 48 files in src/core/ (with resp3/), 5 in src/postgres/core/, 4 in src/zookeeper/core/;
# 21 thin bodies in src/, 3 in src/postgres/, 2 in src/zookeeper/. The floors catch a glob that
# silently matches less than that.
if(count LESS 50 OR ncores LESS 3 OR nthin LESS 26 OR bad GREATER 0)
    message(FATAL_ERROR "a core/ folder holds code that is not pure, a thin public body holds a "
                        "driver (or the check found too few)")
endif()
