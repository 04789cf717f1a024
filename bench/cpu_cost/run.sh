#!/usr/bin/env bash
# bench/cpu_cost/run.sh — what `bin/beamspy record --mode cpu --all` costs a
# busy node at the default rate (199 Hz), against no profiler and against
# `perf record -F 199 -g -p` of the same VM (the reference), side by side in
# one run (issue 23's cost judgement).
#
# Two workloads (bench_cost_wl.erl), each on a node started for the bench
# with +JPperf true (in every phase, so that only the profiler differs):
#   msg  25 request/reply pairs (50 processes), little work per message
#   cpu  one worker per scheduler: lists:sort, term_to_binary,
#        binary_to_term and a byte scan of slices of a real text file
# Throughput = operations completed over a fixed window, counted inside the
# node. Each round runs these phases, in an order rotated from round to
# round so that the machine's drift hits all alike:
#   none        nothing samples the node
#   beamspy     `record --mode cpu --all --duration D`: the window opens
#               once the sampler's perf events are open in the node (+ a
#               settle time) and must close while they still are: steady
#               state, attach and finish outside
#   beamspy@1   the same at --hz 1: the sampler takes almost nothing, what
#               remains is the join of samples to processes (on x86_64 each
#               sample names its process from r13 and nothing is traced;
#               elsewhere the session traces every process's scheduling,
#               `in' and `out')
#   null@running  every process's scheduling (`running') traced to the
#               null erl_tracer of bench/run.sh (a NIF that does nothing):
#               the least any join through that trace costs
#   perf        `perf record -F 199 -g -p PID -- sleep S`: the window opens
#               once perf has its events open, closes while perf still runs
#   beamspy+    `record --mode cpu --all --duration 2s`, the node's
#               throughput from the command's start to its end (a ticker in
#               the node logs the counter every 10 ms): connect, code
#               delivery, the sampler's start, the 2 s recording, the fetch,
#               unloading (the lost work minus 2 s of the steady cost is
#               what attaching and finishing cost)
#   perf+       the same with `perf record ... -- sleep 2`
# Ratios: each phase's throughput over the same round's `none' window; the
# report gives per-round values and the median ratio per workload.
# Report: stdout and bench/build/cpu_cost.md; progress on stderr.
# Settings (environment):
#   COST_ROUNDS=5            rounds per workload
#   COST_WINDOW_MS=2000      the steady windows (none, beamspy, perf)
#   COST_SETTLE_MS=300       from the sampler on to the window
#   COST_WORKLOADS=msg,cpu
#   COST_FILE=docs/guide-nodes.md  the text file of the `cpu' workload (the
#                            README before it was split, 127 kB, until 2026-11-29)
#   COST_ERL_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none"
#                            the nodes' flags besides +JPperf true (no
#                            scheduler busy-waiting: the node's CPU time is
#                            then its work, and per-CPU-second rates mean
#                            something)
# Needs `make all`, erl_call (erlang-dev); perf (linux-perf) for the
# reference columns: without it, or when it cannot record, the bench says
# so and runs without them. Nodes get unique names and a random cookie in
# a 0600 file; they are halted at the end.
set -u

cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
BUILD="$ROOT/bench/build/cpu_cost"
CLI="$ROOT/bin/beamspy"
ROUNDS=${COST_ROUNDS:-5}
WINDOW_MS=${COST_WINDOW_MS:-2000}
SETTLE_MS=${COST_SETTLE_MS:-300}
WORKLOADS=${COST_WORKLOADS:-msg,cpu}
TEXT=${COST_FILE:-$ROOT/docs/guide-nodes.md}
# shellcheck disable=SC2206 # word splitting wanted: flags
ERL_FLAGS_BENCH=(${COST_ERL_FLAGS-+sbwt none +sbwtdcpu none +sbwtdio none})
RESULTS="$ROOT/bench/build/cpu_cost.md"
HZ=199
WHOLE_REC_S=2

say() { echo "cpu_cost: $*" >&2; }

[ -x "$CLI" ] || { say "bin/beamspy is missing: run make"; exit 2; }
[ -r "$TEXT" ] || { say "cannot read $TEXT (COST_FILE)"; exit 2; }
ERL_ROOT=$(erl -noshell -eval 'io:format("~s", [code:root_dir()]), halt().') || exit 2
ERL_CALL=$(ls "$ERL_ROOT"/lib/erl_interface-*/bin/erl_call 2>/dev/null | head -1)
[ -x "$ERL_CALL" ] || { say "erl_call not found (apt-get install erlang-dev)"; exit 2; }

