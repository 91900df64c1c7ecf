#!/usr/bin/env bash
# Builds corolock and runs every test: the g++ build with unit, header, doc (API reference, the
# claims and commands in the pages), integration and example tests, then an ASan+UBSan build, a
# TSan build, the RESP3 fuzzer, a clang++-14 build of the library and tests (unit tests run),
# and the consumer test (installed package, pkg-config, add_subdirectory, FetchContent; static
# and shared). Every stage runs even if an earlier one
# failed; the summary at the end says which did, and the exit status is non-zero if any did.
# The build trees are those of CMakePresets.json; tools/setup.sh installs the packages first.
#
#   tools/test.sh            everything (CI runs this)
#   tools/test.sh --quick    skip the sanitizer, fuzz, clang and consumer stages
#
# COROLOCK_FUZZ_SECONDS (default 60) bounds the fuzzing run.
# shellcheck disable=SC2317,SC2119 # stage functions are called through run_stage
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tools/common.sh
source tools/common.sh

quick=false
for arg in "$@"; do
    case $arg in
    --quick) quick=true ;;
    -h | --help)
        sed -n '2,14p' "$0"
        exit 0
        ;;
    *)
        log "unknown option: $arg"
        exit 2
        ;;
    esac
done

JOBS=2
# The libraries and test binaries compile as unity builds here (16 files a translation unit):
# about a quarter of the CPU of one file each. The presets leave it off, so an edit to one file
# rebuilds one file.
UNITY=-DCOROLOCK_UNITY_BUILD=ON
# Both backends, named: `build` may have been configured first by tools/demo.sh on a machine
# without libpq or the ZooKeeper client, and a cached OFF would outlive their install.
BACKENDS=(-DCOROLOCK_WITH_POSTGRES=ON -DCOROLOCK_WITH_ZOOKEEPER=ON)
FUZZ_SECONDS=${COROLOCK_FUZZ_SECONDS:-60}
LOG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/corolock-test.XXXXXX")
on_exit "rm -rf '$LOG_DIR'"

stage_names=()
stage_results=()
stage_seconds=()

# run_stage NAME FUNCTION: runs FUNCTION in a subshell with errexit in force (it would be ignored
# in a function called from an `if`) and records the outcome instead of stopping the script.
run_stage() {
    local name=$1 fn=$2 start rc
    log "stage $name"
    start=$SECONDS
    set +e
    (
        set -e
        "$fn"
    )
    rc=$?
    set -e
    stage_names+=("$name")
    stage_seconds+=($((SECONDS - start)))
    if ((rc == 0)); then
        stage_results+=(pass)
    else
        stage_results+=("FAIL ($rc)")
        log "stage $name failed with status $rc"
    fi
}

skip_stage() {
    stage_names+=("$1")
    stage_seconds+=(0)
    stage_results+=("skipped ($2)")
}

# run_ctest NAME ARGS...: ctest with its output kept in $LOG_DIR/ctest-NAME.log for the summary.
run_ctest() {
    local name=$1
    shift
    ctest --output-on-failure --no-tests=error -j"$JOBS" "$@" 2>&1 | tee "$LOG_DIR/ctest-$name.log"
}

stage_build() {
    cmake --preset relwithdebinfo "$UNITY" "${BACKENDS[@]}"
    cmake --build build -j"$JOBS"
}

stage_ctest() {
    run_ctest main --test-dir build
}

stage_asan() {
    cmake --preset asan "$UNITY"
    cmake --build build-asan -j"$JOBS" --target corolock_unit_tests corolock_integration_tests \
        corolock_postgres_tests \
        corolock_zookeeper_tests
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # The cluster and Sentinel suites time failovers of real servers: the main stage runs them.
    # It runs the history checkers too (PostgreSQL's 100,000 sections, ZooKeeper's cut links):
    # each keeps both cores busy for a minute or more, alone, and what they check is the lock's
    # safety under load, not memory (the code they run, the other suites here run too).
    run_ctest asan --test-dir build-asan -L 'unit|integration' -LE 'cluster|sentinel' \
        -E 'pg_mutex_history|zk_isolation'
}

stage_tsan() {
    cmake --preset tsan "$UNITY"
    # The optional backends' tests are not built here: their clients run on one io_context
    # thread (libpq, and ZooKeeper's single-threaded library), and the ASan stage runs them.
    cmake --build build-tsan -j"$JOBS" --target corolock_unit_tests corolock_integration_tests
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp"
    run_ctest tsan --test-dir build-tsan -L 'unit|integration' -LE 'cluster|sentinel|postgres|zookeeper' \
        -E header_check
}

