#!/usr/bin/env bash
# The consumer test (tools/test.sh stage consumer): corolock used as a user would, each way
# compiled and run against a throw-away redis-server.
#   1. install a static build and a shared Release build to prefixes: the static one is the
#      build tree named by COROLOCK_STATIC_BUILD (tools/test.sh passes its main RelWithDebInfo
#      build, saving a build of the library), else a static Debug build made here;
#   2. find_package: test/consumer and test_package/ against each prefix (test_package with
#      `COMPONENTS postgres zookeeper` and their targets when the builds have them);
#   3. pkg-config: the consumer compiled by hand against the static prefix, and test_package
#      against corolock-postgres / corolock-zookeeper when they are installed;
#   4. add_subdirectory (static, no build type: the parent's cache must stay empty, the
#      parent's install must not install corolock, and no backend is built unless asked for;
#      a parent that asks for both gets their targets);
#   5. FetchContent from a tarball of the checkout (shared, MinSizeRel);
#   6. the HTTP example (example/tier3/http_flash_sale) configured and built on its own against the
#      static prefix, as a user would copy it, and asked for its health against the server.
# Usage: test/consumer/run.sh (JOBS, CXX, TMPDIR and COROLOCK_STATIC_BUILD are honoured). Exits non-zero on a failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=tools/common.sh
source tools/common.sh

jobs=${JOBS:-2}
cxx=${CXX:-g++}
work=$(mktemp -d "${TMPDIR:-/tmp}/corolock-consumer.XXXXXX")
on_exit "rm -rf '$work'"

fail() {
    log "FAIL: $*"
    exit 1
}

# install NAME CMAKE-ARGS...: configures, builds and installs the library to $work/NAME.
install_library() {
    local name=$1
    shift
    cmake -S . -B "$work/build-$name" -DCMAKE_CXX_COMPILER="$cxx" -DCOROLOCK_WERROR=ON \
        -DCOROLOCK_UNITY_BUILD=ON \
        -DCOROLOCK_BUILD_EXAMPLES=OFF -DCOROLOCK_BUILD_BENCH=OFF \
        -DCMAKE_INSTALL_PREFIX="$work/$name" "$@" >/dev/null
}

# consume DIR CMAKE-ARGS...: configures and builds test/consumer in DIR.
consume() {
    local dir=$1
    shift
    cmake -S test/consumer -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" "$@" >/dev/null
    cmake --build "$dir" -j"$jobs" --target consumer
}

# with_postgres DIR: the optional corolock::postgres target when the build in DIR has it (libpq
# found).
with_postgres() {
    if grep -q '^COROLOCK_WITH_POSTGRES:BOOL=ON' "$1/CMakeCache.txt"; then
        echo corolock_postgres
    fi
}

# with_zookeeper BUILD-DIR: the optional corolock::zookeeper target when that build has it
# (libzookeeper_st found).
with_zookeeper() {
    if grep -q '^COROLOCK_WITH_ZOOKEEPER:BOOL=ON' "$1/CMakeCache.txt"; then
        echo corolock_zookeeper
    fi
}

if [[ -n ${COROLOCK_STATIC_BUILD:-} ]]; then
    log "static library of $COROLOCK_STATIC_BUILD -> $work/static"
    grep -q '^BUILD_SHARED_LIBS:BOOL=ON' "$COROLOCK_STATIC_BUILD/CMakeCache.txt" &&
        fail "$COROLOCK_STATIC_BUILD is a shared build"
    # shellcheck disable=SC2046 # an optional target name, or nothing
    cmake --build "$COROLOCK_STATIC_BUILD" -j"$jobs" --target corolock $(with_postgres "$COROLOCK_STATIC_BUILD") \
        $(with_zookeeper "$COROLOCK_STATIC_BUILD")
    cmake --install "$COROLOCK_STATIC_BUILD" --prefix "$work/static" >/dev/null
else
    log "static Debug library -> $work/static"
    install_library static -DCMAKE_BUILD_TYPE=Debug -DCOROLOCK_BUILD_TESTS=OFF
    # shellcheck disable=SC2046 # an optional target name, or nothing
    cmake --build "$work/build-static" -j"$jobs" --target corolock $(with_postgres "$work/build-static") $(with_zookeeper "$work/build-static")
    cmake --install "$work/build-static" >/dev/null
fi

log "shared Release library -> $work/shared"
install_library shared -DCMAKE_BUILD_TYPE=Release -DCOROLOCK_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=ON
# shellcheck disable=SC2046 # an optional target name, or nothing
cmake --build "$work/build-shared" -j"$jobs" --target corolock $(with_postgres "$work/build-shared") $(with_zookeeper "$work/build-shared")
cmake --install "$work/build-shared" >/dev/null

