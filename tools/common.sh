# shellcheck shell=bash
# Shared helpers for the corolock scripts. Source it; do not run it.
#
#   free_port              print a loopback port in 20000-60000 that nothing listens on
#   start_redis            start a throw-away redis-server (the process kit's); sets REDIS_PORT
#   stop_redis             stop it (also done on EXIT, INT and TERM)
#   on_exit 'COMMAND'      run COMMAND when the script ends, however it ends
#
# Installing the Debian packages is tools/setup.sh's job (test.sh and demo.sh run it first).
# The scripts never touch port 6379 and never leave a redis-server running.

log() { printf '==> %s\n' "$*" >&2; }

COROLOCK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# ---------------------------------------------------------------------------------------------
# Exit hooks: one trap runs every registered command, so that sourcing scripts can add theirs.

COROLOCK_EXIT_HOOKS=()

on_exit() { COROLOCK_EXIT_HOOKS+=("$1"); }

corolock_run_exit_hooks() {
    local i
    for ((i = ${#COROLOCK_EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
        eval "${COROLOCK_EXIT_HOOKS[i]}" || true
    done
    COROLOCK_EXIT_HOOKS=()
}

trap 'corolock_run_exit_hooks' EXIT
trap 'corolock_run_exit_hooks; trap - INT; kill -INT $$' INT
trap 'corolock_run_exit_hooks; trap - TERM; kill -TERM $$' TERM

# ---------------------------------------------------------------------------------------------
# redis-server

REDIS_PID=
REDIS_PORT=

port_listening() {
    local port=$1
    if command -v ss >/dev/null 2>&1; then
        ss -Hltn "sport = :$port" 2>/dev/null | grep . >/dev/null
    else
        timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
    fi
}

free_port() {
    local port i
    for ((i = 0; i < 100; i++)); do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 40001))
        if ! port_listening "$port"; then
            echo "$port"
            return 0
        fi
    done
    log "no free port found"
    return 1
}

# Starts a throw-away redis-server from the process kit, as every test does (a free loopback
# port, our own pid checked, reaped on every path): test/common/script_redis.cpp, target
# corolock_script_redis, built with the tests, benches and examples. COROLOCK_SCRIPT_REDIS names
# the program if it is not in build/. Sets REDIS_PID (the kit's) and REDIS_PORT.
start_redis() {
    local kit=${COROLOCK_SCRIPT_REDIS:-$COROLOCK_ROOT/build/test/common/corolock_script_redis}
    stop_redis
    if [[ ! -x $kit ]]; then
        log "$kit is not built (target corolock_script_redis)"
        return 1
    fi
    coproc REDIS_KIT { exec "$kit"; }
    REDIS_PID=$REDIS_KIT_PID
    if ! read -r -t 30 REDIS_PORT <&"${REDIS_KIT[0]}" || [[ ! $REDIS_PORT =~ ^[0-9]+$ ]]; then
        log "redis-server would not start"
        stop_redis
        return 1
    fi
}

# The kit stops the server on SIGTERM (SIGTERM, then SIGKILL after 2 s) and reaps it.
stop_redis() {
    local pid=$REDIS_PID
    REDIS_PID=
    REDIS_PORT=
    [[ -n $pid ]] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 0
}

on_exit stop_redis
