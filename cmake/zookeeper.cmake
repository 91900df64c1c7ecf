# corolock::zookeeper: the ZooKeeper backend (doc/zookeeper.md), a library of its own over the
# main one, so that only its users link the ZooKeeper C client (Debian's single-threaded
# libzookeeper_st). Included by the top-level CMakeLists.txt; the library only when
# COROLOCK_WITH_ZOOKEEPER is on. A package manager may provide the C client as a CMake package
# (Conan's CMakeDeps writes zookeeper-client-c-config.cmake, with the target of Conan Center's
# recipe): it is used then, wherever it lives. Otherwise the library and header found by the
# top-level CMakeLists.txt.

# The pure core (the lock recipe's names and orders, the session machine and its state's printer):
# no ZooKeeper client, so always defined; the unit tests compile it in whether or not the backend
# is built.
corolock_object_library(corolock_zookeeper_core
    src/zookeeper/core/zk_acquire_fsm.cpp
    src/zookeeper/core/zk_election_core.cpp
    src/zookeeper/core/zk_lock_recipe.cpp
    src/zookeeper/core/zk_session_fsm.cpp
    src/zookeeper/core/zk_session_state.cpp)
if(NOT COROLOCK_WITH_ZOOKEEPER)
    return()
endif()

find_package(zookeeper-client-c CONFIG QUIET)
find_library(COROLOCK_ZOOKEEPER_LIBRARY zookeeper_st)
find_path(COROLOCK_ZOOKEEPER_INCLUDE_DIR zookeeper/zookeeper.h)
add_library(corolock_zookeeper_client INTERFACE)
if(TARGET zookeeper-client-c::zookeeper-client-c)
    target_link_libraries(corolock_zookeeper_client INTERFACE zookeeper-client-c::zookeeper-client-c)
elseif(COROLOCK_ZOOKEEPER_LIBRARY AND COROLOCK_ZOOKEEPER_INCLUDE_DIR)
    target_link_libraries(corolock_zookeeper_client INTERFACE ${COROLOCK_ZOOKEEPER_LIBRARY})
    target_include_directories(corolock_zookeeper_client INTERFACE
        ${COROLOCK_ZOOKEEPER_INCLUDE_DIR})
else()
    message(FATAL_ERROR "COROLOCK_WITH_ZOOKEEPER needs libzookeeper_st and zookeeper/zookeeper.h "
        "(Debian: libzookeeper-st-dev; tools/setup.sh installs it)")
endif()

# Every source in src/zookeeper/.
set(COROLOCK_ZOOKEEPER_SOURCES
    src/zookeeper/io/zk_election_driver.cpp
    src/zookeeper/io/zk_lock_op.cpp
    src/zookeeper/io/zk_session.cpp
    src/zookeeper/zk_connection.cpp
    src/zookeeper/zk_election.cpp
    src/zookeeper/zk_mutex.cpp
    $<TARGET_OBJECTS:corolock_zookeeper_core>)
if(corolock_type STREQUAL "SHARED_LIBRARY")
    # The neutral pieces (owner ids) are hidden in libcorolock.so: their objects go into this
    # library too (hidden as well).
    list(APPEND COROLOCK_ZOOKEEPER_SOURCES $<TARGET_OBJECTS:corolock_neutral>)
endif()
add_library(corolock_zookeeper ${COROLOCK_ZOOKEEPER_SOURCES})
add_library(corolock::zookeeper ALIAS corolock_zookeeper)
corolock_unity(corolock_zookeeper)
set_target_properties(corolock_zookeeper PROPERTIES
    EXPORT_NAME zookeeper
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
target_compile_features(corolock_zookeeper PUBLIC cxx_std_20)
target_include_directories(corolock_zookeeper PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(corolock_zookeeper
    PUBLIC corolock
    PRIVATE $<BUILD_INTERFACE:corolock_zookeeper_client> $<BUILD_INTERFACE:corolock_warnings>)
# An installed static corolock_zookeeper still needs the C client at link time.
target_link_libraries(corolock_zookeeper INTERFACE
    $<INSTALL_INTERFACE:$<$<STREQUAL:$<TARGET_PROPERTY:corolock_zookeeper,TYPE>,STATIC_LIBRARY>:zookeeper_st>>)
if(corolock_type STREQUAL "SHARED_LIBRARY")
    set_target_properties(corolock_zookeeper PROPERTIES
        CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
    corolock_no_undefined(corolock_zookeeper)
    # Tests reach the private pieces (src/zookeeper/) directly, as corolock_internals does.
    add_library(corolock_zookeeper_internals STATIC EXCLUDE_FROM_ALL
        $<TARGET_OBJECTS:corolock_zookeeper> $<TARGET_OBJECTS:corolock_zookeeper_core>)
    target_include_directories(corolock_zookeeper_internals PUBLIC ${PROJECT_SOURCE_DIR}/include)
    target_compile_features(corolock_zookeeper_internals PUBLIC cxx_std_20)
    target_link_libraries(corolock_zookeeper_internals
        PUBLIC corolock_internals corolock_zookeeper_client)
else()
    add_library(corolock_zookeeper_internals ALIAS corolock_zookeeper)
endif()