# Boost.URL, compiled into libcorolock.so, stays inside it (cmake/libcorolock.map).
url_symbols=$(nm -D --defined-only "$work/shared/lib/libcorolock.so" | c++filt | grep -c 'boost::urls' || true)
((url_symbols == 0)) || fail "libcorolock.so exports $url_symbols Boost.URL symbols"

# What the prefixes hold.
for name in static shared; do
    for f in include/corolock/version.hpp include/corolock/detail/export.hpp \
        lib/cmake/corolock/corolock-config.cmake lib/pkgconfig/corolock.pc share/doc/corolock/LICENSE; do
        [[ -f $work/$name/$f ]] || fail "$name install has no $f"
    done
done
# build_of NAME: the build tree installed to $work/NAME.
build_of() {
    if [[ $1 == shared ]]; then
        echo "$work/build-shared"
    else
        echo "${COROLOCK_STATIC_BUILD:-$work/build-static}"
    fi
}

# components_of NAME: test_package's switches for the optional components installed to
# $work/NAME (it then finds them with find_package COMPONENTS and links their targets).
components_of() {
    local build_dir
    build_dir=$(build_of "$1")
    if [[ -n $(with_postgres "$build_dir") ]]; then
        echo -DCOROLOCK_TEST_POSTGRES=ON
    fi
    if [[ -n $(with_zookeeper "$build_dir") ]]; then
        echo -DCOROLOCK_TEST_ZOOKEEPER=ON
    fi
}

# corolock::postgres, when built: its export set (loaded by the config file) and pkg-config file.
for name in static shared; do
    [[ -n $(with_postgres "$(build_of $name)") ]] || continue
    for f in lib/cmake/corolock/corolock-postgres-targets.cmake lib/pkgconfig/corolock-postgres.pc \
        include/corolock/postgres.hpp include/corolock/postgres/mutex.hpp \
        include/corolock/pg_mutex.hpp; do
        [[ -f $work/$name/$f ]] || fail "$name install has no $f"
    done
done
# corolock::zookeeper, when built: its export set (loaded by the config file), its pkg-config
# file and headers.
if [[ -n $(with_zookeeper "$work/build-shared") ]]; then
    for name in static shared; do
        for f in lib/cmake/corolock/corolock-zookeeper-targets.cmake \
            lib/pkgconfig/corolock-zookeeper.pc include/corolock/zookeeper.hpp \
            include/corolock/zookeeper/mutex.hpp include/corolock/zk_mutex.hpp; do
            [[ -f $work/$name/$f ]] || fail "$name install has no $f"
        done
    done
fi
so=$work/shared/lib/libcorolock.so
soname=$(objdump -p "$so" | awk '/SONAME/ {print $2}')
[[ $soname =~ ^libcorolock\.so\.[0-9]+\.[0-9]+$ ]] || fail "SONAME is '$soname'"
[[ -f $work/shared/lib/$soname ]] || fail "no $soname in the shared install"
exported=$(nm -DC --defined-only "$so" | grep -c 'corolock::' || true)
hidden=$(nm -DC --defined-only "$so" | grep -c 'corolock::detail::\(acquire_fsm\|multiplexer\|lease_table\)' || true)
log "shared: SONAME $soname, $exported corolock symbols exported"
((hidden == 0)) || fail "internal symbols exported from $so ($hidden)"

start_redis

for name in static shared; do
    log "find_package consumer and test_package against the $name install"
    consume "$work/package-$name" -DCMAKE_PREFIX_PATH="$work/$name" -DCMAKE_BUILD_TYPE=Release
    "$work/package-$name/consumer" "$REDIS_PORT"
    # shellcheck disable=SC2046 # optional switches, or nothing
    cmake -S test_package -B "$work/test_package-$name" -DCMAKE_CXX_COMPILER="$cxx" \
        -DCMAKE_PREFIX_PATH="$work/$name" -DCMAKE_BUILD_TYPE=Release $(components_of $name) >/dev/null
    cmake --build "$work/test_package-$name" -j"$jobs"
    "$work/test_package-$name/test_package" | tee "$work/test_package-$name.out"
    for component in postgres zookeeper; do
        if [[ $(components_of $name) == *${component^^}* ]]; then
            grep -q "^corolock::$component:" "$work/test_package-$name.out" ||
                fail "test_package against the $name install did not test corolock::$component"
        fi
    done
done
ldd "$work/package-shared/consumer" | grep "$work/shared/lib/$soname" >/dev/null ||
    fail "the shared consumer does not load $work/shared/lib/$soname"

