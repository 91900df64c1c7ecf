#!/usr/bin/env bash
# Builds the demo program and runs it against a throw-away redis-server on a free port.
#
#   tools/demo.sh [ARGS...]                            ARGS go to the demo after --host/--port
#   DEMO_TARGET=corolock_pipeline_demo tools/demo.sh   another program from example/
set -euo pipefail
DEMO_TARGET=${DEMO_TARGET:-corolock_flash_sale}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tools/common.sh
source tools/common.sh

tools/setup.sh demo # only what this demo builds and runs
if [[ ! -f example/CMakeLists.txt ]]; then
    log "example/CMakeLists.txt does not exist yet: no demo to build"
    exit 1
fi
cmake --preset relwithdebinfo
cmake --build build -j2 --target "$DEMO_TARGET" corolock_script_redis

start_redis

# Not exec: the exit hooks must still stop the server afterwards.
status=0
"build/example/$DEMO_TARGET" --host 127.0.0.1 --port "$REDIS_PORT" "$@" || status=$?
exit $status
