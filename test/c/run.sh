#!/usr/bin/env bash
# run.sh — the C unit-test layer (cmocka). Builds test/c/test_*.c against the
# engine, the format writers, the readers, the pid table and the term decoder (with
# erl_interface's libei) three ways, and runs every test case in its own
# process, so a crash, a sanitizer report or a valgrind error fails exactly
# the case that caused it:
#   gcc       gcc -std=c11 -Wall -Wextra -Werror -O1 -g
#   asan      clang -fsanitize=address,undefined (leaks detected, UB halts)
#   valgrind  the gcc build under valgrind --leak-check=full --error-exitcode=99
#             (with BS_TEST_SMALL=1: the 100,000-deep and 1,000,000-iteration
#             cases run at a smaller size there)
# The Makefile builds the gcc and asan variants (make test-c-gcc,
# test-c-asan): their sources and flags are defined there, their objects go
# to build/obj/gcc and build/obj/asan, and only what changed is recompiled.
# The valgrind variant (the slowest), in two shards, runs beside the other
# two (the cases are independent processes and nothing in them depends on
# time); each one's lines are shown once it is done.
# Works from any directory; build outputs and logs go to test/c/build/.
# Then `make recursion-check` (one more case): no C function may recurse
# unless test/c/recursion_allowed.txt names it and what bounds its depth;
# and `make include-check`: no circle of includes between C files or folders
# but those test/c/include_allowed.txt names.
# A case that leaves something unchecked in a variant prints a line starting
# with SKIP, shown after the variant's name. The last line is
# `LAYER c: <P> passed, <F> failed` (test cases over the three variants); the
# exit status is non-zero if anything failed.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root" || exit 2
build=test/c/build
mkdir -p "$build/logs"
rm -f "$build"/logs/*.log "$build"/logs/*.counts "$build"/logs/valgrind*.out

tests=()
for f in test/c/test_*.c; do
    tests+=("$(basename "$f" .c)")
done

passed=0
failed=0
start=$(date +%s)

# Test-case names of one test file, from its cmocka_unit_test() list.
cases_of() {
    grep -o 'cmocka_unit_test([A-Za-z0-9_]*)' "test/c/$1.c" | sed 's/cmocka_unit_test(\(.*\))/\1/'
}

# build VARIANT: the Makefile's test binaries of VARIANT (make test-c-gcc,
# test-c-asan: the objects of that flag set, then one binary per test file,
# into test/c/build/VARIANT/). A test file that does not build fails all of
# its cases; so does every one when the sources do not build.
declare -A built
build() {
    local variant=$1 t
    for t in "${tests[@]}"; do
        rm -f "$build/$variant/$t" # so that what is there after make was built now
    done
    make -s -k -j"$(nproc 2>/dev/null || echo 2)" "test-c-$variant" >"$build/logs/$variant.build.log" 2>&1
    for t in "${tests[@]}"; do
        built[$variant.$t]=0
        [ -x "$build/$variant/$t" ] && built[$variant.$t]=1
    done
    if [ -s "$build/logs/$variant.build.log" ]; then
        echo "--- $variant: compiler output ($build/logs/$variant.build.log):"
        head -n 40 "$build/logs/$variant.build.log"
    fi
}

# run LABEL VARIANT PREFIX...: every case of every test file built as
# VARIANT, one process each, started through PREFIX.
run() {
    local label=$1 variant=$2
    shift 2
    local vp=0 vf=0 t0 i=0
    t0=$(date +%s)
    for t in "${tests[@]}"; do
        for c in $(cases_of "$t"); do
            # Only this shard's cases (every SHARDS-th, from SHARD).
            i=$((i + 1))
            [ $(((i - 1) % ${SHARDS:-1})) = "${SHARD:-0}" ] || continue
            local log="$build/logs/$label.$t.$c.log"
            if [ "${built[$variant.$t]}" != 1 ]; then
                echo "FAIL [$label] $t $c (did not build)"
                vf=$((vf + 1))
                continue
            fi
            timeout 300 "$@" "$build/$variant/$t" "$c" >"$log" 2>&1
            local rc=$?
            if [ $rc = 0 ] && grep -qF "[       OK ] $c" "$log"; then
                vp=$((vp + 1))
                # a case that passed without checking something says so
                grep '^SKIP' "$log" | sed "s/^/[$label] $t $c: /"
            else
                vf=$((vf + 1))
                echo "FAIL [$label] $t $c (exit $rc), last lines of $log:"
                tail -n 30 "$log" | sed 's/^/    /'
            fi
        done
    done
    echo "[$label] $vp passed, $vf failed ($(( $(date +%s) - t0 )) s)"
    echo "$vp $vf" >"$build/logs/$label.counts"
}

# add_counts LABEL: adds what run LABEL counted (a variant that left no
# counts, e.g. killed, fails every case).
add_counts() {
    local vp vf
    if read -r vp vf <"$build/logs/$1.counts" 2>/dev/null; then
        passed=$((passed + vp))
        failed=$((failed + vf))
    else
        echo "FAIL [$1] left no counts"
        for t in "${tests[@]}"; do
            failed=$((failed + $(cases_of "$t" | wc -l)))
        done
    fi
}

build gcc
build asan

# run_valgrind K: shard K of the valgrind variant's cases (of 2).
run_valgrind() {
    SHARDS=2 SHARD=$1 run "valgrind$1" gcc env BS_TEST_SMALL=1 valgrind -q --error-exitcode=99 \
        --leak-check=full --errors-for-leak-kinds=definite,possible --show-leak-kinds=definite,possible
}

valgrind_jobs=()
if command -v valgrind >/dev/null 2>&1; then
    for k in 0 1; do
        run_valgrind "$k" >"$build/logs/valgrind$k.out" 2>&1 &
        valgrind_jobs+=($!)
    done
fi
run gcc gcc env
add_counts gcc
run asan asan env ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
add_counts asan
if [ ${#valgrind_jobs[@]} -gt 0 ]; then
    for k in 0 1; do
        wait "${valgrind_jobs[$k]}"
        cat "$build/logs/valgrind$k.out"
        add_counts "valgrind$k"
    done
else
    echo "valgrind not installed: the valgrind variant fails"
    for t in "${tests[@]}"; do
        failed=$((failed + $(cases_of "$t" | wc -l)))
    done
fi

# make_check NAME TARGET: one more case, make TARGET; its last line is shown,
# or, when it fails, every line but the "allowed:" ones.
make_check() {
    if make -s "$2" >"$build/logs/$1.log" 2>&1; then
        passed=$((passed + 1))
        echo "[$1] $(tail -1 "$build/logs/$1.log")"
    else
        failed=$((failed + 1))
        sed "s/^/FAIL [$1] /" "$build/logs/$1.log" | grep -v "^FAIL \\[$1\\] allowed:"
    fi
}

# No C function recurses unless test/c/recursion_allowed.txt says what
# bounds its depth (make recursion-check: gcc's call graphs); the C files
# include one another one way only (make include-check).
make_check recursion recursion-check
make_check include include-check

echo "total time $(( $(date +%s) - start )) s"
echo "LAYER c: $passed passed, $failed failed"
[ "$failed" = 0 ]
