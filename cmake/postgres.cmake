# corolock::postgres: the PostgreSQL backend (doc/postgres.md), a library of its own over the
# main one, so that only its users link libpq. Included by the top-level CMakeLists.txt when
# COROLOCK_WITH_POSTGRES is on.
find_package(PostgreSQL REQUIRED)

set(COROLOCK_POSTGRES_SOURCES
    src/core/pg_lock_sql.cpp
    src/core/pg_session_fsm.cpp
    src/io/pg_connection_impl.cpp
    src/io/pg_lock_service.cpp
    src/pg_connection.cpp
    src/pg_mutex.cpp
    src/pg_xact_mutex.cpp)
if(corolock_type STREQUAL "SHARED_LIBRARY")
    # The pure pieces shared with the Redis side are hidden in libcorolock.so: a copy of their
    # objects goes into this library too (hidden as well).
    list(APPEND COROLOCK_POSTGRES_SOURCES src/core/lease_table.cpp src/io/owner_id.cpp)
endif()
add_library(corolock_postgres ${COROLOCK_POSTGRES_SOURCES})
add_library(corolock::postgres ALIAS corolock_postgres)
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
    # Tests reach the pure cores (src/core/pg_*) directly, as corolock_internals does.
    add_library(corolock_postgres_internals STATIC EXCLUDE_FROM_ALL
        $<TARGET_OBJECTS:corolock_postgres>)
    target_include_directories(corolock_postgres_internals PUBLIC ${PROJECT_SOURCE_DIR}/include)
    target_compile_features(corolock_postgres_internals PUBLIC cxx_std_20)
    target_link_libraries(corolock_postgres_internals
        PUBLIC corolock_internals PostgreSQL::PostgreSQL)
else()
    add_library(corolock_postgres_internals ALIAS corolock_postgres)
endif()
