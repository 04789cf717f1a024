#!/bin/sh
# demo.sh — profiles the built-in workload (examples/beamspy_demo.erl) and
# says where the flame graph files are.
set -e
cd "$(dirname "$0")/.."
mkdir -p _build/demo demo-output
erlc -o _build/demo examples/beamspy_demo.erl
erl -noshell -pa ebin -pa _build/demo -eval 'beamspy_demo:main(["demo-output"]), halt().'
echo
echo "Open a .folded file in https://www.speedscope.app or feed it to flamegraph.pl / inferno."
