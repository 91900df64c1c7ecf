#!/usr/bin/env bash
# Load test of the HTTP flash-sale server, checked in Redis afterwards.
#
#   example/tier3/http_flash_sale/load.sh [--short | --long] [SERVER_BINARY]
#
# First starts the server against a Redis port where nothing listens: /healthz and an order
# must get 503 ("not_sold" for the order) and the server must stop cleanly. Then starts a throw-away redis-server on a free
# loopback port, seeds the stock, starts the server on a free port, checks a few answers by hand
# (curl), drives POST /orders with wrk from several connections with order ids that repeat
# (orders.lua), stops the server with SIGTERM, and checks in Redis:
#   - sold = initial stock - remaining, and every unit sold is recorded against an order id;
#   - oversold 0: no stock below zero;
#   - no order id sold twice (each order is for one unit, so its recorded units must be 1);
#   - the server's count of 201 answers equals the orders recorded in Redis;
#   - the server stops by itself on SIGTERM, after answering the requests in flight.
# --short (the default, what CTest runs): 3 s, 32 connections, 1,000 units for 3,000 order ids,
# so the stock runs out and every answer is exercised. --long: 60 s, 64 connections, stock that
# lasts (README.md gives the figures). Exits 0 when every check passes, 1 when one fails, 77
# when wrk or curl is missing. SERVER_THREADS=N runs the server's io_context on N threads.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../../../tools/common.sh
source "$root/tools/common.sh"

