#!/bin/sh
# demo.sh — profiles the built-in workload (examples/beamspy_demo.erl) and
# says where the flame graph files are.
set -e
cd "$(dirname "$0")/.."
mkdir -p _build/demo demo-output
erlc -o _build/demo examples/beamspy_demo.erl
erl -noshell -pa ebin -pa _build/demo -eval 'beamspy_demo:main(["demo-output"]), halt().'
echo
echo "Open the .svg or .html in a browser; load .speedscope.json into speedscope,"
echo ".trace.json into Perfetto or chrome://tracing; render the .bspy again with"
echo "  bin/beamspy render demo-output/*.bspy -o other.svg --palette hot --inverted"
