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
CC=${CC:-gcc}

mkdir -p "$BUILD"
ERL_ROOT=$("$ERL" -noshell -eval 'io:format("~s", [code:root_dir()]), halt().')

# The null tracer: built like the beamspy NIF (same compiler flags).
"$CC" -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
    -I"$ERL_ROOT/usr/include" -o "$BUILD/bench_null_tracer.so" \
    bench/null_tracer/bench_null_tracer.c
"$ERLC" -Werror -o "$BUILD" bench/*.erl bench/null_tracer/bench_null_tracer.erl

export ERL_CRASH_DUMP="$BUILD/erl_crash.dump"
start=$(date +%s)
"$ERL" -noshell -pa "$ROOT/ebin" -pa "$BUILD" -run bench_main main "$BUILD"
echo "bench: wall time $(( $(date +%s) - start )) s" >&2
