#!/usr/bin/env bash
# shellcheck disable=SC2034 # RATE, EFF, CORES are read through namerefs (values, ratios)
# bench/dist/run.sh — what `bin/beamspy record|dump|top --node N` costs on
# real nodes over Erlang distribution, measured side by side in one run:
#
#  1. attach: `beamspy dump --node N --limit 1 --interval 0` timed end to
#     end (connect, version checks, code delivery, the dump, unloading)
#     against an idle node that has nothing of beamspy ("fresh") and
#     against an idle node that already has this version of beamspy loaded
#     from -pa ebin ("loaded": no delivery); their difference is the cost
#     of code delivery. Floor: erl_call doing erlang:node() once (connect +
#     one call). The same dump and floor against the busy node of part 2
#     show what a loaded node does to the round trips.
#  2. throughput: a node runs bench_dist_wl (bench_workloads' procs made
#     continuous: rounds of 50 spawned senders x 200 messages to a
#     collector, a counter bumped by each sender that is done). The message
#     rate is measured inside the node over a fixed window that starts once
#     the beamspy job is running (and, for trace, once the workload is
#     traced) and must still be running at its end, so attach and finish
#     are never in it. Each repetition runs, in rotated order, `record
#     --all` (trace), `record --all --timeline 0`, `record --all --mode
#     sample` and `top`, each right after an untraced window of its own:
#     the ratio is taken against that window (the machine's load drifts).
#  3. finish: for each record, from the end of the recording (the tool's
#     progress line ends) to the last "wrote" line (fetch, unload, write).
#
# Every time is a median with its range over the repetitions. The report
# goes to stdout and bench/build/dist_results.md; progress to stderr.
# Settings (environment):
#   DIST_REPS=5           throughput repetitions (each runs every phase once)
#   DIST_ATTACH_REPS=7    attach repetitions
#   DIST_WINDOW_MS=2000   measurement window inside each phase
#   DIST_SETTLE_MS=200    wait between the job running and the window
# Standalone, or from `make bench` (after `make all`). Needs erl_call
# (erlang-dev). The nodes get unique names and a random cookie kept in a
# 0600 file (never on a command line), and are killed at the end.
set -u

cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
BUILD="$ROOT/bench/build/dist"
CLI="$ROOT/bin/beamspy"
REPS=${DIST_REPS:-5}
AREPS=${DIST_ATTACH_REPS:-7}
WINDOW_MS=${DIST_WINDOW_MS:-2000}
SETTLE_MS=${DIST_SETTLE_MS:-200}
RESULTS="$ROOT/bench/build/dist_results.md"

say() { echo "dist: $*" >&2; }

[ -x "$CLI" ] || { say "bin/beamspy is missing: run make"; exit 2; }
ERL_ROOT=$(erl -noshell -eval 'io:format("~s", [code:root_dir()]), halt().') || exit 2
ERL_CALL=$(ls "$ERL_ROOT"/lib/erl_interface-*/bin/erl_call 2>/dev/null | head -1)
[ -x "$ERL_CALL" ] || { say "erl_call not found (apt-get install erlang-dev)"; exit 2; }

rm -rf "$BUILD"
mkdir -p "$BUILD/out" "$BUILD/home"
erlc -Werror -o "$BUILD" bench/dist/bench_dist_wl.erl || exit 2

