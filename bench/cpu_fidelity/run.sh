#!/bin/sh
# run.sh — the CPU-time fidelity benchmark (issue 23): per-function CPU
# shares of three workloads (a JSON decoder on a real multi-MB file, the
# compiler on a real OTP module, a gen_server with ~10 us handlers) as
# beamspy records them, against `perf record' of the same untraced
# workloads, side by side in one run. Markdown on stdout and in
# bench/build/cpu_fidelity.md. Needs `make all` first, perf (linux-perf)
# and erlang-src; fails loudly, saying how to fix it, when perf cannot
# record. CPU_BENCH_WORKLOADS=json,server picks workloads;
# CPU_BENCH_COLUMNS=cpu,samples picks column kinds (cpu, samples, traced);
# CPU_BENCH_SAMPLED_RUNS=N runs the times => samples columns' workload N times.
set -eu

cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD="$ROOT/bench/build/cpu_fidelity"
ERL=${ERL:-erl}
ERLC=${ERLC:-erlc}

if ! command -v perf >/dev/null 2>&1; then
    echo "cpu_fidelity: perf is not installed: apt-get install linux-perf (or make deps as root)" >&2
    exit 2
fi
if ! perf record -q -F 999 -e cpu-clock:u -o /dev/null -- true >/dev/null 2>&1; then
    echo "cpu_fidelity: perf record -e cpu-clock:u fails here (kernel.perf_event_paranoid is" \
         "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown)): run the bench as root," \
         "or lower it as root: sysctl kernel.perf_event_paranoid=2 (3 and up refuse unprivileged users;" \
         "in a container, a missing CAP_PERFMON or the seccomp profile can refuse perf_event_open too)" >&2
    perf record -q -F 999 -e cpu-clock:u -o /dev/null -- true >&2 || true
    exit 2
fi

mkdir -p "$BUILD"
"$ERLC" -Werror -o "$BUILD" bench/cpu_fidelity/*.erl
"$ERL" +JPperf true +sbwt none +sbwtdcpu none +sbwtdio none -noshell -pa "$ROOT/ebin" -pa "$BUILD" -run bench_cpu_fidelity main "$BUILD" > "$BUILD/../cpu_fidelity.md"
cat "$BUILD/../cpu_fidelity.md"
