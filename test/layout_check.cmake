# The folders of src/ say what a file may touch (doc/design.md, "Layers"): a file in src/core/
# is pure. It may not include an I/O driver (io/...), a socket, timer, executor or TLS header,
# nor read a clock or a random source of its own. Run as
# `cmake -DROOT=<source dir> -P test/layout_check.cmake`.
file(GLOB_RECURSE pure RELATIVE ${ROOT} ${ROOT}/src/core/*.hpp ${ROOT}/src/core/*.cpp)
set(forbidden
    "#include \"io/"
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
            message("${f}: '${hit}' does not belong in a pure core (src/core/)")
            math(EXPR bad "${bad} + 1")
        endif()
    endforeach()
endforeach()
message("checked ${count} files in src/core/, ${bad} violations")
if(count LESS 20 OR bad GREATER 0)
    message(FATAL_ERROR "src/core/ holds code that is not pure")
endif()
