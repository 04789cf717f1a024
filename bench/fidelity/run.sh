#!/bin/sh
# run.sh — the fidelity benchmark (issue 14): per-function time shares of
# several workloads, untraced (each phase timed alone), traced with the
# tracer's overhead compensated and raw, printed as a table (Markdown) on
# stdout and in bench/build/fidelity.md. Needs `make all` first.
set -eu

cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD="$ROOT/bench/build/fidelity"
ERL=${ERL:-erl}
ERLC=${ERLC:-erlc}

mkdir -p "$BUILD"
"$ERLC" -Werror -o "$BUILD" bench/fidelity/bench_fidelity.erl
"$ERL" -noshell -pa "$ROOT/ebin" -pa "$BUILD" -run bench_fidelity main | tee "$BUILD/../fidelity.md"
