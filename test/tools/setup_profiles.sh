#!/usr/bin/env bash
# tools/setup.sh's package sets (issue 28): tools/demo.sh installs only what the Redis demo
# builds and runs (no JRE, ZooKeeper, PostgreSQL, clang or doxygen: 129 s on a fresh machine),
# and everything it installs is also in tools/test.sh's set.
set -euo pipefail
root=$1
fail=0
demo=$("$root/tools/setup.sh" --list demo)
all=$("$root/tools/setup.sh" --list)
for pkg in zookeeper libzookeeper-st-dev postgresql-15 libpq-dev python3-kazoo python3-redis clang-14 \
    libclang-rt-14-dev doxygen wrk redis-sentinel iptables; do
    if grep -qx -- "$pkg" <<<"$demo"; then
        echo "the demo's set installs $pkg, which the demo never uses" >&2
        fail=1
    fi
    if ! grep -qx -- "$pkg" <<<"$all"; then
        echo "tools/test.sh's set lacks $pkg" >&2
        fail=1
    fi
done
for pkg in redis-server libboost1.81-dev libssl-dev cmake g++; do
    grep -qx -- "$pkg" <<<"$demo" || {
        echo "the demo's set lacks $pkg" >&2
        fail=1
    }
done
while read -r pkg; do
    grep -qx -- "$pkg" <<<"$all" || {
        echo "$pkg is in the demo's set, not in tools/test.sh's" >&2
        fail=1
    }
done <<<"$demo"
grep -q '^tools/setup.sh demo' "$root/tools/demo.sh" || {
    echo "tools/demo.sh does not run 'tools/setup.sh demo'" >&2
    fail=1
}
exit $fail
