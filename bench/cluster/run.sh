#!/usr/bin/env bash
# bench/cluster/run.sh — what `bin/beamspy record --node ... --all` costs as
# the cluster grows: for each size N (1, 2, 4, 8, 16 local nodes by
# default), N fresh nodes each run the same busy workload
# (bench_cluster_wl: three processes sorting lists without pause), then
# `record --all --duration 3s` over all of them writes one .bspy and one
# HTML page. Per N it prints:
#   after stop   wall time from the end of --duration (the stop requests)
#                to the outputs written, from the tool's last line, and
#                that divided by N (the nodes share this host's cores: each
#                builds its profile on them, so the total grows with N; the
#                time per node is what must stay flat)
#   attach/node  the tool's attach time (connect, checks, code delivery of
#                every node) divided by N
#   start, stop  the spread of the tool's send instants of the start and
#                of the stop requests across the nodes
#   wall         the whole command
#   max RSS      the tool's peak resident memory (/usr/bin/time -v)
#   nodes        nodes written of N
# and the ratios N=max over N=1. The nodes of one size are killed before
# the next size starts (they share the host's cores).
# Settings (environment): CLUSTER_SIZES="1 2 4 8 16", CLUSTER_DURATION=3s,
# BEAMSPY=path of the tool (default bin/beamspy; an older tool without
# the spread line still gets wall, RSS and nodes). Needs erl_call
# (erlang-dev) and /usr/bin/time. Report on stdout and in
# bench/build/cluster_results.md; progress on stderr.
set -u

cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
BUILD="$ROOT/bench/build/cluster"
CLI=${BEAMSPY:-$ROOT/bin/beamspy}
SIZES=${CLUSTER_SIZES:-1 2 4 8 16}
DURATION=${CLUSTER_DURATION:-3s}
RESULTS="$ROOT/bench/build/cluster_results.md"

say() { echo "cluster: $*" >&2; }

[ -x "$CLI" ] || { say "$CLI is missing: run make"; exit 2; }
[ -x /usr/bin/time ] || { say "/usr/bin/time is missing (apt-get install time)"; exit 2; }
ERL_ROOT=$(erl -noshell -eval 'io:format("~s", [code:root_dir()]), halt().') || exit 2
ERL_CALL=$(ls "$ERL_ROOT"/lib/erl_interface-*/bin/erl_call 2>/dev/null | head -1)
[ -x "$ERL_CALL" ] || { say "erl_call not found (apt-get install erlang-dev)"; exit 2; }

# --timings: the attach, spread and after-stop figures (a tool older than
# it gets wall, RSS and nodes only).
TIMINGS=()
"$CLI" record --help 2>/dev/null | grep -q -- --timings && TIMINGS=(--timings)

rm -rf "$BUILD"
mkdir -p "$BUILD/out"
erlc -Werror -o "$BUILD" bench/cluster/bench_cluster_wl.erl || exit 2
COOKIE_FILE="$BUILD/cookie"
(umask 077 && od -An -N8 -tx1 /dev/urandom | tr -d ' \n' | sed 's/^/bc/' >"$COOKIE_FILE")
COOKIE=$(cat "$COOKIE_FILE")
HOST=$(hostname -s)
TAG="bcl$$"
live=()

rpc() { printf '%s\n' "$2" | "$ERL_CALL" -sname "$1" -c "$COOKIE" -e 2>/dev/null; }

stop_nodes() {
    for node in "${live[@]}"; do rpc "$node" 'erlang:halt().' >/dev/null; done
    live=()
}
trap stop_nodes EXIT

# start_nodes N: N detached nodes running the workload, ready.
start_nodes() {
    local i name
    for i in $(seq 1 "$1"); do
        name="${TAG}_n$i"
        erl -sname "$name" -setcookie "$COOKIE" -detached -noinput -pa "$BUILD" \
            -eval 'bench_cluster_wl:start()' || return 1
        live+=("$name")
    done
    for name in "${live[@]}"; do
        for _ in $(seq 1 600); do
            [ "$(rpc "$name" 'is_pid(whereis(bench_busy3)).')" = "{ok, true}" ] && break
            sleep 0.1
        done
    done
}

