#!/usr/bin/env bash
# Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#
# bench/peers/run.sh [seconds]: corolock and every peer on ONE private redis-server, in one
# sitting, then the table (bench/peers/README.md). A peer that cannot be installed is skipped and
# named; it never fails the run. Needs a built corolock-bench (COROLOCK_BENCH, default
# build/bench/corolock-bench).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
seconds="${1:-3}"
# shellcheck source=../../tools/common.sh
source "$root/tools/common.sh"
bench="${COROLOCK_BENCH:-$root/build/bench/corolock-bench}"
[[ -x "$bench" ]] || { log "no $bench: build corolock-bench first"; exit 2; }

out="$(mktemp -d)"
on_exit "rm -rf '$out'"
: >"$out/skipped.txt"
start_redis
log "server 127.0.0.1:$REDIS_PORT; load $(cut -d' ' -f1-3 /proc/loadavg)"
run_bench() { # <file> <subcommand> <args...>
    local file="$1"
    shift
    "$bench" "$@" --port "$REDIS_PORT" --seconds "$seconds" --json >"$out/$file.log" 2>&1 ||
        log "corolock-bench $1 reported errors (see its output)"
    tail -n 1 "$out/$file.log" >"$out/$file.json"
}
log "corolock-bench lock"
run_bench lock lock --only uncontended,contended --runs 1
log "corolock-bench sync"
run_bench sync sync
log "corolock-bench rate"
run_bench rate rate

# npm peers, pinned by package-lock.json, installed beside this script (never committed).
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "npm peers (node-redlock, redis-semaphore, rate-limiter-flexible): no node/npm" >>"$out/skipped.txt"
elif ! (cd "$here" && npm ci --no-audit --no-fund >"$out/npm.log" 2>&1); then
    echo "npm peers: npm ci failed: $(tail -n 1 "$out/npm.log")" >>"$out/skipped.txt"
else
    log "npm peers"
    node "$here/node_peers.js" 127.0.0.1 "$REDIS_PORT" "$seconds" >"$out/node.jsonl" ||
        echo "npm peers: node_peers.js failed" >>"$out/skipped.txt"
fi
# Debian's python3-redis (tools/setup.sh --bench installs it).
if /usr/bin/python3 -c 'import redis' 2>/dev/null; then
    log "redis-py"
    /usr/bin/python3 "$here/python_peers.py" 127.0.0.1 "$REDIS_PORT" "$seconds" >"$out/python.jsonl" ||
        echo "redis-py: python_peers.py failed" >>"$out/skipped.txt"
else
    echo "redis-py: Debian's python3-redis is not installed" >>"$out/skipped.txt"
fi
log "load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$here/table.py" "$out"
