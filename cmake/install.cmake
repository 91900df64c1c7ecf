# Install rules and the packages consumed by find_package(corolock) and pkg-config. Included by
# the top-level CMakeLists.txt when COROLOCK_INSTALL is on.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(corolock_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/corolock)
install(TARGETS corolock EXPORT corolock-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The headers, without those of a backend that is not built (its folder, its umbrella and the
# forwarding pg_*.hpp / zk_*.hpp kept for 0.x): an installation offers only what it can link.
set(corolock_header_excludes "")
if(NOT TARGET corolock_postgres)
    list(APPEND corolock_header_excludes
        PATTERN postgres EXCLUDE PATTERN postgres.hpp EXCLUDE PATTERN pg_*.hpp EXCLUDE)
endif()
if(NOT TARGET corolock_zookeeper)
    list(APPEND corolock_header_excludes
        PATTERN zookeeper EXCLUDE PATTERN zookeeper.hpp EXCLUDE PATTERN zk_*.hpp EXCLUDE)
endif()
install(DIRECTORY include/corolock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    ${corolock_header_excludes})
install(EXPORT corolock-targets NAMESPACE corolock:: FILE corolock-targets.cmake
    DESTINATION ${corolock_cmake_dir})
configure_package_config_file(cmake/corolock-config.cmake.in
    ${PROJECT_BINARY_DIR}/corolock-config.cmake
    INSTALL_DESTINATION ${corolock_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/corolock-config-version.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/corolock-config.cmake
    ${PROJECT_BINARY_DIR}/corolock-config-version.cmake
    DESTINATION ${corolock_cmake_dir})

# pkg-config. The prefix is found from the .pc file's own place, so that `cmake --install
# --prefix` and a moved tree keep working; `pkg-config --static` lists what libcorolock.a needs.
set(corolock_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(corolock_pc_prefix "${CMAKE_INSTALL_PREFIX}")
else()
    file(RELATIVE_PATH corolock_pc_up "/${corolock_pc_dir}" "/")
    set(corolock_pc_prefix "\${pcfiledir}/${corolock_pc_up}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
        set(corolock_pc_${dir} "${CMAKE_INSTALL_${dir}}")
    else()
        set(corolock_pc_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
    endif()
endforeach()
configure_file(cmake/corolock.pc.in ${PROJECT_BINARY_DIR}/corolock.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/corolock.pc DESTINATION ${corolock_pc_dir})

# corolock::postgres (COROLOCK_WITH_POSTGRES): its own export set, loaded by the package's config
# file when installed (`find_package(corolock COMPONENTS postgres)` requires it), and its own
# pkg-config file. libpq is named by its library, not as a pkg-config package: a `--static` query
# would otherwise ask for libpq's own private libraries, which Debian ships no archives of (the
# public headers need none of libpq's).
if(TARGET corolock_postgres)
    install(TARGETS corolock_postgres EXPORT corolock-postgres-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    install(EXPORT corolock-postgres-targets NAMESPACE corolock::
        FILE corolock-postgres-targets.cmake DESTINATION ${corolock_cmake_dir})
    configure_file(cmake/corolock-postgres.pc.in ${PROJECT_BINARY_DIR}/corolock-postgres.pc @ONLY)
    install(FILES ${PROJECT_BINARY_DIR}/corolock-postgres.pc DESTINATION ${corolock_pc_dir})
endif()

# corolock::zookeeper (COROLOCK_WITH_ZOOKEEPER): its own export set, loaded by the package's
# config file when installed (`find_package(corolock COMPONENTS zookeeper)` requires it), and its
# own pkg-config file.
if(TARGET corolock_zookeeper)
    install(TARGETS corolock_zookeeper EXPORT corolock-zookeeper-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    install(EXPORT corolock-zookeeper-targets NAMESPACE corolock::
        FILE corolock-zookeeper-targets.cmake DESTINATION ${corolock_cmake_dir})
    configure_file(cmake/corolock-zookeeper.pc.in ${PROJECT_BINARY_DIR}/corolock-zookeeper.pc
        @ONLY)
    install(FILES ${PROJECT_BINARY_DIR}/corolock-zookeeper.pc DESTINATION ${corolock_pc_dir})
endif()

install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/corolock)
