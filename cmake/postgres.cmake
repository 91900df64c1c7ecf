# corolock::postgres: the PostgreSQL backend (doc/postgres.md), a library of its own over the
# main one, so that only its users link libpq. Included by the top-level CMakeLists.txt; the library
# only when COROLOCK_WITH_POSTGRES is on.

# The pure core (SQL text and its decoding, the session machine, the statement queue): no libpq,
# so always defined; the unit tests compile it in whether or not the backend is built.
corolock_object_library(corolock_postgres_core
    src/postgres/core/pg_election_sql.cpp
    src/postgres/core/pg_lock_sql.cpp
    src/postgres/core/pg_session_fsm.cpp)
if(NOT COROLOCK_WITH_POSTGRES)
    return()
endif()
find_package(PostgreSQL REQUIRED)

# Every source in src/postgres/.
set(COROLOCK_POSTGRES_SOURCES
    src/postgres/io/pg_connection_impl.cpp
    src/postgres/io/pg_election_driver.cpp
    src/postgres/io/pg_lock_service.cpp
    src/postgres/pg_connection.cpp
    src/postgres/pg_election.cpp
    src/postgres/pg_mutex.cpp
    src/postgres/pg_xact_mutex.cpp
    $<TARGET_OBJECTS:corolock_postgres_core>)
if(corolock_type STREQUAL "SHARED_LIBRARY")
    # The neutral pieces (lease table, owner ids) are hidden in libcorolock.so: their objects go
    # into this library too (hidden as well).
    list(APPEND COROLOCK_POSTGRES_SOURCES $<TARGET_OBJECTS:corolock_neutral>)
endif()
add_library(corolock_postgres ${COROLOCK_POSTGRES_SOURCES})
add_library(corolock::postgres ALIAS corolock_postgres)
corolock_unity(corolock_postgres)
set_target_properties(corolock_postgres PROPERTIES
    EXPORT_NAME postgres
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
target_compile_features(corolock_postgres PUBLIC cxx_std_20)
target_include_directories(corolock_postgres PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(corolock_postgres
    PUBLIC corolock
    PRIVATE PostgreSQL::PostgreSQL $<BUILD_INTERFACE:corolock_warnings>)
if(corolock_type STREQUAL "SHARED_LIBRARY")
    set_target_properties(corolock_postgres PROPERTIES
        CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
    corolock_no_undefined(corolock_postgres)
    # Tests reach the private pieces (src/postgres/) directly, as corolock_internals does.
    add_library(corolock_postgres_internals STATIC EXCLUDE_FROM_ALL
        $<TARGET_OBJECTS:corolock_postgres> $<TARGET_OBJECTS:corolock_postgres_core>)
    target_include_directories(corolock_postgres_internals PUBLIC ${PROJECT_SOURCE_DIR}/include)
    target_compile_features(corolock_postgres_internals PUBLIC cxx_std_20)
    target_link_libraries(corolock_postgres_internals
        PUBLIC corolock_internals PostgreSQL::PostgreSQL)
else()
    add_library(corolock_postgres_internals ALIAS corolock_postgres)
endif()