mode=short
if [[ ${1:-} == --short || ${1:-} == --long ]]; then
    mode=${1#--}
    shift
fi
server_binary=${1:-$root/build/example/tier3/http_flash_sale/corolock_http_flash_sale}

for tool in wrk curl redis-server redis-cli; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$tool is not installed (tools/setup.sh installs it): skipped"
        exit 77
    fi
done
[[ -x $server_binary ]] || { log "no server binary at $server_binary"; exit 1; }

items=(apple banana cherry durian)
wrk_threads=2
server_threads=${SERVER_THREADS:-1} # threads running the server's io_context
if [[ $mode == short ]]; then
    seconds=3 connections=32 stock=250 pool=3000
else
    seconds=60 connections=64 stock=250000 pool=1000000
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/corolock-http-load.XXXXXX")
on_exit "rm -rf '$work'"
problems=()
problem() { problems+=("$*"); log "problem: $*"; }

# The server, as our child (killed with us where setpriv can arrange it), on a port it picks.
server_pid='' url=''
wrapper=()
if setpriv --pdeathsig KILL true >/dev/null 2>&1; then
    wrapper=(setpriv --pdeathsig KILL)
fi
all_items=$(IFS=,; echo "${items[*]},probe")
start_server() { # start_server REDIS_PORT: sets server_pid and url
    local port='' i
    : >"$work/server.out" # before the child's own redirection, which the first read may outrun
    "${wrapper[@]}" "$server_binary" --redis "redis://127.0.0.1:$1" --listen 0 --threads "$server_threads" \
        --items "$all_items" </dev/null >"$work/server.out" 2>&1 &
    server_pid=$!
    for ((i = 0; i < 200; i++)); do
        port=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/server.out")
        [[ -n $port ]] && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    if [[ -z $port ]]; then
        log "the server did not start:"
        cat "$work/server.out" >&2
        exit 1
    fi
    url=http://127.0.0.1:$port
    log "server $server_pid on $url (Redis port $1)"
}
kill_server() {
    [[ -n $server_pid ]] || return 0
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}
on_exit kill_server
# Graceful stop: SIGTERM, and the server must exit 0 by itself, within 10 s.
stop_server() {
    local i status=0
    kill -TERM "$server_pid"
    for ((i = 0; i < 200; i++)); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        problem "the server was still running 10 s after SIGTERM"
        kill_server
        return 0
    fi
    wait "$server_pid" || status=$?
    server_pid=
    ((status == 0)) || problem "the server exited with $status after SIGTERM"
}

# A few answers by hand: status and body. HEADER="Name: value" adds a request header.
expect() { # expect STATUS METHOD PATH [BODY]
    local want=$1 method=$2 path=$3 body=${4-} got
    got=$(curl -s --max-time 30 -o "$work/body" -w '%{http_code}' -X "$method" \
        ${HEADER:+-H "$HEADER"} ${body:+--data-binary "$body"} "$url$path") || got=000
    if [[ $got != "$want" ]]; then
        problem "$method $path ${body:0:40}: HTTP $got, expected $want: $(head -c 200 "$work/body")"
    fi
}
# Redis down: an order waits for a connection (max_wait_for_connection, 5 s), then is refused
# with 503 "not_sold", and the server lives on and stops cleanly.
start_server "$(free_port)"
expect 503 GET /healthz
grep -q '"redis":"disconnected"' "$work/body" || problem "GET /healthz, Redis down: $(cat "$work/body")"
expect 503 POST /orders '{"order_id":"d-1","item":"probe","qty":1}'
grep -q '"status":"not_sold"' "$work/body" || problem "Redis down: $(cat "$work/body")"
stop_server

# Redis up: the stock for each load item, plus "probe" (1 unit) for the answers checked by hand.
start_redis
rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
for item in "${items[@]}"; do
    rcli set "sale:stock:$item" "$stock" >/dev/null
done
rcli set sale:stock:probe 1 >/dev/null
start_server "$REDIS_PORT"
expect 200 GET /healthz
grep -q '"redis":"connected"' "$work/body" || problem "GET /healthz: $(cat "$work/body")"
# A client whose budget is spent gets 503 at once, nothing sold (the lock wait is what is left).
HEADER="X-Request-Timeout-Ms: 0" expect 503 POST /orders '{"order_id":"p-0","item":"probe","qty":1}'
grep -q '"status":"lock_timeout"' "$work/body" || problem "no budget left: $(cat "$work/body")"
HEADER="X-Request-Timeout-Ms: soon" expect 400 POST /orders '{"order_id":"p-0","item":"probe"}'
expect 201 POST /orders '{"order_id":"p-1","item":"probe","qty":1}'
expect 409 POST /orders '{"order_id":"p-1","item":"probe","qty":1}'
expect 410 POST /orders '{"order_id":"p-2","item":"probe","qty":1}'
expect 410 POST /orders '{"order_id":"p-2","item":"probe","qty":1}' # sold out gives the id back
expect 400 POST /orders 'not json'
expect 400 POST /orders '{"order_id":"p-3","item":"probe","qty":0}'
expect 400 POST /orders '{"order_id":7,"item":"probe"}'
expect 404 POST /orders '{"order_id":"p-3","item":"nothing"}'
expect 413 POST /orders "$(head -c 8000 /dev/zero | tr '\0' x)"
expect 405 GET /orders
expect 200 GET /stock/probe
grep -q '"stock":0' "$work/body" || problem "GET /stock/probe: $(cat "$work/body")"
expect 404 GET /stock/nothing
expect 200 GET /metrics
grep -q '^flash_sale_orders_total{outcome="sold"} 1$' "$work/body" ||
    problem "GET /metrics: no sold count of 1"
# The library's own series (corolock::write_prometheus(out, conn)): the probe's sale was one
# grant and one released lease; the connection is up.
for series in '^corolock_acquires_total{outcome="granted"} [1-9]' \
    '^corolock_acquire_wait_seconds_bucket{le="\+Inf"} [1-9]' \
    '^corolock_lease_hold_seconds_count [1-9]' \
    '^corolock_lease_renewal_rtt_seconds_count [0-9]' \
    '^corolock_leases_lost_total{reason="expired"} 0$' \
    '^corolock_connection_up 1$' \
    '^corolock_connection_connects_total [1-9]'; do
    grep -Eq "$series" "$work/body" || problem "GET /metrics: no line matches $series"
done

# The load.
read -r load_before _ </proc/loadavg
log "wrk: $seconds s, $connections connections, $wrk_threads threads; load average $load_before"
wrk -t"$wrk_threads" -c"$connections" -d"${seconds}s" --latency -s "$here/orders.lua" "$url" \
    -- "$pool" "$(IFS=,; echo "${items[*]}")" | tee "$work/wrk.out"
read -r load_after _ </proc/loadavg
curl -s "$url/metrics" >"$work/metrics" || problem "GET /metrics failed after the load"

stop_server

# What Redis says.
initial=0 remaining=0 below_zero=0
for item in "${items[@]}" probe; do
    left=$(rcli get "sale:stock:$item")
    ((left >= 0)) || below_zero=$((below_zero + 1))
    [[ $item == probe ]] && initial=$((initial + 1)) || initial=$((initial + stock))
    remaining=$((remaining + left))
done
sold=$((initial - remaining))
# shellcheck disable=SC2016 # Lua, not shell
read -r orders recorded twice < <(rcli --no-raw eval '
local orders, units, twice = 0, 0, 0
for _, v in ipairs(redis.call("HVALS", KEYS[1])) do
    orders, units = orders + 1, units + tonumber(v)
    if v ~= "1" then twice = twice + 1 end
end
return orders .. " " .. units .. " " .. twice' 1 sale:sold | tr -d '"')
# The server's own counts, printed as it stopped (requests in flight when wrk stopped included).
final=$(sed -n 's/^stopped; orders: //p' "$work/server.out")
answered_sold=$(sed -n 's/.*\<sold=\([0-9]*\).*/\1/p' <<<"$final")
unknown=$(sed -n 's/.*\<unknown=\([0-9]*\).*/\1/p' <<<"$final")

((below_zero == 0)) || problem "$below_zero items have stock below zero (oversold)"
((recorded == sold)) || problem "sold $sold units, but $recorded are recorded against orders"
((twice == 0)) || problem "$twice order ids were sold twice"
((sold > 1)) || problem "the load sold nothing"
if [[ -z $final ]]; then
    problem "the server did not print its counts as it stopped"
elif ((unknown == 0 && answered_sold != orders)); then
    problem "$answered_sold orders answered 201, but $orders recorded in Redis"
fi

summary=$(grep '^wrk-summary' "$work/wrk.out" || true)
echo
echo "outcomes (server):  $final"
echo "lock (server):      $(grep -E '^corolock_(acquires_total|leases_lost_total|lock_attempts_total|lock_wakeups_total|acquire_wait_seconds_(sum|count))' \
    "$work/metrics" | sed 's/^corolock_//' | tr '\n' ' ')"
echo "load:               ${summary#wrk-summary }"
echo "machine:            $(nproc) cpus, load average $load_before before, $load_after after"
echo "redis:              initial $initial, remaining $remaining, sold $sold, recorded $recorded" \
    "in $orders orders, sold twice $twice, stock below zero $below_zero"
echo "answered 201:       $answered_sold (unknown outcomes: $unknown)"
if ((${#problems[@]})); then
    printf 'FAILED: %s\n' "${problems[@]}"
    exit 1
fi
echo "OK"
