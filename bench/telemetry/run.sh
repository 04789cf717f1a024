#!/usr/bin/env bash
# bench/telemetry/run.sh — what beamspy_telemetry's handler costs per span.
#
# In one VM, N (default 100,000) telemetry:span/3 calls of an empty
# function, measured side by side and interleaved, REPS times each:
#   no handler      nothing attached to the prefix
#   empty handler   a handler that returns ok (what any handler costs)
#   beamspy         beamspy_telemetry:start/2 recording (spans-only)
# Prints the median ns per span of each and the handler's cost per span
# (beamspy minus no handler, and minus the empty handler).
# TELEMETRY_SRC: the telemetry source (default ../shared/third_party/telemetry).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
src=${TELEMETRY_SRC:-$root/../shared/third_party/telemetry}
build="$root/bench/build/telemetry"
if [ ! -f "$src/src/telemetry.erl" ]; then
    echo "SKIP bench/telemetry: no telemetry source at $src (set TELEMETRY_SRC)"
    exit 0
fi
mkdir -p "$build/tm"
make -s -C "$root" erlang nif >/dev/null || exit 1
erlc -o "$build/tm" "$src"/src/*.erl && cp "$src/src/telemetry.app.src" "$build/tm/telemetry.app" || exit 1
erlc -o "$build" "$here/bench_telemetry.erl" || exit 1
erl -noshell -pa "$root/ebin" -pa "$build/tm" -pa "$build" \
    -eval "bench_telemetry:main(${N:-100000}, ${REPS:-5}), halt()."