field() { sed -n "s/.*$1.*/\\1/p" "$2" | tail -1; }

printf '| N | after stop (s) | after stop/node (s) | attach/node (ms) | start spread (ms) | stop spread (ms) | wall (s) | max RSS (MiB) | nodes written |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n' >"$RESULTS"
first_after="" first_per="" first_attach="" first_rss=""
last_n="" last_after="" last_per="" last_attach="" last_rss=""
for n in $SIZES; do
    say "N=$n: starting $n nodes"
    start_nodes "$n" || { say "N=$n: a node did not start"; stop_nodes; continue; }
    args=()
    for name in "${live[@]}"; do args+=(--node "$name@$HOST"); done
    err="$BUILD/out/n$n.err"
    say "N=$n: record --all --duration $DURATION"
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$BUILD/out/n$n.time" "$CLI" record "${args[@]}" --all --duration "$DURATION" \
        --cookie-file "$COOKIE_FILE" --no-progress "${TIMINGS[@]}" -o "$BUILD/out/n$n.bspy" -o "$BUILD/out/n$n.html" 2>"$err"
    rc=$?
    wall=$(( ($(date +%s%N) - t0) / 1000000 ))
    stop_nodes
    rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$BUILD/out/n$n.time")
    rss=$(awk -v k="${rss_kb:-0}" 'BEGIN { printf "%.1f", k / 1024 }')
    attach=$(field 'attached in \([0-9]*\) ms' "$err")
    start=$(field 'start requests sent within \([0-9.]*\) ms' "$err")
    stop=$(field 'stop requests sent within \([0-9.]*\) ms' "$err")
    after=$(field 'the outputs written after \([0-9]*\) ms' "$err")
    written=$(grep -c "wrote .*n$n.bspy" "$err")
    if [ "$n" -eq 1 ]; then
        nodes_written=$([ "$written" -gt 0 ] && echo 1 || echo 0)
    else
        nodes_written=$(sed -n 's/.*: \([0-9]*\) of [0-9]* nodes recorded.*/\1/p' "$err" | tail -1)
        [ -z "$nodes_written" ] && nodes_written=$([ "$written" -gt 0 ] && echo "$n" || echo 0)
    fi
    [ -n "$attach" ] && attach=$((attach / n))
    per=""
    [ -n "$after" ] && per=$(awk -v m="$after" -v n="$n" 'BEGIN { printf "%.2f", m / 1000 / n }')
    [ -n "$after" ] && after=$(awk -v m="$after" 'BEGIN { printf "%.2f", m / 1000 }')
    say "N=$n: exit $rc, wall $wall ms, after stop ${after:--} s, attach/node ${attach:--} ms, RSS $rss MiB"
    printf '| %s | %s | %s | %s | %s | %s | %.1f | %s | %s of %s |\n' "$n" "${after:--}" "${per:--}" "${attach:--}" "${start:--}" \
        "${stop:--}" "$(awk -v w="$wall" 'BEGIN { print w / 1000 }')" "$rss" "$nodes_written" "$n" >>"$RESULTS"
    if [ -z "$first_rss" ]; then first_after=$after first_per=$per first_attach=$attach first_rss=$rss; fi
    last_n=$n last_after=$after last_per=$per last_attach=$attach last_rss=$rss
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2fx", a / b }'; }
{
    echo
    echo "N=$last_n over N=1: after stop $(ratio "$last_after" "$first_after") in all, $(ratio "$last_per" "$first_per") per node; attach per node $(ratio "$last_attach" "$first_attach"); max RSS $(ratio "$last_rss" "$first_rss")"
} >>"$RESULTS"
cat "$RESULTS"
