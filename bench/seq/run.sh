#!/usr/bin/env bash
# bench/seq/run.sh — what a `beamspy seq' capture costs a busy node.
#
# One node runs bench_seq_wl: a chain of three gen_servers and CLIENTS
# clients calling it flat out (every request is 6 messages). The throughput
# (requests completed, counted inside the node) is measured over WINDOW_MS
# windows, side by side and interleaved, REPS times:
#   untraced        nothing of beamspy on the node
#   seq, every call `beamspy seq --calls 100000 --max-events 1000000': every request gets a token
#                   for the whole window (the worst case: the pattern stays
#                   armed; each message is a seq_trace event for the collector)
#   seq --calls 10  the usual capture: the time from start to files written
#                   on the busy node, and the throughput of the window that
#                   contains it
# Prints min / median / max of each and the ratios to untraced.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cli="$root/bin/beamspy"
REPS=${REPS:-5}
CLIENTS=${CLIENTS:-4}
WINDOW_MS=${WINDOW_MS:-2000}
build="$root/bench/build/seq"
mkdir -p "$build"
make -s -C "$root" all >/dev/null || exit 1
erlc -o "$build" "$here/bench_seq_wl.erl" || exit 1
erl_call=$(ls "$(erl -noshell -eval 'io:format("~s", [code:root_dir()]), halt().')"/lib/erl_interface-*/bin/erl_call | head -1)
cookie="bench$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
name="bseq$$"
host=$(hostname -s)
node="$name@$host"
erl -sname "$name" -setcookie "$cookie" -detached -noinput -pa "$build" \
    -eval "bench_seq_wl:start($CLIENTS)" || exit 1
trap 'printf "erlang:halt().\n" | "$erl_call" -sname "$name" -c "$cookie" -e >/dev/null 2>&1' EXIT
rpc() { printf '%s\n' "$1" | "$erl_call" -sname "$name" -c "$cookie" -e 2>/dev/null | sed -e 's/^{ok, *//' -e 's/}$//'; }
for _ in $(seq 1 50); do [ "$(rpc 'is_pid(whereis(link_a)).')" = true ] && break; sleep 0.1; done
sleep 1

# window: requests per second over WINDOW_MS, counted inside the node.
window() {
    rpc "C0 = bench_seq_wl:count(), T0 = erlang:monotonic_time(microsecond),
         timer:sleep($WINDOW_MS),
         C1 = bench_seq_wl:count(), T1 = erlang:monotonic_time(microsecond),
         round((C1 - C0) * 1000000 / (T1 - T0))."
}

untraced=()
armed=()
typical=()
typical_ms=()
for r in $(seq 1 "$REPS"); do
    untraced+=("$(window)")
    "$cli" seq --node "$node" --cookie "$cookie" --function bench_seq_wl:request/0 --calls 100000 --max-events 1000000 \
        --duration "$((WINDOW_MS + 1500))ms" -o "$build/armed.json" >/dev/null 2>"$build/armed.err" &
    tool=$!
    sleep 0.7
    armed+=("$(window)")
    wait "$tool"
    t0=$(date +%s%N)
    "$cli" seq --node "$node" --cookie "$cookie" --function bench_seq_wl:request/0 --calls 10 \
        -o "$build/typical.mmd" -o "$build/typical.json" >/dev/null 2>"$build/typical.err" &
    tool=$!
    typical+=("$(window)")
    wait "$tool"
    typical_ms+=("$((($(date +%s%N) - t0) / 1000000))")
    echo "rep $r: untraced ${untraced[-1]}/s, seq every call ${armed[-1]}/s, seq --calls 10 ${typical[-1]}/s (tool ${typical_ms[-1]} ms)"
done

stats() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%d / %d / %d", a[1], a[int((NR+1)/2)], a[NR]}'; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
u=$(median "${untraced[@]}")
echo
echo "requests/s (min / median / max over $REPS windows of $WINDOW_MS ms, $CLIENTS clients, 6 messages per request)"
echo "  untraced         $(stats "${untraced[@]}")"
echo "  seq, every call  $(stats "${armed[@]}")   ratio $(awk -v a="$(median "${armed[@]}")" -v u="$u" 'BEGIN{printf "%.2f", a/u}')"
echo "  seq --calls 10   $(stats "${typical[@]}")   ratio $(awk -v a="$(median "${typical[@]}")" -v u="$u" 'BEGIN{printf "%.2f", a/u}')"
echo "  seq --calls 10, start to files written: $(stats "${typical_ms[@]}") ms"
grep -h "beamspy" "$build/armed.err" "$build/typical.err" | head -4
for f in armed typical; do
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(\"  %s: %d messages drawn, %d participants\" % (sys.argv[2], len(d[\"messages\"]), len(d[\"participants\"])))" "$build/$f.json" "$f" 2>/dev/null
done
