#!/bin/sh
# test/erlang/run.sh — the Erlang test layer of beamspy.
#
# Compiles the workload and EUnit modules of this folder into build/, runs
# each *_tests module in a fresh VM (a crash of the NIF then costs one
# module, not the layer), and ends with
#   LAYER erlang: <passed> passed, <failed> failed
# A module whose VM dies or hangs without printing EUnit's summary counts as
# one failure; so does a build error or cancelled tests. Then dialyzer
# (dialyzer.sh) is one more check: passed with 0 warnings, failed with any;
# where dialyzer is not installed it is listed as skipped. The OTP 27/29
# repeats of this layer (BEAMSPY_OTP_REPEAT=1, test/otp/run.sh) leave it
# out: their chroots have no dialyzer, each would build a PLT of its own
# (minutes) to check the same specs, and the only code that differs by
# release there (beamspy_backend's calls to the trace module) their tests
# run. Works from any cwd.
# Environment: ERL, ERLC (default erl, erlc), MODULE_TIMEOUT (s, default 300),
# ONLY (space-separated test module names to run a subset; dialyzer runs
# only if it is named there too, as `dialyzer'), TELEMETRY_SRC
# (default $ROOT/../shared/third_party/telemetry: the real telemetry library
# the beamspy_telemetry tests run against; beamspy itself never depends on
# it). Where it is absent those tests print a SKIP line with the reason and
# are neither passed nor failed; the skips are listed before the LAYER line.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD="$HERE/build"
ERL=${ERL:-erl}
ERLC=${ERLC:-erlc}
MODULE_TIMEOUT=${MODULE_TIMEOUT:-300}

passed=0
failed=0
skipped=""
start=$(date +%s)

finish() {
    end=$(date +%s)
    [ -n "$skipped" ] && echo "erlang layer skipped:$skipped"
    echo "erlang layer took $((end - start)) s"
    echo "LAYER erlang: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit $?
}

# The product: ebin/ and priv/ (incremental; the Elixir part is not needed).
if ! make -s -C "$ROOT" erlang nif >"$BUILD.make.log" 2>&1; then
    cat "$BUILD.make.log"
    echo "build of beamspy failed"
    rm -f "$BUILD.make.log"
    failed=1
    finish
fi
rm -f "$BUILD.make.log"

rm -rf "$BUILD"
mkdir -p "$BUILD/tmp"
if ! "$ERLC" +debug_info -o "$BUILD" "$HERE"/*.erl; then
    echo "compiling the Erlang tests failed"
    failed=1
    finish
fi

# telemetry (Apache-2.0), compiled from its source into build/telemetry.
TELEMETRY_SRC=${TELEMETRY_SRC:-$ROOT/../shared/third_party/telemetry}
telemetry_skip=""
if [ ! -f "$TELEMETRY_SRC/src/telemetry.erl" ]; then
    telemetry_skip="telemetry source not found at $TELEMETRY_SRC"
elif ! mkdir -p "$BUILD/telemetry" || ! "$ERLC" -o "$BUILD/telemetry" "$TELEMETRY_SRC"/src/*.erl ||
    ! cp "$TELEMETRY_SRC/src/telemetry.app.src" "$BUILD/telemetry/telemetry.app"; then
    telemetry_skip="telemetry from $TELEMETRY_SRC did not compile"
fi

run_dialyzer=yes
if [ -n "${ONLY:-}" ]; then
    modules=$(echo " $ONLY " | sed 's/ dialyzer / /g')
    case " $ONLY " in *" dialyzer "*) ;; *) run_dialyzer=no ;; esac
else
    modules=$(cd "$HERE" && ls *_tests.erl | sed 's/\.erl$//')
fi
[ "${BEAMSPY_OTP_REPEAT:-}" = 1 ] && run_dialyzer=no

for mod in $modules; do
    if [ "$mod" = beamspy_telemetry_tests ] && [ -n "$telemetry_skip" ]; then
        echo "SKIP $mod: $telemetry_skip"
        skipped="$skipped $mod ($telemetry_skip)"
        continue
    fi
    echo "--- $mod"
    out="$BUILD/$mod.out"
    t0=$(date +%s)
    # mode cpu and times => samples need the JIT's frame pointers and perf map.
    vm_flags=""
    case $mod in beamspy_cpu_tests|beamspy_cpu_times_tests) vm_flags="+JPperf true" ;; esac
    (cd "$BUILD" && BEAMSPY_TEST_TMP="$BUILD/tmp" timeout -k 10 "$MODULE_TIMEOUT" \
        "$ERL" $vm_flags -noshell -pa "$ROOT/ebin" -pa "$BUILD" -pa "$BUILD/telemetry" \
        -eval "R = eunit:test($mod, [verbose]), halt(case R of ok -> 0; _ -> 1 end)." \
        >"$out" 2>&1)
    rc=$?
    cat "$out"
    t1=$(date +%s)
    echo "--- $mod: exit $rc, $((t1 - t0)) s"
    all=$(sed -n 's/^ *\(All \)\{0,1\}\([0-9][0-9]*\) tests passed\..*/\2/p' "$out" | tail -1)
    one=$(grep -c '^ *Test passed\.' "$out")
    summary=$(sed -n 's/^ *Failed: \([0-9][0-9]*\)\. *Skipped: \([0-9][0-9]*\)\. *Passed: \([0-9][0-9]*\)\..*/\1 \3/p' "$out" | tail -1)
    if [ -n "$all" ]; then
        passed=$((passed + all))
    elif [ -n "$summary" ]; then
        f=${summary% *}
        p=${summary#* }
        passed=$((passed + p))
        failed=$((failed + f))
    elif [ "$one" -gt 0 ]; then
        passed=$((passed + 1))
    else
        echo "--- $mod: no EUnit summary (VM crashed or timed out): counted as 1 failure"
        failed=$((failed + 1))
        continue
    fi
    if grep -q 'One or more tests were cancelled' "$out"; then
        echo "--- $mod: tests were cancelled: counted as 1 failure"
        failed=$((failed + 1))
    fi
    if [ "$rc" -ne 0 ] && [ -n "$all" ]; then
        echo "--- $mod: VM exited $rc after a clean summary: counted as 1 failure"
        failed=$((failed + 1))
    fi
done

rm -rf "$BUILD/tmp"

if [ "$run_dialyzer" = yes ]; then
    echo "--- dialyzer"
    "$HERE/dialyzer.sh" 2>&1 | tee "$BUILD/dialyzer.out"
    line=$(tail -1 "$BUILD/dialyzer.out")
    case $line in
        "ok - dialyzer"*) passed=$((passed + 1)) ;;
        "SKIP dialyzer"*) skipped="$skipped dialyzer (${line#SKIP dialyzer: })" ;;
        *) failed=$((failed + 1)) ;;
    esac
fi

finish