rm -rf "$BUILD"
mkdir -p "$BUILD/out" "$BUILD/home"
erlc -Werror -o "$BUILD" bench/cpu_cost/bench_cost_wl.erl || exit 2
# The null erl_tracer of bench/run.sh, for the phase null@running.
NULL_TRACER=""
if make -s bench/build/bench_null_tracer.so >/dev/null 2>"$BUILD/null_tracer.err" &&
    cp bench/build/bench_null_tracer.so "$BUILD/" &&
    erlc -Werror -o "$BUILD" bench/null_tracer/bench_null_tracer.erl 2>>"$BUILD/null_tracer.err"; then
    NULL_TRACER=yes
else
    say "the null tracer did not build (bench/build/cpu_cost/null_tracer.err): no null@running phase"
fi

# perf: the reference columns, when it can record here.
PERF=""
PERF_NOTE=""
if ! command -v perf >/dev/null 2>&1; then
    PERF_NOTE="perf is not installed (apt-get install linux-perf): no perf columns"
elif ! perf record -q -F "$HZ" -g -o /dev/null -- true >/dev/null 2>"$BUILD/perf_check.err"; then
    PERF_NOTE="perf record fails here (kernel.perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown); run as root or lower it): no perf columns: $(head -1 "$BUILD/perf_check.err")"
else
    PERF=perf
fi
[ -n "$PERF_NOTE" ] && say "$PERF_NOTE"

