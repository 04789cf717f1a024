#!/bin/sh
# run.sh — browser test layer: loads beamspy's real outputs into headless
# Chromium (Debian's /usr/bin/chromium, driven by playwright-core) and into
# the real speedscope app. Each *.test.js prints PASS/FAIL lines and a
# "RESULT <passed> <failed>" line; this script adds them up.
cd "$(dirname "$0")" || exit 1
if [ ! -d node_modules/playwright-core ] || [ ! -d node_modules/speedscope ] || [ ! -d node_modules/mermaid ]; then
    npm ci --no-audit --no-fund >/dev/null 2>&1 || npm install --no-audit --no-fund >/dev/null 2>&1
fi
passed=0
failed=0
for t in *.test.js; do
    [ -f "$t" ] || continue
    echo "--- $t"
    out=$(mktemp)
    timeout 600 node "$t" 2>&1 | tee "$out"
    res=$(grep '^RESULT ' "$out" | tail -1)
    rm -f "$out"
    if [ -z "$res" ]; then
        echo "FAIL $t: did not report"
        failed=$((failed + 1))
        continue
    fi
    passed=$((passed + $(echo "$res" | cut -d' ' -f2)))
    failed=$((failed + $(echo "$res" | cut -d' ' -f3)))
done
echo "LAYER browser: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
