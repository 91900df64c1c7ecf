#!/usr/bin/env bash
# Runs the commands that the pages show (README.md, doc/**/*.md) against a real redis-server and
# checks the output they state. doc/doc_checks.md describes the markers; in short:
#
#   <!-- doc-run: FIXTURE -->      on the line before a fenced block of `$ command` lines,
#   ```console                     each followed by the output it must print (a `<...>` part
#   $ redis-cli PTTL lock:report   matches anything, `...` alone on a line any lines)
#   <ms left>
#   ```
#
# FIXTURE is `server` (an empty server), `hold NAME` (a holder acquired NAME with a 60 s lease and
# crashed) or `acl USER PASSWORD NAME` (after the block, doc_fixture checks that USER can acquire,
# renew, wait and release NAME). A block that contains `redis-cli` and has no marker fails the
# test; `<!-- doc-run: no, REASON -->` exempts one.
#
#   test/doc/run_doc_commands.sh DOC_FIXTURE_PROGRAM [PAGE...]
#
# The server is the process kit's (tools/common.sh start_redis: a free loopback port, always
# stopped). CTest runs this as `doc_commands` (label doc).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=tools/common.sh
source tools/common.sh

fixture_program=${1:?usage: run_doc_commands.sh DOC_FIXTURE_PROGRAM [PAGE...]}
shift
if (($# > 0)); then
    pages=("$@")
else
    pages=(README.md CHANGELOG.md)
    while IFS= read -r p; do pages+=("$p"); done < <(find doc -name '*.md' | sort)
fi

start_redis
failures=0
blocks=0

# redis-cli as the pages write it, sent to the test server.
redis-cli() { command redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

fail() {
    log "$*"
    failures=$((failures + 1))
}

reset_server() {
    local user
    redis-cli FLUSHALL >/dev/null
    while IFS= read -r user; do
        [[ $user == default || -z $user ]] || redis-cli ACL DELUSER "$user" >/dev/null
    done < <(redis-cli ACL USERS)
}

# matches ACTUAL_LINES_VAR EXPECTED_LINES_VAR: the expected lines as patterns, in order.
matches() {
    local -n got=$1 want=$2
    local i=0 j=0 pattern
    while ((j < ${#want[@]})); do
        if [[ ${want[j]} == ... ]]; then
            ((j == ${#want[@]} - 1)) && return 0
            # `...` takes lines until the next expected one matches.
            while ((i < ${#got[@]})) && ! [[ ${got[i]} == $(glob "${want[j + 1]}") ]]; do
                i=$((i + 1))
            done
            j=$((j + 1))
            continue
        fi
        pattern=$(glob "${want[j]}")
        # shellcheck disable=SC2053 # the expected line is a pattern
        ((i < ${#got[@]})) && [[ ${got[i]} == $pattern ]] || return 1
        i=$((i + 1))
        j=$((j + 1))
    done
    ((i == ${#got[@]}))
}

# A `<...>` placeholder matches anything; the rest of the line is literal.
glob() {
    local line=$1 out='' re='^([^<]*)<[^>]*>(.*)$'
    while [[ $line =~ $re ]]; do
        out+=$(literal "${BASH_REMATCH[1]}")'*'
        line=${BASH_REMATCH[2]}
    done
    out+=$(literal "$line")
    printf '%s' "$out"
}

# The text with the pattern characters escaped.
literal() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\*/\\*}
    s=${s//\?/\\?}
    s=${s//\[/\\[}
    printf '%s' "$s"
}

# run_block PAGE LINE FIXTURE BLOCK_LINES...
run_block() {
    local page=$1 at=$2 fixture=$3
    shift 3
    local -a lines=("$@") expected=() actual=()
    local cmd='' l
    reset_server
    read -r -a fx <<<"$fixture"
    case ${fx[0]} in
    server | acl) ;;
    hold)
        "$fixture_program" "$REDIS_PORT" hold "${fx[1]}" >/dev/null ||
            {
                fail "$page:$at: fixture '$fixture' failed"
                return
            }
        ;;
    *)
        fail "$page:$at: unknown fixture '$fixture'"
        return
        ;;
    esac
    run_command() {
        [[ -n $cmd ]] || return 0
        local out
        actual=()
        while IFS= read -r out; do actual+=("$out"); done < <(eval "$cmd" 2>&1)
        if ! matches actual expected; then
            fail "$page:$at: \$ $cmd"$'\n'"  expected:"$'\n'"$(printf '    %s\n' "${expected[@]}")"$'\n'"  got:"$'\n'"$(printf '    %s\n' "${actual[@]}")"
        fi
    }
    for l in "${lines[@]}"; do
        if [[ $l == '$ '* ]]; then
            run_command
            cmd=${l#'$ '}
            expected=()
        elif [[ -n $l ]]; then
            expected+=("$l")
        fi
    done
    run_command
    if [[ ${fx[0]} == acl ]]; then
        "$fixture_program" "$REDIS_PORT" acl "${fx[1]}" "${fx[2]}" "${fx[3]}" ||
            fail "$page:$at: a user with the ACL rule above cannot use the lock '${fx[3]}'"
    fi
    blocks=$((blocks + 1))
}

for page in "${pages[@]}"; do
    mapfile -t text <"$page"
    marker=
    marker_line=0
    in_block=false
    block=()
    for i in "${!text[@]}"; do
        line=${text[i]}
        if ! $in_block; then
            if [[ $line =~ ^\<!--\ doc-run:\ (.*)\ --\>$ ]]; then
                marker=${BASH_REMATCH[1]}
                marker_line=$((i + 1))
            elif [[ $line =~ ^[[:space:]]*\`\`\` ]]; then
                in_block=true
                block=()
                block_start=$((i + 1))
                # The marker belongs to the block right below it.
                ((marker_line == i)) || marker=
            fi
            continue
        fi
        if [[ $line =~ ^[[:space:]]*\`\`\` ]]; then
            in_block=false
            if [[ -z $marker ]]; then
                if printf '%s\n' "${block[@]}" | grep -q 'redis-cli'; then
                    fail "$page:$block_start: a block with redis-cli and no <!-- doc-run: ... --> marker"
                fi
            elif [[ $marker != no,* ]]; then
                run_block "$page" "$block_start" "$marker" "${block[@]}"
            fi
            marker=
            continue
        fi
        block+=("$line")
    done
done

log "ran $blocks blocks of commands from ${#pages[@]} pages, $failures failures"
((failures == 0 && blocks > 0))
