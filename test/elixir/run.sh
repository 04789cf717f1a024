#!/bin/sh
# run.sh — the Elixir layer: builds what it needs, runs the ExUnit tests of
# BeamSpy (doctests included) with plain `elixir -pa ebin` (no Mix), then
# packaging_check.sh (beamspy as a Mix and a rebar3 dependency, offline).
# Works from any directory; the last line is
#   LAYER elixir: <passed> passed, <failed> failed
# and the exit status is non-zero if anything failed.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp "${TMPDIR:-/tmp}/beamspy-elixir-layer.XXXXXX")
trap 'rm -f "$out"' EXIT
passed=0
failed=0

if ! make -s -C "$root" erlang elixir nif >"$out" 2>&1; then
    cat "$out"
    echo "LAYER elixir: 0 passed, 1 failed"
    exit 1
fi

# ExUnit: its summary reads "[N doctests, ]M tests, K failures[, I invalid]";
# from Elixir 1.20 "Result: P passed (...)" when all passed, else "Result:
# P/T passed (...)" and "Failed: ..." (anything of T not passed counts as
# failed).
(cd "$root" && elixir -pa "$root/ebin" -r "$here/test_helper.exs" -r "$here/*_test.exs") 2>&1 | tee "$out"
summary=$(grep -E '^([0-9]+ doctests?, )?[0-9]+ tests?, [0-9]+ failures?' "$out" | tail -1)
result=$(grep -E '^Result: [0-9]+(/[0-9]+)? passed' "$out" | tail -1)
if [ -z "$summary" ] && [ -n "$result" ]; then
    p=$(echo "$result" | sed -E 's|^Result: ([0-9]+).*|\1|')
    t=$(echo "$result" | sed -E 's|^Result: [0-9]+/([0-9]+) passed.*|\1|; s|^Result: ([0-9]+) passed.*|\1|')
    passed=$((passed + p))
    failed=$((failed + t - p))
elif [ -z "$summary" ]; then
    echo "ExUnit did not print a summary (counted as 1 failure)"
    failed=$((failed + 1))
else
    count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
    total=$(( $(count doctest) + $(count test) ))
    bad=$(( $(count failure) + $(count invalid) ))
    unrun=$(( $(count excluded) + $(count skipped) ))
    passed=$((passed + total - bad - unrun))
    failed=$((failed + bad))
fi

if [ "${BEAMSPY_OTP_REPEAT:-0}" = 1 ]; then
    echo "packaging checks skipped: a repeat on another OTP release (the host's layer runs them)"
else
    "$here/packaging_check.sh" 2>&1 | tee "$out"
    passed=$((passed + $(grep -c '^CHECK .*: ok$' "$out")))
    failed=$((failed + $(grep -c '^CHECK .*: FAILED$' "$out")))
    if ! grep -q '^CHECK mix-path-dependency: ' "$out"; then
        failed=$((failed + 1))
    fi
fi

echo "LAYER elixir: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
