#!/bin/sh
# run.sh — builds the benchmark suite into bench/build/ (the null erl_tracer
# NIF, the workload and harness modules) and runs it in one VM; the report
# goes to stdout and bench/build/results.md. Called by `make bench` after
# `make all`. Settings come from the environment: see bench/README.md.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="$ROOT/bench/build"
ERL=${ERL:-erl}
ERLC=${ERLC:-erlc}

mkdir -p "$BUILD"

# The null tracer: built like the beamspy NIF (the Makefile's rule).
make -s bench/build/bench_null_tracer.so
"$ERLC" -Werror -o "$BUILD" bench/*.erl bench/null_tracer/bench_null_tracer.erl

export ERL_CRASH_DUMP="$BUILD/erl_crash.dump"
start=$(date +%s)
"$ERL" -noshell -pa "$ROOT/ebin" -pa "$BUILD" -run bench_main main "$BUILD"
echo "bench: wall time $(( $(date +%s) - start )) s" >&2
