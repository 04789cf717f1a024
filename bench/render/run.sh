#!/usr/bin/env bash
# run.sh — the render benchmark: folded stacks in, SVG / HTML / speedscope
# out, timed the way a user runs it (`bin/beamspy render IN -o OUT`).
#
# Inputs are made by our own generator (gen_folded.c: BEAM-like frames,
# depth 5-40, the same stacks as the viewer harness's gen-folded.js for the
# same seed) in two shapes:
#   few     every line drawn from a pool of 3,000 stacks (a tracer printing
#           one line per sample): memory must stay flat however many lines
#   unique  a fresh random walk per line: almost every line a new stack
# at 10^4, 10^5 and 10^6 lines (seed 42: 10^6 lines are about 520 MB and
# 560 MB, the files flamegraph.pl was measured on). Each run is timed from
# outside (wall time, CPU time, the child's peak RSS, via measure.c), and a
# Markdown table goes to stdout and bench/build/render/results.md, with
# PASS/MISS against the targets for 10^6 lines to SVG:
#   few      under 2 s and 300 MB      (flamegraph.pl: 52-60 s CPU, 1.1 GB)
#   unique   under 6 s and 1.5 GB      (flamegraph.pl: 211-236 s, 6.4 GB)
# A "read only" row per input times the reader alone (render_driver with no
# output), to tell reading from drawing.
#
# Settings (environment):
#   RENDER_LINES="10000 100000 1000000"   sizes
#   RENDER_MODES="few unique"             shapes
#   RENDER_FORMATS="svg html speedscope.json"
#   RENDER_REPEAT=1                       runs per cell; the fastest is kept
#   RENDER_TOOL=auto|cli|driver           auto: bin/beamspy render if it
#                                         exists, else render_driver.c (the
#                                         same reader and writers, no CLI)
#   RENDER_KEEP=0                         1: keep the outputs
# Standalone (`bench/render/run.sh`) or from `make bench`; needs gcc and a
# built tree (`make all`) for the CLI. The exit status is 0 even on MISS
# (a benchmark reports, it does not gate); it is 1 if a render fails.
set -u

cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
BUILD="$ROOT/bench/build/render"
CC=${CC:-gcc}
LINES=${RENDER_LINES:-"10000 100000 1000000"}
MODES=${RENDER_MODES:-"few unique"}
FORMATS=${RENDER_FORMATS:-"svg html speedscope.json"}
REPEAT=${RENDER_REPEAT:-1}
TOOL=${RENDER_TOOL:-auto}
SEED=42
mkdir -p "$BUILD/out"

cflags=(-std=c11 -D_POSIX_C_SOURCE=200809L -O2 -g -Wall -Wextra -Werror)
"$CC" "${cflags[@]}" -o "$BUILD/gen_folded" bench/render/gen_folded.c -lm || exit 2
"$CC" "${cflags[@]}" -o "$BUILD/measure" bench/render/measure.c || exit 2
make -s bench/build/render/render_driver || exit 2 # the Makefile's build of render_driver.c

if [ "$TOOL" = auto ]; then
    if [ -x bin/beamspy ] && bin/beamspy render --help >/dev/null 2>&1; then TOOL=cli; else TOOL=driver; fi
fi
render() { # render IN OUT
    if [ "$TOOL" = cli ]; then "$BUILD/measure" "$BUILD/m.txt" bin/beamspy render "$1" -o "$2"
    else "$BUILD/measure" "$BUILD/m.txt" "$BUILD/render_driver" "$1" "$2"; fi
}