stage_fuzz() {
    cmake --preset fuzz
    cmake --build build-fuzz -j"$JOBS" --target corolock_resp3_fuzz
    local fuzzer
    fuzzer=$(find build-fuzz -type f -name corolock_resp3_fuzz -perm -u+x | head -n 1)
    [[ -n $fuzzer ]] || {
        log "corolock_resp3_fuzz was not built"
        return 1
    }
    # Fuzz a copy: libFuzzer adds what it finds to the corpus directory it is given.
    mkdir -p "$LOG_DIR/corpus" build-fuzz/artifacts
    if [[ -d test/fuzz/corpus ]]; then
        cp -R test/fuzz/corpus/. "$LOG_DIR/corpus/"
    fi
    "$fuzzer" -max_total_time="$FUZZ_SECONDS" -timeout=10 -print_final_stats=1 \
        -artifact_prefix=build-fuzz/artifacts/ "$LOG_DIR/corpus"
}

# The whole library and the unit tests with clang++-14, warnings as errors; the unit tests run
# (the g++ stages build and run the rest).
stage_clang() {
    cmake --preset clang "$UNITY"
    cmake --build build-clang -j"$JOBS" --target corolock corolock_unit_tests corolock_header_check \
        corolock_postgres_tests \
        corolock_zookeeper_tests
    run_ctest clang --test-dir build-clang -L unit
}

# Installs the library (static and shared) and builds and runs small consumers of it.
stage_consumer() {
    JOBS=$JOBS COROLOCK_STATIC_BUILD=build test/consumer/run.sh
}

tools/setup.sh
total_start=$SECONDS

run_stage build stage_build

# The examples (ctest label `example`) talk to this server; integration tests start their own.
redis_start=$SECONDS
if start_redis; then
    export COROLOCK_REDIS_HOST=127.0.0.1 COROLOCK_REDIS_PORT=$REDIS_PORT
    stage_names+=(redis)
    stage_results+=(pass)
else
    stage_names+=(redis)
    stage_results+=(FAIL)
fi
stage_seconds+=($((SECONDS - redis_start)))

run_stage ctest stage_ctest
stop_redis
unset COROLOCK_REDIS_HOST COROLOCK_REDIS_PORT

if $quick; then
    skip_stage asan --quick
    skip_stage tsan --quick
    skip_stage fuzz --quick
    skip_stage clang --quick
    skip_stage consumer --quick
else
    run_stage asan stage_asan
    run_stage tsan stage_tsan
    if [[ -f test/fuzz/CMakeLists.txt ]]; then
        run_stage fuzz stage_fuzz
    else
        skip_stage fuzz "no test/fuzz/CMakeLists.txt"
    fi
    run_stage clang stage_clang
    run_stage consumer stage_consumer
fi

# ---------------------------------------------------------------------------------------------
failed=0
{
    echo
    echo "================ corolock test summary ================"
    for i in "${!stage_names[@]}"; do
        printf '  %-8s %-40s %5ss\n' "${stage_names[i]}" "${stage_results[i]}" "${stage_seconds[i]}"
        [[ ${stage_results[i]} == pass || ${stage_results[i]} == skipped* ]] || failed=1
    done
    for name in main asan tsan clang; do
        file=$LOG_DIR/ctest-$name.log
        [[ -f $file ]] || continue
        echo "  ctest ($name):"
        grep -E 'tests passed|tests failed|Total Test time|No tests were found|tests FAILED|^[[:space:]]+[0-9]+ - ' \
            "$file" | sed 's/^/    /' || echo "    (no summary line)"
        # A failed stage says why: the first assertion and sanitizer lines of its log.
        if grep -q 'tests FAILED' "$file"; then
            grep -E 'error: in|fatal error|runtime error|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|SUMMARY:|Test timeout|\*\*\*Timeout|Exception' \
                "$file" | head -n 20 | cut -c1-300 | sed 's/^/    | /'
        fi
    done
    printf '  total: %ss -> %s\n' $((SECONDS - total_start)) "$( ((failed)) && echo FAILED || echo PASSED)"
    echo "======================================================="
} >&2
exit $failed