# The cookie lives in $HOME/.erlang.cookie of a private HOME used by the
# nodes and erl_call, and is given to beamspy with --cookie-file.
COOKIE_FILE="$BUILD/home/.erlang.cookie"
(umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' | sed 's/^/bd/' >"$COOKIE_FILE")
chmod 600 "$COOKIE_FILE"
export HOME="$BUILD/home"
TAG="bsdb$$"
NODES=()   # short names started
OSPIDS=()  # their OS pids
BG=()      # background beamspy processes

cleanup() {
    local p n
    for p in "${BG[@]}"; do kill -9 "$p" 2>/dev/null; done
    for n in "${NODES[@]}"; do "$ERL_CALL" -sname "$n" -a 'erlang halt []' >/dev/null 2>&1 & done
    sleep 0.5
    for p in "${OSPIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# rpc SHORT 'Mod Fun [Args]': the result with the quotes of a string removed.
# erl_call now and then fails to connect to a node that is short of CPU:
# then it is tried again (at most 3 times; every failure is counted).
RPC_FAILS="$BUILD/erl_call.failures"
rpc() {
    local out
    for _ in 1 2 3; do
        out=$("$ERL_CALL" -sname "${TAG}_$1" -a "$2" 2>>"$BUILD/erl_call.err")
        [ -n "$out" ] && break
        echo "$1 $2" >>"$RPC_FAILS"
        sleep 0.3
    done
    printf '%s\n' "$out" | sed -e 's/^"//' -e 's/"$//'
}

# start_node SHORT [erl args...]
start_node() {
    local short=$1 name="${TAG}_$1"
    shift
    erl -sname "$name" -detached -noinput -pa "$BUILD" "$@" || return 1
    NODES+=("$name")
    for _ in $(seq 1 100); do
        if [ "$("$ERL_CALL" -sname "$name" -a 'erlang is_alive []' 2>/dev/null)" = true ]; then
            OSPIDS+=("$(rpc "$short" 'os getpid []')")
            return 0
        fi
        sleep 0.1
    done
    return 1
}

now() { echo "$EPOCHREALTIME"; }
ms_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }

# stats N...: "median min max" (the median of an even count is the mean of
# the middle two), or "" for no numbers.
stats() {
    [ $# -gt 0 ] || return 0
    printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END {
        m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
        print m, a[1], a[NR] }'
}
# cell N...: "median (min–max)" with a format, or "–".
cell() {
    local fmt=$1
    shift
    [ $# -gt 0 ] || { echo "–"; return; }
    stats "$@" | awk -v f="$fmt" '{ printf f " (" f "–" f ")", $1, $2, $3 }'
}

bs() { "$CLI" "$@" --cookie-file "$COOKIE_FILE"; }

t_start=$(date +%s)
say "starting nodes ($TAG)"
start_node fresh || { say "node fresh did not start"; exit 1; }
start_node loaded -pa "$ROOT/ebin" || { say "node loaded did not start"; exit 1; }
# No scheduler busy-waiting on the busy node: its CPU time is then work.
start_node busy +sbwt none +sbwtdcpu none +sbwtdio none -eval 'bench_dist_wl:start()' || { say "node busy did not start"; exit 1; }
[ "$(rpc busy 'erlang whereis [bench_dist_driver]')" != undefined ] || { say "the workload did not start"; exit 1; }
rpc loaded 'bench_dist_wl load_beamspy []' >/dev/null

# The loaded node must hold exactly what the tool carries, or the tool
# delivers anyway; the payload's md5s are in the generated payload file.
want=$(sed -n '/bs_payload_modules\[\] = {/,/};/p' build/cli/payload_data.c |
    sed -n 's/.*{"\([a-z_]*\)", "\([0-9a-f]*\)".*/\1:\2/p' | LC_ALL=C sort | paste -sd' ')
have=$(rpc loaded 'bench_dist_wl beamspy_md5s []')
preload_note=""
if [ -z "$want" ] || [ "$want" != "$have" ]; then
    say "ebin/ differs from what bin/beamspy carries (run make): preloading with dump --keep instead"
    bs dump --node "${TAG}_loaded" --limit 1 --interval 0 --keep >/dev/null
    have=$(rpc loaded 'bench_dist_wl beamspy_md5s []')
    preload_note=" (ebin/ differed from the tool's payload: preloaded with \`dump --keep\`)"
    [ "$want" = "$have" ] || preload_note=" (WARNING: the loaded node's modules differ from the tool's: delivery happened)"
fi
n_mods=$(echo "$want" | wc -w)

# ---------------------------------------------------------------- attach
# time_dump SHORT: prints the ms of one dump, or "fail".
time_dump() {
    local t0 rc
    t0=$(now)
    bs dump --node "${TAG}_$1" --limit 1 --interval 0 >"$BUILD/out/dump.txt" 2>"$BUILD/out/dump.err"
    rc=$?
    if [ $rc -eq 0 ]; then ms_since "$t0"; else echo "fail"; say "dump $1 exit $rc: $(head -1 "$BUILD/out/dump.err")"; fi
}
time_floor() {
    local t0 r
    t0=$(now)
    r=$("$ERL_CALL" -sname "${TAG}_$1" -a 'erlang node []' 2>/dev/null)
    if [ -n "$r" ]; then ms_since "$t0"; else echo "fail"; fi
}

declare -a A_FRESH=() A_LOADED=() A_DELIV=() A_FLOOR=() A_BUSY=() A_BUSY_FLOOR=()
attach_left=0
say "attach: $AREPS repetitions"
for r in $(seq 1 "$AREPS"); do
    f=$(time_floor fresh)
    if [ $((r % 2)) -eq 1 ]; then # alternate which of the two idle dumps comes first
        a=$(time_dump fresh)
        b=$(time_dump loaded)
    else
        b=$(time_dump loaded)
        a=$(time_dump fresh)
    fi
    c=$(time_dump busy)
    g=$(time_floor busy)
    left=$(rpc fresh 'bench_dist_wl wait_clean [true, 5000]')
    [ "${left%% *}" = ok ] || { attach_left=$((attach_left + 1)); say "fresh node not clean after dump: $left"; }
    left=$(rpc busy 'bench_dist_wl wait_clean [true, 5000]')
    [ "${left%% *}" = ok ] || { attach_left=$((attach_left + 1)); say "busy node not clean after dump: $left"; }
    [ "$f" != fail ] && A_FLOOR+=("$f")
    [ "$a" != fail ] && A_FRESH+=("$a")
    [ "$b" != fail ] && A_LOADED+=("$b")
    [ "$a" != fail ] && [ "$b" != fail ] && A_DELIV+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", a - b }')")
    [ "$c" != fail ] && A_BUSY+=("$c")
    [ "$g" != fail ] && A_BUSY_FLOOR+=("$g")
    say "  rep $r: floor $f, fresh $a, loaded $b, busy fresh $c, busy floor $g ms"
done
# Still loaded after all those dumps, untouched?
still=$(rpc loaded 'bench_dist_wl beamspy_md5s []')
[ "$still" = "$want" ] || say "the loaded node's beamspy changed during the dumps"

# ------------------------------------------------------------ throughput
D_MS=$((SETTLE_MS + WINDOW_MS + 800))             # record duration: window + slack
TOP_COUNT=$(((SETTLE_MS + WINDOW_MS + 999) / 1000 + 2))
WAIT_MS=30000                                      # attach + start may take this long
PHASES=(trace trace_notl sample top)
declare -A LABEL=(
    [none]="no profiler"
    [trace]="\`record --all --duration ${D_MS}ms\` (trace)"
    [trace_notl]="\`record --all --timeline 0\` (trace, no timeline)"
    [sample]="\`record --all --mode sample\` (10 ms)"
    [top]="\`top --refresh 1s\` (samples every 100 ms)")
declare -A RATE=() EFF=() CORES=() READY=() FINISH=() TOTAL=() EVENTS=()  # RATE[phase,rep]; the others: lists
# RATE[none,rep.phase]: the untraced window right before that phase
ROOTONLY=""  # trace recordings: "processes total_s bare_root_percent" per file

# stamp FILE: each stderr line (progress lines end in \r; the block ends
# with one \n when the recording ends) prefixed with the time it came.
stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "${line##*$'\r'}"; done >"$1"; }

# run_phase PHASE REP: starts the tool, measures the window, waits (REP is
# rep.phase for the untraced windows).
run_phase() {
    local ph=$1 rep=$2 mode=job pid="" res t0 log="$BUILD/out/$1.$2.stderr"
    t0=$(now)
    case $ph in
        none) mode=none ;;
        trace | trace_notl)
            mode=trace
            local extra=()
            [ "$ph" = trace_notl ] && extra=(--timeline 0)
            bs record --node "${TAG}_busy" --all --duration "${D_MS}ms" "${extra[@]}" --progress \
                -o "$BUILD/out/$ph.$rep.folded" 2> >(stamp "$log") &
            pid=$! ;;
        sample)
            bs record --node "${TAG}_busy" --all --mode sample --duration "${D_MS}ms" --progress \
                -o "$BUILD/out/$ph.$rep.folded" 2> >(stamp "$log") &
            pid=$! ;;
        top)
            bs top --node "${TAG}_busy" --count "$TOP_COUNT" --refresh 1s --limit 5 >"$BUILD/out/top.$rep.txt" 2>"$log" &
            pid=$! ;;
    esac
    [ -n "$pid" ] && BG+=("$pid")
    res=$(rpc busy "bench_dist_wl window [$mode, $SETTLE_MS, $WINDOW_MS, $WAIT_MS]")
    local rc=0
    if [ -n "$pid" ]; then wait "$pid"; rc=$?; fi
    local total
    total=$(ms_since "$t0")
    sleep 0.2 # let the stamp pipeline flush
    if [ "${res%% *}" != ok ] || [ $rc -ne 0 ]; then
        say "  $ph rep $rep: window '$res', tool exit $rc"
    else
        read -r _ rate eff cores _senders _win ready <<<"$res"
        RATE[$ph,$rep]=$rate
        EFF[$ph,$rep]=$eff
        CORES[$ph,$rep]=$cores
        [ "$mode" = trace ] && READY[$ph]+=" $ready"
        say "  $ph rep $rep: $rate k msgs/s, $eff k msgs per CPU s, $cores cores$([ "$mode" = trace ] && echo ", tracing on ${ready} ms after the job started")"
    fi
    if [ "$ph" != none ] && [ "$ph" != top ] && [ $rc -eq 0 ]; then
        TOTAL[$ph]+=" $total"
        # end of recording = the line that closes the progress block
        local fin
        fin=$(awk '/recording 1 node/ { e = $1 } /beamspy: wrote/ { w = $1 }
                   END { if (e && w) printf "%.1f", (w - e) * 1000 }' "$log")
        [ -n "$fin" ] && FINISH[$ph]+=" $fin"
        local ev
        ev=$(grep 'recording 1 node' "$log" | tail -1 | sed -n 's/.* \([0-9]*\) events.*/\1/p')
        [ -n "$ev" ] && EVENTS[$ph]+=" $ev"
        # Where the recorded time went: lines that are a bare pid root
        # ("<0.1.0> 123": time with no frame at all).
        [ "$mode" = trace ] && ROOTONLY+=$(awk '{ split($1, a, ";"); p[a[1]] = 1; s += $NF
                                                   if ($0 ~ /^<[0-9.]+> [0-9]+$/) r += $NF }
            END { if (s > 0) printf "%d %.1f %.1f;", length(p), s / 1e6, 100 * r / s }' "$BUILD/out/$ph.$rep.folded")
    fi
    local left
    left=$(rpc busy 'bench_dist_wl wait_clean [true, 15000]')
    [ "${left%% *}" = ok ] || say "  $ph rep $rep: node not clean afterwards: $left"
}

