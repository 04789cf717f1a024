#!/usr/bin/env bash
# run.sh — the fuzz test layer: builds the fuzz targets of fuzz/ (the folded
# reader, the .bspy reader, read -> .bspy -> read, the term decoder, the
# dbg trace-port reader and the JIT's perf map), replays their corpus
# once, then fuzzes each briefly (scripts/fuzz.sh short: FUZZ_SECONDS,
# default 15 s each; about 125 s in all). A crash, a sanitizer report or a
# broken round-trip property fails the layer; the input that did it is left
# in fuzz/build/crashes/ (fix the bug, then add the input to
# fuzz/corpus/<target>/). The last line is `LAYER fuzz: <P> passed, <F>
# failed`, counting the build, and the replay and the fuzzing of each target.
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root" || exit 2

passed=0
failed=0
count() { # count OUTPUT: one pass or fail per "fuzz ...: ok|FAILED" line
    passed=$((passed + $(echo "$1" | grep -c '^fuzz .*: ok')))
    failed=$((failed + $(echo "$1" | grep -c '^fuzz .*: FAILED')))
}

out=$(scripts/fuzz.sh replay 2>&1)
echo "$out"
count "$out"
if echo "$out" | grep -q '^fuzz build: ok'; then
    out=$(FUZZ_SKIP_BUILD=1 scripts/fuzz.sh short 2>&1)
    echo "$out"
    count "$out"
fi
echo "LAYER fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
