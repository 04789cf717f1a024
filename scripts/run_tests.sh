#!/bin/sh
# run_tests.sh — runs every test layer and ends with "N passed, N failed".
# Each layer is test/<layer>/run.sh; its last line of output must be
#   LAYER <name>: <passed> passed, <failed> failed
# A layer that crashes without that line counts as one failure.
# The otp27 and otp29 layers (test/otp/run.sh trixie|sid: the erlang,
# elixir, cli and dist layers again, on OTP 27 and OTP 29 in Debian
# chroots) run when this is root and debootstrap is installed (make deps
# installs it); otherwise they are reported as skipped, with the reason, and
# not counted. BEAMSPY_OTP_SUITES picks them ("" for none).
cd "$(dirname "$0")/.." || exit 1

total_pass=0
total_fail=0
# failure_lines FILE: the lines of a layer's output that name a failed check,
# in each layer's spelling (FAIL lines of the shell and browser layers,
# EUnit's *failed* and *timed out*, ExUnit's numbered failures, the fuzz
# layer's FAILED), at most 40, so a failed run's last lines say which.
# An EUnit test that printed something has its *failed* on a line of its
# own, after the output: the test's title (the last "  module: name..."
# line, up to its "...") is named with it, and below it, indented, what
# the test printed (its first 3 lines) and EUnit's reason ("**error:..."
# joined into one line, its middle cut when long), and under a C case's
# FAIL the lines of its log that say what failed (an assertion, a
# sanitizer's or valgrind's error), so that CI's last lines say why, not
# only which.
failure_lines() {
    awk 'function flush_reason() {
            if (length(reason) > 230) reason = substr(reason, 1, 110) " ... " substr(reason, length(reason) - 110)
            if (reason != "") print "      why: " reason
            reason = ""; in_reason = 0
        }
        in_log && /^    / {
            if (logged < 6 && $0 ~ /[Ee]rror|ERROR|FAIL|[Ff]ailure|[Aa]ssert|definitely|possibly|Invalid|uninitialised|Segmentation|Aborted/) {
                l = $0; gsub(/^ +/, "", l); print "      log: " l; logged++
            }
            next
        }
        { in_log = 0 }
        in_reason && /^  output:|^ *$|^  [A-Za-z0-9_]+: .*\.\.\./ { flush_reason() }
        in_reason { r = $0; gsub(/^ +/, "", r); reason = reason r; next }
        /^\*\*[a-z]+:/ && want_reason { in_reason = 1; want_reason = 0; reason = $0; next }
        /^ +[A-Za-z0-9_]+: .*\.\.\./ {
            title = substr($0, 1, index($0, "...") + 2)
            rest = substr($0, index($0, "...") + 3)
            n = 0
            if (rest != "" && rest !~ /\*(failed|timed out)\*/) printed[++n] = rest
        }
        /^(FAIL|not ok)|\*failed\*|\*timed out\*|^fuzz .*: FAILED|^ +[0-9]+\) test |did not report|no EUnit summary/ {
            line = $0
            if (line ~ /^[ \t]*\*(failed|timed out)\*[ \t]*$/ && title != "") line = title " " line
            print line
            if (line ~ /last lines of/) { in_log = 1; logged = 0 }
            if (line ~ /\*(failed|timed out)\*/) {
                for (i = 1; i <= n && i <= 3; i++) print "      printed: " printed[i]
                n = 0
                want_reason = 1
            }
            next
        }
        /^[^ ]+\.erl:[0-9]+:<[0-9.]+>: / { printed[++n] = $0 }
        END { flush_reason() }' "$1" | cut -c1-240 | head -40
}

# run_layer NAME COMMAND...: runs a layer, shows its output and adds its
# LAYER line to the totals (a layer without one counts as 1 failure). A
# layer that prints "SKIP <why>" and no LAYER line is noted in $skipped and
# not counted.
skipped=""
failures=""
run_layer() {
    name=$1
    shift
    out=$(mktemp)
    "$@" 2>&1 | tee "$out"
    line=$(grep '^LAYER ' "$out" | tail -1)
    skip=$(grep '^SKIP ' "$out" | tail -1)
    failed_lines=$(failure_lines "$out" | sed "s/^/[$name] /")
    [ -n "$failed_lines" ] && failures="$failures
$failed_lines"
    rm -f "$out"
    if [ -z "$line" ] && [ -n "$skip" ]; then
        skipped="$skipped
${skip#SKIP }"
        return
    fi
    if [ -z "$line" ]; then
        echo "LAYER $name: did not report (counted as 1 failure)"
        total_fail=$((total_fail + 1))
        return
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/')
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
}

for layer in c cli fuzz erlang elixir dist browser; do
    script="test/$layer/run.sh"
    [ -x "$script" ] || continue
    echo "=== $layer ==="
    run_layer "$layer" "$script"
done

suites=${BEAMSPY_OTP_SUITES-trixie sid}
for suite in $suites; do
    echo "=== otp ($suite) ==="
    run_layer "otp ($suite)" test/otp/run.sh "$suite"
done

if [ -n "$skipped" ]; then
    echo "skipped (not counted):$skipped" | sed '2,$s/^/  /'
fi
if [ -n "$failures" ]; then
    echo "failed checks:$failures" | sed '2,$s/^/  /'
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