COOKIE_FILE="$BUILD/home/.erlang.cookie"
(umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' | sed 's/^/bc/' >"$COOKIE_FILE")
chmod 600 "$COOKIE_FILE"
export HOME="$BUILD/home"
TAG="bscc$$"
NODES=()
OSPIDS=()
BG=()

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

# rpc SHORT 'Mod Fun [Args]': the result, quotes of a string removed (tried
# 10 times: erl_call fails to connect to a node starved of CPU now and
# then, and here the nodes get a fraction of a core when the machine is
# loaded).
rpc() {
    local out
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        out=$("$ERL_CALL" -sname "${TAG}_$1" -a "$2" 2>>"$BUILD/erl_call.err")
        [ -n "$out" ] && break
        sleep 0.3
    done
    printf '%s\n' "$out" | sed -e 's/^"//' -e 's/"$//'
}

# start_node SHORT [erl args...]
start_node() {
    local short=$1 name="${TAG}_$1"
    shift
    erl -sname "$name" -detached -noinput -pa "$BUILD" +JPperf true "${ERL_FLAGS_BENCH[@]}" "$@" || return 1
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
perf_fds_of() { find "/proc/$1/fd" -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l; }

# stats N...: "median min max" (an even count's median is the mean of the middle two).
stats() {
    [ $# -gt 0 ] || return 0
    printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END {
        m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
        print m, a[1], a[NR] }'
}
cell() {
    local fmt=$1
    shift
    [ $# -gt 0 ] || { echo "–"; return; }
    stats "$@" | awk -v f="$fmt" '{ printf f " (" f "–" f ")", $1, $2, $3 }'
}
median() { stats "$@" | awk '{ printf "%.3f", $1 }'; }

bs() { "$CLI" "$@" --cookie-file "$COOKIE_FILE"; }

declare -A RATE=() EFF=() CORES=() NOTE=() CMD_S=() READY=()  # [workload,phase,round]

# window_start SHORT KIND: starts window number WIN_ID+1 in the node;
# window_result SHORT: its line. Both can be tried again safely (rpc does).
WIN_ID=0
window_start() {
    WIN_ID=$((WIN_ID + 1))
    rpc "$1" "bench_cost_wl window_start [$WIN_ID, $2, $SETTLE_MS, $WINDOW_MS]" >/dev/null
}
window_result() { rpc "$1" "bench_cost_wl window_result [$WIN_ID, 150000]"; }

# run_phase WL SHORT PHASE ROUND: one window; stores its rate.
run_phase() {
    local wl=$1 short=$2 ph=$3 r=$4 node="${TAG}_$2@$(hostname -s)" ospid=$5
    local res="" pid="" rc=0 t_tool err="$BUILD/out/$wl.$ph.$r.err"
    local rec_ms=$((SETTLE_MS + WINDOW_MS + 2500))
    case $ph in
        none)
            window_start "$short" none
            res=$(window_result "$short") ;;
        beamspy | beamspy@1)
            local hz=$HZ
            [ "$ph" = beamspy@1 ] && hz=1
            # the window first: it waits in the node for the sampler
            window_start "$short" sampling
            bs record --node "$node" --all --mode cpu --hz "$hz" --duration "${rec_ms}ms" \
                -o "$BUILD/out/$wl.$ph.$r.folded" 2>"$err" &
            pid=$!
            BG+=("$pid")
            res=$(window_result "$short")
            wait "$pid" || rc=$? ;;
        null@running)
            window_start "$short" null_running
            res=$(window_result "$short") ;;
        perf)
            perf record -F "$HZ" -g -p "$ospid" -o "$BUILD/out/$wl.$r.perf.data" \
                -- sleep "$(awk -v m="$rec_ms" 'BEGIN { printf "%.1f", m / 1000 }')" >/dev/null 2>"$err" &
            pid=$!
            BG+=("$pid")
            for _ in $(seq 1 300); do [ "$(perf_fds_of "$pid")" -gt 0 ] && break; sleep 0.01; done
            if [ "$(perf_fds_of "$pid")" -gt 0 ]; then
                window_start "$short" any
                res=$(window_result "$short")
                kill -0 "$pid" 2>/dev/null || res="bad perf_ended_before_the_window"
            else
                res="bad perf_never_started"
            fi
            wait "$pid" || rc=$? ;;
        beamspy+ | perf+)
            # the node's throughput from the command's start to its end
            local t_cmd
            t_cmd=$(now)
            if [ "$ph" = beamspy+ ]; then
                bs record --node "$node" --all --mode cpu --duration "${WHOLE_REC_S}s" \
                    -o "$BUILD/out/$wl.$r.whole.folded" 2>"$err" || rc=$?
            else
                perf record -F "$HZ" -g -p "$ospid" -o "$BUILD/out/$wl.$r.whole.perf.data" \
                    -- sleep "$WHOLE_REC_S" >/dev/null 2>"$err" || rc=$?
            fi
            t_tool=$(now)
            CMD_S[$wl,$ph,$r]=$(awk -v a="$t_cmd" -v b="$t_tool" 'BEGIN { printf "%.2f", b - a }')
            sleep 0.1 # the ticker's tick after the end
            res=$(rpc "$short" "bench_cost_wl span [${t_cmd/./}, ${t_tool/./}]") ;;
    esac
    if [ "${res%% *}" != ok ] || [ $rc -ne 0 ]; then
        say "  $wl round $r $ph: '$res', exit $rc$([ -n "${CMD_S[$wl,$ph,$r]:-}" ] && echo ", the command took ${CMD_S[$wl,$ph,$r]} s"): $(head -c 300 "$err" 2>/dev/null)"
        NOTE[$wl,$ph,$r]="failed"
        return
    fi
    read -r _ rate eff cores _ms _fds ready <<<"$res"
    [ "$ph" = beamspy ] || [ "$ph" = beamspy@1 ] && READY[$wl,$ph,$r]=$(awk -v m="$ready" 'BEGIN { printf "%.2f", m / 1000 }')
    RATE[$wl,$ph,$r]=$rate
    EFF[$wl,$ph,$r]=$eff
    CORES[$wl,$ph,$r]=$cores
    # nothing of beamspy may be left sampling the node after a command
    if [ "$ph" != none ] && [ "${ph#perf}" = "$ph" ]; then
        local left=""
        for _ in $(seq 1 100); do
            left=$(rpc "$short" 'bench_cost_wl perf_fds []')
            [ "$left" = 0 ] && break
            sleep 0.1
        done
        [ "$left" = 0 ] || say "  $wl round $r $ph: $left perf events still open in the node 10 s after the command"
    fi
}

PHASES=(none beamspy beamspy@1)
[ -n "$NULL_TRACER" ] && PHASES+=(null@running)
[ -n "$PERF" ] && PHASES+=(perf)
PHASES+=(beamspy+)
[ -n "$PERF" ] && PHASES+=(perf+)

