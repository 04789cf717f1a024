#!/usr/bin/env bash
# fuzz.sh — builds and runs the fuzz targets of fuzz/ (libFuzzer; clang with
# -fsanitize=fuzzer,address,undefined):
#   fuzz_folded     the folded-stacks reader (and folded/.bspy round trips)
#   fuzz_bspy       the .bspy reader
#   fuzz_roundtrip  read (either format) -> write .bspy -> read: equal profiles
#   fuzz_seq        sequence flows: merge and the four writers (seq_*.c)
#   fuzz_eterm      the external-term-format decoder (c_src/dist/eterm.c, with
#                   erl_interface's libei)
#   fuzz_dbg        the dbg trace-port reader (c_src/readers/), to a profile
#                   and to the --text listing
#   fuzz_perf_map   the JIT's perf map (c_src/cpu/perf_map.c): each line, and
#                   the input as a file read in two parts under a memory cap
#   fuzz_dwarf_unwind  the DWARF unwinder of CPU samples (c_src/cpu/) on
#                   broken copies of a real stack: both of its paths agree
#
#   scripts/fuzz.sh long     each target for FUZZ_SECONDS s (default 300): `make fuzz`
#   scripts/fuzz.sh short    each target for FUZZ_SECONDS s (default 8): test/fuzz/run.sh
#   scripts/fuzz.sh build    only build
#   scripts/fuzz.sh replay   run every seed (fuzz/corpus/, the .bspy seeds) once through its target
# (FUZZ_SKIP_BUILD=1: use the targets already in fuzz/build/.)
#
# Inputs: the seeds in fuzz/corpus/<target>/ (in git; when a crash is fixed,
# its input goes there; fuzz_roundtrip also starts from the folded and .bspy
# seeds), .bspy seeds made fresh from the folded seeds by fuzz/make_bspy_seed.c
# (so they always match the current format), and what earlier runs found,
# kept in fuzz/build/corpus/<target>/ (git-ignored). A crash leaves its input
# in fuzz/build/crashes/ and makes the exit status non-zero.
# One line per target: "fuzz <target> <mode>: ok (...)" or "... FAILED".
set -u

cd "$(dirname "$0")/.." || exit 2
mode=${1:-short}
case $mode in
long) secs=${FUZZ_SECONDS:-300} ;;
short) secs=${FUZZ_SECONDS:-8} ;;
build | replay) secs=0 ;;
*)
    echo "usage: scripts/fuzz.sh long|short|build|replay" >&2
    exit 2
    ;;
esac

build=fuzz/build
targets=(folded bspy roundtrip eterm dbg seq perf_map dwarf_unwind)
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$build/crashes" "$build/logs" "$build/seeds/bspy"

# build: the targets and the seed maker (the Makefile's fuzz-bins: the
# readers and writers compiled once, instrumented, in build/obj/fuzz; only
# what changed is recompiled), then the .bspy seeds.
build_all() {
    local log="$build/logs/build.log"
    make -s -j"$jobs" fuzz-bins >"$log" 2>&1 || return 1
    rm -f "$build"/seeds/bspy/*
    for f in fuzz/corpus/folded/*; do
        "$build/make_bspy_seed" "$f" "$build/seeds/bspy/$(basename "$f").bspy" 2>>"$log" || true
    done
    "$build/make_bspy_seed" --timeline "$build/seeds/bspy/timeline.bspy" 2>>"$log" || return 1
    # the same with a zero checksum, which fuzz builds accept (see bspy_read.c)
    for f in "$build"/seeds/bspy/*.bspy; do
        { head -c -4 "$f" && printf '\0\0\0\0'; } >"${f%.bspy}.crc0"
    done
}

# 0 if every target is up to date (make would build nothing).
up_to_date() {
    # shellcheck disable=SC2046 # the list is file names without spaces
    make -s -q $(make -s print-FUZZ_BINS) 2>/dev/null
}

if [ "${FUZZ_SKIP_BUILD:-0}" = 1 ] && up_to_date; then
    : # test/fuzz/run.sh built them a moment ago
elif [ "$mode" != build ] && up_to_date; then
    echo "fuzz build: ok (up to date)"
elif ! build_all; then
    echo "fuzz build: FAILED (compiler output in $build/logs/build.log):"
    head -n 30 "$build/logs/build.log"
    exit 1
else
    echo "fuzz build: ok"
fi
[ "$mode" = build ] && exit 0

# Corpus directories of a target: where new finds go first (libFuzzer adds
# to the first one), then the seeds.
dirs_of() {
    echo "$build/corpus/$1" "fuzz/corpus/$1"
    case $1 in
    bspy) echo "$build/seeds/bspy" ;;
    roundtrip) echo "fuzz/corpus/folded fuzz/corpus/bspy $build/seeds/bspy" ;;
    esac
}

status=0
for t in "${targets[@]}"; do
    read -r -a dirs <<<"$(dirs_of "$t" | tr '\n' ' ')"
    mkdir -p "${dirs[@]}" # fuzz/corpus/roundtrip may be empty, and git keeps no empty folder
    log="$build/logs/$t.$mode.log"
    if [ "$mode" = replay ]; then
        dirs=("${dirs[@]:1}") # the seeds (what git keeps), not earlier finds
        args=(-runs=0)
    else
        args=(-max_total_time="$secs" -dict="fuzz/$t.dict" -max_len=16384 -timeout=10 -rss_limit_mb=2048
            -use_value_profile=1 -print_final_stats=1)
    fi
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        "$build/fuzz_$t" "${args[@]}" -artifact_prefix="$build/crashes/$t-" "${dirs[@]}" >"$log" 2>&1
    rc=$?
    if [ $rc = 0 ] && [ "$mode" = replay ]; then
        echo "fuzz $t $mode: ok ($(find "${dirs[@]}" -type f | wc -l) inputs)"
    elif [ $rc = 0 ]; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
        echo "fuzz $t $mode: ok (${runs:-?} runs in $secs s, $(find "${dirs[@]}" -type f | wc -l) inputs)"
    else
        status=1
        echo "fuzz $t $mode: FAILED (exit $rc), from $log:"
        grep -E 'ERROR|property failed|SUMMARY|Test unit written|artifact|refused' "$log" | head -n 10 | sed 's/^/    /'
    fi
done
exit $status
