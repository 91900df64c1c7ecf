# shellcheck shell=bash
# Shared helpers for the corolock scripts. Source it; do not run it.
#
#   free_port              print a loopback port in 20000-60000 that nothing listens on
#   start_redis DIR        start a throw-away redis-server child; sets REDIS_PID, REDIS_PORT
#   stop_redis             stop it (also done on EXIT, INT and TERM)
#   on_exit 'COMMAND'      run COMMAND when the script ends, however it ends
#
# Installing the Debian packages is tools/setup.sh's job (test.sh and demo.sh run it first).
# The scripts never touch port 6379 and never leave a redis-server running.

log() { printf '==> %s\n' "$*" >&2; }

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

# Starts redis-server in the foreground as our child on a free port and waits for it to answer.
# A port can still be taken between the check and the bind, and another server may answer on it:
# the server is only ours if INFO reports our pid; otherwise try another port.
start_redis() {
    local dir=$1 attempt port i
    mkdir -p "$dir" || return 1
    stop_redis
    # Where util-linux has it, the server dies with us even if we are SIGKILLed.
    local wrapper=()
    if setpriv --pdeathsig KILL true >/dev/null 2>&1; then
        wrapper=(setpriv --pdeathsig KILL)
    fi
    for ((attempt = 1; attempt <= 5; attempt++)); do
        port=$(free_port) || return 1
        "${wrapper[@]}" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
            --daemonize no --protected-mode no --enable-debug-command local \
            --dir "$dir" --logfile "$dir/redis.log" </dev/null >"$dir/redis.out" 2>&1 &
        REDIS_PID=$!
        for ((i = 0; i < 100; i++)); do
            if ! kill -0 "$REDIS_PID" 2>/dev/null; then
                break
            fi
            if [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then
                if redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null |
                    grep -q "^process_id:$REDIS_PID"; then
                    REDIS_PORT=$port
                    log "redis-server $REDIS_PID listening on 127.0.0.1:$REDIS_PORT"
                    return 0
                fi
                break
            fi
            sleep 0.05
        done
        stop_redis
    done
    log "redis-server would not start; its log:"
    tail -n 20 "$dir/redis.log" "$dir/redis.out" >&2 2>/dev/null
    return 1
}

stop_redis() {
    local pid=$REDIS_PID i
    REDIS_PID=
    REDIS_PORT=
    [[ -n $pid ]] || return 0
    if kill -TERM "$pid" 2>/dev/null; then
        for ((i = 0; i < 40; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    return 0
}

on_exit stop_redis