t_start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A PROCS=() SAMPLES=()
for wl in ${WORKLOADS//,/ }; do
    case $wl in msg | cpu) ;; *) say "unknown workload $wl (msg, cpu)"; exit 2 ;; esac
    short="$wl"
    start_node "$short" || { say "node $short did not start"; exit 1; }
    PROCS[$wl]=$(rpc "$short" "bench_cost_wl start [$wl, \"$TEXT\"]")
    ospid=${OSPIDS[-1]}
    SCHEDULERS=$(rpc "$short" 'erlang system_info [schedulers_online]')
    say "$wl: node ${TAG}_$short (OS pid $ospid), ${PROCS[$wl]} processes; $ROUNDS rounds of ${PHASES[*]}"
    # warm-up: one untraced window and one beamspy run (the first delivery
    # of a node loads more from disk)
    rpc "$short" "bench_cost_wl window [{now, 0}, any, 1000]" >/dev/null
    bs record --node "${TAG}_$short@$(hostname -s)" --all --mode cpu --duration 500ms \
        -o "$BUILD/out/$wl.warm.folded" 2>/dev/null
    for r in $(seq 1 "$ROUNDS"); do
        n=${#PHASES[@]}
        line="round $r:"
        for i in $(seq 0 $((n - 1))); do
            ph=${PHASES[$(((i + r - 1) % n))]}
            run_phase "$wl" "$short" "$ph" "$r" "$ospid"
            line+=" $ph ${RATE[$wl,$ph,$r]:-failed}"
        done
        say "  $wl $line ops/s"
    done
    SAMPLES[$wl]=$(grep -h "CPU samples at" "$BUILD/out/$wl".beamspy.[0-9]*.err 2>/dev/null | head -1)
    "$ERL_CALL" -sname "${TAG}_$short" -a 'erlang halt []' >/dev/null 2>&1
done
t_total=$(($(date +%s) - t_start))

# ---------------------------------------------------------------- report
ratios() { # WL ARRAY PHASE: per round, the phase's value over that round's none
    local -n v=$2
    local r
    for r in $(seq 1 "$ROUNDS"); do
        [ -n "${v[$1,$3,$r]:-}" ] && [ -n "${v[$1,none,$r]:-}" ] &&
            awk -v a="${v[$1,$3,$r]}" -v b="${v[$1,none,$r]}" 'BEGIN { if (b > 0) printf "%.3f\n", a / b }'
    done
}
values() {
    local -n v=$2
    local r
    for r in $(seq 1 "$ROUNDS"); do [ -n "${v[$1,$3,$r]:-}" ] && echo "${v[$1,$3,$r]}"; done
}
declare -A LABEL=(
    [none]="no profiler"
    [beamspy]="\`record --mode cpu --all\`, steady"
    [beamspy@1]="\`record --mode cpu --all --hz 1\`, steady: the join to processes alone"
    [null@running]="every process's scheduling traced to a null erl_tracer: the floor of that join"
    [perf]="\`perf record -F $HZ -g -p PID\`, steady"
    [beamspy+]="\`record --mode cpu --all --duration ${WHOLE_REC_S}s\`, from the command's start to its end"
    [perf+]="\`perf record -F $HZ -g -p PID -- sleep $WHOLE_REC_S\`, from the command's start to its end")
# shellcheck disable=SC2046
{
    echo "## Cost of \`record --mode cpu\` on a busy node ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "OTP $(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().'), $(nproc) CPUs, load average at start $load_start, at end $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds per workload, phases rotated from round to round; $t_total s in all."
    echo "Nodes: \`erl +JPperf true ${ERL_FLAGS_BENCH[*]}\` in every phase. beamspy at its default rate ($HZ Hz, the scheduler threads, user space);"
    echo "perf: \`perf record -F $HZ -g -p PID\` (every thread of the VM, its default event$([ -n "$PERF" ] && printf ' %s' "$(perf evlist -i "$(ls "$BUILD"/out/*.perf.data 2>/dev/null | head -1)" 2>/dev/null | head -1)"))."
    [ -n "$PERF_NOTE" ] && echo "**$PERF_NOTE.**"
    echo "Steady windows: ${WINDOW_MS} ms, opened ${SETTLE_MS} ms after the sampler's perf events are open in the node (perf: in perf's process) and closed while they still are, so attach and finish lie outside. Whole commands: the node's throughput from the command's start to its end (a ticker in the node logs the counter every 10 ms)."
    echo "Ratio: the phase's throughput over the same round's untraced window; cells are median (min–max) over the rounds. Per CPU s: operations over the node's CPU time (all its threads, the sampler's drain thread included; perf's own process is not the node's)."
    for wl in ${WORKLOADS//,/ }; do
        echo
        case $wl in
            msg) echo "### msg: 25 request/reply pairs (${PROCS[$wl]} processes), one operation = one request answered" ;;
            cpu) echo "### cpu: ${PROCS[$wl]} workers (one per scheduler) sorting, term_to_binary/binary_to_term and scanning 500-word slices of $(basename "$TEXT") ($(wc -c <"$TEXT") bytes), one operation = one slice" ;;
        esac
        echo
        printf '| round |'
        for ph in "${PHASES[@]}"; do printf ' %s ops/s |' "$ph"; done
        echo
        printf '|---:|'
        for _ in "${PHASES[@]}"; do printf -- '---:|'; done
        echo
        for r in $(seq 1 "$ROUNDS"); do
            printf '| %d |' "$r"
            for ph in "${PHASES[@]}"; do printf ' %s |' "${RATE[$wl,$ph,$r]:-failed}"; done
            echo
        done
        echo
        echo "| phase | ok rounds | ops/s | ratio to none | ops per CPU s | ratio to none | node's CPU, cores | command's wall time, s | window call → sampling on (≈ attach), s |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        for ph in "${PHASES[@]}"; do
            if [ "$ph" = none ]; then ratio=1 eratio=1
            else ratio=$(cell %.3f $(ratios "$wl" RATE "$ph")) eratio=$(cell %.3f $(ratios "$wl" EFF "$ph")); fi
            echo "| ${LABEL[$ph]} | $(values "$wl" RATE "$ph" | wc -l)/$ROUNDS | $(cell %.0f $(values "$wl" RATE "$ph")) | $ratio | $(cell %.0f $(values "$wl" EFF "$ph")) | $eratio | $(cell %.2f $(values "$wl" CORES "$ph")) | $(cell %.2f $(values "$wl" CMD_S "$ph")) | $(cell %.1f $(values "$wl" READY "$ph")) |"
        done
        echo
        bs_r=$(median $(ratios "$wl" RATE beamspy))
        pf_r=$(median $(ratios "$wl" RATE perf))
        bs_e=$(median $(ratios "$wl" EFF beamspy))
        pf_e=$(median $(ratios "$wl" EFF perf))
        verdict() { awk -v x="${1:-0}" 'BEGIN { print (x >= 0.98) ? "met" : "NOT met" }'; }
        printf '**%s, median ratios to none: beamspy %s throughput, %s per CPU s (target >= 0.98: %s / %s)' \
            "$wl" "${bs_r:-–}" "${bs_e:-–}" "$(verdict "$bs_r")" "$(verdict "$bs_e")"
        [ -n "$PERF" ] && printf '; perf %s throughput, %s per CPU s' "${pf_r:-–}" "${pf_e:-–}"
        echo ".**"
        # A node that gets a fraction of the cores it could use measures the
        # machine's other load: say so where the numbers are.
        got=$(median $(values "$wl" CORES none))
        want=${PROCS[$wl]}
        [ "$wl" = msg ] && want=$SCHEDULERS
        awk -v g="${got:-0}" -v w="$want" 'BEGIN { exit !(g < 0.8 * w) }' &&
            echo "The node got ${got} cores of the ${want} it could use in the untraced windows: the machine was busy with other work, whose swings move the throughput from one window to the next by more than the profiler does; the ratios per CPU second are the ones to read."
        wb=$(median $(ratios "$wl" RATE beamspy+))
        we=$(median $(ratios "$wl" EFF beamspy+))
        wt=$(median $(values "$wl" CMD_S beamspy+))
        if [ -n "$we" ] && [ -n "$bs_e" ] && [ -n "$wt" ]; then
            awk -v w="$wb" -v e="$we" -v s="$bs_e" -v W="$wt" -v R="$WHOLE_REC_S" 'BEGIN {
                lost = (1 - e) * W * 1000; steady = (1 - s) * R * 1000
                printf "Whole command (medians): %.1f s from start to end, at %.3f of the untraced throughput and %.3f of its operations per CPU s. By the latter, the node lost the equivalent of %.0f ms of its work over the command; %.0f ms of that is the steady cost of the %d s recording, the rest (%.0f ms) attaching, code delivery, finishing and unloading (a small difference of noisy numbers: read its size, not its digits).\n", W, w, e, lost, steady, R, lost - steady }'
        fi
        [ -n "${SAMPLES[$wl]:-}" ] && echo "A recording's own line: \`${SAMPLES[$wl]}\`."
    done
    echo
    echo "Command: \`bench/cpu_cost/run.sh\` (COST_ROUNDS=$ROUNDS COST_WINDOW_MS=$WINDOW_MS)."
} >"$RESULTS"
cat "$RESULTS"
say "wall time $t_total s"