say "throughput: $REPS repetitions of ${PHASES[*]}, each after an untraced window (window ${WINDOW_MS} ms)"
for rep in $(seq 1 "$REPS"); do
    n=${#PHASES[@]}
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${PHASES[$(((i + rep - 1) % n))]}"); done
    for ph in "${order[@]}"; do
        run_phase none "$rep.$ph"
        run_phase "$ph" "$rep"
    done
done

# ---------------------------------------------------------------- report
# ratios ARRAY PHASE: per repetition, the phase's value over the untraced
# window right before it. values ARRAY PHASE: the values.
ratios() {
    local -n v=$1
    local r
    for r in $(seq 1 "$REPS"); do
        [ -n "${v[$2,$r]:-}" ] && [ -n "${v[none,$r.$2]:-}" ] &&
            awk -v a="${v[$2,$r]}" -v b="${v[none,$r.$2]}" 'BEGIN { if (b > 0) printf "%.3f\n", a / b }'
    done
}
values() {
    local -n v=$1
    local r p
    if [ "$2" = none ]; then
        for r in $(seq 1 "$REPS"); do for p in "${PHASES[@]}"; do
            [ -n "${v[none,$r.$p]:-}" ] && echo "${v[none,$r.$p]}"
        done; done
    else
        for r in $(seq 1 "$REPS"); do [ -n "${v[$2,$r]:-}" ] && echo "${v[$2,$r]}"; done
    fi
}
rates() { values RATE "$1"; }
okruns() {
    if [ "$1" = none ]; then echo "$(rates none | wc -l)/$((REPS * ${#PHASES[@]}))"
    else echo "$(rates "$1" | wc -l)/$REPS"; fi
}
# shellcheck disable=SC2046,SC2086
{
    echo "## Distribution benchmark ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "bin/beamspy against real nodes on this machine (OTP $(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().'), $(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg))."
    echo "Cells are median (min–max) over the repetitions."
    echo
    echo "### Attach: one minimal command end to end, ms (runs: $AREPS each, interleaved)"
    echo
    echo "| target | command | ms |"
    echo "|---|---|---:|"
    echo "| idle node, nothing of beamspy | \`beamspy dump --limit 1 --interval 0\`: connect, checks, delivery of $n_mods modules + the NIF, dump, unload | $(cell %.0f ${A_FRESH[@]+"${A_FRESH[@]}"}) |"
    echo "| idle node, this beamspy already loaded$preload_note | the same dump: connect, checks, dump (no delivery) | $(cell %.0f ${A_LOADED[@]+"${A_LOADED[@]}"}) |"
    echo "| = code delivery and unloading | difference of the two, per run | $(cell %.0f ${A_DELIV[@]+"${A_DELIV[@]}"}) |"
    echo "| idle node | floor: \`erl_call -a 'erlang node []'\` (connect + one call) | $(cell %.0f ${A_FLOOR[@]+"${A_FLOOR[@]}"}) |"
    echo "| busy node (the workload below), nothing of beamspy | the same dump | $(cell %.0f ${A_BUSY[@]+"${A_BUSY[@]}"}) |"
    echo "| busy node | floor: erl_call | $(cell %.0f ${A_BUSY_FLOOR[@]+"${A_BUSY_FLOOR[@]}"}) |"
    [ "$attach_left" -eq 0 ] || echo "| | **$attach_left runs left beamspy on a fresh node** | |"
    echo
    echo "### Target throughput while beamspy works on it (repetitions: $REPS, phases rotated)"
    echo
    echo "Workload: rounds of 50 spawned senders x 200 messages to a collector (bench_workloads' procs, continuous), on a node with nothing of beamspy (every command delivers and unloads). Thousands of messages per second (counted per sender done), measured inside the node over ${WINDOW_MS} ms, starting ${SETTLE_MS} ms after the job runs (trace: after the workload is traced) and checked still running at its end. Ratio: the phase's rate over the untraced window measured right before it. Per CPU s: the messages over the CPU time the node used in the window (all its threads, tracer and sampler included; the node runs without scheduler busy-waiting), which the load of other programs on the machine disturbs less than the rate."
    echo
    echo "| phase | ok | k msgs/s | ratio to untraced | k msgs per CPU s | ratio to untraced | node's CPU, cores | job started → tracing on, ms | end of recording → files written, ms | tool's wall time, s | events recorded |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for ph in none "${PHASES[@]}"; do
        if [ "$ph" = none ]; then ratio="1" eratio="1"
        else ratio=$(cell %.2f $(ratios RATE "$ph")) eratio=$(cell %.2f $(ratios EFF "$ph")); fi
        total=$(cell %.1f $(echo ${TOTAL[$ph]:-} | awk '{ for (i = 1; i <= NF; i++) printf "%.2f ", $i / 1000 }'))
        [ "$ph" = none ] || [ "$ph" = top ] && total="–"
        ev=$(cell %.2fM $(echo ${EVENTS[$ph]:-} | awk '{ for (i = 1; i <= NF; i++) printf "%.3f ", $i / 1e6 }'))
        case $ph in none | sample | top) ev="–" ;; esac
        echo "| ${LABEL[$ph]} | $(okruns "$ph") | $(cell %.0f $(rates "$ph")) | $ratio | $(cell %.0f $(values EFF "$ph")) | $eratio | $(cell %.2f $(values CORES "$ph")) | $(cell %.0f ${READY[$ph]:-}) | $(cell %.0f ${FINISH[$ph]:-}) | $total | $ev |"
    done
    echo
    echo "The tool's wall time includes attaching (code delivery on the busy node), the ${D_MS} ms recording, finishing and unloading."
    [ -s "$RPC_FAILS" ] && echo "erl_call failed to connect $(wc -l <"$RPC_FAILS") time(s) and was run again (bench/build/dist/erl_call.err)."
    if [ -n "$ROOTONLY" ]; then
        echo "$ROOTONLY" | tr ';' '\n' | awk -v d="$D_MS" '
            function lo(a, b) { return a < b ? a : b }
            function hi(a, b) { return a > b ? a : b }
            NF == 3 { if (!n++) { p0 = p1 = $1; t0 = t1 = $2; r0 = r1 = $3 }
                      p0 = lo(p0, $1); p1 = hi(p1, $1); t0 = lo(t0, $2); t1 = hi(t1, $2); r0 = lo(r0, $3); r1 = hi(r1, $3) }
            END { if (n) printf "\nRecorded time in the %d trace .folded files: %d–%d processes, %.0f–%.0f s of process time in total for a %.1f s recording, of which %.0f–%.0f%% on a bare pid root (no frame).\n", n, p0, p1, t0, t1, d / 1000, r0, r1 }'
    fi
} >"$RESULTS"
cat "$RESULTS"
say "wall time $(($(date +%s) - t_start)) s"
