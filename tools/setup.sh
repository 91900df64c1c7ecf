#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing corolock need (g++, clang-14, CMake,
# Boost 1.81, OpenSSL, redis-server, PostgreSQL 15 and libpq for the optional corolock::postgres,
# ZooKeeper 3.8 with its single-threaded C client for the optional corolock::zookeeper and
# python3-kazoo for its bench, ...). tools/test.sh runs it first; tools/demo.sh runs
# `tools/setup.sh demo`, which installs only what the Redis demo builds and runs.
#
#   tools/setup.sh [demo]           install what is missing (as root; else print the apt command)
#   tools/setup.sh --check [demo]   only say what is missing; exit 1 if anything is
#   tools/setup.sh --list [demo]    print the packages, one per line
set -euo pipefail

# What building the library, its tests' process kit and the examples needs, and a Redis to run
# them against: the demo's set.
demo_packages=(
    cmake g++ make pkg-config libboost1.81-dev libboost-test1.81-dev libssl-dev openssl
    redis-server redis-tools procps
)
# What tools/test.sh needs besides: clang, Sentinel, the fault suite's network tools, the
# reference's doxygen, the optional backends' servers and clients, the benches' peers.
packages=(
    "${demo_packages[@]}" clang-14 libclang-rt-14-dev redis-sentinel iptables iproute2
    wrk curl doxygen postgresql-15 libpq-dev zookeeper libzookeeper-st-dev python3-kazoo
    python3-redis
)

log() { printf '==> %s\n' "$*" >&2; }

# True if the package is installed, by dpkg's records or, for a hand-made install that dpkg
# does not know about, by the file it provides.
package_present() {
    local pkg=$1
    if command -v dpkg-query >/dev/null 2>&1 &&
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep 'ok installed' >/dev/null; then
        return 0
    fi
    case $pkg in
    cmake | make | g++ | redis-server | openssl | pkg-config) command -v "$pkg" >/dev/null 2>&1 ;;
    clang-14) command -v clang++-14 >/dev/null 2>&1 ;;
    redis-tools) command -v redis-cli >/dev/null 2>&1 ;;
    redis-sentinel) command -v redis-sentinel >/dev/null 2>&1 ;;
    procps) command -v ps >/dev/null 2>&1 ;;
    iptables) command -v iptables >/dev/null 2>&1 ;;
    iproute2) command -v ip >/dev/null 2>&1 ;;
    wrk | curl | doxygen) command -v "$pkg" >/dev/null 2>&1 ;;
    libboost1.81-dev) grep -qs 'define BOOST_VERSION 1081' /usr/include/boost/version.hpp ;;
    libboost-test1.81-dev) compgen -G '/usr/lib/*/libboost_unit_test_framework.so.1.81*' >/dev/null ;;
    libssl-dev) [[ -f /usr/include/openssl/ssl.h ]] ;;
    postgresql-15) [[ -x /usr/lib/postgresql/15/bin/postgres && -x /usr/lib/postgresql/15/bin/initdb ]] ;;
    libpq-dev) [[ -f /usr/include/postgresql/libpq-fe.h ]] ;;
    zookeeper) [[ -f /usr/share/java/zookeeper.jar ]] && command -v java >/dev/null 2>&1 ;;
    libzookeeper-st-dev) [[ -f /usr/include/zookeeper/zookeeper.h ]] &&
        compgen -G '/usr/lib/*/libzookeeper_st.so' >/dev/null ;;
    python3-kazoo) python3 -c 'import kazoo' >/dev/null 2>&1 ;;
    python3-redis) /usr/bin/python3 -c 'import redis' >/dev/null 2>&1 ;;
    *) return 1 ;;
    esac
}

check_only=false
list_only=false
case ${1:-} in
--check)
    check_only=true
    shift
    ;;
--list)
    list_only=true
    shift
    ;;
-h | --help)
    sed -n '2,10p' "$0"
    exit 0
    ;;
esac
case ${1:-} in
demo) packages=("${demo_packages[@]}") ;;
"") ;;
*)
    log "unknown argument: $1 (tools/setup.sh --help)"
    exit 2
    ;;
esac
if $list_only; then
    printf '%s\n' "${packages[@]}"
    exit 0
fi

missing=()
for pkg in "${packages[@]}"; do
    package_present "$pkg" || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
    exit 0
fi
if $check_only || [[ $(id -u) != 0 ]]; then
    log "missing packages: ${missing[*]}"
    log "install them with: sudo apt-get install -y ${missing[*]}"
    exit 1
fi
log "installing: ${missing[*]}"
apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends)
# The package lists on a fresh machine may be absent or stale: refresh only if needed.
if ! "${apt[@]}" "${missing[@]}"; then
    log "install failed; running apt-get update and retrying"
    apt-get update
    "${apt[@]}" "${missing[@]}"
fi