# Inputs are made once, and again when the generator's source changes.
cmp -s bench/render/gen_folded.c "$BUILD/inputs.stamp" || rm -f "$BUILD"/*.folded
for n in $LINES; do
    for m in $MODES; do
        in="$BUILD/$m-$n.folded"
        if [ ! -s "$in" ]; then
            "$BUILD/gen_folded" --lines "$n" --mode "$m" --seed "$SEED" >"$in.tmp" && mv "$in.tmp" "$in" || exit 2
        fi
    done
done
cp bench/render/gen_folded.c "$BUILD/inputs.stamp"

mb() { awk -v b="$1" 'BEGIN { printf (b < 1e7 ? "%.1f" : "%.0f"), b / 1e6 }'; }
target() { # target LINES MODE FORMAT -> "wall_s rss_mb" or ""
    [ "$1" = 1000000 ] && [ "$3" = svg ] || return 0
    case $2 in few) echo "2 300" ;; unique) echo "6 1500" ;; esac
}

results="$BUILD/results.md"
status=0
{
    echo "## Render benchmark ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "Tool: $([ "$TOOL" = cli ] && echo '`bin/beamspy render IN -o OUT`' || echo '`bench/render/render_driver` (bs_read_profile_file + bs_write_file)'); best of $REPEAT run(s); $(nproc) CPUs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "CPU = user + sys of the render process. Targets (10^6 lines to SVG): few < 2 s and < 300 MB, unique < 6 s and < 1.5 GB."
    echo
    echo "| lines | shape | input MB | output | wall s | CPU s | peak RSS MB | output MB | target | result |"
    echo "|---:|---|---:|---|---:|---:|---:|---:|---|---|"
} >"$results"
cat "$results"

for n in $LINES; do
    for m in $MODES; do
        in="$BUILD/$m-$n.folded"
        in_mb=$(mb "$(stat -c %s "$in")")
        for f in read $FORMATS; do
            out="$BUILD/out/$m-$n.$f"
            best=""
            for _ in $(seq "$REPEAT"); do
                rm -f "$out"
                if [ "$f" = read ]; then
                    "$BUILD/measure" "$BUILD/m.txt" "$BUILD/render_driver" "$in"
                else
                    render "$in" "$out"
                fi
                read -r rc wall user sys rss <"$BUILD/m.txt"
                if [ "$rc" != 0 ]; then best="fail $rc"; break; fi
                if [ -z "$best" ] || awk -v a="$wall" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then
                    best="$wall $user $sys $rss"
                fi
            done
            label=$([ "$f" = read ] && echo "(read only)" || echo "$f")
            if [ "${best%% *}" = fail ]; then
                line="| $n | $m | $in_mb | $label | – | – | – | – | | FAIL (exit ${best#fail }) |"
                status=1
            else
                read -r wall user sys rss <<<"$best"
                cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
                rss_mb=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
                out_mb=$([ -f "$out" ] && mb "$(stat -c %s "$out")" || echo "–")
                tgt=$(target "$n" "$m" "$f")
                verdict="" tdesc=""
                if [ -n "$tgt" ]; then
                    read -r tw tr <<<"$tgt"
                    tdesc="< $tw s, < $tr MB"
                    verdict=$(awk -v w="$wall" -v r="$rss_mb" -v tw="$tw" -v tr="$tr" \
                        'BEGIN { print (w < tw && r < tr) ? "PASS" : "MISS" }')
                    if [ "$verdict" = MISS ]; then
                        verdict="MISS ($(awk -v w="$wall" -v tw="$tw" 'BEGIN { printf "%.1fx the time", w / tw }'))"
                    fi
                fi
                line="| $n | $m | $in_mb | $label | $(printf '%.2f' "$wall") | $cpu | $rss_mb | $out_mb | $tdesc | $verdict |"
            fi
            echo "$line" | tee -a "$results"
            [ "${RENDER_KEEP:-0}" = 1 ] || rm -f "$out"
        done
    done
done
{
    echo
    echo "For scale, flamegraph.pl on the same 10^6-line inputs on this machine: 52-60 s of CPU and 1.1 GB (few), 211-236 s and 6.4 GB (unique)."
} | tee -a "$results"
echo "(written to ${results#"$ROOT"/})"
exit $status