log "pkg-config consumer against the static install"
pc_flags=$(PKG_CONFIG_PATH=$work/static/lib/pkgconfig pkg-config --cflags --libs --static corolock)
# shellcheck disable=SC2086 # pkg-config's output is a list of flags
"$cxx" -std=c++20 -O1 test/consumer/consumer.cpp -o "$work/pkgconfig-consumer" $pc_flags
"$work/pkgconfig-consumer" "$REDIS_PORT"
# The components' .pc files: test_package with what each one adds.
pc_packages=(corolock)
pc_defines=()
for component in postgres zookeeper; do
    if [[ $(components_of static) == *${component^^}* ]]; then
        pc_packages+=("corolock-$component")
        pc_defines+=("-DCOROLOCK_TEST_${component^^}=1")
    fi
done
if ((${#pc_packages[@]} > 1)); then
    log "pkg-config test_package against the static install: ${pc_packages[*]}"
    pc_flags=$(PKG_CONFIG_PATH=$work/static/lib/pkgconfig pkg-config --cflags --libs --static "${pc_packages[@]}")
    # shellcheck disable=SC2086 # pkg-config's output is a list of flags
    "$cxx" -std=c++20 -O1 "${pc_defines[@]}" test_package/test_package.cpp -o "$work/pkgconfig-test_package" $pc_flags
    "$work/pkgconfig-test_package"
fi

log "add_subdirectory consumer (static, no build type)"
consume "$work/subdirectory" -DCOROLOCK_CONSUME=subdirectory -DCOROLOCK_SOURCE="$root"
"$work/subdirectory/consumer" "$REDIS_PORT"
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/subdirectory/CMakeCache.txt")
[[ -z $build_type ]] || fail "the subproject set the parent's CMAKE_BUILD_TYPE to '$build_type'"
cmake --install "$work/subdirectory" --prefix "$work/subdirectory-install" >/dev/null
[[ -x $work/subdirectory-install/bin/consumer ]] || fail "the parent's install lost its program"
[[ ! -e $work/subdirectory-install/include/corolock ]] || fail "the subproject installed itself"
# A backend is built when the parent asks for it, not because its client is installed (this
# machine has libpq and the ZooKeeper client: the main build found both).
for backend in postgres zookeeper; do
    grep -q "^COROLOCK_WITH_${backend^^}:BOOL=OFF" "$work/subdirectory/CMakeCache.txt" ||
        fail "the subproject turned the $backend backend on although nobody asked for it"
done
if [[ -n $(with_postgres "$(build_of static)") && -n $(with_zookeeper "$(build_of static)") ]]; then
    cmake -S test/consumer -B "$work/subdirectory-asked" -DCMAKE_CXX_COMPILER="$cxx" \
        -DCOROLOCK_CONSUME=subdirectory -DCOROLOCK_SOURCE="$root" \
        -DCOROLOCK_WITH_POSTGRES=ON -DCOROLOCK_WITH_ZOOKEEPER=ON >/dev/null
    targets=$(cmake --build "$work/subdirectory-asked" --target help)
    for target in corolock_postgres corolock_zookeeper; do
        grep -q "$target\$" <<<"$targets" || fail "the subproject asked for $target does not define it"
    done
fi

log "FetchContent consumer (shared, MinSizeRel)"
tar -czf "$work/corolock.tar.gz" --transform 's,^,corolock/,' CMakeLists.txt LICENSE cmake include src
consume "$work/fetchcontent" -DCOROLOCK_CONSUME=fetchcontent -DCOROLOCK_SOURCE="$work/corolock.tar.gz" \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=MinSizeRel
"$work/fetchcontent/consumer" "$REDIS_PORT"
ldd "$work/fetchcontent/consumer" | grep "libcorolock\.so\.[0-9]" >/dev/null ||
    fail "the FetchContent consumer is not linked to the shared library"

log "the HTTP example, standalone, against the static install"
cmake -S example/tier3/http_flash_sale -B "$work/http" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$work/static" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$work/http" -j"$jobs"
http_out=$work/http/server.out
"$work/http/corolock_http_flash_sale" --redis "redis://127.0.0.1:$REDIS_PORT" --listen 0 \
    >"$http_out" 2>&1 &
http_pid=$!
on_exit "kill -KILL $http_pid 2>/dev/null || true"
http_port=
for ((i = 0; i < 200; i++)); do
    http_port=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$http_out")
    [[ -n $http_port ]] && break
    sleep 0.05
done
[[ -n $http_port ]] || fail "the standalone HTTP example did not start: $(cat "$http_out")"
health=
for ((i = 0; i < 100; i++)); do # until its connection is up
    health=$(curl -s "http://127.0.0.1:$http_port/healthz" || true)
    [[ $health == *'"status":"ok"'* ]] && break
    sleep 0.05
done
[[ $health == *'"status":"ok"'* ]] || fail "the standalone HTTP example's /healthz said '$health'"
kill -TERM "$http_pid"
wait "$http_pid" || fail "the standalone HTTP example did not stop cleanly on SIGTERM"

log "consumer test passed"
